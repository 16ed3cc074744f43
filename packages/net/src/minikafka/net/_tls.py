"""TLS inside the channel: Kafka's ``SslTransportLayer``, on trio's ``SSLStream``.

Seed 000's Selector gives each connection a transport layer under the framing; on an
``SSL`` listener it is TLS. Here the Processor wraps the accepted socket in a
``trio.SSLStream`` (:meth:`TlsListener.wrap`) and the connection reads and writes that
stream: the frame decoder, muting and the MemoryPool see plaintext bytes exactly as on a
PLAINTEXT listener. Before its first read the connection completes the handshake
(:func:`tls_handshake`); a client that presents a certificate the broker's trust store
vouches for is the principal its subject maps to (``ssl.principal.mapping.rules``), a
client with none (``ssl.client.auth`` ``none`` or ``requested``) is ``User:ANONYMOUS``.

A handshake that fails (a plaintext client, an expired or untrusted certificate with
``ssl.client.auth=required``, a subject no rule maps) is Kafka's failed authentication:
one INFO line, the connection closed, every other connection served as before.
"""

from __future__ import annotations

import ssl

import attrs
import trio

from minikafka.security import (
    ANONYMOUS,
    KafkaPrincipal,
    NoMatchingRuleError,
    SslPrincipalMapper,
    distinguished_name,
)

from ._ssl_config import SslSettings


class TlsHandshakeFailed(Exception):
    """The TLS handshake, or the principal of its certificate, failed: the reason."""


@attrs.frozen
class TlsListener:
    """What a listener that speaks TLS wraps each connection with."""

    context: ssl.SSLContext
    mapper: SslPrincipalMapper

    @classmethod
    def from_settings(cls, settings: SslSettings) -> TlsListener:
        return cls(settings.server_context(), settings.principal_mapper())

    def wrap(self, stream: trio.abc.Stream) -> trio.SSLStream[trio.abc.Stream]:
        # https_compatible: a client that closes without TLS's close_notify ends the
        # stream like a TCP close; the framing already tells a truncated request.
        return trio.SSLStream(
            stream, self.context, server_side=True, https_compatible=True
        )


async def tls_handshake(
    stream: trio.SSLStream[trio.abc.Stream], mapper: SslPrincipalMapper, seconds: float
) -> KafkaPrincipal:
    """Complete the server's handshake within ``seconds`` (``connections.max.idle.ms``:
    a client that connects and says nothing is idle); the principal of the client's
    certificate (Kafka's ``SslAuthenticator`` with ``DefaultKafkaPrincipalBuilder``)."""
    try:
        with trio.fail_after(seconds):
            await stream.do_handshake()
    except trio.TooSlowError:
        raise TlsHandshakeFailed(
            "no handshake within connections.max.idle.ms"
        ) from None
    except trio.BrokenResourceError as e:
        cause = e.__cause__
        reason = getattr(cause, "reason", None) or str(cause or e) or "connection lost"
        raise TlsHandshakeFailed(str(reason)) from None
    certificate = stream.getpeercert()
    if not certificate:
        return ANONYMOUS  # no certificate asked for, or none given when only requested
    subject = distinguished_name(certificate.get("subject", ()))
    try:
        return mapper.principal(subject)
    except NoMatchingRuleError as e:
        raise TlsHandshakeFailed(str(e)) from None
