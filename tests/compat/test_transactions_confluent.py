"""Transactions (KIP-98, KIP-447) with confluent-kafka (librdkafka), against one real
broker: its transactional producer and its read_committed consumer.

What each test proves:

- records of a committed transaction are read by read_committed and read_uncommitted
  consumers alike; records of an aborted transaction are read by read_uncommitted
  consumers only; the markers take offsets of their own and are never handed out;
- while a transaction is open, read_committed consumers stop at its first offset (the
  last stable offset, which ListOffsets with read_committed answers), read_uncommitted
  ones read on; once it commits, both read it;
- a second producer with the same ``transactional.id`` fences the first: the first's
  commit fails with a fatal error, its open transaction is aborted, and the second
  commits;
- a consume-transform-produce loop with ``send_offsets_to_transaction`` copies each
  input record exactly once, although some of its transactions are aborted and
  redone: the output read with read_committed holds every input record once, and the
  group's committed offset is the input's end;
- a ``transaction.timeout.ms`` over the broker's ``transaction.max.timeout.ms`` is
  refused (INVALID_TRANSACTION_TIMEOUT) and nothing is begun.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest
import trio
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka import (
    TopicPartition as KafkaTopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import BrokerProcess
from minikafka.client import AsyncAdminClient, ListOffsetsResultInfo, OffsetSpec
from minikafka.common import TopicPartition
from tests.compat.conftest import GROUP_OVERRIDES

WAIT = 30.0
_names = itertools.count()


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker for this module, with the group settings of the group tests and a
    short abort check (the fencing test's abandoned transaction is aborted by the new
    producer, not by its timeout)."""
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"), overrides=GROUP_OVERRIDES
    ) as process:
        yield process


def topic(broker: BrokerProcess, partitions: int = 1) -> str:
    name = f"txn-{next(_names)}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=WAIT)
    return name


def producer(broker: BrokerProcess, transactional_id: str, **extra: object) -> Producer:
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": transactional_id,
            "log_level": 0,
            **extra,
        }
    )
    p.init_transactions(WAIT)
    return p


def read_all(
    broker: BrokerProcess,
    name: str,
    count: int,
    isolation: str,
    partitions: int = 1,
) -> list[bytes]:
    """``count`` values from the topic's partitions from offset 0, in partition order
    then offset order; fails if more arrive within a short while after them."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"read-{name}-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "log_level": 0,
        }
    )
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    try:
        consumer.assign([KafkaTopicPartition(name, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + WAIT
        while sum(map(len, got.values())) < count:
            assert time.monotonic() < deadline, f"read {got} of {count}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got[message.partition() or 0].append(message.value() or b"")
        # Nothing more: the rest of the log is markers or aborted records.
        extra = consumer.poll(1.0)
        assert extra is None or extra.error() is not None, extra.value()
    finally:
        consumer.close()
    return [v for p in range(partitions) for v in got[p]]


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(count)]


@pytest.mark.compat("EndTxn", "confluent-kafka")
@pytest.mark.compat("AddPartitionsToTxn", "confluent-kafka")
@pytest.mark.compat("WriteTxnMarkers", "confluent-kafka")
def test_committed_records_are_read_and_aborted_ones_only_read_uncommitted(
    txn_broker: BrokerProcess,
) -> None:
    name = topic(txn_broker, partitions=2)
    p = producer(txn_broker, f"tx-{name}")
    for prefix, commit in (("a", True), ("b", False), ("c", True)):
        p.begin_transaction()
        for i, value in enumerate(values(prefix, 10)):
            p.produce(name, value, partition=i % 2)
        if commit:
            p.commit_transaction(WAIT)
        else:
            # Written first: an abort purges what the producer has not sent yet.
            assert p.flush(WAIT) == 0
            p.abort_transaction(WAIT)
    committed = read_all(txn_broker, name, 20, "read_committed", partitions=2)
    assert sorted(committed) == sorted(values("a", 10) + values("c", 10))
    everything = read_all(txn_broker, name, 30, "read_uncommitted", partitions=2)
    assert sorted(everything) == sorted(
        values("a", 10) + values("b", 10) + values("c", 10)
    )
    # Each partition: 15 records and three markers, one per transaction.
    for partition in (0, 1):
        assert _latest(txn_broker, name, partition, read_committed=False) == 18


@pytest.mark.compat("InitProducerId", "confluent-kafka")
def test_an_open_transaction_holds_read_committed_consumers_at_its_first_offset(
    txn_broker: BrokerProcess,
) -> None:
    name = topic(txn_broker)
    plain = Producer({"bootstrap.servers": txn_broker.bootstrap, "log_level": 0})
    for value in values("before", 3):
        plain.produce(name, value, partition=0)
    assert plain.flush(WAIT) == 0
    p = producer(txn_broker, f"tx-{name}")
    p.begin_transaction()
    for value in values("open", 4):
        p.produce(name, value, partition=0)
    assert p.flush(WAIT) == 0
    # The last stable offset is the open transaction's first offset, 3.
    assert _latest(txn_broker, name, 0, read_committed=True) == 3
    assert _latest(txn_broker, name, 0, read_committed=False) == 7
    assert read_all(txn_broker, name, 3, "read_committed") == values("before", 3)
    assert read_all(txn_broker, name, 7, "read_uncommitted") == values(
        "before", 3
    ) + values("open", 4)
    p.commit_transaction(WAIT)
    assert read_all(txn_broker, name, 7, "read_committed") == values(
        "before", 3
    ) + values("open", 4)
    assert _latest(txn_broker, name, 0, read_committed=True) == 8


@pytest.mark.compat("InitProducerId", "confluent-kafka")
def test_a_second_producer_with_the_same_id_fences_the_first(
    txn_broker: BrokerProcess,
) -> None:
    name = topic(txn_broker)
    transactional_id = f"tx-{name}"
    zombie = producer(txn_broker, transactional_id)
    zombie.begin_transaction()
    zombie.produce(name, b"zombie", partition=0)
    assert zombie.flush(WAIT) == 0
    successor = producer(txn_broker, transactional_id)  # fences, aborts the zombie's
    successor.begin_transaction()
    successor.produce(name, b"successor", partition=0)
    successor.commit_transaction(WAIT)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(WAIT)
    error = raised.value.args[0]
    assert isinstance(error, KafkaError)
    assert error.fatal() or error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ), error
    assert read_all(txn_broker, name, 1, "read_committed") == [b"successor"]
    assert read_all(txn_broker, name, 2, "read_uncommitted") == [
        b"zombie",
        b"successor",
    ]


@pytest.mark.compat("TxnOffsetCommit", "confluent-kafka")
@pytest.mark.compat("AddOffsetsToTxn", "confluent-kafka")
def test_consume_transform_produce_copies_each_record_exactly_once(
    txn_broker: BrokerProcess,
) -> None:
    source, sink = topic(txn_broker, partitions=2), topic(txn_broker)
    plain = Producer({"bootstrap.servers": txn_broker.bootstrap, "log_level": 0})
    count = 60
    for i in range(count):
        plain.produce(source, b"%d" % i, partition=i % 2)
    assert plain.flush(WAIT) == 0
    group = f"copy-{source}"
    consumer = Consumer(
        {
            "bootstrap.servers": txn_broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
            "log_level": 0,
        }
    )
    p = producer(txn_broker, f"copier-{source}")
    copied = rounds = 0
    try:
        consumer.subscribe([source])
        deadline = time.monotonic() + 2 * WAIT
        while copied < count:
            assert time.monotonic() < deadline, f"copied {copied} of {count}"
            batch = [m for m in consumer.consume(10, timeout=0.5) if m.error() is None]
            if not batch:
                continue
            rounds += 1
            p.begin_transaction()
            for m in batch:
                p.produce(sink, b"copy-" + (m.value() or b""), partition=0)
            p.send_offsets_to_transaction(
                consumer.position(consumer.assignment()),
                consumer.consumer_group_metadata(),
                WAIT,
            )
            if rounds % 3 == 0:
                # Aborted on purpose: its records and offsets are gone; read again from
                # the committed offsets.
                p.abort_transaction(WAIT)
                for tp in consumer.committed(consumer.assignment(), timeout=WAIT):
                    consumer.seek(
                        KafkaTopicPartition(tp.topic, tp.partition, max(tp.offset, 0))
                    )
                continue
            p.commit_transaction(WAIT)
            copied += len(batch)
        committed = consumer.committed(
            [KafkaTopicPartition(source, 0), KafkaTopicPartition(source, 1)],
            timeout=WAIT,
        )
        assert {tp.partition: tp.offset for tp in committed} == {0: 30, 1: 30}
    finally:
        consumer.close()
    assert rounds >= 3, "no transaction was aborted"
    output = read_all(txn_broker, sink, count, "read_committed")
    assert sorted(output) == sorted(b"copy-%d" % i for i in range(count))


@pytest.mark.compat("InitProducerId", "confluent-kafka")
def test_a_transaction_timeout_over_the_maximum_is_refused(
    txn_broker: BrokerProcess,
) -> None:
    p = Producer(
        {
            "bootstrap.servers": txn_broker.bootstrap,
            "transactional.id": "too-long",
            "transaction.timeout.ms": 900_001,  # transaction.max.timeout.ms is 900000
            "log_level": 0,
        }
    )
    with pytest.raises(KafkaException) as raised:
        p.init_transactions(WAIT)
    assert raised.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT


def _latest(
    broker: BrokerProcess, name: str, partition: int, *, read_committed: bool
) -> int:
    """ListOffsets' latest offset, with read_committed (the LSO) or without (the HW)."""

    async def ask() -> int:
        async with AsyncAdminClient.open({"bootstrap.servers": broker.bootstrap}) as a:
            tp = TopicPartition(name, partition)
            found = await a.list_offsets(
                {tp: OffsetSpec.latest()}, isolation_level=1 if read_committed else 0
            )
            [result] = found.values()
            assert isinstance(result, ListOffsetsResultInfo), result
            return result.offset

    return trio.run(ask)
