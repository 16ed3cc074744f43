"""What a delivery report carries: :class:`KafkaError` and :class:`Message`, shaped as
confluent-kafka's, so code written for it reads the same (``err.code()``, ``err.name()``,
``msg.offset()``...).

Broker errors keep Kafka's codes and names (``NOT_LEADER_OR_FOLLOWER``, 6). Errors the
client itself decides have librdkafka's negative codes and underscored names:
``_MSG_TIMED_OUT`` (``delivery.timeout.ms`` passed), ``_PURGE_QUEUE`` (the producer was
closed without flushing), ``_TRANSPORT`` (the connection failed), ``_TIMED_OUT``,
``_BAD_MSG`` (an answer that does not make sense), ``_STATE`` (a call the producer's
transaction state does not allow).

A transactional producer's errors say what is left to do, as confluent-kafka's do:
``fatal()`` (the producer can only be closed: it was fenced) and
``txn_requires_abort()`` (the transaction can only be aborted).
"""

from __future__ import annotations

import builtins

from kio.schema.errors import ErrorCode

from minikafka.log import Record

# librdkafka's rd_kafka_resp_err_t values for the client's own errors
MSG_TIMED_OUT = -192
PURGE_QUEUE = -152
TRANSPORT = -195
TIMED_OUT = -185
BAD_MSG = -199  # an answer the client cannot read
STATE = -172  # the call is not allowed in the producer's (transaction) state
_LOCAL_NAMES = {
    BAD_MSG: "_BAD_MSG",
    MSG_TIMED_OUT: "_MSG_TIMED_OUT",
    STATE: "_STATE",
    PURGE_QUEUE: "_PURGE_QUEUE",
    TRANSPORT: "_TRANSPORT",
    TIMED_OUT: "_TIMED_OUT",
}


class KafkaError:
    """An error code, its name, and what happened."""

    __slots__ = ("_code", "_fatal", "_message", "_txn_requires_abort")

    def __init__(
        self,
        code: int,
        message: str | None = None,
        *,
        fatal: bool = False,
        txn_requires_abort: bool = False,
    ) -> None:
        self._code = int(code)
        self._message = message
        self._fatal = fatal
        self._txn_requires_abort = txn_requires_abort

    def fatal(self) -> bool:
        """The producer can do nothing more but close (fenced, refused)."""
        return self._fatal

    def txn_requires_abort(self) -> bool:
        """The transaction cannot commit: abort it and begin another."""
        return self._txn_requires_abort

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        if self._code in _LOCAL_NAMES:
            return _LOCAL_NAMES[self._code]
        try:
            return ErrorCode(self._code).name.upper()
        except ValueError:
            return f"UNKNOWN_ERROR_CODE({self._code})"

    def str(self) -> str:
        return self._message or self.name()

    def retriable(self) -> bool:
        if self._code in (TRANSPORT, TIMED_OUT):
            return True
        try:
            return bool(ErrorCode(self._code).retriable)
        except ValueError:
            return False

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        return isinstance(other, int) and self._code == other

    def __hash__(self) -> int:
        return hash(self._code)

    def __repr__(self) -> builtins.str:
        return f"KafkaError{{code={self.name()},val={self._code},str={self.str()!r}}}"

    __str__ = __repr__


class KafkaException(Exception):
    """Raised by the API for what cannot be a delivery report; ``args[0]`` is the
    :class:`KafkaError`, as in confluent-kafka."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(error)
        self.error = error


class Message:
    """A record and where it is: what ``poll`` returns and a delivery report's second
    argument. It keeps the log's ``Record`` as it is (offset, timestamp, key, value,
    headers) beside the partition, rather than copying each field out: a consumer makes
    one per record."""

    __slots__ = ("_error", "_partition", "_record", "_topic")

    def __init__(
        self,
        topic: str,
        partition: int,
        record: Record,
        error: KafkaError | None = None,
    ) -> None:
        self._topic, self._partition, self._record, self._error = (
            topic,
            partition,
            record,
            error,
        )

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._record.offset

    def key(self) -> bytes | None:
        return self._record.key

    def value(self) -> bytes | None:
        return self._record.value

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return [(h.key, h.value) for h in self._record.headers] or None

    def timestamp(self) -> tuple[int, int]:
        """(TIMESTAMP_CREATE_TIME = 1, milliseconds), as confluent-kafka gives it."""
        return 1, self._record.timestamp

    def error(self) -> KafkaError | None:
        return self._error

    def __repr__(self) -> builtins.str:
        return f"Message({self._topic}-{self._partition}@{self._record.offset})"


# confluent-kafka's special offsets
OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001


class TopicPartition:
    """A partition and, where it matters, an offset: what the consumer API takes and
    gives (``assign``, ``seek``, ``commit``, ``position``, the rebalance callbacks), as
    confluent-kafka's ``TopicPartition``."""

    __slots__ = ("error", "offset", "partition", "topic")

    def __init__(
        self,
        topic: str,
        partition: int = -1,
        offset: int = OFFSET_INVALID,
        error: KafkaError | None = None,
    ) -> None:
        self.topic, self.partition, self.offset, self.error = (
            topic,
            partition,
            offset,
            error,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition, self.offset) == (
            other.topic,
            other.partition,
            other.offset,
        )

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __repr__(self) -> builtins.str:
        return (
            f"TopicPartition{{topic={self.topic},"
            f"partition={self.partition},offset={self.offset}}}"
        )
