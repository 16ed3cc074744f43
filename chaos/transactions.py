"""The transactional workload: consume-transform-produce with exactly-once semantics
(KIP-98 transactions, KIP-447's offsets fenced by the group's generation), as Kafka
Streams and every exactly-once pipeline do it, recorded for :mod:`chaos.txn_checker`.

A :class:`Transformer` is a member of a consumer group reading the input topic with
``isolation.level=read_committed`` and owns a transactional producer whose
``transactional.id`` is fixed per worker. Each transaction: the records one fetch
returned, one new unique value per record written to the output topic's partition of
the same number, the offsets after them sent with the consumer's group metadata
(``send_offsets_to_transaction``), then ``commit_transaction``. On an abortable error
the transaction is aborted and the consumer rewound to the group's committed offsets;
on a fatal one the producer is replaced (its successor's ``init_transactions`` fences
it and ends what it left open). Each transaction is one ``txn`` operation of the
history: its inputs, outputs and offsets, ``ok`` when the commit returned, ``failed``
when aborted or never asked to commit, ``unknown`` when the commit raised otherwise.

:func:`read_back_transactions` reads the final state the rules need: the output topic
with ``read_committed`` and with ``read_uncommitted``, and the group's committed offsets.
"""

from __future__ import annotations

import time

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
)
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from .history import Record, TopicPartition, TransactionalFinal
from .workload import CLIENT, Recorder, _Worker

TIMEOUT = 10.0
"""Seconds each transactional call (init, offsets, commit, abort) is given: short,
since a worker inside one serves no rebalance (an eager rebalance waits for every
member's revocation, which the client hands out from ``consume``), and a whole group
waits on it (seed 31, chaos/README.md)."""
SINK = "chaos-out"
GROUP = "chaos-transform"


class Transformer(_Worker):
    """One consume-transform-produce worker: ``source`` to ``sink`` in ``group``."""

    def __init__(
        self,
        process: int,
        bootstrap: str,
        source: str,
        recorder: Recorder,
        sink: str = SINK,
        group: str = GROUP,
        batch: int = 50,
    ) -> None:
        super().__init__(f"chaos-transformer-{process}")
        self.process, self.source, self.sink, self.group = process, source, sink, group
        self.recorder, self.batch = recorder, batch
        self.transactional_id = f"chaos-transform-{process}"
        self._bootstrap = bootstrap
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                "log_level": 0,
            }
        )
        self._consumer.subscribe([source])
        self._producer = self._new_producer()
        self._ready = False  # init_transactions has returned for this producer
        self._rewind = False  # the consumer must go back to the committed offsets

    def _new_producer(self) -> KafkaProducer:
        return KafkaProducer(
            {
                "bootstrap.servers": self._bootstrap,
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": 30_000,
                "linger.ms": 5,
                "log_level": 0,
            }
        )

    def step(self) -> None:
        if not self._ready:
            self._init()
        elif self._rewind:
            self._rewind_consumer()
        else:
            messages = self._consumer.consume(num_messages=self.batch, timeout=0.5)
            records = [m for m in messages if m.error() is None]
            if records:
                self._transact(records)

    def _init(self) -> None:
        try:
            self._producer.init_transactions(TIMEOUT)
            self._ready = True
        except KafkaException as exc:
            if _error(exc).fatal():
                self._producer = self._new_producer()
            self._stopping.wait(1.0)  # the coordinator is unavailable: ask again

    def _rewind_consumer(self) -> None:
        """Every assigned partition back to the group's committed offset (the start
        without one): the records of an aborted transaction are read again."""
        try:
            committed = self._consumer.committed(
                self._consumer.assignment(), timeout=TIMEOUT
            )
        except KafkaException:
            self._stopping.wait(1.0)  # no answer yet: ask again
            return
        for tp in committed:
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            try:
                self._consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))
            except KafkaException as exc:
                # A partition whose fetching has not started yet starts from the
                # committed offset anyway; any other refusal is asked again.
                if _error(exc).code() != KafkaError._STATE:
                    self._stopping.wait(1.0)
                    return
        self._rewind = False

    def _transact(self, messages: list[Message]) -> None:
        inputs = tuple(_input(m) for m in messages)
        outputs = tuple((p, self.recorder.value()) for p, _, _ in inputs)
        after: dict[int, int] = {}
        for partition, offset, _ in inputs:
            after[partition] = max(after.get(partition, 0), offset + 1)
        offsets = tuple(sorted(after.items()))
        invoke = time.time()
        stage, outcome, error, at = "begin", "ok", "", time.monotonic()
        try:
            self._producer.begin_transaction()
            stage = "produce"
            for (partition, _, value), (_, out) in zip(inputs, outputs, strict=True):
                self._producer.produce(
                    self.sink, str(out).encode(), str(value).encode(), partition
                )
            stage, at = "offsets", time.monotonic()
            self._producer.send_offsets_to_transaction(
                [KafkaTopicPartition(self.source, p, o) for p, o in offsets],
                self._consumer.consumer_group_metadata(),
                TIMEOUT,
            )
            stage, at = "commit", time.monotonic()
            self._commit()
        except (KafkaException, BufferError) as exc:
            failed = f"{stage} after {time.monotonic() - at:.1f}s: {exc}"
            outcome, done = self._after_failure(exc, committing=stage == "commit")
            error = f"{failed}; {done}"
        self.recorder.record(
            process=self.process,
            kind="txn",
            outcome=outcome,
            invoke=invoke,
            complete=max(time.time(), invoke),
            client=CLIENT,
            topic=self.sink,
            group=self.group,
            transactional_id=self.transactional_id,
            source=self.source,
            inputs=inputs,
            outputs=outputs,
            offsets=offsets,
            error=error,
        )

    def _commit(self) -> None:
        """``commit_transaction``, asked again on a retriable error (librdkafka's
        advice: a timed-out commit may be retried) up to three times in all."""
        for attempt in range(3):
            try:
                self._producer.commit_transaction(TIMEOUT)
                return
            except KafkaException as exc:
                error = _error(exc)
                if not error.retriable() or error.txn_requires_abort() or attempt == 2:
                    raise

    def _after_failure(
        self, exc: KafkaException | BufferError, committing: bool
    ) -> tuple[str, str]:
        """Abort the transaction (or replace a producer that cannot), rewind the
        consumer; the transaction's outcome (``unknown`` if a commit was asked for and
        did not say it failed, else ``failed``) and what was done, with its seconds
        (the history's evidence of where a worker spent its time)."""
        error = _error(exc) if isinstance(exc, KafkaException) else None
        began, done = time.monotonic(), "aborted"
        if error is None or not error.fatal():
            try:
                self._producer.abort_transaction(TIMEOUT)
            except KafkaException as abort:
                done = f"abort failed ({abort})"
        else:
            done = "fatal"
        if done != "aborted":
            old, self._producer = self._producer, self._new_producer()
            del old  # destroyed here, so its seconds are counted in the note
            self._ready = False
            done += ", producer replaced"
        self._rewind = True
        said_failed = error is not None and error.txn_requires_abort()
        outcome = "unknown" if committing and not said_failed else "failed"
        return outcome, f"{done} in {time.monotonic() - began:.1f}s"

    def finish(self) -> None:
        self._consumer.close()
        self._producer.flush(TIMEOUT)


def _error(exc: KafkaException) -> KafkaError:
    error = exc.args[0]
    assert isinstance(error, KafkaError)  # confluent-kafka raises it so
    return error


def _input(message: Message) -> tuple[int, int, int]:
    partition, offset = message.partition(), message.offset()
    assert partition is not None  # a record, not an error
    assert offset is not None
    return partition, offset, int(message.value() or b"")


def _read(
    bootstrap: str, tp: TopicPartition, isolation: str, deadline: float
) -> tuple[tuple[Record, ...], int]:
    """``tp`` from its start to its end for ``isolation`` (the last stable offset for
    read_committed, the high watermark otherwise), read until the end-of-partition
    event; and that end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chaos-read-back",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "log_level": 0,
        }
    )
    try:
        consumer.assign([KafkaTopicPartition(*tp, OFFSET_BEGINNING)])
        records: list[Record] = []
        while time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=1.0):
                error, offset = message.error(), message.offset()
                assert offset is not None  # a record or the end event: both have one
                if error is None:
                    records.append((offset, int(message.value() or b"")))
                elif error.code() == KafkaError._PARTITION_EOF:
                    return tuple(records), offset
        raise AssertionError(f"read {len(records)} records of {tp} ({isolation})")
    finally:
        consumer.close()


def read_back_transactions(
    bootstrap: str, source: str, partitions: int, deadline: float
) -> tuple[TransactionalFinal, list[str]]:
    """The output topic read both ways and the transform group's committed offsets of
    ``source``, and notes (a partition whose last stable offset stayed below its high
    watermark: a transaction left open); AssertionError past ``deadline``
    (``time.monotonic()``)."""
    notes: list[str] = []
    committed, uncommitted = {}, {}
    for tp in [(SINK, p) for p in range(partitions)]:
        uncommitted[tp], end = _read(bootstrap, tp, "read_uncommitted", deadline)
        # Nothing writes any more: a transaction still open ends (aborted by its
        # timeout at the latest) and the last stable offset reaches the end.
        while True:
            committed[tp], stable = _read(bootstrap, tp, "read_committed", deadline)
            if stable >= end:
                break
            if time.monotonic() > deadline - 10:
                notes.append(f"{tp[0]}-{tp[1]}: last stable offset {stable} < {end}")
                break
            time.sleep(1.0)  # the open transaction ends by its timeout: look again
    return TransactionalFinal(
        GROUP, committed, uncommitted, _offsets(bootstrap, source, partitions, deadline)
    ), notes


def _offsets(
    bootstrap: str, source: str, partitions: int, deadline: float
) -> dict[TopicPartition, int]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": 0}
    )
    asked = [KafkaTopicPartition(source, p) for p in range(partitions)]
    try:
        while True:
            try:
                found = consumer.committed(asked, timeout=TIMEOUT)
                break
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{GROUP}'s offsets: {exc}") from exc
                time.sleep(0.5)  # the coordinator is settling: ask again, in time
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}
