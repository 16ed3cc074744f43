"""OAUTHBEARER with unsecured tokens (KIP-255, RFC 7628), as Kafka's
OAuthBearerSaslServer and OAuthBearerValidationUtils."""

from __future__ import annotations

import base64
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.security import (
    OAuthBearerSaslServer,
    SaslAuthenticationError,
    SaslError,
    TokenValidationError,
    UnsecuredValidatorOptions,
    client_initial_response,
    unsecured_token,
    validate_unsecured_token,
)

NOW = 1_700_000_000.0


def jws(header: object, claims: object) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part(header)}.{part(claims)}."


def test_a_fresh_token_authenticates_its_subject_until_exp() -> None:
    """The initial response ``n,,\\x01auth=Bearer <jws>\\x01\\x01`` completes at once,
    for ``sub``, with the credential's lifetime ``exp`` in ms."""
    server = OAuthBearerSaslServer(UnsecuredValidatorOptions())
    token = unsecured_token("alice", NOW, lifetime_seconds=60)
    response = client_initial_response(token)
    assert response.startswith(b"n,,\x01auth=Bearer ")
    assert response.endswith(b"\x01\x01")
    assert server.evaluate_response(response, NOW) == b""
    assert server.authorization_id() == "alice"
    assert server.credential_lifetime_ms() == int((NOW + 60) * 1000)


def test_extensions_ride_along_the_initial_response() -> None:
    """``key=value`` pairs between the separators are the client's extensions (KIP-342)."""
    server = OAuthBearerSaslServer(UnsecuredValidatorOptions())
    message = client_initial_response(
        unsecured_token("a", NOW), extensions={"traceId": "123"}
    )
    server.evaluate_response(message, NOW)
    assert server.extensions == {"traceId": "123"}


def test_an_expired_token_is_answered_with_the_rfc_error_then_failed() -> None:
    """RFC 7628 3.2.2: the refusal is a JSON challenge; the client's lone \\x01 then
    ends the exchange with that error as the message the client sees."""
    server = OAuthBearerSaslServer(UnsecuredValidatorOptions())
    token = unsecured_token("alice", NOW - 7200, lifetime_seconds=60)
    challenge = server.evaluate_response(client_initial_response(token), NOW)
    assert challenge == b'{"status":"invalid_token"}'
    assert not server.complete
    with pytest.raises(SaslAuthenticationError, match="invalid_token"):
        server.evaluate_response(b"\x01", NOW)


def test_a_missing_required_scope_is_insufficient_scope() -> None:
    """A required scope the token lacks gives status insufficient_scope with the scope."""
    server = OAuthBearerSaslServer(UnsecuredValidatorOptions(required_scope=("write",)))
    token = unsecured_token("alice", NOW, scope=["read"])
    challenge = json.loads(
        server.evaluate_response(client_initial_response(token), NOW)
    )
    assert challenge == {"status": "insufficient_scope", "scope": "[write]"}


def test_another_authorization_id_than_the_token_subject_is_refused() -> None:
    """``a=bob`` with alice's token: Kafka's message, shown to the client."""
    server = OAuthBearerSaslServer(UnsecuredValidatorOptions())
    message = client_initial_response(unsecured_token("alice", NOW), authzid="bob")
    with pytest.raises(SaslAuthenticationError, match=r"authorization id \(bob\)"):
        server.evaluate_response(message, NOW)


@pytest.mark.parametrize(
    "bad", [b"", b"n,,auth=Bearer x", b"n,,\x01auth=Basic x\x01\x01", b"\x01"]
)
def test_a_malformed_initial_response_fails(bad: bytes) -> None:
    """Not RFC 7628's shape, no Bearer, or an \\x01 with no error pending: a SaslError."""
    with pytest.raises(SaslError, match="Invalid OAUTHBEARER client first message"):
        OAuthBearerSaslServer(UnsecuredValidatorOptions()).evaluate_response(bad, NOW)


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (
            jws({"alg": "HS256"}, {"sub": "a", "exp": NOW + 1}),
            "'none' for an algorithm",
        ),
        (jws({"typ": "JWT"}, {"sub": "a", "exp": NOW + 1}), "must have an Algorithm"),
        (jws({"alg": "none"}, {"exp": NOW + 1}), "No principal name in JWT claim: sub"),
        (jws({"alg": "none"}, {"sub": " ", "exp": NOW + 1}), "No principal name"),
        (jws({"alg": "none"}, {"sub": "a"}), "No expiration time in JWT"),
        (
            jws({"alg": "none"}, {"sub": "a", "exp": "soon"}),
            "The 'exp' claim was not of type Number: String",
        ),
        (
            jws({"alg": "none"}, {"sub": 5, "exp": NOW + 1}),
            "The 'sub' claim was not of type String: Integer",
        ),
        (
            jws({"alg": "none"}, {"sub": "a", "exp": NOW + 9, "iat": NOW + 5}),
            "Issued At value",
        ),
        (jws({"alg": "none"}, {"sub": "a", "exp": NOW}), "on or after the Expiration"),
        (
            jws({"alg": "none"}, {"sub": "a", "exp": NOW + 1, "scope": 3}),
            "The 'scope' claim was not of type List: Integer",
        ),
        (
            jws({"alg": "none"}, {"sub": "a", "exp": NOW + 1}) + "sig",
            "digital signature",
        ),
        ("a.b", "must have 3 dot-separated"),
        ("a..b", "contains '..'"),
        ("!!.??.", "malformed"),
        (base64.urlsafe_b64encode(b"[1]").decode() + ".e30.", "malformed JSON"),
    ],
)
def test_each_invalid_token_is_refused_with_kafkas_reason(
    token: str, reason: str
) -> None:
    """OAuthBearerUnsecuredJws's and OAuthBearerValidationUtils's checks, each with
    Kafka's message."""
    with pytest.raises(TokenValidationError, match=re.escape(reason)):
        validate_unsecured_token(token, int(NOW * 1000), UnsecuredValidatorOptions())


def test_a_string_scope_is_one_element_and_a_list_several() -> None:
    """Kafka reads a string scope claim as one scope (trimmed), a list as its items."""
    options = UnsecuredValidatorOptions()
    one = jws({"alg": "none"}, {"sub": "a", "exp": NOW + 9, "scope": " read write "})
    many = jws({"alg": "none"}, {"sub": "a", "exp": NOW + 9, "scope": ["read", " "]})
    assert validate_unsecured_token(one, int(NOW * 1000), options).scope == {
        "read write"
    }
    assert validate_unsecured_token(many, int(NOW * 1000), options).scope == {"read"}


@given(skew_ms=st.integers(0, 10_000), offset_ms=st.integers(-20_000, 20_000))
def test_the_clock_skew_widens_exp_and_iat_exactly(
    skew_ms: int, offset_ms: int
) -> None:
    """A token that expired ``offset_ms`` ago is valid exactly while offset < skew, and
    one issued ``offset_ms`` in the future exactly while offset <= skew."""
    now_ms = int(NOW * 1000)
    options = UnsecuredValidatorOptions(allowable_clock_skew_ms=skew_ms)
    expired = jws({"alg": "none"}, {"sub": "a", "exp": (now_ms - offset_ms) / 1000})
    try:
        validate_unsecured_token(expired, now_ms, options)
        valid = True
    except TokenValidationError:
        valid = False
    assert valid == (offset_ms < skew_ms)
    future = jws(
        {"alg": "none"},
        {"sub": "a", "iat": (now_ms + offset_ms) / 1000, "exp": NOW + 100},
    )
    try:
        validate_unsecured_token(future, now_ms, options)
        valid = True
    except TokenValidationError:
        valid = False
    assert valid == (offset_ms <= skew_ms)


def test_the_validator_options_come_from_kafkas_jaas_keys() -> None:
    """unsecuredValidator* options; a negative skew is refused as Kafka does."""
    options = UnsecuredValidatorOptions.from_jaas_options(
        {
            "unsecuredValidatorPrincipalClaimName": "upn",
            "unsecuredValidatorRequiredScope": "a b",
            "unsecuredValidatorAllowableClockSkewMs": "500",
        }
    )
    assert options == UnsecuredValidatorOptions("upn", "scope", ("a", "b"), 500)
    with pytest.raises(ValueError, match="must not be negative"):
        UnsecuredValidatorOptions.from_jaas_options(
            {"unsecuredValidatorAllowableClockSkewMs": "-1"}
        )
