"""The SASL server authenticator: a connection's exchange before its first real request,
Kafka's ``SaslServerAuthenticator`` as a core.

A ``SASL_PLAINTEXT`` or ``SASL_SSL`` connection must authenticate before anything else.
The client may ask ApiVersions first (KIP-35), then sends SaslHandshake (KIP-43) naming
a mechanism; with SaslHandshake v0 the mechanism's tokens follow as bare size-prefixed
frames, with v1 each travels in a SaslAuthenticate request (KIP-152). Once the mechanism
is complete the connection has a principal and, with ``connections.max.reauth.ms`` or a
credential that expires, a session lifetime (KIP-368), told to SaslAuthenticate v1+
clients as ``session_lifetime_ms``: before it ends such a client re-authenticates on the
same connection, with the same mechanism and principal; a request that arrives after it
ends closes the connection. An authentication that fails is answered with Kafka's error
and the connection is closed ``connection.failed.authentication.delay.ms`` later, so a
client guessing passwords cannot try as fast as it can connect.

Inputs are decoded requests (kio's classes; ``bytes`` for a frame that is not a
request, or a v0 token) and ``now`` (epoch seconds); outputs are values in a
``CoreResult``'s replies: responses to send, the ApiVersions answer to give, the
authenticated principal, the close to carry out. The states are Kafka's ``SaslState``
(its transient ``HANDSHAKE_OR_VERSIONS_REQUEST`` and ``REAUTH_PROCESS_HANDSHAKE`` are
the moments a row of :data:`TRANSITIONS` is taken, not states a connection rests in).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from typing import Any, Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult

from . import _authenticator_io as io
from ._authenticator_io import (
    AnswerApiVersions,
    AuthAction,
    Authenticated,
    AuthenticationFailed,
    Close,
    Forward,
    Respond,
    RespondWithError,
    SendToken,
)
from ._principal import USER_TYPE, KafkaPrincipal
from ._sasl import SaslAuthenticationError, SaslError, SaslServer

AuthResult = CoreResult[Never, AuthAction, Never]

NONE = ErrorCode.none
UNSUPPORTED_MECHANISM = ErrorCode.unsupported_sasl_mechanism
ILLEGAL_SASL_STATE = ErrorCode.illegal_sasl_state
FAILED = ErrorCode.sasl_authentication_failed


class SaslState(enum.Enum):
    """``SaslServerAuthenticator.SaslState``."""

    INITIAL_REQUEST = "INITIAL_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"
    FAILED = "FAILED"


class Received(enum.Enum):
    """What arrived, as the authenticator tells requests apart."""

    API_VERSIONS = "ApiVersions"
    HANDSHAKE = "SaslHandshake"
    AUTHENTICATE = "SaslAuthenticate"
    TOKEN = "a bare token"
    OTHER = "another request"


S, R = SaslState, Received
TRANSITIONS: dict[SaslState, dict[Received, tuple[SaslState, ...]]] = {
    S.INITIAL_REQUEST: {
        R.API_VERSIONS: (S.HANDSHAKE_REQUEST,),
        R.HANDSHAKE: (S.AUTHENTICATE,),
    },
    S.HANDSHAKE_REQUEST: {R.HANDSHAKE: (S.AUTHENTICATE,)},
    S.AUTHENTICATE: {
        R.AUTHENTICATE: (S.AUTHENTICATE, S.COMPLETE),
        R.TOKEN: (S.AUTHENTICATE, S.COMPLETE),
    },
    S.COMPLETE: {
        R.HANDSHAKE: (S.AUTHENTICATE, S.REAUTH_BAD_MECHANISM, S.COMPLETE),
        R.API_VERSIONS: (S.COMPLETE,),
        R.AUTHENTICATE: (S.COMPLETE,),
        R.OTHER: (S.COMPLETE,),
    },
    S.REAUTH_BAD_MECHANISM: {},
    S.FAILED: {},
}
"""Each state's requests and the states a success may lead to; a request a state does
not list fails the connection, and any failure leads to FAILED. In COMPLETE a handshake
starts re-authentication (for a client that showed it can: SaslAuthenticate v1+), and
what is not the exchange's goes on to the broker while the session lasts."""

INVALID_FIRST_REQUEST = (
    "Invalid request, potential reasons: kafka client configured with the wrong "
    "security protocol, it does not support KIP-43 or it is not a kafka client."
)


@attrs.frozen
class SaslServerConfig:
    """A listener's SASL settings, with Kafka's keys and defaults."""

    enabled_mechanisms: tuple[str, ...]
    """``sasl.enabled.mechanisms`` (Kafka's default: GSSAPI, which is not built here)."""
    connections_max_reauth_ms: int = 0
    """``connections.max.reauth.ms``: 0, sessions do not expire for a lack of it."""
    failed_authentication_delay_ms: int = 100
    """``connection.failed.authentication.delay.ms``."""
    max_receive_size: int = 524288
    """``sasl.server.max.receive.size``: the largest frame before authentication."""


def _received(request: object) -> Received:
    if isinstance(request, bytes | bytearray):
        return Received.TOKEN
    api_key = getattr(type(request), "__api_key__", None)
    return {18: R.API_VERSIONS, 17: R.HANDSHAKE, 36: R.AUTHENTICATE}.get(
        api_key if isinstance(api_key, int) else -1, R.OTHER
    )


def _api_name(request: object) -> str:
    """Kafka's ``ApiKeys`` name of a kio request (``MetadataRequest``: METADATA)."""
    if isinstance(request, bytes | bytearray):
        return "a frame that is not a request"
    name = type(request).__name__.removesuffix("Request")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


class SaslServerAuthenticator:
    """One connection's authentication and its session (a core: ``now`` in, values out).

    ``mechanisms`` maps each mechanism this broker can serve to a factory of a fresh
    server exchange; the listener enables those of ``config.enabled_mechanisms``.
    """

    def __init__(
        self,
        config: SaslServerConfig,
        mechanisms: Mapping[str, Callable[[], SaslServer]],
    ) -> None:
        self.config = config
        self._factories = mechanisms
        self.state = SaslState.INITIAL_REQUEST
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self.session_expiration: float | None = None
        """When the session ends (epoch seconds), or None: it does not."""
        self.supports_reauthentication = False
        self._v1_headers = False
        self._server: SaslServer | None = None
        self._previous: tuple[str, KafkaPrincipal] | None = None
        self._bad_mechanism_message = ""
        self._close_at: float | None = None

    @property
    def expects_bare_tokens(self) -> bool:
        """Whether the next frame is a bare token (after SaslHandshake v0), not a request."""
        return self.state is SaslState.AUTHENTICATE and not self._v1_headers

    @property
    def reauthenticating(self) -> bool:
        return self._previous is not None

    def _text(self) -> str:
        return "re-authentication" if self.reauthenticating else "authentication"

    # --- the driving calls ------------------------------------------------------------

    def receive(self, request: object, now: float) -> AuthResult:
        """One request (or bare frame) of the connection, in its order."""
        kind = _received(request)
        if kind not in TRANSITIONS[self.state]:
            return self._out_of_order(kind, _api_name(request), now)
        if self.state is SaslState.COMPLETE:
            return self._authenticated_request(kind, request, now)
        if kind is R.API_VERSIONS:
            self.state = SaslState.HANDSHAKE_REQUEST
            return CoreResult(replies=(AnswerApiVersions(),))
        if kind is R.HANDSHAKE:
            return self._handshake(request, now)
        return self._token(request, now)

    def receive_too_large(self, size: int, now: float) -> AuthResult:
        """A frame over ``sasl.server.max.receive.size`` before authentication ended."""
        del size  # the message does not say it, as Kafka's does not
        return self._fail(
            "Failing SASL authentication due to invalid receive size", now, ()
        )

    def next_deadline(self) -> float | None:
        """When the close of a failed authentication is due."""
        return self._close_at

    def on_timer(self, now: float) -> AuthResult:
        if self._close_at is None or now < self._close_at:
            return CoreResult()
        self._close_at = None
        return CoreResult(replies=(Close("failed authentication"),))

    def session_expired(self, now: float) -> bool:
        """Whether the session has ended (KIP-368): a request now closes the connection."""
        return self.session_expiration is not None and now >= self.session_expiration

    # --- the steps --------------------------------------------------------------------

    def _out_of_order(self, kind: Received, api: str, now: float) -> AuthResult:
        state = self.state
        if state is SaslState.FAILED:
            return CoreResult()
        if state is SaslState.REAUTH_BAD_MECHANISM:
            return self._fail(self._bad_mechanism_message, now, ())
        if state is SaslState.AUTHENTICATE and kind is not R.TOKEN and self._v1_headers:
            message = (
                f"Unexpected Kafka request of type {api} during SASL authentication."
            )
            return self._fail(
                message, now, (RespondWithError(ILLEGAL_SASL_STATE, message),)
            )
        self.state = SaslState.FAILED
        if kind is R.API_VERSIONS:
            reason = (
                "Unexpected ApiVersions request received during SASL authentication "
                f"state {state.value}"
            )
        elif state is SaslState.INITIAL_REQUEST:
            reason = INVALID_FIRST_REQUEST
        else:
            reason = f"Unexpected Kafka request of type {api} during SASL handshake."
        # Not an authentication failure: Kafka closes at once, with no answer.
        return CoreResult(replies=(Close(reason),))

    def _handshake(self, request: Any, now: float) -> AuthResult:
        mechanism: str = request.mechanism
        version: int = type(request).__version__
        enabled = tuple(
            m for m in self.config.enabled_mechanisms if m in self._factories
        )
        if mechanism not in enabled:
            response = io.handshake_response(version, UNSUPPORTED_MECHANISM, enabled)
            return self._fail(
                f"Unsupported SASL mechanism {mechanism}", now, (Respond(response),)
            )
        self._v1_headers = version >= 1
        reply = (Respond(io.handshake_response(version, NONE, enabled)),)
        if self._previous is not None and mechanism != self._previous[0]:
            self._bad_mechanism_message = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._previous[0]}'"
            )
            self.state = SaslState.REAUTH_BAD_MECHANISM
            return CoreResult(replies=reply)
        self.mechanism = mechanism
        self._server = self._factories[mechanism]()
        self.state = SaslState.AUTHENTICATE
        return CoreResult(replies=reply)

    def _token(self, request: Any, now: float) -> AuthResult:
        server = self._server
        assert server is not None
        assert self.mechanism is not None
        if isinstance(request, bytes | bytearray):
            if self._v1_headers:
                self.state = SaslState.FAILED
                return CoreResult(
                    replies=(Close("a bare frame after SaslHandshake v1"),)
                )
            return self._bare_token(server, bytes(request), now)
        version: int = type(request).__version__
        self.supports_reauthentication |= version > 0
        try:
            challenge = server.evaluate_response(request.auth_bytes, now)
            done = self._complete(server, now) if server.complete else None
        except SaslAuthenticationError as exc:
            message = str(exc)
        except SaslError:
            # The detail may tell whether the user exists: the client gets Kafka's text.
            message = (
                f"Authentication failed during {self._text()} due to invalid credentials "
                f"with SASL mechanism {self.mechanism}"
            )
        else:
            lifetime = 0 if done is None else done[1]
            response = io.authenticate_response(
                version, NONE, None, challenge, lifetime
            )
            replies: tuple[AuthAction, ...] = (Respond(response),)
            return CoreResult(replies=replies + (() if done is None else (done[0],)))
        response = io.authenticate_response(version, FAILED, message, b"", 0)
        return self._fail(message, now, (Respond(response),))

    def _bare_token(self, server: SaslServer, token: bytes, now: float) -> AuthResult:
        try:
            challenge = server.evaluate_response(token, now)
            done = self._complete(server, now) if server.complete else None
        except SaslAuthenticationError as exc:
            return self._fail(str(exc), now, ())
        except SaslError as exc:
            # Over bare frames Kafka has no way to answer an error: it closes at once.
            self.state = SaslState.FAILED
            return CoreResult(replies=(Close(str(exc)),))
        replies: tuple[AuthAction, ...] = (SendToken(challenge),) if challenge else ()
        return CoreResult(replies=replies + (() if done is None else (done[0],)))

    def _complete(self, server: SaslServer, now: float) -> tuple[Authenticated, int]:
        """The session of a finished exchange, and its lifetime in ms (Kafka's
        ``calcCompletionTimesAndReturnSessionLifetimeMs``); raises when a
        re-authentication would change the principal."""
        principal = KafkaPrincipal(
            USER_TYPE,
            server.authorization_id(),
            token_authenticated=bool(getattr(server, "token_authenticated", False)),
        )
        if self._previous is not None and principal != self._previous[1]:
            before = self._previous[1]
            raise SaslAuthenticationError(
                "Cannot change principals during re-authentication from "
                f"{before.principal_type}.{before.name}: "
                f"{principal.principal_type}.{principal.name}"
            )
        now_ms = int(now * 1000)
        expiry_ms = server.credential_lifetime_ms()
        max_reauth = self.config.connections_max_reauth_ms
        lifetime = 0
        self.session_expiration = None
        if expiry_ms is not None or max_reauth > 0:
            if expiry_ms is None:
                lifetime = max_reauth
            elif max_reauth <= 0:
                lifetime = max(0, expiry_ms - now_ms)
            else:
                lifetime = max(0, min(expiry_ms - now_ms, max_reauth))
            self.session_expiration = now + lifetime / 1000
        was = self._previous is not None
        self.state = SaslState.COMPLETE
        self.principal = principal
        self._previous = None
        return Authenticated(
            principal, server.mechanism_name, self.session_expiration, was
        ), lifetime

    def _authenticated_request(
        self, kind: Received, request: Any, now: float
    ) -> AuthResult:
        reauthenticating = kind is R.HANDSHAKE and self.supports_reauthentication
        # A re-authentication may begin late (Kafka's channel starts it before the
        # expiry check); anything else after the session's end closes the connection.
        if self.session_expired(now) and not reauthenticating:
            self.state = SaslState.FAILED
            return CoreResult(replies=(Close("session expired"),))
        if reauthenticating:
            assert self.mechanism is not None
            assert self.principal is not None
            self._previous = (self.mechanism, self.principal)
            return self._handshake(request, now)
        if kind is R.HANDSHAKE:
            # A client that cannot re-authenticate: the broker's own answer (KafkaApis).
            version = type(request).__version__
            return CoreResult(
                replies=(
                    Respond(io.handshake_response(version, ILLEGAL_SASL_STATE, ())),
                )
            )
        if kind is R.AUTHENTICATE:
            message = (
                "SaslAuthenticate request received after successful authentication"
            )
            return CoreResult(replies=(RespondWithError(ILLEGAL_SASL_STATE, message),))
        return CoreResult(replies=(Forward(),))

    def _fail(
        self, message: str, now: float, replies: tuple[AuthAction, ...]
    ) -> AuthResult:
        """An authentication failure: its answer, then the close, delayed."""
        self.state = SaslState.FAILED
        self._server = None
        delay = self.config.failed_authentication_delay_ms / 1000
        failed = AuthenticationFailed(message, now + delay)
        if delay <= 0:
            return CoreResult(replies=(*replies, failed, Close(message)))
        self._close_at = now + delay
        return CoreResult(replies=(*replies, failed))
