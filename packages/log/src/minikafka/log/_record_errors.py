"""The errors a batch or its records are refused with (Kafka's ``InvalidRecordException``
family, each with its error code).

They live apart from the codecs and checks that raise them (``_batch``,
``_record_checks``) for the optional mypyc build (README, "The mypyc build"), which compiles
those modules and must leave these classes Python: a compiled subclass of a Python class
(``ApiError``) loses its class attributes, and with them ``error_code``.
"""

from __future__ import annotations

from minikafka.common import ApiError, ErrorCode


class InvalidRecordError(ApiError):
    """A batch that is well formed but breaks a rule: Kafka's INVALID_RECORD (87)."""

    error_code = ErrorCode.invalid_record
    per_record = False
    """A rule about one record (key, timestamp), not about the batch's structure."""

    def __init__(
        self,
        message: str,
        position: int = 0,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.position = position
        self.record_errors = record_errors
        """``(index in the batch, why)`` of each record a per-record rule refuses (a
        missing key on a compacted topic, a timestamp out of range): what Kafka's
        Produce v8 answers as ``record_errors`` (KIP-467). Empty for an error of the
        batch's structure."""


class CorruptRecordError(InvalidRecordError):
    """Bytes that are not a batch (bad CRC, bad length, bad magic): CORRUPT_MESSAGE (2)."""

    error_code = ErrorCode.corrupt_message


class InvalidTimestampError(InvalidRecordError):
    """A CreateTime timestamp outside the topic's bounds: Kafka's INVALID_TIMESTAMP (32)."""

    error_code = ErrorCode.invalid_timestamp
    per_record = True


class MissingKeyError(InvalidRecordError):
    """A record without a key on a compacted topic: INVALID_RECORD (87)."""

    per_record = True
