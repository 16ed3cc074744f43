"""minikafka's transactional producer and read_committed consumer against Apache Kafka.

Kafka 4.1's own broker is the transaction coordinator here (minikafka's broker does not
serve transactions yet): these tests prove that minikafka's client speaks KIP-98 and
KIP-447 as Kafka expects. What they check:

- a committed transaction's records are read by read_committed consumers (minikafka's
  and confluent-kafka's);
- an aborted transaction's records are hidden from read_committed and shown to
  read_uncommitted, the records of a later committed transaction are not;
- a send the broker refuses inside a transaction makes the commit fail and leaves
  only an abort, after which the producer goes on;
- offsets sent with a transaction are committed for the group only when it commits;
- a second producer of the same transactional.id fences the first;
- a consume-transform-produce loop that aborts some of its transactions on purpose
  copies each record exactly once, as read_committed sees the output;
- the AsyncProducer's transactions do the same as the Producer's.

Each test waits with a deadline, never a bare sleep.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import pytest
import trio
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.errors import ErrorCode

from minikafka.client import (
    OFFSET_BEGINNING,
    AsyncProducer,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from minikafka.client._message import TIMED_OUT
from reference.kafka import KafkaNode

pytestmark = pytest.mark.external

WAIT = 60.0


def _create(
    node: KafkaNode, topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    """Create the topic and wait until the broker's metadata has a leader for every
    partition (a producer asking before that is told UNKNOWN_TOPIC_OR_PARTITION)."""
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    new = NewTopic(topic, partitions, 1, config=config or {})
    admin.create_topics([new])[topic].result(WAIT)
    deadline = time.monotonic() + WAIT
    while True:
        found = admin.list_topics(topic, timeout=WAIT).topics.get(topic)
        if (
            found is not None
            and found.error is None
            and len(found.partitions) == partitions
            and all(p.leader >= 0 for p in found.partitions.values())
        ):
            return
        assert time.monotonic() < deadline, f"{topic} has no leaders"


def _producer(node: KafkaNode, transactional_id: str) -> Producer:
    return Producer(
        {"bootstrap.servers": node.bootstrap, "transactional.id": transactional_id}
    )


def _high_watermarks(node: KafkaNode, topic: str, partitions: int) -> dict[int, int]:
    consumer = ConfluentConsumer(
        {"bootstrap.servers": node.bootstrap, "group.id": "watermarks", "log_level": 0}
    )
    try:
        return {
            p: consumer.get_watermark_offsets(
                ConfluentTopicPartition(topic, p), timeout=WAIT
            )[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def _read(node: KafkaNode, topic: str, partitions: int, isolation: str) -> list[bytes]:
    """Every value a minikafka consumer of ``isolation`` reads from the start to the
    log's end (markers included: a read_committed position gets there once the last
    transaction's markers are written)."""
    ends = _high_watermarks(node, topic, partitions)
    consumer = Consumer(
        {"bootstrap.servers": node.bootstrap, "isolation.level": isolation}
    )
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT
    try:
        consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        )
        while True:
            for m in consumer.consume(500, 0.2):
                assert m.error() is None, m.error()
                values.append(m.value() or b"")
            positions = consumer.position(
                [TopicPartition(topic, p) for p in range(partitions)]
            )
            if all(ends[tp.partition] in (0, tp.offset) for tp in positions):
                return values
            assert time.monotonic() < deadline, (positions, ends)
    finally:
        consumer.close()


def _read_confluent(
    node: KafkaNode, topic: str, partitions: int, isolation: str
) -> list[bytes]:
    """The same with confluent-kafka's consumer (librdkafka)."""
    ends = _high_watermarks(node, topic, partitions)
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": f"reader-{topic}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT
    try:
        consumer.assign(
            [
                ConfluentTopicPartition(topic, p, OFFSET_BEGINNING)
                for p in range(partitions)
            ]
        )
        while True:
            for m in consumer.consume(500, 0.2):
                assert m.error() is None, m.error()
                values.append(m.value() or b"")
            positions = consumer.position(
                [ConfluentTopicPartition(topic, p) for p in range(partitions)]
            )
            if all(ends[tp.partition] in (0, tp.offset) for tp in positions):
                return values
            assert time.monotonic() < deadline, (positions, ends)
    finally:
        consumer.close()


def _produce(producer: Producer, topic: str, values: Iterable[bytes]) -> None:
    for value in values:
        producer.produce(topic, value)


def test_commit_makes_records_visible_to_read_committed(
    kafka_reference: KafkaNode,
) -> None:
    topic = "txn-commit"
    _create(kafka_reference, topic, 2)
    with _producer(kafka_reference, "txn-commit") as producer:
        with pytest.raises(KafkaException) as raised:
            producer.init_transactions(0)  # no time to get an answer
        assert raised.value.args[0].code() == TIMED_OUT
        producer.init_transactions(WAIT)  # waits on the same call
        producer.begin_transaction()
        sent = [b"commit-%d" % i for i in range(20)]
        _produce(producer, topic, sent)
        producer.commit_transaction(WAIT)
    assert sorted(_read(kafka_reference, topic, 2, "read_committed")) == sorted(sent)
    assert sorted(_read_confluent(kafka_reference, topic, 2, "read_committed")) == (
        sorted(sent)
    )


def test_abort_hides_records_from_read_committed_only(
    kafka_reference: KafkaNode,
) -> None:
    topic = "txn-abort"
    _create(kafka_reference, topic, 2)
    with _producer(kafka_reference, "txn-abort") as producer:
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        aborted = [b"aborted-%d" % i for i in range(10)]
        _produce(producer, topic, aborted)
        assert producer.flush(WAIT) == 0  # in the log, then aborted
        producer.abort_transaction(WAIT)
        producer.begin_transaction()
        committed = [b"committed-%d" % i for i in range(5)]
        _produce(producer, topic, committed)
        producer.commit_transaction(WAIT)
    assert sorted(_read(kafka_reference, topic, 2, "read_committed")) == sorted(
        committed
    )
    assert sorted(_read(kafka_reference, topic, 2, "read_uncommitted")) == sorted(
        aborted + committed
    )
    assert sorted(_read_confluent(kafka_reference, topic, 2, "read_committed")) == (
        sorted(committed)
    )


def test_a_failed_send_leaves_only_abort(kafka_reference: KafkaNode) -> None:
    topic = "txn-abortable"
    _create(kafka_reference, topic, 1, {"max.message.bytes": "2000"})
    reports: list[KafkaError | None] = []
    with _producer(kafka_reference, "txn-abortable") as producer:
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        producer.produce(topic, b"small", on_delivery=lambda e, m: reports.append(e))
        assert producer.flush(WAIT) == 0
        # the broker refuses the batch (MESSAGE_TOO_LARGE): the transaction cannot
        # commit any more
        producer.produce(topic, b"x" * 5000, on_delivery=lambda e, m: reports.append(e))
        with pytest.raises(KafkaException) as raised:
            producer.commit_transaction(WAIT)
        error = raised.value.args[0]
        assert error.txn_requires_abort()
        assert not error.fatal()
        assert error.code() == ErrorCode.message_too_large
        producer.abort_transaction(WAIT)
        # and the producer goes on (under a new epoch: the failed batch's sequence)
        producer.begin_transaction()
        producer.produce(topic, b"after")
        producer.commit_transaction(WAIT)
    assert reports[0] is None
    assert reports[1] is not None
    assert reports[1].code() == ErrorCode.message_too_large
    assert _read(kafka_reference, topic, 1, "read_committed") == [b"after"]


def _committed(node: KafkaNode, group: str, topic: str) -> int:
    consumer = ConfluentConsumer(
        {"bootstrap.servers": node.bootstrap, "group.id": group, "log_level": 0}
    )
    try:
        [tp] = consumer.committed([ConfluentTopicPartition(topic, 0)], timeout=WAIT)
        return int(tp.offset)
    finally:
        consumer.close()


def _join(consumer: Consumer, topic: str) -> None:
    """Subscribe and poll until the group assigned the partitions (a generation); then
    back to the start of each (the group has no offsets yet), since the polls may have
    returned records."""
    consumer.subscribe([topic])
    deadline = time.monotonic() + WAIT
    while not consumer.assignment():
        consumer.poll(0.2)
        assert time.monotonic() < deadline, "no assignment"
    for tp in consumer.assignment():
        consumer.seek(TopicPartition(tp.topic, tp.partition, 0))


def test_offsets_commit_only_with_the_transaction(kafka_reference: KafkaNode) -> None:
    source, sink, group = "txn-offsets-in", "txn-offsets-out", "txn-offsets"
    _create(kafka_reference, source, 1)
    _create(kafka_reference, sink, 1)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_reference.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        _join(consumer, source)
        metadata = consumer.consumer_group_metadata()
        assert metadata.group_id == group
        assert metadata.generation_id > 0
        assert metadata.member_id
        with _producer(kafka_reference, "txn-offsets") as producer:
            producer.init_transactions(WAIT)
            producer.begin_transaction()
            producer.produce(sink, b"x")
            producer.send_offsets_to_transaction(
                [TopicPartition(source, 0, 5)], metadata, WAIT
            )
            producer.abort_transaction(WAIT)
            assert _committed(kafka_reference, group, source) < 0  # none

            producer.begin_transaction()
            producer.produce(sink, b"y")
            producer.send_offsets_to_transaction(
                [TopicPartition(source, 0, 7)], metadata, WAIT
            )
            producer.commit_transaction(WAIT)
        assert _committed(kafka_reference, group, source) == 7
    finally:
        consumer.close()


def test_a_read_committed_member_waits_for_offsets_a_transaction_commits(
    kafka_reference: KafkaNode,
) -> None:
    """KIP-447: a member taking over partitions while a transaction that commits their
    offsets is open starts from those offsets, once the transaction commits, not from
    what was committed before it (OffsetFetch with require_stable)."""
    source, sink, group = "txn-stable-in", "txn-stable-out", "txn-stable"
    _create(kafka_reference, source, 1)
    _create(kafka_reference, sink, 1)
    with Producer({"bootstrap.servers": kafka_reference.bootstrap}) as plain:
        _produce(plain, source, (b"%d" % i for i in range(10)))
        assert plain.flush(WAIT) == 0
    settings = {
        "bootstrap.servers": kafka_reference.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    }
    first = Consumer(settings)
    with _producer(kafka_reference, "txn-stable") as producer:
        try:
            _join(first, source)
            producer.init_transactions(WAIT)
            producer.begin_transaction()
            producer.produce(sink, b"x")
            producer.send_offsets_to_transaction(
                [TopicPartition(source, 0, 3)], first.consumer_group_metadata(), WAIT
            )
        finally:
            first.close()
        second = Consumer(settings)
        try:
            second.subscribe([source])
            deadline = time.monotonic() + WAIT
            while not second.assignment():
                # The transaction is open: its offsets are not stable, nothing is read.
                assert second.consume(10, 0.2) == []
                assert time.monotonic() < deadline, "no assignment"
            assert second.consume(10, 1.0) == []
            producer.commit_transaction(WAIT)
            deadline = time.monotonic() + WAIT
            while not (got := second.consume(10, 0.5)):
                assert time.monotonic() < deadline, "nothing read"
            assert got[0].offset() == 3
        finally:
            second.close()


def test_a_second_producer_fences_the_first(kafka_reference: KafkaNode) -> None:
    topic = "txn-fenced"
    _create(kafka_reference, topic, 1)
    first = _producer(kafka_reference, "txn-fenced")
    try:
        first.init_transactions(WAIT)
        first.begin_transaction()
        first.produce(topic, b"first")
        assert first.flush(WAIT) == 0
        with _producer(kafka_reference, "txn-fenced") as second:
            second.init_transactions(WAIT)  # aborts the first's open transaction
            first.produce(topic, b"zombie")
            with pytest.raises(KafkaException) as raised:
                first.commit_transaction(WAIT)
            error = raised.value.args[0]
            assert error.code() in (
                ErrorCode.producer_fenced,
                ErrorCode.invalid_producer_epoch,
            ), error
            assert error.fatal()
            second.begin_transaction()
            second.produce(topic, b"second")
            second.commit_transaction(WAIT)
    finally:
        first.close(1)
    assert _read(kafka_reference, topic, 1, "read_committed") == [b"second"]


def test_exactly_once_copy_with_aborted_transactions(
    kafka_reference: KafkaNode,
) -> None:
    source, sink, group, partitions, count = "eos-in", "eos-out", "eos", 3, 300
    _create(kafka_reference, source, partitions)
    _create(kafka_reference, sink, partitions)
    with Producer({"bootstrap.servers": kafka_reference.bootstrap}) as plain:
        _produce(plain, source, (b"%d" % i for i in range(count)))
        assert plain.flush(WAIT) == 0
    ends = _high_watermarks(kafka_reference, source, partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_reference.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    producer = _producer(kafka_reference, "eos-copier")
    transactions = aborts = 0
    try:
        _join(consumer, source)
        producer.init_transactions(WAIT)
        deadline = time.monotonic() + 2 * WAIT
        done: dict[int, int] = {}
        while any(done.get(p, 0) < end for p, end in ends.items()):
            assert time.monotonic() < deadline, (done, ends)
            batch = consumer.consume(25, 0.5)
            if not batch:
                continue
            producer.begin_transaction()
            for m in batch:
                assert m.error() is None, m.error()
                producer.produce(sink, m.value(), partition=m.partition())
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(
                positions, consumer.consumer_group_metadata(), WAIT
            )
            transactions += 1
            if transactions % 3 == 0:
                # on purpose: the copies vanish and the input is read again
                producer.abort_transaction(WAIT)
                aborts += 1
                first: dict[int, int] = {}
                for m in batch:
                    first.setdefault(m.partition(), m.offset())
                for partition, offset in first.items():
                    consumer.seek(TopicPartition(source, partition, offset))
            else:
                producer.commit_transaction(WAIT)
                done.update((tp.partition, tp.offset) for tp in positions)
    finally:
        producer.close(1)
        consumer.close()
    assert aborts > 0
    copied = _read(kafka_reference, sink, partitions, "read_committed")
    assert sorted(copied, key=int) == [b"%d" % i for i in range(count)]
    assert len(_read(kafka_reference, sink, partitions, "read_uncommitted")) > count


def test_the_async_producer_commits_and_aborts(kafka_reference: KafkaNode) -> None:
    topic = "txn-async"
    _create(kafka_reference, topic, 2)

    async def main() -> None:
        config = {
            "bootstrap.servers": kafka_reference.bootstrap,
            "transactional.id": "txn-async",
        }
        async with AsyncProducer.open(config) as producer:
            with trio.fail_after(WAIT):
                await producer.init_transactions()
                producer.begin_transaction()
                for i in range(5):
                    await producer.produce(topic, b"aborted-%d" % i)
                await producer.flush()
                await producer.abort_transaction()
                producer.begin_transaction()
                for i in range(5):
                    await producer.produce(topic, b"committed-%d" % i)
                await producer.commit_transaction()

    trio.run(main)
    committed = sorted(_read(kafka_reference, topic, 2, "read_committed"))
    assert committed == [b"committed-%d" % i for i in range(5)]
    assert len(_read(kafka_reference, topic, 2, "read_uncommitted")) == 10
