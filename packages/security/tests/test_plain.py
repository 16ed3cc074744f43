"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer, and JAAS config parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.security import (
    PlainSaslServer,
    SaslAuthenticationError,
    SaslError,
    parse_jaas_config,
    plain_client_message,
    plain_users,
)

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice \\"quoted\\" secret";'
)

field = st.text(st.characters(codec="utf-8", blacklist_characters="\x00"), min_size=1)


def test_the_jaas_config_gives_each_user_option_as_a_user() -> None:
    """``user_<name>="<password>"`` options are the users; quotes may be escaped."""
    module, options = parse_jaas_config(JAAS)
    assert module.endswith("PlainLoginModule")
    assert options["username"] == "admin"
    assert plain_users(JAAS) == {
        "admin": "admin-secret",
        "alice": 'alice "quoted" secret',
    }


@pytest.mark.parametrize(
    "bad", ["PlainLoginModule", 'x required a="b"', "x required a=;"]
)
def test_a_malformed_jaas_config_is_refused(bad: str) -> None:
    """No control flag, or no closing semicolon: a configuration error."""
    with pytest.raises(ValueError, match="JAAS config"):
        parse_jaas_config(bad)


@given(field, field)
def test_the_right_password_authenticates_any_user(user: str, password: str) -> None:
    """Any user (no NUL) with its password completes in one message, empty challenge."""
    server = PlainSaslServer({user: password})
    assert server.evaluate_response(plain_client_message(user, password), 0.0) == b""
    assert server.complete
    assert server.authorization_id() == user
    assert server.credential_lifetime_ms() is None


@pytest.mark.parametrize(
    ("message", "error", "text"),
    [
        (
            b"\x00alice\x00wrong",
            SaslAuthenticationError,
            "Invalid username or password",
        ),
        (b"\x00nobody\x00x", SaslAuthenticationError, "Invalid username or password"),
        (b"\x00\x00pw", SaslError, "username not specified"),
        (b"\x00alice\x00", SaslError, "password not specified"),
        (b"alice", SaslError, "username not specified"),
        (
            b"bob\x00alice\x00alice-secret",
            SaslAuthenticationError,
            "different from username",
        ),
    ],
)
def test_each_bad_message_fails_with_kafkas_reason(
    message: bytes, error: type[Exception], text: str
) -> None:
    """PlainSaslServer's checks in its order, each with its exception kind (whether the
    client sees the text) and message."""
    server = PlainSaslServer({"alice": "alice-secret"})
    with pytest.raises(error, match=text):
        server.evaluate_response(message, 0.0)
    assert not server.complete


def test_an_authorization_id_equal_to_the_user_is_accepted() -> None:
    """RFC 4616's authzid may name the user itself."""
    server = PlainSaslServer({"alice": "s"})
    server.evaluate_response(plain_client_message("alice", "s", authzid="alice"), 0.0)
    assert server.authorization_id() == "alice"


def test_what_follows_a_third_nul_is_not_part_of_the_password() -> None:
    """Kafka splits into three tokens and drops the rest, so ``s\\x00junk`` is ``s``."""
    server = PlainSaslServer({"alice": "s"})
    server.evaluate_response(b"\x00alice\x00s\x00junk", 0.0)
    assert server.complete
