"""The client side of SASL: which mechanism a client's configuration names, with which
credentials, and the tokens it sends (Kafka's ``SaslClientAuthenticator`` before IO,
``JaasContext.loadClientContext`` and the client login modules' options).

A client names its mechanism with ``sasl.mechanism`` and its credentials with
``sasl.jaas.config`` (``PlainLoginModule``/``ScramLoginModule``: ``username`` and
``password``; ``OAuthBearerLoginModule``: ``unsecuredLoginStringClaim_sub`` for an
unsecured token, KIP-255) or, as librdkafka and later Java clients allow, with
``sasl.username``/``sasl.password``. Each mechanism is a :class:`SaslClient`: its
first token, then one answer per server challenge until it is complete. The exchange
itself (SaslHandshake, then SaslAuthenticate per token) is the network client's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

import attrs

from ._oauthbearer import OAUTHBEARER, client_initial_response, unsecured_token
from ._plain import PLAIN, plain_client_message
from ._sasl import SaslAuthenticationError, parse_jaas_config
from ._scram import ScramSaslClient
from ._scram_formatter import SCRAM_MECHANISMS

CLIENT_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS, OAUTHBEARER)
"""The mechanisms this client speaks."""

_KVSEP = b"\x01"


class SaslClient(Protocol):
    """One client exchange: :meth:`initial_response`, then :meth:`evaluate_challenge`
    for each server token until :attr:`complete`."""

    @property
    def complete(self) -> bool: ...

    def initial_response(self) -> bytes: ...

    def evaluate_challenge(self, challenge: bytes) -> bytes: ...


class PlainSaslClient:
    """PLAIN's one message; complete once it is sent."""

    def __init__(self, username: str, password: str) -> None:
        self._message = plain_client_message(username, password)
        self.complete = False

    def initial_response(self) -> bytes:
        self.complete = True
        return self._message

    def evaluate_challenge(self, challenge: bytes) -> bytes:
        raise SaslAuthenticationError("PLAIN expects no challenge from the server")


class ScramClient:
    """:class:`~._scram.ScramSaslClient` seen as a :class:`SaslClient`."""

    def __init__(self, scram: ScramSaslClient) -> None:
        self._scram = scram

    @property
    def complete(self) -> bool:
        return self._scram.complete

    def initial_response(self) -> bytes:
        return self._scram.first_message()

    def evaluate_challenge(self, challenge: bytes) -> bytes:
        return self._scram.evaluate_challenge(challenge)


class OAuthBearerClient:
    """OAUTHBEARER (RFC 7628) with a token: one message; a non-empty challenge is the
    server's error JSON, answered with a lone separator so the server fails the
    exchange (Kafka's ``OAuthBearerSaslClient``)."""

    def __init__(self, token: str) -> None:
        self._token = token
        self.complete = False
        self.server_error = ""

    def initial_response(self) -> bytes:
        return client_initial_response(self._token)

    def evaluate_challenge(self, challenge: bytes) -> bytes:
        if challenge:
            self.server_error = challenge.decode("utf-8", "replace")
            return _KVSEP
        self.complete = True
        return b""


@attrs.frozen
class SaslClientSettings:
    """A client's ``sasl.mechanism`` and the credentials its configuration gives."""

    mechanism: str
    username: str = ""
    password: str = attrs.field(default="", repr=False)
    token_principal: str = ""
    token_lifetime_seconds: float = 3600

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> SaslClientSettings:
        """Read ``sasl.mechanism`` (default GSSAPI, refused), ``sasl.jaas.config``,
        ``sasl.username``/``sasl.password``; ValueError names the key at fault."""
        mechanism = config.get("sasl.mechanism", "GSSAPI").strip()
        if mechanism not in CLIENT_MECHANISMS:
            raise ValueError(
                f"sasl.mechanism: {mechanism!r} is not one of "
                + ", ".join(CLIENT_MECHANISMS)
            )
        options: dict[str, str] = {}
        jaas = config.get("sasl.jaas.config", "").strip()
        if jaas:
            try:
                _module, options = parse_jaas_config(jaas)
            except ValueError as e:
                raise ValueError(f"sasl.jaas.config: {e}") from None
        username = options.get("username", config.get("sasl.username", ""))
        password = options.get("password", config.get("sasl.password", ""))
        if mechanism == OAUTHBEARER:
            principal = options.get("unsecuredLoginStringClaim_sub", username)
            if not principal:
                raise ValueError(
                    "sasl.jaas.config: OAUTHBEARER needs unsecuredLoginStringClaim_sub"
                )
            lifetime = options.get("unsecuredLoginLifetimeSeconds", "3600")
            return cls(mechanism, token_principal=principal,
                       token_lifetime_seconds=float(lifetime))  # fmt: skip
        if not username or not password:
            raise ValueError(
                "sasl.jaas.config: "
                f"{mechanism} needs a username and a password (or sasl.username and "
                "sasl.password)"
            )
        return cls(mechanism, username, password)

    def client(self, now: float) -> SaslClient:
        """A new exchange; ``now`` (epoch seconds) dates an unsecured token."""
        if self.mechanism == PLAIN:
            return PlainSaslClient(self.username, self.password)
        if self.mechanism == OAUTHBEARER:
            # Whole milliseconds, truncated, as Kafka's login handler dates a token, and
            # one earlier: the broker refuses an ``iat`` after its own clock, and a time
            # rounded up, or a float a hair above the millisecond, would be that for a
            # broker answering within the same millisecond.
            issued = (math.floor(now * 1000) - 1) / 1000
            token = unsecured_token(
                self.token_principal, issued, self.token_lifetime_seconds
            )
            return OAuthBearerClient(token)
        scram = SCRAM_MECHANISMS[self.mechanism]
        return ScramClient(ScramSaslClient(scram, self.username, self.password))
