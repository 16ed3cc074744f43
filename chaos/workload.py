"""The workloads: real clients writing a chaos run's history (:mod:`chaos.history`).

- :class:`Producer`: an idempotent ``acks=all`` producer, confluent-kafka's (librdkafka),
  minikafka's own (``minikafka.client.Producer``, confluent-kafka's API) or
  kafka-python's (:mod:`chaos.kafka_python`),
  writing unique integer values round robin to every partition of the topic, one
  ``send`` per record: invoked when handed to the client, completed when its delivery
  report arrives, ``ok`` with the offset the acknowledgement gave; ``unknown`` on any
  error the report gives (librdkafka retries the errors a broker may recover from until
  ``message.timeout.ms``: the error that ends a record says it was not acknowledged,
  not that it was not written); ``failed`` only when the client refused it before
  sending anything (its queue full).
- :class:`GroupConsumer`: a consumer group member (confluent-kafka, subscribed, auto
  commit off) recording each fetch as one ``poll`` per partition with the
  ``(offset, value)`` it returned, and committing its position about once a second, one
  ``commit`` per partition (``ok`` when the commit was answered, ``unknown`` when it
  raised: it may have been applied).
- :func:`read_back`: the final state after healing, every partition read from offset 0
  to its high watermark with a consumer assigned, not subscribed
  (:func:`read_back_readable`: those that can be, the others named).

Each worker is a thread with a client of its own (a Jepsen process); :class:`Recorder`
gives every completed operation its place in the history. Times are ``time.time()``,
the clock the brokers' traces use.
"""

from __future__ import annotations

import abc
import itertools
import threading
import time
from collections.abc import Callable, Sequence

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
)
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from minikafka.client import KafkaError as MinikafkaError
from minikafka.client import Message as MinikafkaMessage
from minikafka.client import Producer as MinikafkaProducer

from .history import Op, Record, TopicPartition
from .kafka_python import Delivered, DeliveryError, KafkaPythonProducer

CLIENT = "confluent-kafka"
MINIKAFKA = "minikafka"
KAFKA_PYTHON = "kafka-python"
CLIENTS = (CLIENT, MINIKAFKA, KAFKA_PYTHON)


class Recorder:
    """The history as it is recorded: operations in the order they completed, each
    given its index there; and the unique values the producers send."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ops: list[Op] = []
        self._values = itertools.count(1)

    def value(self) -> int:
        with self._lock:
            return next(self._values)

    def record(self, **fields: object) -> Op:
        with self._lock:
            op = Op(index=len(self._ops), **fields)  # type: ignore[arg-type]
            self._ops.append(op)
            return op

    @property
    def ops(self) -> list[Op]:
        with self._lock:
            return list(self._ops)


class _Worker(abc.ABC):
    """A thread that runs :meth:`step` until stopped, then :meth:`finish`."""

    def __init__(self, name: str) -> None:
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        self._stopping.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                self.step()
        except BaseException as exc:  # kept for the runner to report: a worker's bug
            self.error = exc
        finally:
            try:
                self.finish()
            except BaseException as exc:  # likewise, unless step's error came first
                self.error = self.error or exc

    @abc.abstractmethod
    def step(self) -> None:
        """One operation (or a few): what the worker does over and over."""

    @abc.abstractmethod
    def finish(self) -> None:
        """What a worker does once stopped (its client closed)."""


class Producer(_Worker):
    """An idempotent acks=all producer: one send every ``interval`` seconds (behind
    by more than one, it does not catch up in a burst)."""

    def __init__(
        self,
        process: int,
        bootstrap: str,
        topic: str,
        partitions: int,
        recorder: Recorder,
        interval: float = 0.02,
        client: str = CLIENT,
    ) -> None:
        super().__init__(f"chaos-producer-{process}")
        self.process, self.topic, self.recorder = process, topic, recorder
        self.interval = interval
        self._partitions = itertools.cycle(range(partitions))
        self._pending: dict[int, tuple[int, float]] = {}  # value -> (partition, invoke)
        self._due = time.monotonic()
        self.client = client
        common = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "request.timeout.ms": 10_000,
        }
        # Kafka's default delivery.timeout.ms (librdkafka's message.timeout.ms), longer
        # than any fault lasts: a record that times out makes librdkafka bump its
        # producer epoch, after which the records in flight to other partitions are sent
        # again with new sequence numbers, duplicates the broker cannot tell apart (a
        # client's limit the first runs, with 20 s, met: chaos/README.md).
        timeout = 120_000
        self._client: KafkaProducer | MinikafkaProducer | KafkaPythonProducer
        if client == KAFKA_PYTHON:
            self._client = KafkaPythonProducer(bootstrap, timeout)
        elif client == MINIKAFKA:
            self._client = MinikafkaProducer({**common, "delivery.timeout.ms": timeout})
        else:
            self._client = KafkaProducer(
                {**common, "message.timeout.ms": timeout, "log_level": 0}
            )

    def _send(self, partition: int, value: int, invoke: float) -> None:
        self._pending[value] = (partition, invoke)

        def delivered(
            error: KafkaError | MinikafkaError | DeliveryError | None,
            message: Message | MinikafkaMessage | Delivered,
        ) -> None:
            self._complete(value, error, message)

        try:
            self._client.produce(
                self.topic,
                str(value).encode(),
                partition=partition,
                on_delivery=delivered,
            )
        except BufferError as exc:  # refused before anything was sent
            del self._pending[value]
            self._done(partition, value, invoke, "failed", error=str(exc))

    def _complete(
        self,
        value: int,
        error: KafkaError | MinikafkaError | DeliveryError | None,
        message: Message | MinikafkaMessage | Delivered,
    ) -> None:
        partition, invoke = self._pending.pop(value)
        if error is None:
            self._done(partition, value, invoke, "ok", offset=message.offset())
        else:
            self._done(partition, value, invoke, "unknown", error=error.str())

    def _done(
        self, partition: int, value: int, invoke: float, outcome: str, **extra: object
    ) -> None:
        self.recorder.record(
            process=self.process,
            kind="send",
            outcome=outcome,
            invoke=invoke,
            complete=max(time.time(), invoke),
            client=self.client,
            topic=self.topic,
            partition=partition,
            value=value,
            **extra,
        )

    def step(self) -> None:
        self._send(next(self._partitions), self.recorder.value(), time.time())
        # Delivery reports until the next send is due: a steady pace, whatever the
        # reports' rate (poll returns as soon as it has served one).
        self._due += self.interval
        while (left := self._due - time.monotonic()) > 0:
            self._client.poll(left)
        self._due = max(self._due, time.monotonic() - self.interval)

    def finish(self) -> None:
        self._client.flush(150.0)  # the records' delivery timeout, and a margin
        for value, (partition, invoke) in list(self._pending.items()):
            del self._pending[value]
            self._done(partition, value, invoke, "unknown", error="not reported")


class GroupConsumer(_Worker):
    """A member of ``group`` reading ``topic`` and committing its position."""

    def __init__(
        self,
        process: int,
        bootstrap: str,
        topic: str,
        group: str,
        recorder: Recorder,
        commit_every: float = 1.0,
        debug: str = "",
    ) -> None:
        super().__init__(f"chaos-consumer-{process}")
        self.process, self.topic, self.group = process, topic, group
        self.recorder, self.commit_every = recorder, commit_every
        self._last_commit = time.monotonic()
        self._client = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                # librdkafka's own printer, not a Python logger: a logger's lines are
                # handed over only inside poll(), so a consumer stuck in commit()
                # would print nothing of why
                **({"debug": debug, "log_level": 7} if debug else {"log_level": 0}),
            }
        )
        self._client.subscribe([topic])

    def step(self) -> None:
        invoke = time.time()
        messages = self._client.consume(num_messages=200, timeout=0.5)
        complete = time.time()
        read: dict[int, list[Record]] = {}
        for message in messages:
            if message.error() is None:
                partition, record = _record_of(message)
                read.setdefault(partition, []).append(record)
        for partition, records in sorted(read.items()):
            self._record(
                "poll", "ok", invoke, complete, partition, records=tuple(records)
            )
        if time.monotonic() - self._last_commit >= self.commit_every:
            self._last_commit = time.monotonic()
            self._commit()

    def _commit(self) -> None:
        try:
            positions = [
                tp
                for tp in self._client.position(self._client.assignment())
                if tp.offset >= 0
            ]
        except KafkaException:
            return  # no position to commit: nothing was invoked
        if not positions:
            return
        invoke = time.time()
        outcome, error = "ok", ""
        try:
            self._client.commit(offsets=positions, asynchronous=False)
        except KafkaException as exc:
            outcome, error = "unknown", str(exc)
        complete = time.time()
        for tp in positions:
            self._record(
                "commit",
                outcome,
                invoke,
                complete,
                tp.partition,
                offset=tp.offset,
                error=error,
            )

    def _record(
        self,
        kind: str,
        outcome: str,
        invoke: float,
        complete: float,
        partition: int,
        **extra: object,
    ) -> None:
        self.recorder.record(
            process=self.process,
            kind=kind,
            outcome=outcome,
            invoke=invoke,
            complete=complete,
            client=CLIENT,
            topic=self.topic,
            partition=partition,
            group=self.group,
            **{k: v for k, v in extra.items() if v != ""},
        )

    def finish(self) -> None:
        self._client.close()


def _record_of(message: Message) -> tuple[int, Record]:
    """The partition and ``(offset, value)`` of a message the client returned."""
    partition, offset = message.partition(), message.offset()
    assert partition is not None  # a message, not an error
    assert offset is not None
    return partition, (offset, int(message.value() or b""))


def read_back(
    bootstrap: str, topic: str, partitions: int, deadline: float
) -> dict[TopicPartition, tuple[Record, ...]]:
    """Every partition of ``topic`` from offset 0 to its high watermark, read by a
    consumer assigned to it (no group offsets); AssertionError past ``deadline``
    (``time.monotonic()``) with what it had read."""
    state: dict[TopicPartition, tuple[Record, ...]] = {}
    for partition in range(partitions):
        state[(topic, partition)] = _read_partition(
            bootstrap, topic, partition, deadline
        )
    return state


def read_back_readable(
    bootstrap: str, topic: str, partitions: int, settle: float
) -> tuple[dict[TopicPartition, tuple[Record, ...]], list[str]]:
    """Every partition of ``topic`` read as :func:`read_back` reads it, each within
    ``settle`` seconds of its own, and a note for each one that could not be read in
    its time (left out of the state, so its final log is not checked): a run's record
    is kept whole when one partition is not readable, and says which one and why."""
    state: dict[TopicPartition, tuple[Record, ...]] = {}
    notes: list[str] = []
    for partition in range(partitions):
        # A partition with no leader to be had spends its whole time asking; a shared
        # deadline would leave the partitions read after it none (seed 139).
        deadline = time.monotonic() + settle
        try:
            state[(topic, partition)] = _read_partition(
                bootstrap, topic, partition, deadline
            )
        except AssertionError as failed:
            notes.append(
                f"{topic}-{partition} could not be read back ({failed}): "
                "its final log is not checked"
            )
    return state, notes


def _retrying(call: Callable[[], int], deadline: float, what: str) -> int:
    while True:
        try:
            return call()
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: {exc}") from exc
            time.sleep(0.5)  # the cluster is settling: ask again, inside the deadline


def _read_partition(
    bootstrap: str, topic: str, partition: int, deadline: float
) -> tuple[Record, ...]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chaos-read-back",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        tp = KafkaTopicPartition(topic, partition)
        end = _retrying(
            lambda: int(consumer.get_watermark_offsets(tp, timeout=10)[1]),
            deadline,
            f"the high watermark of {topic}-{partition}",
        )
        consumer.assign([KafkaTopicPartition(topic, partition, OFFSET_BEGINNING)])
        records: list[Record] = []
        while not records or records[-1][0] < end - 1:
            if end == 0:
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"read {len(records)} records of {topic}-{partition} up to {end}"
                )
            for message in consumer.consume(num_messages=500, timeout=1.0):
                if message.error() is None:
                    records.append(_record_of(message)[1])
        return tuple(records)
    finally:
        consumer.close()


def stop_all(workers: Sequence[_Worker], timeout: float) -> list[str]:
    """Stop every worker at once and wait for all of them, ``timeout`` seconds in all
    (each producer's flush waits for its records in parallel with the others', not
    after them); the errors any of them died of, and any still running, as text."""
    for worker in workers:
        worker._stopping.set()
    deadline = time.monotonic() + timeout
    for worker in workers:
        worker._thread.join(max(deadline - time.monotonic(), 0.0))
    notes = [f"{w._thread.name}: {w.error!r}" for w in workers if w.error is not None]
    notes += [
        f"{w._thread.name}: still running {timeout:g}s after it was stopped"
        for w in workers
        if w._thread.is_alive()
    ]
    return notes
