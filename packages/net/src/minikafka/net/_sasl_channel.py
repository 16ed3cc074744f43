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

import attrs
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from minikafka.security import (
    AnswerApiVersions,
    Authenticated,
    AuthenticationFailed,
    Close,
    Forward,
    KafkaPrincipal,
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
from ._request import Request
from ._sasl_config import SaslSettings


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
    principal: KafkaPrincipal | None = None
    """Set when an exchange completes: the connection takes it."""
    failure: str | None = None
    """A failed authentication's message, once the core reported it."""
    close_delay: float | None = None
    """Seconds to wait after the error is written before closing (failed authentication)."""

    def gate(self, request: Request) -> bool:
        """Whether ``request`` goes on to the handlers; False: it was answered here.

        Raises :class:`SaslClose` when the connection must close now.
        """
        if request.body is None:
            # An ApiVersions at a version we cannot read: the handler answers it
            # (UNSUPPORTED_VERSION, KIP-511), and the exchange has not moved.
            return True
        now = time.time()
        result = self.authenticator.receive(request.body, now)
        forward = False
        for action in result.replies:
            if isinstance(action, Forward | AnswerApiVersions):
                forward = True
            elif isinstance(action, Respond):
                request.respond(action.response)
            elif isinstance(action, RespondWithError):
                request.respond(_error_response(request, action))
            elif isinstance(action, Authenticated):
                self.principal = action.principal
            elif isinstance(action, AuthenticationFailed):
                self.failure = action.message
                self.close_delay = max(0.0, action.close_at - now)
            elif isinstance(action, Close):
                if not request.responded:
                    raise SaslClose(action.reason)
                self.close_delay = 0.0
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

    def bare_token(self, token: bytes) -> bytes | None:
        """A token after SaslHandshake v0; the token to send back, if any.

        Raises :class:`SaslClose` to close now; a failure sets ``failure`` and
        ``close_delay`` as :meth:`gate` does.
        """
        now = time.time()
        answer: bytes | None = None
        for action in self.authenticator.receive(token, now).replies:
            if isinstance(action, SendToken):
                answer = action.token
            elif isinstance(action, Authenticated):
                self.principal = action.principal
            elif isinstance(action, AuthenticationFailed):
                self.failure = action.message
                self.close_delay = max(0.0, action.close_at - now)
            elif isinstance(action, Close):
                raise SaslClose(action.reason)
        return answer


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
