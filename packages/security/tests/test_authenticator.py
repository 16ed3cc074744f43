"""The SASL server authenticator (Kafka's SaslServerAuthenticator, KIP-43, KIP-152,
KIP-368) driven with decoded requests and ``now``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v0.request import SaslAuthenticateRequest as Auth0
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest as Auth1
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest as Auth2
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as Handshake0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest as Handshake1

from minikafka.security import (
    SCRAM_SHA_256,
    TRANSITIONS,
    AnswerApiVersions,
    Authenticated,
    AuthenticationFailed,
    Close,
    Forward,
    KafkaPrincipal,
    OAuthBearerSaslServer,
    PlainSaslServer,
    Received,
    Respond,
    RespondWithError,
    SaslServer,
    SaslServerAuthenticator,
    SaslServerConfig,
    SaslState,
    ScramSaslClient,
    ScramSaslServer,
    SendToken,
    UnsecuredValidatorOptions,
    client_initial_response,
    generate_credential,
    plain_client_message,
    unsecured_token,
)
from minikafka.security._authenticator import INVALID_FIRST_REQUEST

NOW = 1_700_000_000.0
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
CREDENTIALS = {u: generate_credential(SCRAM_SHA_256, p, 4096) for u, p in USERS.items()}
MECHANISMS: dict[str, Callable[[], SaslServer]] = {
    "PLAIN": lambda: PlainSaslServer(USERS),
    "SCRAM-SHA-256": lambda: ScramSaslServer(SCRAM_SHA_256, CREDENTIALS),
    "OAUTHBEARER": lambda: OAuthBearerSaslServer(UnsecuredValidatorOptions()),
}
VERSIONS = ApiVersionsRequest(client_software_name="t", client_software_version="1")
METADATA = MetadataRequest(
    topics=None,
    allow_auto_topic_creation=False,
    include_topic_authorized_operations=False,
)


def authenticator(**config: int) -> SaslServerAuthenticator:
    return SaslServerAuthenticator(
        SaslServerConfig(("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"), **config),
        MECHANISMS,
    )


def response(action: object) -> Any:
    """The response a ``Respond`` action carries (typed loosely: one of five schemas)."""
    assert isinstance(action, Respond)
    found: Any = action.response
    return found


def only(replies: tuple[object, ...], kind: type) -> list[object]:
    return [r for r in replies if isinstance(r, kind)]


def plain_login(
    auth: SaslServerAuthenticator,
    user: str = "alice",
    version: type = Auth2,
    now: float = NOW,
) -> tuple[object, ...]:
    auth.receive(Handshake1(mechanism="PLAIN"), now)
    return auth.receive(
        version(auth_bytes=plain_client_message(user, USERS[user])), now
    ).replies


def test_apiversions_then_handshake_then_plain_authenticates() -> None:
    """The order a modern client follows: ApiVersions answered from the listener's
    table, the handshake answered with the enabled mechanisms, one SaslAuthenticate."""
    auth = authenticator()
    assert auth.receive(VERSIONS, NOW).replies == (AnswerApiVersions(),)
    assert auth.state.value == "HANDSHAKE_REQUEST"
    (handshake,) = auth.receive(Handshake1(mechanism="PLAIN"), NOW).replies
    assert isinstance(handshake, Respond)
    assert response(handshake).error_code == 0
    assert response(handshake).mechanisms == ("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER")
    replies = auth.receive(
        Auth2(auth_bytes=plain_client_message("alice", "alice-secret")), NOW
    ).replies
    assert only(replies, Authenticated) == [
        Authenticated(KafkaPrincipal("User", "alice"), "PLAIN", None, False)
    ]
    assert auth.state is SaslState.COMPLETE
    assert auth.receive(METADATA, NOW).replies == (Forward(),)


def test_scram_takes_two_round_trips_through_saslauthenticate() -> None:
    """SCRAM's challenges go back in SaslAuthenticate responses until complete."""
    auth = authenticator()
    client = ScramSaslClient(SCRAM_SHA_256, "bob", "bob-secret")
    auth.receive(Handshake1(mechanism="SCRAM-SHA-256"), NOW)
    (first,) = auth.receive(Auth1(auth_bytes=client.first_message()), NOW).replies
    assert isinstance(first, Respond)
    assert auth.state is SaslState.AUTHENTICATE
    final = client.evaluate_challenge(response(first).auth_bytes)
    replies = auth.receive(Auth1(auth_bytes=final), NOW).replies
    assert isinstance(replies[0], Respond)
    client.evaluate_challenge(response(replies[0]).auth_bytes)
    assert client.complete
    assert auth.principal == KafkaPrincipal("User", "bob")


def test_a_v0_handshake_carries_bare_tokens() -> None:
    """After SaslHandshake v0 the shell reads bare frames, and challenges go back bare."""
    auth = authenticator()
    auth.receive(Handshake0(mechanism="SCRAM-SHA-256"), NOW)
    assert auth.expects_bare_tokens
    client = ScramSaslClient(SCRAM_SHA_256, "alice", "alice-secret")
    (challenge,) = auth.receive(client.first_message(), NOW).replies
    assert isinstance(challenge, SendToken)
    replies = auth.receive(client.evaluate_challenge(challenge.token), NOW).replies
    assert isinstance(replies[0], SendToken)
    assert isinstance(replies[1], Authenticated)
    assert not auth.expects_bare_tokens


def test_an_unknown_mechanism_is_refused_and_closed_after_the_delay() -> None:
    """UNSUPPORTED_SASL_MECHANISM with the enabled list; the close waits
    connection.failed.authentication.delay.ms, carried out at the core's deadline."""
    auth = authenticator(failed_authentication_delay_ms=100)
    replies = auth.receive(Handshake1(mechanism="GSSAPI"), NOW).replies
    assert isinstance(replies[0], Respond)
    assert response(replies[0]).error_code == 33
    assert only(replies, AuthenticationFailed) == [
        AuthenticationFailed("Unsupported SASL mechanism GSSAPI", NOW + 0.1)
    ]
    assert auth.next_deadline() == NOW + 0.1
    assert auth.on_timer(NOW + 0.05).replies == ()
    assert auth.on_timer(NOW + 0.1).replies == (Close("failed authentication"),)
    assert auth.next_deadline() is None
    assert auth.state is SaslState.FAILED


def test_with_no_delay_the_close_comes_with_the_answer() -> None:
    """connection.failed.authentication.delay.ms=0: close at once after the response."""
    auth = authenticator(failed_authentication_delay_ms=0)
    replies = auth.receive(Handshake1(mechanism="NOPE"), NOW).replies
    assert isinstance(replies[-1], Close)
    assert auth.next_deadline() is None


def test_a_wrong_password_gets_sasl_authentication_failed_with_kafkas_message() -> None:
    """PLAIN's own message (safe to show) goes out with SASL_AUTHENTICATION_FAILED."""
    auth = authenticator()
    auth.receive(Handshake1(mechanism="PLAIN"), NOW)
    replies = auth.receive(Auth2(auth_bytes=b"\x00alice\x00wrong"), NOW).replies
    assert isinstance(replies[0], Respond)
    assert response(replies[0]).error_code == 58
    assert (
        response(replies[0]).error_message
        == "Authentication failed: Invalid username or password"
    )
    assert isinstance(replies[1], AuthenticationFailed)


def test_a_hidden_reason_is_replaced_by_kafkas_generic_text() -> None:
    """A SCRAM failure whose detail could reveal a user gets Kafka's fixed message."""
    auth = authenticator()
    auth.receive(Handshake1(mechanism="SCRAM-SHA-256"), NOW)
    client = ScramSaslClient(SCRAM_SHA_256, "nobody", "x")
    (reply, _failed) = auth.receive(
        Auth2(auth_bytes=client.first_message()), NOW
    ).replies
    assert isinstance(reply, Respond)
    assert response(reply).error_message == (
        "Authentication failed during authentication due to invalid credentials with "
        "SASL mechanism SCRAM-SHA-256"
    )


def test_another_request_during_authentication_is_illegal_sasl_state() -> None:
    """A Metadata request between SaslAuthenticates: answered with its own API's error
    response carrying ILLEGAL_SASL_STATE, and the connection fails."""
    auth = authenticator()
    auth.receive(Handshake1(mechanism="PLAIN"), NOW)
    replies = auth.receive(METADATA, NOW).replies
    assert isinstance(replies[0], RespondWithError)
    assert replies[0].error_code == 34
    assert replies[0].message == (
        "Unexpected Kafka request of type METADATA during SASL authentication."
    )


@pytest.mark.parametrize("first", [METADATA, b"\x16\x03\x01", Auth2(auth_bytes=b"")])
def test_a_first_frame_that_is_not_apiversions_or_a_handshake_closes_at_once(
    first: object,
) -> None:
    """A TLS hello or any request on a SASL port before the handshake: Kafka's
    InvalidRequest, closed at once without an answer (not an authentication failure)."""
    auth = authenticator()
    assert auth.receive(first, NOW).replies == (Close(INVALID_FIRST_REQUEST),)
    assert auth.state is SaslState.FAILED
    assert auth.next_deadline() is None


def test_a_second_apiversions_before_the_handshake_closes() -> None:
    """ApiVersions is allowed once, first."""
    auth = authenticator()
    auth.receive(VERSIONS, NOW)
    (close,) = auth.receive(VERSIONS, NOW).replies
    assert isinstance(close, Close)
    assert "Unexpected ApiVersions" in close.reason


def test_an_oversized_frame_fails_authentication() -> None:
    """Over sasl.server.max.receive.size: Kafka's message, and the delayed close."""
    auth = authenticator()
    replies = auth.receive_too_large(10_000_000, NOW).replies
    assert replies == (
        AuthenticationFailed(
            "Failing SASL authentication due to invalid receive size", NOW + 0.1
        ),
    )


def test_the_session_lifetime_is_connections_max_reauth_ms() -> None:
    """KIP-368: SaslAuthenticate v1+ is told the lifetime; a request after it closes."""
    auth = authenticator(connections_max_reauth_ms=60_000)
    replies = plain_login(auth)
    assert response(replies[0]).session_lifetime.total_seconds() == 60
    assert auth.session_expiration == NOW + 60
    assert auth.receive(METADATA, NOW + 59.9).replies == (Forward(),)
    assert auth.receive(METADATA, NOW + 60).replies == (Close("session expired"),)


def test_a_token_bounds_the_session_by_its_expiry() -> None:
    """The session ends at the earlier of the token's exp and connections.max.reauth.ms."""
    auth = authenticator(connections_max_reauth_ms=3_600_000)
    auth.receive(Handshake1(mechanism="OAUTHBEARER"), NOW)
    token = unsecured_token("carol", NOW, lifetime_seconds=30)
    replies = auth.receive(
        Auth2(auth_bytes=client_initial_response(token)), NOW
    ).replies
    assert response(replies[0]).session_lifetime.total_seconds() == 30
    assert auth.session_expiration == NOW + 30


def test_a_client_re_authenticates_with_the_same_mechanism_and_principal() -> None:
    """A v1+ client's new handshake after COMPLETE starts re-authentication; the new
    session gets a new lifetime."""
    auth = authenticator(connections_max_reauth_ms=10_000)
    plain_login(auth)
    replies = plain_login(auth, now=NOW + 9)
    (done,) = only(replies, Authenticated)
    assert done == Authenticated(
        KafkaPrincipal("User", "alice"), "PLAIN", NOW + 19, True
    )


def test_re_authentication_may_not_change_the_principal() -> None:
    """Kafka's message: Cannot change principals during re-authentication."""
    auth = authenticator()
    plain_login(auth)
    replies = plain_login(auth, user="bob")
    assert response(replies[0]).error_message == (
        "Cannot change principals during re-authentication from User.alice: User.bob"
    )
    assert auth.state is SaslState.FAILED


def test_re_authentication_may_not_change_the_mechanism() -> None:
    """The handshake is answered, then the next token fails with Kafka's message."""
    auth = authenticator()
    plain_login(auth)
    (ok,) = auth.receive(Handshake1(mechanism="SCRAM-SHA-256"), NOW).replies
    assert isinstance(ok, Respond)
    assert response(ok).error_code == 0
    assert auth.state is SaslState.REAUTH_BAD_MECHANISM
    (failed,) = auth.receive(Auth2(auth_bytes=b"x"), NOW).replies
    assert isinstance(failed, AuthenticationFailed)
    assert "not supported for re-authentication of mechanism 'PLAIN'" in failed.message


def test_a_v0_client_cannot_re_authenticate() -> None:
    """A client that only sent SaslAuthenticate v0 gets ILLEGAL_SASL_STATE for a new
    handshake, as the broker's API answers it, and stays authenticated."""
    auth = authenticator()
    plain_login(auth, version=Auth0)
    (reply,) = auth.receive(Handshake1(mechanism="PLAIN"), NOW).replies
    assert isinstance(reply, Respond)
    assert response(reply).error_code == 34
    assert auth.state is SaslState.COMPLETE


def test_saslauthenticate_after_success_is_illegal_sasl_state() -> None:
    """What KafkaApis answers a SaslAuthenticate on an authenticated connection."""
    auth = authenticator()
    plain_login(auth)
    (reply,) = auth.receive(Auth2(auth_bytes=b""), NOW).replies
    assert isinstance(reply, RespondWithError)
    assert reply.error_code == 34


SAMPLES: dict[Received, object] = {
    Received.API_VERSIONS: VERSIONS,
    Received.HANDSHAKE: Handshake1(mechanism="PLAIN"),
    Received.AUTHENTICATE: Auth2(
        auth_bytes=plain_client_message("alice", "alice-secret")
    ),
    Received.TOKEN: b"\x00alice\x00alice-secret",
    Received.OTHER: METADATA,
}


def reach(state: SaslState) -> SaslServerAuthenticator:
    auth = authenticator()
    if state is SaslState.HANDSHAKE_REQUEST:
        auth.receive(VERSIONS, NOW)
    elif state is SaslState.AUTHENTICATE:
        auth.receive(Handshake1(mechanism="PLAIN"), NOW)
    elif state is SaslState.COMPLETE:
        plain_login(auth)
    elif state is SaslState.REAUTH_BAD_MECHANISM:
        plain_login(auth)
        auth.receive(Handshake1(mechanism="OAUTHBEARER"), NOW)
    elif state is SaslState.FAILED:
        auth.receive(Handshake1(mechanism="NOPE"), NOW)
    assert auth.state is state
    return auth


@pytest.mark.parametrize("state", list(SaslState))
@pytest.mark.parametrize("kind", list(Received))
def test_every_state_and_request_follows_the_table(
    state: SaslState, kind: Received
) -> None:
    """The sweep over every (state, request) pair: a pair the table lists ends in one of
    its states (or FAILED, for a refused credential); a pair it does not list fails the
    connection (a close, an error or, once FAILED, nothing) and never raises."""
    auth = reach(state)
    replies = auth.receive(SAMPLES[kind], NOW).replies
    allowed = TRANSITIONS[state].get(kind)
    if allowed is not None:
        assert auth.state in (*allowed, SaslState.FAILED)
    else:
        assert auth.state is SaslState.FAILED
        failed = only(replies, Close) + only(replies, AuthenticationFailed)
        assert failed or state is SaslState.FAILED


requests = st.one_of(
    st.sampled_from(list(SAMPLES.values())),
    st.builds(Handshake0, mechanism=st.text(max_size=12)),
    st.builds(Handshake1, mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "x"])),
    st.builds(Auth0, auth_bytes=st.binary(max_size=64)),
    st.builds(Auth2, auth_bytes=st.binary(max_size=64)),
    st.binary(max_size=64),
)


@settings(max_examples=300)
@given(st.lists(st.tuples(requests, st.floats(0, 1)), max_size=10))
def test_no_sequence_of_frames_makes_the_authenticator_raise(
    steps: list[tuple[object, float]],
) -> None:
    """Any frames in any order, garbage tokens included: the core answers with values
    (Kafka's errors, a close), never an exception, and once FAILED it authenticates no
    one and at most closes when its deadline is due."""
    auth = authenticator()
    now = NOW
    for request, elapsed in steps:
        now += elapsed
        was_failed = auth.state is SaslState.FAILED
        replies = auth.receive(request, now).replies + auth.on_timer(now).replies
        if was_failed:
            assert all(isinstance(r, Close) for r in replies)


def test_after_the_session_a_late_re_authentication_is_allowed_but_nothing_else() -> (
    None
):
    """A v1+ client may still re-authenticate after its session ended (Kafka starts it
    before checking expiry); a v0 client's handshake then closes like any request."""
    auth = authenticator(connections_max_reauth_ms=1_000)
    plain_login(auth)
    assert only(plain_login(auth, now=NOW + 5), Authenticated)
    old = authenticator(connections_max_reauth_ms=1_000)
    plain_login(old, version=Auth0)
    late = old.receive(Handshake1(mechanism="PLAIN"), NOW + 5).replies
    assert late == (Close("session expired"),)


def test_a_request_after_apiversions_but_before_the_handshake_names_its_api() -> None:
    """Kafka's message names the request's ApiKeys name, and the close is at once."""
    auth = authenticator()
    auth.receive(VERSIONS, NOW)
    assert auth.receive(METADATA, NOW).replies == (
        Close("Unexpected Kafka request of type METADATA during SASL handshake."),
    )
