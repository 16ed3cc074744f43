"""What every SASL mechanism shares: its two errors, the server's interface, and JAAS.

Kafka runs each mechanism behind ``javax.security.sasl.SaslServer``: the authenticator
hands it each token the client sent (``evaluate_response``) and sends back what it
returns, until it is complete; then it reads the authorization id (the principal's name)
and, for a token with a lifetime, when the credential expires (KIP-368). A mechanism
fails in one of two ways, and the difference is what the client is told:

- :class:`SaslError` (Java's ``SaslException``): the client is told only
  ``Authentication failed during authentication due to invalid credentials with SASL
  mechanism <name>``, since the detail may say whether a user exists;
- :class:`SaslAuthenticationError` (Kafka's ``SaslAuthenticationException``): the message
  is safe to show and is sent as the response's ``error_message``.

Configuration comes as a JAAS line per mechanism
(``listener.name.<listener>.<mechanism>.sasl.jaas.config``), whose options are read here.
"""

from __future__ import annotations

import re
from typing import Protocol

from kio.schema.errors import ErrorCode

from minikafka.common import ApiError


class SaslError(Exception):
    """A failed exchange whose detail stays on the broker (Java's ``SaslException``)."""


class SaslAuthenticationError(ApiError):
    """A failed exchange whose message the client is sent (Kafka's
    ``SaslAuthenticationException``, SASL_AUTHENTICATION_FAILED)."""

    error_code = ErrorCode.sasl_authentication_failed


class SaslServer(Protocol):
    """One mechanism's server side of one exchange (``javax.security.sasl.SaslServer``).

    ``now`` is seconds since the epoch: a token's lifetime is a time of day.
    """

    @property
    def mechanism_name(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    def evaluate_response(self, response: bytes, now: float) -> bytes:
        """The challenge for the client's token; raises :class:`SaslError` or
        :class:`SaslAuthenticationError` when authentication fails."""
        ...

    def authorization_id(self) -> str:
        """The name the session is for, once complete."""
        ...

    def credential_lifetime_ms(self) -> int | None:
        """When the credential expires (epoch ms), for a mechanism whose credentials
        do (OAUTHBEARER's token, SCRAM's delegation token), else None."""
        ...


class SaslServerFactory(Protocol):
    """Makes a fresh :class:`SaslServer` for each exchange (re-authentication too)."""

    def __call__(self) -> SaslServer: ...


_OPTION = re.compile(r'\s*([A-Za-z_][\w.\-]*)\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s";]+))')
_HEAD = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)")


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """``(login module, options)`` of one ``sasl.jaas.config`` value, e.g.
    ``org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret" user_alice="alice-secret";``
    (Kafka's ``JaasConfig``: one login module, its control flag, ``key=value`` options,
    values quoted or bare, a closing semicolon)."""
    head = _HEAD.match(text)
    if head is None:
        raise ValueError(
            "Login module control flag not specified in JAAS config: " + text.strip()
        )
    rest = text[head.end() :]
    options: dict[str, str] = {}
    position = 0
    while True:
        found = _OPTION.match(rest, position)
        if found is None:
            break
        quoted, bare = found.group(2), found.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        options[found.group(1)] = value
        position = found.end()
    if rest[position:].strip() != ";":
        raise ValueError("Expected ';' at the end of the JAAS config: " + text.strip())
    return head.group(1), options
