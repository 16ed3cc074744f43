"""Transactions (KIP-98) with kafka-python, aiokafka and minikafka's own client, against
one real broker: each client's transactional producer commits one transaction and
aborts another, and its own consumers read the topic back.

What each test proves, for its client: the records of the committed transaction are
read by read_committed and read_uncommitted consumers; those of the aborted one (written
before the abort) only by read_uncommitted ones; a read_committed consumer hands out
neither markers nor aborted records.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest
from aiokafka import (  # type: ignore[import-untyped]
    AIOKafkaConsumer,
    AIOKafkaProducer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonPartition

from minikafka.broker.testing import BrokerProcess
from minikafka.client import Consumer as MinikafkaConsumer
from minikafka.client import Producer as MinikafkaProducer
from minikafka.client import TopicPartition as MinikafkaPartition

WAIT = 30.0
COMMITTED = [b"c%d" % i for i in range(5)]
ABORTED = [b"a%d" % i for i in range(5)]
_names = itertools.count()


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker")) as process:
        yield process


def topic(broker: BrokerProcess) -> str:
    name = f"txn-clients-{next(_names)}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=WAIT)
    return name


@pytest.mark.compat("EndTxn", "kafka-python")
@pytest.mark.compat("AddPartitionsToTxn", "kafka-python")
@pytest.mark.compat("InitProducerId", "kafka-python")
def test_kafka_python_commits_and_aborts(txn_broker: BrokerProcess) -> None:
    name = topic(txn_broker)
    producer = KafkaProducer(
        bootstrap_servers=txn_broker.bootstrap, transactional_id=f"kp-{name}"
    )
    try:
        producer.init_transactions()
        for values, commit in ((COMMITTED, True), (ABORTED, False)):
            producer.begin_transaction()
            for value in values:
                producer.send(name, value, partition=0)
            producer.flush(WAIT)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=WAIT)

    def read(isolation: str, count: int) -> list[bytes]:
        consumer = KafkaConsumer(
            bootstrap_servers=txn_broker.bootstrap,
            isolation_level=isolation,
            enable_auto_commit=False,
        )
        try:
            consumer.assign([KafkaPythonPartition(name, 0)])
            consumer.seek(KafkaPythonPartition(name, 0), 0)
            values: list[bytes] = []
            deadline = time.monotonic() + WAIT
            while len(values) < count and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=200).values():
                    values += [r.value for r in records]
            extra = consumer.poll(timeout_ms=1000)
            assert not any(extra.values()), extra
            return values
        finally:
            consumer.close()

    assert read("read_committed", 5) == COMMITTED
    assert read("read_uncommitted", 10) == COMMITTED + ABORTED


@pytest.mark.compat("EndTxn", "aiokafka")
@pytest.mark.compat("AddPartitionsToTxn", "aiokafka")
@pytest.mark.compat("InitProducerId", "aiokafka")
def test_aiokafka_commits_and_aborts(txn_broker: BrokerProcess) -> None:
    import asyncio

    name = topic(txn_broker)

    async def run() -> tuple[list[bytes], list[bytes]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=txn_broker.bootstrap, transactional_id=f"aio-{name}"
        )
        await producer.start()
        try:
            for values, commit in ((COMMITTED, True), (ABORTED, False)):
                await producer.begin_transaction()
                for value in values:
                    await producer.send_and_wait(name, value, partition=0)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

        async def read(isolation: str, count: int) -> list[bytes]:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=txn_broker.bootstrap,
                isolation_level=isolation,
                enable_auto_commit=False,
            )
            await consumer.start()
            try:
                tp = TopicPartition(name, 0)
                consumer.assign([tp])
                consumer.seek(tp, 0)
                values: list[bytes] = []
                async with asyncio.timeout(WAIT):
                    while len(values) < count:
                        batches = await consumer.getmany(timeout_ms=200)
                        values += [r.value for rs in batches.values() for r in rs]
                extra = await consumer.getmany(timeout_ms=1000)
                assert not any(extra.values()), extra
                return values
            finally:
                await consumer.stop()

        return await read("read_committed", 5), await read("read_uncommitted", 10)

    committed, everything = asyncio.run(run())
    assert committed == COMMITTED
    assert everything == COMMITTED + ABORTED


def test_minikafkas_client_commits_and_aborts(txn_broker: BrokerProcess) -> None:
    name = topic(txn_broker)
    producer = MinikafkaProducer(
        {"bootstrap.servers": txn_broker.bootstrap, "transactional.id": f"mk-{name}"}
    )
    try:
        producer.init_transactions(WAIT)
        for values, commit in ((COMMITTED, True), (ABORTED, False)):
            producer.begin_transaction()
            for value in values:
                producer.produce(name, value, partition=0)
            producer.flush(WAIT)
            if commit:
                producer.commit_transaction(WAIT)
            else:
                producer.abort_transaction(WAIT)
    finally:
        producer.close()

    def read(isolation: str, count: int) -> list[bytes]:
        consumer = MinikafkaConsumer(
            {
                "bootstrap.servers": txn_broker.bootstrap,
                "group.id": f"mk-{name}-{isolation}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
            }
        )
        try:
            consumer.assign([MinikafkaPartition(name, 0, 0)])
            values: list[bytes] = []
            deadline = time.monotonic() + WAIT
            while len(values) < count and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    values.append(message.value() or b"")
            assert consumer.poll(1.0) is None
            return values
        finally:
            consumer.close()

    assert read("read_committed", 5) == COMMITTED
    assert read("read_uncommitted", 10) == COMMITTED + ABORTED
