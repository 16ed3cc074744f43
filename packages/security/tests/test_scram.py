"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer and ScramSaslClient."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.security import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    DelegationTokenCredential,
    SaslAuthenticationError,
    SaslError,
    ScramMechanism,
    ScramSaslClient,
    ScramSaslServer,
    UnacceptableCredentialError,
    check_iterations,
    generate_credential,
)
from minikafka.security._scram_formatter import (
    sasl_name,
    secure_random_string,
    username,
)

# RFC 7677, section 3: the SCRAM-SHA-256 example exchange.
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_server() -> ScramSaslServer:
    credential = generate_credential(SCRAM_SHA_256, "pencil", 4096, salt=RFC_SALT)
    return ScramSaslServer(
        SCRAM_SHA_256, {"user": credential}, nonce=lambda: RFC_SERVER_NONCE
    )


def test_the_server_reproduces_rfc_7677s_example_byte_for_byte() -> None:
    """Given RFC 7677's salt, nonces and password, the server's two messages are the
    RFC's, and it accepts the RFC's client proof."""
    server = rfc_server()
    assert server.evaluate_response(RFC_CLIENT_FIRST, 0.0) == RFC_SERVER_FIRST
    assert server.evaluate_response(RFC_CLIENT_FINAL, 0.0) == RFC_SERVER_FINAL
    assert server.complete
    assert server.authorization_id() == "user"


def test_the_client_reproduces_rfc_7677s_example_byte_for_byte() -> None:
    """The client's first and final messages are the RFC's, and it accepts the RFC's
    server signature."""
    client = ScramSaslClient(
        SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE
    )
    assert client.first_message() == RFC_CLIENT_FIRST
    assert client.evaluate_challenge(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert client.evaluate_challenge(RFC_SERVER_FINAL) == b""
    assert client.complete


def exchange(server: ScramSaslServer, client: ScramSaslClient) -> None:
    challenge = server.evaluate_response(client.first_message(), 0.0)
    final = server.evaluate_response(client.evaluate_challenge(challenge), 0.0)
    client.evaluate_challenge(final)


@settings(max_examples=15, deadline=None)
@given(
    mechanism=st.sampled_from([SCRAM_SHA_256, SCRAM_SHA_512]),
    user=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1),
    password=st.text(min_size=1, max_size=40),
)
def test_a_client_with_the_right_password_always_authenticates(
    mechanism: ScramMechanism, user: str, password: str
) -> None:
    """For any printable user name (commas and equals signs escaped on the way) and any
    password, both mechanisms complete on both sides with the user as principal."""
    credential = generate_credential(mechanism, password, 4096)
    server = ScramSaslServer(mechanism, {user: credential})
    client = ScramSaslClient(mechanism, user, password)
    exchange(server, client)
    assert server.complete
    assert client.complete
    assert server.authorization_id() == user


@settings(max_examples=10, deadline=None)
@given(
    password=st.text(min_size=1, max_size=20), wrong=st.text(min_size=1, max_size=20)
)
def test_a_wrong_password_is_refused_with_kafkas_hidden_reason(
    password: str, wrong: str
) -> None:
    """Any other password fails the proof check with a SaslError (whose text the
    authenticator keeps from the client), and the server ends FAILED."""
    if wrong == password:
        wrong += "x"
    server = ScramSaslServer(
        SCRAM_SHA_256, {"u": generate_credential(SCRAM_SHA_256, password, 4096)}
    )
    client = ScramSaslClient(SCRAM_SHA_256, "u", wrong)
    challenge = server.evaluate_response(client.first_message(), 0.0)
    with pytest.raises(SaslError, match="Invalid client credentials"):
        server.evaluate_response(client.evaluate_challenge(challenge), 0.0)
    assert server.state.value == "FAILED"


def test_an_unknown_user_fails_like_a_bad_credential() -> None:
    """A user with no credential fails at the first message with Kafka's text."""
    server = ScramSaslServer(SCRAM_SHA_512, {})
    with pytest.raises(SaslError, match="Invalid user credentials"):
        server.evaluate_response(
            ScramSaslClient(SCRAM_SHA_512, "x", "y").first_message(), 0
        )


def test_an_authorization_id_other_than_the_user_is_refused_with_a_message_shown() -> (
    None
):
    """``a=bob`` from alice is a SaslAuthenticationError: its message reaches the client."""
    server = ScramSaslServer(
        SCRAM_SHA_256, {"alice": generate_credential(SCRAM_SHA_256, "p", 4096)}
    )
    with pytest.raises(SaslAuthenticationError, match="different from username"):
        server.evaluate_response(b"n,a=bob,n=alice,r=abc", 0)


def test_a_credential_below_the_minimum_iterations_is_refused() -> None:
    """Kafka refuses a credential of fewer than 4096 iterations, naming both numbers."""
    server = ScramSaslServer(
        SCRAM_SHA_256, {"a": generate_credential(SCRAM_SHA_256, "p", 1000)}
    )
    with pytest.raises(
        SaslError,
        match="Iterations 1000 is less than the minimum 4096 for SCRAM-SHA-256",
    ):
        server.evaluate_response(b"n,,n=a,r=abc", 0)


def test_the_client_refuses_a_server_asking_too_few_iterations() -> None:
    """A server (or a man in the middle) offering 1 iteration is refused by the client."""
    client = ScramSaslClient(SCRAM_SHA_256, "a", "p", nonce=lambda: "abc")
    client.first_message()
    with pytest.raises(SaslError, match="less than the minimum"):
        client.evaluate_challenge(b"r=abcdef,s=QUJD,i=1")


def test_tokenauth_is_refused_where_there_are_no_delegation_tokens() -> None:
    """The ``tokenauth=true`` extension names a token id; with delegation tokens off it
    fails as an invalid token even if a user has that name."""
    credential = generate_credential(SCRAM_SHA_256, "p", 4096)
    server = ScramSaslServer(SCRAM_SHA_256, {"tok": credential}, tokens=None)
    client = ScramSaslClient(
        SCRAM_SHA_256, "tok", "p", extensions={"tokenauth": "true"}
    )
    with pytest.raises(SaslError, match="Invalid tokenId : tok"):
        server.evaluate_response(client.first_message(), 0)


def test_a_delegation_token_authenticates_as_its_owner_until_its_expiry() -> None:
    """With the token known, the session is the owner's and the credential's lifetime is
    the token's expiry (what bounds the session in KIP-368)."""
    hmac_password = "token-hmac"
    token = DelegationTokenCredential(
        "alice", generate_credential(SCRAM_SHA_512, hmac_password, 4096), 123_000
    )
    server = ScramSaslServer(SCRAM_SHA_512, {}, tokens={"tid": token})
    client = ScramSaslClient(
        SCRAM_SHA_512, "tid", hmac_password, extensions={"tokenauth": "true"}
    )
    exchange(server, client)
    assert server.authorization_id() == "alice"
    assert server.token_authenticated
    assert server.credential_lifetime_ms() == 123_000


@pytest.mark.parametrize(
    ("first", "final", "reason"),
    [
        (b"y,,n=u,r=a", None, "Invalid SCRAM client first message format"),
        (b"n,,n=u", None, "Invalid SCRAM client first message format"),
        (b"n,,n=u,r=a", b"c=biws,r=WRONG,p=AAAA", "Invalid client nonce"),
        (b"n,,n=u,r=a", b"garbage", "Invalid SCRAM client final message format"),
    ],
)
def test_malformed_or_mismatched_messages_fail_with_kafkas_reason(
    first: bytes, final: bytes | None, reason: str
) -> None:
    """A gs2 header asking channel binding, a missing nonce, a final message with
    another nonce or no proof: each fails with Kafka's message, never an exception of
    another kind."""
    server = ScramSaslServer(
        SCRAM_SHA_256, {"u": generate_credential(SCRAM_SHA_256, "p", 4096)}
    )
    if final is None:
        with pytest.raises(SaslError, match=reason):
            server.evaluate_response(first, 0)
        return
    server.evaluate_response(first, 0)
    with pytest.raises(SaslError, match=reason):
        server.evaluate_response(final, 0)


def test_a_finished_exchange_takes_no_more_messages() -> None:
    """A message after COMPLETE fails instead of starting over."""
    server = rfc_server()
    server.evaluate_response(RFC_CLIENT_FIRST, 0)
    server.evaluate_response(RFC_CLIENT_FINAL, 0)
    with pytest.raises(SaslError, match="Unexpected challenge"):
        server.evaluate_response(RFC_CLIENT_FIRST, 0)


@given(st.text(st.characters(min_codepoint=1, max_codepoint=0x7F), min_size=1))
def test_a_user_name_survives_saslname_escaping(name: str) -> None:
    """``=`` and ``,`` escape as =3D and =2C and decode back to the same name."""
    encoded = sasl_name(name)
    assert "," not in encoded
    assert username(encoded) == name


def test_a_lone_equals_sign_in_a_saslname_is_refused() -> None:
    """RFC 5802 allows ``=`` only in =2C and =3D."""
    with pytest.raises(SaslError, match="Invalid username"):
        username("a=b")


@given(st.binary(min_size=17, max_size=17))
def test_the_random_string_is_130_bits_in_base_36(raw: bytes) -> None:
    """Kafka's nonce: at most 26 base-36 digits (36**26 > 2**130), never empty."""
    text = secure_random_string(lambda n: raw[:n])
    assert 1 <= len(text) <= 26
    assert int(text, 36) < 2**130


def test_a_credential_has_kafkas_fields_and_hash_lengths() -> None:
    """salt, stored_key, server_key, iterations: the UserScramCredentialRecord's fields,
    the keys as long as the hash; the mechanism codes are the admin API's 1 and 2."""
    c256 = generate_credential(SCRAM_SHA_256, "p", 4096)
    c512 = generate_credential(SCRAM_SHA_512, "p", 8192)
    assert (len(c256.stored_key), len(c256.server_key)) == (32, 32)
    assert (len(c512.stored_key), len(c512.server_key), c512.iterations) == (
        64,
        64,
        8192,
    )
    assert (SCRAM_SHA_256.type, SCRAM_SHA_512.type) == (1, 2)
    assert (SCRAM_SHA_256.min_iterations, SCRAM_SHA_256.max_iterations) == (4096, 16384)


@pytest.mark.parametrize(
    ("iterations", "message"),
    [(4095, "Too few iterations"), (16385, "Too many iterations")],
)
def test_a_new_credential_must_have_4096_to_16384_iterations(
    iterations: int, message: str
) -> None:
    """AlterUserScramCredentials's bounds, UNACCEPTABLE_CREDENTIAL (93) outside them."""
    check_iterations(SCRAM_SHA_512, 4096)
    check_iterations(SCRAM_SHA_512, 16384)
    with pytest.raises(UnacceptableCredentialError, match=message) as raised:
        check_iterations(SCRAM_SHA_256, iterations)
    assert raised.value.error_code == 93
