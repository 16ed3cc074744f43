"""The errors every layer shares: a bad configuration value, and errors with Kafka's codes.

Kafka's ``ApiException`` subclasses each map to one ``Errors`` code, and the broker turns
whatever a component throws into the code it answers with. :class:`ApiError` is that
base here: a core raises a subclass, a shell catches ``ApiError`` and answers with its
``error_code``, in one place, without knowing which package the error came from.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


class ApiError(Exception):
    """An error a request is answered with: ``error_code`` is Kafka's code for it.

    A subclass that always means one code sets it as a class attribute
    (``error_code = ErrorCode.invalid_record``); one that carries a code decided at the
    point of failure assigns ``self.error_code`` in its constructor. No ``__init__`` here,
    so a subclass may also derive from ``OSError`` (KafkaStorageError) and keep its
    constructor.
    """

    error_code: ErrorCode = ErrorCode.unknown_server_error
    """Kafka's UNKNOWN_SERVER_ERROR unless a subclass says otherwise."""


__all__ = ["ApiError", "ConfigError", "ErrorCode"]
