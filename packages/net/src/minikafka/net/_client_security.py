"""How a broker's own clients connect to a listener of another node: TLS and SASL.

Kafka's brokers are clients of each other (the replica fetchers, the broker-to-controller
channel, the ZooKeeper-mode controller's channels to the brokers, the transaction marker
sender, the raft client between controllers); each connects to the listener that traffic
uses (``inter.broker.listener.name``, or the first of ``controller.listener.names``) and
speaks that listener's security protocol with the broker's own settings for it
(``ChannelBuilders.clientChannelBuilder``):

- TLS (``SSL``, ``SASL_SSL``): the listener's ``ssl.*`` keys (``listener.name.<l>.``
  first) in client mode, :meth:`SslSettings.client_context`;
- SASL (``SASL_PLAINTEXT``, ``SASL_SSL``): the mechanism of
  ``sasl.mechanism.inter.broker.protocol`` (or ``sasl.mechanism.controller.protocol``)
  and the ``username`` and ``password`` options of that mechanism's JAAS line on the
  listener, ``listener.name.<l>.<mechanism>.sasl.jaas.config``: the same line whose
  ``user_<name>`` options are the server's users, as in Kafka. The broker authenticates
  as that user, so the principal the other node's authorizer sees is ``User:<username>``
  (put it in ``super.users``).

:class:`ClientSecurity` holds the result; :func:`sasl_exchange` runs the client's side of
SaslHandshake v1 and SaslAuthenticate v2 (KIP-43, KIP-152) over any request sender. A bad
or missing value raises :class:`ConfigError` naming the key, so start-up stops.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Awaitable, Callable, Mapping

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.common import ConfigError
from minikafka.security import (
    OAUTHBEARER,
    PLAIN,
    SaslError,
    ScramSaslClient,
    client_initial_response,
    parse_jaas_config,
    plain_client_message,
    unsecured_token,
)

from ._sasl_config import LOGIN_MODULES, MECHANISMS, SCRAM, jaas_key
from ._ssl_config import SslSettings

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = (
    "PLAINTEXT",
    "SSL",
    "SASL_PLAINTEXT",
    "SASL_SSL",
)
INTER_BROKER_MECHANISM = "sasl.mechanism.inter.broker.protocol"
CONTROLLER_MECHANISM = "sasl.mechanism.controller.protocol"


class AuthenticationError(Exception):
    """The server refused this client's SASL authentication: its reason."""


@attrs.frozen
class ClientSecurity:
    """A broker's client side of one listener: its protocol, TLS context, SASL login."""

    listener: str = PLAINTEXT
    protocol: str = PLAINTEXT
    tls: ssl.SSLContext | None = attrs.field(default=None, eq=False)
    mechanism: str | None = None
    username: str = ""
    password: str = attrs.field(default="", repr=False)
    token_claims: tuple[tuple[str, str], ...] = ()
    """OAUTHBEARER's ``unsecuredLoginStringClaim_*`` options (KIP-255's test tokens)."""

    @classmethod
    def for_listener(
        cls,
        props: Mapping[str, str],
        listener: str,
        protocol: str,
        mechanism_key: str = INTER_BROKER_MECHANISM,
    ) -> ClientSecurity:
        """The client side of ``listener`` (speaking ``protocol``) from the broker's
        keys; ``mechanism_key`` names the SASL mechanism to use on it."""
        tls = None
        if protocol in (SSL, SASL_SSL):
            tls = SslSettings.from_properties(props, listener).client_context()
        if protocol not in (SASL_PLAINTEXT, SASL_SSL):
            return cls(listener, protocol, tls)
        mechanism = props.get(mechanism_key, "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            raise ConfigError(
                mechanism_key,
                f"{mechanism!r} (listener {listener} speaks {protocol}): the mechanisms "
                f"served are {', '.join(MECHANISMS)}"
                + (
                    ""
                    if mechanism_key in props
                    else " (Kafka's default, GSSAPI, is not)"
                ),
            )
        key = jaas_key(listener, mechanism)
        text = props.get(key, "").strip()
        if not text:
            raise ConfigError(
                key,
                f"the broker's own {mechanism} login on listener {listener} is not set: "
                'give the JAAS line username="..." password="..."',
            )
        try:
            module, options = parse_jaas_config(text)
        except ValueError as e:
            raise ConfigError(key, str(e)) from None
        if module != LOGIN_MODULES[mechanism]:
            raise ConfigError(key, f"{mechanism} needs {LOGIN_MODULES[mechanism]}")
        if mechanism == OAUTHBEARER:
            claims = tuple(
                (k.removeprefix("unsecuredLoginStringClaim_"), v)
                for k, v in sorted(options.items())
                if k.startswith("unsecuredLoginStringClaim_")
            )
            if "sub" not in dict(claims):
                raise ConfigError(
                    key, "the broker's token needs unsecuredLoginStringClaim_sub"
                )
            return cls(listener, protocol, tls, mechanism, token_claims=claims)
        missing = [o for o in ("username", "password") if not options.get(o)]
        if missing:
            raise ConfigError(
                key,
                f"the broker's own login needs the {missing[0]} option (the user it "
                f"authenticates as to other nodes on listener {listener})",
            )
        return cls(
            listener,
            protocol,
            tls,
            mechanism,
            options["username"],
            options["password"],
        )

    @property
    def principal(self) -> str:
        """What another node's authorizer sees this client as, for log lines."""
        if self.mechanism == OAUTHBEARER:
            return "User:" + dict(self.token_claims)["sub"]
        if self.mechanism is not None:
            return "User:" + self.username
        return "the certificate's subject" if self.tls else "User:ANONYMOUS"


Send = Callable[[RequestPayload], Awaitable[ResponsePayload | None]]


async def sasl_exchange(send: Send, security: ClientSecurity) -> int:
    """Authenticate with ``security``'s mechanism over ``send`` (a connection's request
    sender, after ApiVersions); the session's lifetime in milliseconds (0: none).
    Raises :class:`AuthenticationError` with the server's reason."""
    mechanism = security.mechanism
    assert mechanism is not None
    handshake = await send(SaslHandshakeRequest(mechanism=mechanism))
    assert isinstance(handshake, SaslHandshakeResponse)
    if handshake.error_code != ErrorCode.none:
        raise AuthenticationError(
            f"the server does not enable {mechanism} (it enables "
            f"{', '.join(handshake.mechanisms) or 'none'})"
        )
    scram = None
    if mechanism == PLAIN:
        message = plain_client_message(security.username, security.password)
    elif mechanism in SCRAM:
        scram = ScramSaslClient(SCRAM[mechanism], security.username, security.password)
        message = scram.first_message()
    else:
        # Issued a millisecond back: the server compares iat (seconds, a float) with
        # its clock in whole milliseconds, so "now" could read as the future.
        issued = (time.time_ns() // 1_000_000 - 1) / 1000
        token = unsecured_token(dict(security.token_claims)["sub"], issued)
        message = client_initial_response(token)
    while True:
        response = await send(SaslAuthenticateRequest(auth_bytes=message))
        assert isinstance(response, SaslAuthenticateResponse)
        if response.error_code != ErrorCode.none:
            raise AuthenticationError(
                f"{mechanism} authentication as {security.principal} failed: "
                f"{response.error_message or response.error_code.name}"
            )
        if mechanism == OAUTHBEARER and response.auth_bytes:
            # RFC 7628 3.2.3: the server's error, which the client acknowledges with
            # a lone separator; the server then fails the exchange.
            reason = response.auth_bytes.decode("utf-8", "replace")
            await send(SaslAuthenticateRequest(auth_bytes=b"\x01"))
            raise AuthenticationError(f"the broker's token was refused: {reason}")
        if scram is not None:
            try:  # the server's first message, then its final one (then b"")
                message = scram.evaluate_challenge(response.auth_bytes)
            except SaslError as e:
                raise AuthenticationError(str(e)) from None
        if scram is None or scram.complete:
            return int(response.session_lifetime.total_seconds() * 1000)
