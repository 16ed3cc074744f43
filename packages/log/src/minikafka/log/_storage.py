"""KAFKA_STORAGE_ERROR: a write, roll or fsync of a log that the disk refused.

Kafka wraps every I/O call of a log in ``maybeHandleIOException``: an ``IOException``
becomes a ``KafkaStorageException`` (error code 56, KAFKA_STORAGE_ERROR) for the request,
and the log's directory is reported to the ``LogDirFailureChannel``, which takes the
whole directory offline until the broker restarts: after a failed write Kafka cannot
tell what reached the file, so it trusts nothing in it.

minikafka keeps one exception to that rule. A ``write(2)`` that fails with ENOSPC or
EDQUOT (disk full, quota exceeded) is undone: the segment and its indexes are cut back
to where they were, so the log is byte for byte what it was before the append, nothing
was acknowledged, and the producer may retry once space is freed. Such an error has
``offline=False``. Everything else has ``offline=True`` and the caller takes the log's
directory offline until restart:

- an fsync that fails: after it the page cache may claim pages are written that never
  will be ("fsyncgate", PostgreSQL 2018); a retried fsync can succeed and lie, so only
  a restart, whose recovery rescans the unflushed tail, can be trusted;
- any other errno (EIO, EROFS...): the device itself is failing;
- an undo that itself fails: the files no longer match the log's offsets.
"""

from __future__ import annotations

import errno

from minikafka.common import ApiError, ErrorCode

KAFKA_STORAGE_ERROR = ErrorCode.kafka_storage_error
"""Kafka's error code for KafkaStorageException."""

RECOVERABLE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""What a write may fail with and be undone, the log staying online: the disk is full."""


class KafkaStorageError(ApiError, OSError):
    """A log's disk failed an operation: KAFKA_STORAGE_ERROR (56) for the request.

    An ``OSError`` (with the original ``errno``) so that code which already survives a
    failing disk by catching OSError keeps doing so. ``offline`` says whether the log's
    directory must go offline (see the module docstring); the original error is the
    ``__cause__``.
    """

    error_code = KAFKA_STORAGE_ERROR

    def __init__(self, err: int | None, message: str, *, offline: bool) -> None:
        super().__init__(err, message)
        self.offline = offline


def storage_error(what: str, exc: OSError, *, undone: bool) -> KafkaStorageError:
    """The error to raise for ``exc``, which happened while doing ``what``.

    ``undone`` says the operation left the files exactly as they were; only then, and
    only for a full disk, may the log stay online.
    """
    offline = not (undone and exc.errno in RECOVERABLE_ERRNOS)
    reason = exc.strerror or str(exc)
    where = f" ({exc.filename})" if exc.filename else ""
    state = "taken offline until restart" if offline else "left as it was"
    return KafkaStorageError(
        exc.errno,
        f"{what} failed: {reason}{where}; the log was {state}",
        offline=offline,
    )
