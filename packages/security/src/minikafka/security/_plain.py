"""SASL/PLAIN (RFC 4616), Kafka's ``PlainSaslServer`` and ``PlainLoginModule``.

One message from the client, ``[authzid] NUL authcid NUL passwd`` in UTF-8; the server
checks the password against the users of its JAAS config (``user_<name>="<password>"``,
Kafka's ``PlainServerCallbackHandler``) and refuses an authorization id other than the
user's own. The password travels as it is, so PLAIN belongs on ``SASL_SSL``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from ._sasl import SaslAuthenticationError, SaslError, parse_jaas_config

PLAIN = "PLAIN"


def plain_users(jaas_config: str) -> dict[str, str]:
    """The users of a ``PlainLoginModule`` JAAS config: each ``user_<name>`` option."""
    _module, options = parse_jaas_config(jaas_config)
    return {
        key.removeprefix("user_"): value
        for key, value in options.items()
        if key.startswith("user_")
    }


def _split3(text: str) -> list[str]:
    """Three tokens at the first two NULs; what follows a third NUL is dropped, and a
    missing token is empty (as ``PlainSaslServer.split``)."""
    tokens = text.split("\x00", 3)[:3]
    return tokens + [""] * (3 - len(tokens))


class PlainSaslServer:
    """The server side of one PLAIN exchange."""

    mechanism_name = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._authorization_id is not None

    def evaluate_response(self, response: bytes, now: float) -> bytes:
        if self.complete:
            raise SaslError("PLAIN authentication already complete")
        authzid, username, password = _split3(response.decode("utf-8", "replace"))
        if not username:
            raise SaslError("Authentication failed: username not specified")
        if not password:
            raise SaslError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # compare_digest: the time taken does not tell how much of a password was right.
        if expected is None or not hmac.compare_digest(
            expected.encode(), password.encode()
        ):
            raise SaslAuthenticationError(
                "Authentication failed: Invalid username or password"
            )
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self._authorization_id = username
        return b""

    def authorization_id(self) -> str:
        if self._authorization_id is None:
            raise RuntimeError("Authentication exchange has not completed")
        return self._authorization_id

    def credential_lifetime_ms(self) -> int | None:
        return None


def plain_client_message(username: str, password: str, authzid: str = "") -> bytes:
    """The client's one message (Kafka's ``PlainSaslClient``, authzid empty)."""
    return f"{authzid}\x00{username}\x00{password}".encode()
