"""The client's side of a secured connection: ``security.protocol``, TLS to the broker
and the SASL exchange, as Kafka's ``ChannelBuilders.clientChannelBuilder`` sets them up.

One :class:`ClientSecurity` serves both kinds of client, built from each one's keys:

- minikafka's producer, consumer, admin and tools (:meth:`ClientSecurity.from_config`):
  ``security.protocol`` is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; over SSL and
  SASL_SSL the client checks the broker's certificate against ``ssl.truststore.*`` (PEM,
  KIP-651; the system's CAs without one) and, with ``ssl.endpoint.identification.
  algorithm`` ``https`` (Kafka's default since 2.0, KIP-294), its host name; a key
  store (``ssl.keystore.*``) is the client's own certificate for mutual TLS. SASL takes
  ``sasl.mechanism`` and ``sasl.jaas.config`` (or ``sasl.username``/``sasl.password``).
- a broker's own clients of another node (:meth:`ClientSecurity.for_listener`: the
  replica fetchers, the channel to the controller, the transaction marker sender, the
  Raft client, the ZooKeeper-mode controller's channels) speak the protocol of the
  listener that traffic uses, with that listener's ``ssl.*`` keys (``listener.name.<l>.``
  first) in client mode, and log in with the mechanism of
  ``sasl.mechanism.inter.broker.protocol`` (or ``sasl.mechanism.controller.protocol``)
  and the ``username``/``password`` of that mechanism's JAAS line on the listener,
  ``listener.name.<l>.<mechanism>.sasl.jaas.config``: the line whose ``user_<name>``
  options are the server's users, as in Kafka. The other node's authorizer sees
  ``User:<username>`` (put it in ``super.users``).

The NetworkClient calls :meth:`ClientSecurity.wrap` on each new connection and
:meth:`ClientSecurity.authenticate` after ApiVersions, as Kafka's
``SaslClientAuthenticator`` does from KIP-152 on: SaslHandshake v1 names the mechanism,
then one SaslAuthenticate v2 per token of the mechanism's exchange (``minikafka.
security``'s :class:`~minikafka.security.SaslClient`, sans-IO). A failure is Kafka's
``AuthenticationException``, not a retry: a TLS handshake the broker or the client
refuses (:class:`SslAuthenticationFailed`), a mechanism the listener does not enable,
wrong credentials (:class:`SaslAuthenticationFailed`, with the broker's message). A bad
or missing key raises :class:`ConfigError` naming it, before anything connects.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Awaitable, Callable, Mapping

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.common import ApiError, ConfigError
from minikafka.security import (
    OAUTHBEARER,
    SaslClient,
    SaslClientSettings,
    SaslError,
    parse_jaas_config,
)

from ._client_errors import SaslAuthenticationFailed, SslAuthenticationFailed
from ._config import (
    INTER_BROKER_MECHANISM,
    PLAINTEXT,
    SASL_PROTOCOLS,
    SECURITY_PROTOCOLS,
    TLS_PROTOCOLS,
)
from ._sasl_config import LOGIN_MODULES, MECHANISMS, jaas_key
from ._ssl_config import SslSettings

CLIENT_SECURITY_KEYS = frozenset(
    {
        "security.protocol",
        "ssl.endpoint.identification.algorithm",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.certificates",
        "ssl.enabled.protocols",
        "ssl.protocol",
        "ssl.cipher.suites",
        "sasl.mechanism",
        "sasl.jaas.config",
        "sasl.username",
        "sasl.password",
    }
)
"""The security keys a client takes (Kafka's ``CommonClientConfigs`` and ``SslConfigs``
in their PEM form, and librdkafka's ``sasl.username``/``sasl.password``)."""

Send = Callable[[RequestPayload], Awaitable[ResponsePayload | None]]


@attrs.frozen
class ClientSecurity:
    """How a client's connections are secured: the protocol, the TLS context (SSL,
    SASL_SSL) and the SASL login (SASL_PLAINTEXT, SASL_SSL)."""

    protocol: str = PLAINTEXT
    context: ssl.SSLContext | None = attrs.field(default=None, eq=False)
    sasl: SaslClientSettings | None = None
    listener: str = ""
    """The listener of the other nodes a broker's client connects to ("" for a client
    application's)."""

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> ClientSecurity:
        """A client's :data:`CLIENT_SECURITY_KEYS` of ``config`` (others are ignored);
        :class:`ConfigError` names the key at fault."""
        props = {
            k: str(v).strip() for k, v in config.items() if k in CLIENT_SECURITY_KEYS
        }
        protocol = props.get("security.protocol", PLAINTEXT).upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                "security.protocol",
                f"{protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}",
            )
        context = client_context(props) if protocol in TLS_PROTOCOLS else None
        sasl = None
        if protocol in SASL_PROTOCOLS:
            try:
                sasl = SaslClientSettings.from_config(props)
            except ValueError as e:
                key, _, reason = str(e).partition(": ")
                raise ConfigError(key, reason) from None
        return cls(protocol, context, sasl)

    @classmethod
    def for_listener(
        cls,
        props: Mapping[str, str],
        listener: str,
        protocol: str,
        mechanism_key: str = INTER_BROKER_MECHANISM,
    ) -> ClientSecurity:
        """A broker's client of ``listener`` (speaking ``protocol``) on another node,
        from the broker's keys; ``mechanism_key`` names the SASL mechanism to use."""
        context = None
        if protocol in TLS_PROTOCOLS:
            context = SslSettings.from_properties(props, listener).client_context()
        sasl = None
        if protocol in SASL_PROTOCOLS:
            sasl = _broker_login(props, listener, protocol, mechanism_key)
        return cls(protocol, context, sasl, listener)

    @property
    def principal(self) -> str:
        """What the other side's authorizer sees this client as, for log lines."""
        if self.sasl is not None:
            return "User:" + (self.sasl.token_principal or self.sasl.username)
        return "the certificate's subject" if self.context else "User:ANONYMOUS"

    async def wrap(self, stream: trio.abc.Stream, host: str) -> trio.abc.Stream:
        """The stream requests travel on: ``stream`` itself, or TLS over it once the
        handshake is done (:class:`SslAuthenticationFailed` if it fails)."""
        if self.context is None:
            return stream
        secured = trio.SSLStream(
            stream, self.context, server_hostname=host, https_compatible=True
        )
        try:
            await secured.do_handshake()
        except trio.BrokenResourceError as e:
            await trio.aclose_forcefully(secured)
            cause = e.__cause__
            reason = (
                getattr(cause, "verify_message", None)
                or getattr(cause, "reason", None)
                or str(cause or e)
            )
            raise SslAuthenticationFailed(f"SSL handshake failed: {reason}") from None
        return secured

    async def authenticate(self, send: Send) -> int:
        """The SASL exchange over ``send``, a connection's request sender once its
        ApiVersions is answered; the session's lifetime in milliseconds (0: none, or
        no SASL). Raises :class:`SaslAuthenticationFailed` if the broker refuses."""
        if self.sasl is None:
            return 0
        mechanism = self.sasl.mechanism
        answer = await send(SaslHandshakeRequest(mechanism=mechanism))
        if not isinstance(answer, SaslHandshakeResponse):
            raise SaslAuthenticationFailed(
                f"SaslHandshake answered with {type(answer).__name__}",
                ErrorCode.illegal_sasl_state,
            )
        if answer.error_code != ErrorCode.none:
            raise SaslAuthenticationFailed(
                f"Client SASL mechanism '{mechanism}' not enabled in the server, "
                f"enabled mechanisms are {list(answer.mechanisms)}",
                ErrorCode(answer.error_code),
            )
        client = self.sasl.client(time.time())
        token = client.initial_response()
        while True:
            reply = await send(SaslAuthenticateRequest(auth_bytes=token))
            if not isinstance(reply, SaslAuthenticateResponse):
                raise SaslAuthenticationFailed(
                    f"SaslAuthenticate answered with {type(reply).__name__}",
                    ErrorCode.illegal_sasl_state,
                )
            if reply.error_code != ErrorCode.none:
                raise SaslAuthenticationFailed(
                    f"{mechanism} authentication as {self.principal} failed: "
                    f"{reply.error_message or reply.error_code.name}",
                    ErrorCode(reply.error_code),
                )
            next_token = None if client.complete else _next_token(client, reply)
            if next_token is None:
                return int(reply.session_lifetime.total_seconds() * 1000)
            token = next_token


def _next_token(client: SaslClient, reply: SaslAuthenticateResponse) -> bytes | None:
    """The client's answer to the server's token; None once the exchange is complete
    with nothing left to send (SCRAM's server-final verified)."""
    try:
        token = client.evaluate_challenge(reply.auth_bytes)
    except (SaslError, ApiError) as e:
        raise SaslAuthenticationFailed(
            str(e), ErrorCode.sasl_authentication_failed
        ) from None
    return None if client.complete and not token else token


def _broker_login(
    props: Mapping[str, str], listener: str, protocol: str, mechanism_key: str
) -> SaslClientSettings:
    """The broker's own login on ``listener``: the mechanism ``mechanism_key`` names and
    the credentials of that mechanism's JAAS line on the listener."""
    mechanism = props.get(mechanism_key, "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        default = "" if mechanism_key in props else " (Kafka's default, GSSAPI, is not)"
        raise ConfigError(
            mechanism_key,
            f"{mechanism!r} (listener {listener} speaks {protocol}): the mechanisms "
            f"served are {', '.join(MECHANISMS)}{default}",
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
        subject = options.get("unsecuredLoginStringClaim_sub", "")
        if not subject:
            raise ConfigError(
                key, "the broker's token needs unsecuredLoginStringClaim_sub"
            )
        return SaslClientSettings(mechanism, token_principal=subject)
    missing = [o for o in ("username", "password") if not options.get(o)]
    if missing:
        raise ConfigError(
            key,
            f"the broker's own login needs the {missing[0]} option (the user it "
            f"authenticates as to other nodes on listener {listener})",
        )
    return SaslClientSettings(mechanism, options["username"], options["password"])


def client_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """A client application's ``SSLContext`` from its ``ssl.*`` keys: what a broker's
    client of a listener builds (:meth:`SslSettings.client_context`), read from the
    client's own keys."""
    settings = SslSettings(
        "client", tuple((k, k, v) for k, v in props.items() if k.startswith("ssl."))
    )
    return settings.client_context()
