"""What the SASL server authenticator asks its shell to do, as values, and the responses
it answers with, in kio's schemas (SaslHandshake v0-1, SaslAuthenticate v0-2)."""

from __future__ import annotations

import datetime

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v0.response import (
    SaslAuthenticateResponse as SaslAuthenticateResponseV0,
)
from kio.schema.sasl_authenticate.v1.response import (
    SaslAuthenticateResponse as SaslAuthenticateResponseV1,
)
from kio.schema.sasl_authenticate.v2.response import (
    SaslAuthenticateResponse as SaslAuthenticateResponseV2,
)
from kio.schema.sasl_handshake.v0.response import (
    SaslHandshakeResponse as SaslHandshakeResponseV0,
)
from kio.schema.sasl_handshake.v1.response import (
    SaslHandshakeResponse as SaslHandshakeResponseV1,
)
from kio.static.primitive import i64Timedelta

from ._principal import KafkaPrincipal

HandshakeResponse = SaslHandshakeResponseV0 | SaslHandshakeResponseV1
AuthenticateResponse = (
    SaslAuthenticateResponseV0 | SaslAuthenticateResponseV1 | SaslAuthenticateResponseV2
)


@attrs.frozen
class Respond:
    """Send this response to the request just received."""

    response: HandshakeResponse | AuthenticateResponse


@attrs.frozen
class RespondWithError:
    """Answer the request just received with its own API's error response, carrying
    Kafka's ``error_code`` (ILLEGAL_SASL_STATE) and ``message``."""

    error_code: ErrorCode
    message: str


@attrs.frozen
class AnswerApiVersions:
    """Answer the ApiVersions request with the listener's table (KIP-35)."""


@attrs.frozen
class SendToken:
    """Send a bare size-prefixed token (after SaslHandshake v0)."""

    token: bytes


@attrs.frozen
class Authenticated:
    """The exchange is complete: the connection is ``principal``'s until
    ``session_expiration`` (epoch seconds; None: no end)."""

    principal: KafkaPrincipal
    mechanism: str
    session_expiration: float | None
    reauthentication: bool


@attrs.frozen
class AuthenticationFailed:
    """Authentication failed with ``message``: log it once, count it; the connection
    is closed at ``close_at`` (``connection.failed.authentication.delay.ms`` later)."""

    message: str
    close_at: float


@attrs.frozen
class Close:
    """Close the connection now."""

    reason: str


@attrs.frozen
class Forward:
    """The request is not the authenticator's: it goes on to the broker's handlers."""


AuthAction = (
    Respond
    | RespondWithError
    | AnswerApiVersions
    | SendToken
    | Authenticated
    | AuthenticationFailed
    | Close
    | Forward
)


def handshake_response(
    version: int, error_code: ErrorCode, mechanisms: tuple[str, ...]
) -> HandshakeResponse:
    cls = SaslHandshakeResponseV1 if version >= 1 else SaslHandshakeResponseV0
    return cls(error_code=error_code, mechanisms=mechanisms)


def authenticate_response(
    version: int,
    error_code: ErrorCode,
    message: str | None,
    auth_bytes: bytes,
    session_lifetime_ms: int,
) -> AuthenticateResponse:
    """A SaslAuthenticate response; ``session_lifetime_ms`` exists from v1 (KIP-368)."""
    code = error_code
    if version == 0:
        return SaslAuthenticateResponseV0(
            error_code=code, error_message=message, auth_bytes=auth_bytes
        )
    cls = SaslAuthenticateResponseV1 if version == 1 else SaslAuthenticateResponseV2
    lifetime = i64Timedelta.parse(datetime.timedelta(milliseconds=session_lifetime_ms))
    return cls(
        error_code=code,
        error_message=message,
        auth_bytes=auth_bytes,
        session_lifetime=lifetime,
    )
