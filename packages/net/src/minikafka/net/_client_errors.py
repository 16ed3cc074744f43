"""The errors of the client side: the NetworkClient's, and Kafka's
``AuthenticationException`` family for a connection refused at TLS or SASL.

A :class:`ClientError` is what whoever handles a failed connection catches; an
:class:`AuthenticationFailed` is one of them that retrying with the same configuration
cannot mend, so a client hands it to the application (Kafka's clients raise it from
``send``, ``poll`` and the admin's futures) and a broker logs it at ERROR.
"""

from __future__ import annotations

from minikafka.common import ApiError, ErrorCode


class ClientError(Exception):
    """Base class of the NetworkClient's errors."""


class DisconnectedError(ClientError):
    """The connection closed before the response arrived."""


class RequestTimedOut(ClientError):
    """No response within ``request.timeout.ms``; the connection was closed."""


class UnsupportedVersionError(ClientError):
    """The broker does not advertise this API version."""


class AuthenticationFailed(ClientError, ApiError):
    """Kafka's ``AuthenticationException``: the connection was refused at
    authentication; ``error_code`` says which of Kafka's errors it is."""

    def __init__(
        self, message: str, error_code: ErrorCode = ErrorCode.sasl_authentication_failed
    ) -> None:
        super().__init__(message)
        self.error_code = error_code

    def at_node(self, message: str) -> AuthenticationFailed:
        """The same refusal, of the same class and code, told as ``message`` (the
        NetworkClient's "Connection to node X failed authentication due to: ...")."""
        return type(self)(message, self.error_code)


class SslAuthenticationFailed(AuthenticationFailed):
    """Kafka's ``SslAuthenticationException``: the TLS handshake failed."""


class SaslAuthenticationFailed(AuthenticationFailed):
    """Kafka's ``SaslAuthenticationException`` (or, for a mechanism the broker does
    not enable, ``UnsupportedSaslMechanismException``)."""
