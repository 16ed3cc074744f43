"""The client's side of a secured connection: ``security.protocol``, TLS to the broker
and the SASL exchange, as Kafka's ``ChannelBuilders.clientChannelBuilder`` sets them up.

``security.protocol`` is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. Over SSL and
SASL_SSL the client checks the broker's certificate against ``ssl.truststore.*`` (PEM,
KIP-651; the system's CAs without one) and, with ``ssl.endpoint.identification.algorithm``
``https`` (Kafka's default since 2.0, KIP-294), its host name; a key store
(``ssl.keystore.*``) is the client's own certificate for mutual TLS. Over
SASL_PLAINTEXT and SASL_SSL the client authenticates after ApiVersions, as Kafka's
``SaslClientAuthenticator`` does from KIP-152 on: SaslHandshake v1 names the mechanism,
then one SaslAuthenticate per token of the mechanism's exchange
(``minikafka.security``'s :class:`~minikafka.security.SaslClient`, sans-IO).

A failure is Kafka's ``AuthenticationException``, not a retry: a TLS handshake the broker
or the client refuses (:class:`SslAuthenticationFailed`), a mechanism the listener does
not enable, wrong credentials (:class:`SaslAuthenticationFailed`, with the broker's
message).
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
from minikafka.security import SaslClient, SaslClientSettings, SaslError

from ._client import ClientError
from ._ssl_config import SslSettings, _pem_text

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
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


class AuthenticationFailed(ClientError, ApiError):
    """Kafka's ``AuthenticationException``: the connection was refused at
    authentication; retrying with the same configuration cannot succeed. A
    :class:`~._client.ClientError`, so whoever handles a failed connection handles it;
    ``error_code`` says which of Kafka's errors it is."""

    def __init__(self, message: str, error_code: ErrorCode) -> None:
        super().__init__(message)
        self.error_code = error_code


class SslAuthenticationFailed(AuthenticationFailed):
    """Kafka's ``SslAuthenticationException``: the TLS handshake failed."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.sasl_authentication_failed)


class SaslAuthenticationFailed(AuthenticationFailed):
    """Kafka's ``SaslAuthenticationException`` (or, for a mechanism the broker does
    not enable, ``UnsupportedSaslMechanismException``)."""


Send = Callable[[RequestPayload], Awaitable[ResponsePayload | None]]


@attrs.frozen
class ClientSecurity:
    """What a client's configuration says about the security of its connections."""

    protocol: str = "PLAINTEXT"
    context: ssl.SSLContext | None = None
    sasl: SaslClientSettings | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> ClientSecurity:
        """Read the :data:`CLIENT_SECURITY_KEYS` of ``config`` (others are ignored);
        :class:`ConfigError` names the key at fault."""
        props = {
            k: str(v).strip() for k, v in config.items() if k in CLIENT_SECURITY_KEYS
        }
        protocol = props.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                "security.protocol",
                f"{protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}",
            )
        context = client_context(props) if protocol.endswith("SSL") else None
        sasl = None
        if protocol.startswith("SASL"):
            try:
                sasl = SaslClientSettings.from_config(props)
            except ValueError as e:
                key, _, reason = str(e).partition(": ")
                raise ConfigError(key, reason) from None
        return cls(protocol, context, sasl)

    async def wrap(
        self, stream: trio.SocketStream, host: str
    ) -> trio.abc.HalfCloseableStream | trio.SSLStream[trio.SocketStream]:
        """The stream requests travel on: ``stream`` itself, or TLS over it once the
        handshake is done (:class:`SslAuthenticationFailed` if it fails)."""
        if self.context is None:
            return stream
        secured = trio.SSLStream(stream, self.context, server_hostname=host)
        try:
            await secured.do_handshake()
        except trio.BrokenResourceError as e:
            cause = e.__cause__
            reason = getattr(cause, "reason", None) or str(cause or e)
            raise SslAuthenticationFailed(
                f"SSL handshake with {host} failed: {reason}"
            ) from None
        return secured

    async def authenticate(self, send: Send) -> None:
        """The SASL exchange on a connection whose ApiVersions is answered; returns once
        the broker accepts, raises :class:`SaslAuthenticationFailed` if it refuses."""
        if self.sasl is None:
            return
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
                    reply.error_message or f"{mechanism} authentication failed",
                    ErrorCode(reply.error_code),
                )
            if client.complete:
                return
            next_token = _next_token(client, reply.auth_bytes)
            if next_token is None:
                return
            token = next_token


def _next_token(client: SaslClient, challenge: bytes) -> bytes | None:
    """The client's answer to ``challenge``; None once the exchange is complete with
    nothing left to send (SCRAM's server-final verified)."""
    try:
        token = client.evaluate_challenge(challenge)
    except (SaslError, ApiError) as e:
        raise SaslAuthenticationFailed(
            str(e), ErrorCode.sasl_authentication_failed
        ) from None
    return None if client.complete and not token else token


def client_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The client's ``SSLContext`` (Kafka's ``DefaultSslEngineFactory`` in client mode):
    the enabled protocols and suites as a listener reads them, the trust store (the
    system's CAs without one), the key store if one is set (mutual TLS), and host name
    verification unless ``ssl.endpoint.identification.algorithm`` is empty."""
    settings = SslSettings(
        "client", tuple((k, k, v) for k, v in props.items() if k.startswith("ssl."))
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    settings._protocols(context)
    settings._cipher_suites(context)
    has_key = any(
        settings.get(k)
        for k in (
            "ssl.keystore.location",
            "ssl.keystore.key",
            "ssl.keystore.certificate.chain",
        )
    )
    if has_key:
        settings._key_store(context)
    for key in ("ssl.truststore.type", "ssl.keystore.type"):
        if settings.get(key, "PEM").upper() != "PEM":
            raise ConfigError(key, "only PEM stores are supported (KIP-651)")
    location = settings.get("ssl.truststore.location")
    certificates = settings.get("ssl.truststore.certificates")
    try:
        if location:
            context.load_verify_locations(cafile=location)
        elif certificates:
            context.load_verify_locations(cadata=_pem_text(certificates))
        else:
            context.load_default_certs()
    except (ssl.SSLError, OSError, ValueError) as e:
        key = "ssl.truststore.location" if location else "ssl.truststore.certificates"
        raise ConfigError(key, f"cannot load the trust store ({e})") from None
    algorithm = settings.get("ssl.endpoint.identification.algorithm", "https")
    if algorithm.lower() not in ("https", ""):
        raise ConfigError(
            "ssl.endpoint.identification.algorithm",
            f"{algorithm!r}: only https or empty (no host name check) is known",
        )
    context.check_hostname = algorithm.lower() == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    return context
