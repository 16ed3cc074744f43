"""``Producer``: the synchronous API, shaped like confluent-kafka's.

The application's thread calls :meth:`Producer.produce`, which picks the partition and
appends to the RecordAccumulator right there (as Kafka's ``KafkaProducer.send`` does on
the caller's thread) and returns; a background thread runs the trio shell that sends.
Delivery reports wait until the application calls :meth:`Producer.poll` or
:meth:`Producer.flush`, which run the callbacks on the application's thread, as
confluent-kafka does. ``len(producer)`` is how many records are queued, in flight, or
acknowledged with their report not yet served.

``produce`` blocks (up to ``max.block.ms``) only for what Kafka's producer blocks for:
the topic's metadata the first time, and room in ``buffer.memory``. It raises
:class:`BufferError` when the buffer stays full, :class:`KafkaException` for an unknown
topic or a record larger than ``max.request.size``.

**Transactions** (KIP-98, KIP-447). With ``transactional.id`` the producer writes in
transactions, with confluent-kafka's calls: :meth:`Producer.init_transactions` once,
then per transaction :meth:`~Producer.begin_transaction`, ``produce``,
:meth:`~Producer.send_offsets_to_transaction` (a consume-transform-produce loop's
input offsets, committed with the transaction) and :meth:`~Producer.commit_transaction`
or :meth:`~Producer.abort_transaction`. The transaction's state and requests are the
:class:`~._transactions.TransactionManager`'s; these calls wait for its answers. A
failure raises :class:`KafkaException` whose error says what is left:
``txn_requires_abort()`` (abort, then begin again), ``fatal()`` (fenced: close), or
neither (a timeout: call again to keep waiting).

**Tracing.** A producer emits one ``producer.batch`` event per batch
(:class:`~._events.ProducerBatchCompleted`) to the tracer it is given, ``tracer=``: a
:class:`~minikafka.trace.JsonLinesTracer` writes them where a cluster's traces go, so a
lab reads both. Given none, it takes the process's default
(:func:`minikafka.trace.get_tracer`): a ``NullTracer``, which costs one attribute read
per batch, unless the program installed one (``configure_from_env(-1)`` traces into
``$MINIKAFKA_TRACE_DIR``; a client has no node id, and -1 keeps its files apart from the
brokers').
"""

from __future__ import annotations

import collections
import contextlib
import random
import threading
import time
from collections.abc import Mapping, Sequence

import trio
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.log import Header
from minikafka.net import NetworkClient
from minikafka.trace import Tracer, get_tracer

from ._accumulator import BufferFull, PendingRecord, RecordAccumulator
from ._config import DeliveryCallback, ProducerConfig
from ._message import (
    PURGE_QUEUE,
    STATE,
    TIMED_OUT,
    KafkaError,
    KafkaException,
    Message,
)
from ._message import (
    TopicPartition as OffsetPosition,
)
from ._metadata import ClientMetadata, TopicInfo, bootstrap_nodes
from ._partitioner import Partitioner
from ._sender import Delivery, Sender
from ._shell import PRODUCER_CLOCK, ProducerShell
from ._transactions import TransactionManager
from ._txn_plans import ConsumerGroupMetadata, TxnCompleted

HeadersArg = (
    Mapping[str, bytes | str | None] | Sequence[tuple[str, bytes | str | None]] | None
)


# The topic errors a send fails on at once, as Kafka's producer does while it waits for
# metadata; any other (UNKNOWN_TOPIC_OR_PARTITION while a topic is being created,
# LEADER_NOT_AVAILABLE, a broker's transient error) is waited out until max.block.ms.
_FATAL_TOPIC_ERRORS = frozenset(
    {ErrorCode.topic_authorization_failed, ErrorCode.invalid_topic_exception}
)


class Producer:
    """A Kafka producer: ``Producer({"bootstrap.servers": "127.0.0.1:9092"})``."""

    def __init__(
        self,
        config: Mapping[str, object],
        *,
        seed: int | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.config = ProducerConfig.from_dict(config)
        self._sender, self._partitioner = producer_cores(self.config, seed, tracer)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # metadata, room, reports
        self._reports: collections.deque[
            tuple[DeliveryCallback | None, KafkaError | None, Message]
        ]
        self._reports = collections.deque()
        self._outstanding = 0  # records appended whose report has not been served
        # the transaction manager's outcomes, by the operation id a call waits on
        self._txn_results: dict[int, KafkaError | None] = {}
        # a transactional call that timed out, by name: calling it again waits on
        self._timed_out: dict[str, int] = {}
        # One TopicPartition per partition produced to: no new object (and hash) a record.
        self._topic_partitions: dict[tuple[str, int], TopicPartition] = {}
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.CancelScope | None = None
        self._closed = False
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name="minikafka-producer", daemon=True
        )
        self._thread.start()
        started.wait()

    # --- the background thread ----------------------------------------------------

    def _run(self, started: threading.Event) -> None:
        trio.run(self._main, started)

    async def _main(self, started: threading.Event) -> None:
        c = self.config
        async with NetworkClient.open(
            client_id=c.client_id,
            max_in_flight=c.max_in_flight,
            request_timeout=c.request_timeout_ms / 1000,
            security=c.security,
        ) as client:
            self._shell = ProducerShell(
                self._sender,
                client,
                self._deliver,
                on_metadata=self._notify,
                on_transaction=self._transaction_done,
                lock=self._lock,
            )
            with trio.CancelScope() as self._stop:
                self._token = trio.lowlevel.current_trio_token()
                async with trio.open_nursery() as nursery:
                    await nursery.start(self._shell.run)
                    started.set()
            client.close()

    def _deliver(self, deliveries: list[Delivery]) -> None:
        default = self.config.on_delivery
        for d in deliveries:
            tp = d.batch.topic_partition
            for i, record in enumerate(d.batch.records):
                message = Message(tp.topic, tp.partition, d.record(i), d.error)
                callback = record.handle if callable(record.handle) else default
                self._reports.append((callback, d.error, message))
        self._notify()

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _transaction_done(self, done: list[TxnCompleted]) -> None:
        with self._changed:
            for completed in done:
                self._txn_results[completed.operation] = completed.error
            self._changed.notify_all()

    def _wake(self) -> None:
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._shell.wake)

    # --- the API ------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int = -1,
        on_delivery: DeliveryCallback | None = None,
        timestamp: int = 0,
        headers: HeadersArg = None,
        *,
        callback: DeliveryCallback | None = None,
    ) -> None:
        """Queue one record; its delivery report comes through :meth:`poll`/:meth:`flush`."""
        if self._closed:
            raise RuntimeError("the producer is closed")
        record = new_record(
            self.config, topic, value, key, timestamp, headers, on_delivery or callback
        )
        size = record.size
        now = PRODUCER_CLOCK()
        deadline = now + self.config.max_block_ms / 1000
        metadata = self._sender.metadata
        with self._changed:
            info = metadata.partitions(topic) if topic in metadata.wanted else None
            if info is None:
                info = self._await_topic(topic, deadline)
            tp = choose_partition(
                self._partitioner, self._topic_partitions, info, record, partition
            )
            if self._sender.transactions is not None:
                # refused outside a transaction; a new partition is added to it first
                self._sender.transactions.maybe_add_partition(tp)
            wake = self._append(tp, record, now, deadline)
            self._partitioner.on_append(
                topic, tp.partition, size, len(info.leaders), info.available
            )
            self._outstanding += 1
        if wake:
            self._wake()

    def _await_topic(self, topic: str, deadline: float) -> TopicInfo:
        metadata = self._sender.metadata
        if metadata.want(topic):
            self._wake()
        while True:
            info = metadata.partitions(topic)
            if info is not None:
                return info
            if metadata.authentication_error is not None:
                raise KafkaException(KafkaError(*metadata.authentication_error))
            known = metadata.topics.get(topic)
            if known is not None and known.error in _FATAL_TOPIC_ERRORS:
                raise KafkaException(KafkaError(known.error, f"topic {topic}"))
            left = deadline - PRODUCER_CLOCK()
            if left <= 0:
                raise KafkaException(
                    KafkaError(
                        ErrorCode.unknown_topic_or_partition,
                        f"topic {topic} not in the metadata after max.block.ms",
                    )
                )
            self._changed.wait(left)

    def _append(
        self, tp: TopicPartition, record: PendingRecord, now: float, deadline: float
    ) -> bool:
        accumulator = self._sender.accumulator
        while True:
            try:
                return accumulator.append(tp, record, now)
            except BufferFull:
                left = deadline - PRODUCER_CLOCK()
                if left <= 0:
                    raise BufferError(
                        "buffer.memory is full and max.block.ms passed"
                    ) from None
                accumulator.wait_for_room(True)
                self._wake()
                try:
                    self._changed.wait(left)
                finally:
                    accumulator.wait_for_room(False)
                now = PRODUCER_CLOCK()

    def poll(self, timeout: float | None = None) -> int:
        """Serve delivery reports (waiting up to ``timeout`` seconds for the first, -1 or
        None: without limit); how many were served."""
        if timeout is not None and timeout < 0:
            timeout = None
        with self._changed:
            if not self._reports and timeout != 0:
                self._changed.wait_for(lambda: bool(self._reports), timeout)
            reports = list(self._reports)
            self._reports.clear()
            self._outstanding -= len(reports)
            self._changed.notify_all()
        for callback, error, message in reports:
            if callback is not None:
                callback(error, message)
        return len(reports)

    def flush(self, timeout: float | None = None) -> int:
        """Send everything queued now (no lingering) and serve reports until every record
        has one or ``timeout`` passes; how many records are still outstanding."""
        deadline = (
            None if timeout is None or timeout < 0 else PRODUCER_CLOCK() + timeout
        )
        with self._lock:
            self._sender.accumulator.begin_flush()
        self._wake()
        try:
            while len(self) > 0:
                left = None if deadline is None else deadline - PRODUCER_CLOCK()
                if left is not None and left <= 0:
                    break
                self.poll(0.1 if left is None else min(left, 0.1))
        finally:
            with self._lock:
                self._sender.accumulator.end_flush()
        return len(self)

    def __len__(self) -> int:
        return self._outstanding

    def close(self, timeout: float | None = None) -> int:
        """Flush (up to ``timeout``), fail what is left with ``_PURGE_QUEUE``, serve the
        last reports and stop the background thread; the records left undelivered."""
        if self._closed:
            return 0
        left = self.flush(timeout)
        with self._lock:
            aborted = self._sender.abort(
                KafkaError(PURGE_QUEUE, "the producer was closed"), PRODUCER_CLOCK()
            )
        self._closed = True
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._stop.cancel)
        self._thread.join(10)
        self._deliver(list(aborted.replies))
        self.poll(0)
        return left

    # --- transactions ---------------------------------------------------------------

    def _transactions(self) -> TransactionManager:
        transactions = self._sender.transactions
        if transactions is None:
            raise KafkaException(
                KafkaError(STATE, "the producer has no transactional.id")
            )
        return transactions

    def init_transactions(self, timeout: float = -1) -> None:
        """Register the transactional id with its coordinator: what an earlier producer
        of the id left open is aborted, and that producer fenced. Once, first."""
        transactions = self._transactions()
        operation = self._timed_out.pop("init_transactions", None)
        if operation is None:
            with self._lock:
                operation = transactions.init_transactions()
        self._wait_for(operation, timeout, "init_transactions")

    def begin_transaction(self) -> None:
        """Start a transaction: what is produced until its commit or abort is part of it."""
        transactions = self._transactions()
        with self._lock:
            transactions.begin_transaction()

    def send_offsets_to_transaction(
        self,
        positions: Sequence[OffsetPosition],
        group_metadata: ConsumerGroupMetadata,
        timeout: float = -1,
    ) -> None:
        """Commit these offsets (the next record to read of each partition) for the
        consumer's group, with the transaction: if it aborts, they are not committed."""
        transactions = self._transactions()
        offsets = {TopicPartition(p.topic, p.partition): p.offset for p in positions}
        operation = self._timed_out.pop("send_offsets_to_transaction", None)
        if operation is None:
            with self._lock:
                operation = transactions.send_offsets(offsets, group_metadata)
        self._wait_for(operation, timeout, "send_offsets_to_transaction")

    def commit_transaction(self, timeout: float = -1) -> None:
        """Send every record of the transaction, then commit it. Raises if a record
        failed (the transaction then can only be aborted)."""
        transactions = self._transactions()
        operation = self._timed_out.pop("commit_transaction", None)
        with self._lock:
            if operation is None:
                operation = transactions.begin_commit()
            self._sender.accumulator.begin_flush()  # no lingering: the EndTxn waits
        self._wake()
        try:
            self._wait_for(operation, timeout, "commit_transaction")
        finally:
            with self._lock:
                self._sender.accumulator.end_flush()
            self.poll(0)

    def abort_transaction(self, timeout: float = -1) -> None:
        """Abort the transaction: records not yet sent are dropped (their reports fail
        with ``_PURGE_QUEUE``), those sent are never read by ``read_committed``
        consumers, and the offsets sent with it are not committed."""
        transactions = self._transactions()
        operation = self._timed_out.pop("abort_transaction", None)
        with self._lock:
            if operation is None:
                operation = transactions.begin_abort()
            purged = self._sender.abort(
                KafkaError(PURGE_QUEUE, "the transaction was aborted"),
                PRODUCER_CLOCK(),
            )
        self._deliver(list(purged.replies))
        self._wake()
        try:
            self._wait_for(operation, timeout, "abort_transaction")
        finally:
            self.poll(0)

    def _wait_for(self, operation: int, timeout: float, call: str) -> None:
        """Wait for a transactional call's outcome, serving delivery reports meanwhile;
        raise its error. A timeout leaves the call pending: calling it again waits on."""
        self._wake()
        deadline = None if timeout < 0 else PRODUCER_CLOCK() + timeout
        while True:
            with self._changed:
                if operation in self._txn_results:
                    error = self._txn_results.pop(operation)
                    break
                left = None if deadline is None else deadline - PRODUCER_CLOCK()
                if left is not None and left <= 0:
                    self._timed_out[call] = operation
                    raise KafkaException(
                        KafkaError(
                            TIMED_OUT,
                            f"{call} did not complete in time: call it again to wait on",
                        )
                    )
                self._changed.wait(0.1 if left is None else min(left, 0.1))
            self.poll(0)
        if error is not None:
            raise KafkaException(error)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def producer_cores(
    config: ProducerConfig, seed: int | None, tracer: Tracer | None = None
) -> tuple[Sender, Partitioner]:
    """The Sender (with its accumulator and metadata) and the partitioner a producer's
    API drives, the synchronous one or the async one; the Sender traces to ``tracer``
    (None: the process's default tracer)."""
    c = config
    accumulator = RecordAccumulator(
        c.batch_size,
        c.buffer_memory,
        c.linger_ms,
        c.retry_backoff_ms,
        c.compression_type,
    )
    metadata = ClientMetadata(
        bootstrap_nodes(c.bootstrap_servers), c.metadata_max_age_ms
    )
    partitioner = Partitioner(
        c.batch_size,
        random.Random(seed),
        round_robin=bool(c.partitioner),
        ignore_keys=c.partitioner_ignore_keys,
    )
    transactions = (
        None
        if c.transactional_id is None
        else TransactionManager(
            c.transactional_id, c.transaction_timeout_ms, c.retry_backoff_ms
        )
    )
    sender = Sender(
        c,
        accumulator,
        metadata,
        tracer=get_tracer() if tracer is None else tracer,
        transactions=transactions,
    )
    return sender, partitioner


def new_record(
    config: ProducerConfig,
    topic: str,
    value: bytes | str | None,
    key: bytes | str | None,
    timestamp: int,
    headers: HeadersArg,
    handle: object,
) -> PendingRecord:
    """A record as the accumulator holds it; KafkaException if it can never be sent."""
    record = PendingRecord(
        topic,
        _bytes(key),
        _bytes(value),
        _headers(headers),
        timestamp or int(time.time() * 1000),
        handle,
    )
    if record.size > config.max_request_size or record.size > config.buffer_memory:
        raise KafkaException(
            KafkaError(
                ErrorCode.message_too_large,
                f"the record is {record.size} bytes, more than max.request.size or buffer.memory",
            )
        )
    return record


def choose_partition(
    partitioner: Partitioner,
    cache: dict[tuple[str, int], TopicPartition],
    info: TopicInfo,
    record: PendingRecord,
    partition: int,
) -> TopicPartition:
    """The record's partition: the one asked for, or the partitioner's choice."""
    topic = record.topic
    if partition >= len(info.leaders):
        raise KafkaException(
            KafkaError(
                ErrorCode.unknown_topic_or_partition,
                f"{topic} has {len(info.leaders)} partitions, not {partition + 1}",
            )
        )
    if partition < 0:
        partition = partitioner.partition(
            topic, record.key, len(info.leaders), info.available
        )
    tp = cache.get((topic, partition))
    # one TopicPartition per partition: no new object (and hash) a record
    if tp is None:
        tp = cache[topic, partition] = TopicPartition(topic, partition)
    return tp


def _bytes(value: bytes | str | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return value.encode()


def _headers(headers: HeadersArg) -> tuple[Header, ...]:
    if not headers:
        return ()
    items = headers.items() if isinstance(headers, Mapping) else headers
    return tuple(Header(k, _bytes(v)) for k, v in items)
