"""SASL inside the channel: the shell of ``minikafka.security``'s authenticator.

On a ``SASL_PLAINTEXT`` or ``SASL_SSL`` listener each connection owns a
``SaslServerAuthenticator`` (the core: Kafka's ``SaslServerAuthenticator`` as a state
table) and every request the connection reads passes through :meth:`SaslChannel.gate`
before the RequestChannel. The core says what to do, as values; this shell does it:

- ``Respond``: answer the SaslHandshake or SaslAuthenticate here, through the request's
  own response path (the Processor writes it, the connection unmutes as for any
  answer); the broker's handlers never see the exchange;
- ``Forward`` and ``AnswerApiVersions``: the request goes on to the handlers, which
  answer ApiVersions as on any listener, and everything else once authenticated;
- ``Authenticated``: the connection's principal is the user the mechanism proved, and
  each later request carries it;
- ``AuthenticationFailed``: counted and logged once (Kafka's Selector), and the close
  waits ``connection.failed.authentication.delay.ms`` after the error is written;
- ``Close``: a request out of order (anything but ApiVersions or SaslHandshake first,
  as Kafka's authenticator), or a session past its end (KIP-368): closed at once.

After SaslHandshake v0 the tokens are bare size-prefixed frames, not requests
(:meth:`SaslChannel.bare_token`). ``now`` given to the core is the wall clock: tokens
expire at a time of day.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from minikafka.security import (
    AnswerApiVersions,
    Authenticated,
    AuthenticationFailed,
    Close,
    Forward,
    Respond,
    RespondWithError,
    SaslServer,
    SaslServerAuthenticator,
    SaslState,
    SendToken,
    authenticate_response,
    handshake_response,
)

from ._api_keys import ApiKey
from ._framing import SIZE_PREFIX
from ._request import Request
from ._sasl_config import SaslSettings

if TYPE_CHECKING:
    from ._connection import KafkaChannel


class SaslClose(Exception):
    """Close the connection now (the reason)."""


@attrs.define(eq=False)
class SaslListener:
    """A SASL listener's settings with its mechanisms built once (SCRAM's credentials
    are derived at start-up, not per connection)."""

    settings: SaslSettings
    factories: dict[str, Callable[[], SaslServer]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.factories = self.settings.mechanisms()

    def channel(self) -> SaslChannel:
        """A new connection's SASL state."""
        return SaslChannel(
            SaslServerAuthenticator(self.settings.config, self.factories)
        )


@attrs.define(eq=False)
class SaslChannel:
    """One connection's SASL state, and what its shell does with the core's answers."""

    authenticator: SaslServerAuthenticator
    failure: str | None = None
    """A failed authentication's message, once the core reported it."""
    close_delay: float | None = None
    """Seconds to wait after the error is written before closing (failed authentication)."""

    def gate(self, connection: KafkaChannel, request: Request) -> bool:
        """Whether ``request`` goes on to the handlers; False: it was answered here.

        Raises :class:`SaslClose` when the connection must close now.
        """
        if request.body is None:
            # An ApiVersions at a version we cannot read: the handler answers it
            # (UNSUPPORTED_VERSION, KIP-511), and the exchange has not moved.
            return True
        now = time.time()
        forward = False
        for action in self.authenticator.receive(request.body, now).replies:
            if isinstance(action, Forward | AnswerApiVersions):
                forward = True
            elif isinstance(action, Respond):
                request.respond(action.response)
            elif isinstance(action, RespondWithError):
                request.respond(_error_response(request, action))
            elif isinstance(action, Authenticated):
                connection.principal = action.principal
            elif isinstance(action, AuthenticationFailed):
                self.failure = action.message
                self.close_delay = max(0.0, action.close_at - now)
            elif isinstance(action, Close):
                if not request.responded:
                    raise SaslClose(action.reason)
                self.close_delay = 0.0
        if not forward:
            request.release_buffer()  # answered here: no handler will release it
        return forward

    def too_large(self, size: int) -> bool:
        """Whether a frame of ``size`` bytes fails the exchange: before authentication
        a frame may not exceed ``sasl.server.max.receive.size`` (Kafka's
        ``InvalidReceiveException``); ``failure`` and ``close_delay`` say how it ends."""
        authenticator = self.authenticator
        if (
            authenticator.state is SaslState.COMPLETE
            or size <= authenticator.config.max_receive_size
        ):
            return False
        now = time.time()
        for action in authenticator.receive_too_large(size, now).replies:
            if isinstance(action, AuthenticationFailed):
                self.failure = action.message
                self.close_delay = max(0.0, action.close_at - now)
            elif isinstance(action, Close):
                self.close_delay = 0.0
        return True

    async def takes_frame(self, connection: KafkaChannel, frame: bytes) -> bool:
        """Whether the exchange takes ``frame`` itself: a bare token after SaslHandshake
        v0 (answered here); one over ``sasl.server.max.receive.size`` fails it."""
        if self.too_large(len(frame)):
            raise SaslClose(await self.close_after_failure(connection))
        if not self.authenticator.expects_bare_tokens:
            return False
        await self.bare_token(connection, frame)
        return True

    async def bare_token(self, connection: KafkaChannel, token: bytes) -> None:
        """A token after SaslHandshake v0, answered with a bare size-prefixed frame.

        Raises :class:`SaslClose` to close (after the delay, if authentication failed).
        """
        now = time.time()
        answer: bytes | None = None
        for action in self.authenticator.receive(token, now).replies:
            if isinstance(action, SendToken):
                answer = action.token
            elif isinstance(action, Authenticated):
                connection.principal = action.principal
            elif isinstance(action, AuthenticationFailed):
                self.failure = action.message
                self.close_delay = max(0.0, action.close_at - now)
            elif isinstance(action, Close):
                raise SaslClose(action.reason)
        if answer is not None:
            await connection.stream.send_all(SIZE_PREFIX.pack(len(answer)) + answer)
        if self.close_delay is not None:
            raise SaslClose(await self.close_after_failure(connection))

    async def close_after_failure(self, connection: KafkaChannel) -> str:
        """A failed authentication, its error written: counted and logged once, then the
        wait of ``connection.failed.authentication.delay.ms``; the close reason."""
        if self.failure is not None:
            connection.processor.authentication_failed(
                connection, f"Authentication failed: {self.failure}"
            )
        await trio.sleep(self.close_delay or 0.0)
        return "failed authentication" if self.failure else "SASL"


def _error_response(request: Request, action: RespondWithError) -> ResponsePayload:
    version = request.api_version
    if request.api_key == ApiKey.SASL_HANDSHAKE:
        return handshake_response(version, action.error_code, ())
    return authenticate_response(version, action.error_code, action.message, b"", 0)


def answer_without_sasl(request: Request) -> None:
    """SaslHandshake or SaslAuthenticate on a connection that is not in a SASL exchange
    (a PLAINTEXT or SSL listener): ILLEGAL_SASL_STATE, as Kafka's ``KafkaApis``."""
    version = request.api_version
    if request.api_key == ApiKey.SASL_HANDSHAKE:
        request.respond(handshake_response(version, ErrorCode.illegal_sasl_state, ()))
        return
    request.respond(
        authenticate_response(
            version,
            ErrorCode.illegal_sasl_state,
            "SaslAuthenticate request received after successful authentication",
            b"",
            0,
        )
    )
