"""The async API in a trio program: AsyncProducer and AsyncConsumer against the real
broker (the same guarantees as the synchronous API's tests: every acknowledged record
read back once, in order; a group's commit resumed from)."""

from __future__ import annotations

import pytest
import trio

from minikafka.broker.testing import BrokerProcess
from minikafka.client import (
    OFFSET_BEGINNING,
    AsyncConsumer,
    AsyncProducer,
    KafkaException,
    Message,
    TopicPartition,
)


async def read(consumer: AsyncConsumer, count: int) -> list[Message]:
    got: list[Message] = []
    with trio.fail_after(30):
        while len(got) < count:
            got += await consumer.getmany()
    return got


async def test_send_waits_for_the_acknowledgement_and_the_consumer_reads_it_back(
    broker: BrokerProcess,
) -> None:
    async with AsyncProducer.open({"bootstrap.servers": broker.bootstrap}) as producer:
        first = await producer.send("as-one", b"first", key=b"k")
        assert (first.partition(), first.offset(), first.error()) == (0, 0, None)
        for i in range(500):
            await producer.produce("as-one", f"{i:04d}".encode())
        await producer.flush()
    async with AsyncConsumer.open({"bootstrap.servers": broker.bootstrap}) as consumer:
        consumer.assign([TopicPartition("as-one", 0, OFFSET_BEGINNING)])
        got = await read(consumer, 501)
    assert [m.value() for m in got] == [
        b"first",
        *(f"{i:04d}".encode() for i in range(500)),
    ]
    assert [m.offset() for m in got] == list(range(501))


async def test_a_group_member_commits_and_a_successor_resumes(
    broker: BrokerProcess,
) -> None:
    async with AsyncProducer.open({"bootstrap.servers": broker.bootstrap}) as producer:
        for i in range(100):
            await producer.produce("as-group", f"{i:03d}".encode())
    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "as-group",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    }
    assigned: list[int] = []
    async with AsyncConsumer.open(config) as consumer:
        consumer.subscribe(
            ["as-group"], on_assign=lambda c, ps: assigned.append(len(ps))
        )
        assert len(await read(consumer, 100)) == 100
        await consumer.commit()
    assert assigned == [1]
    async with AsyncProducer.open({"bootstrap.servers": broker.bootstrap}) as producer:
        await producer.send("as-group", b"after")
    async with AsyncConsumer.open(config) as consumer:
        consumer.subscribe(["as-group"])
        [message] = await read(consumer, 1)
    assert message.value() == b"after"


async def test_subscribe_without_a_group_is_refused(broker: BrokerProcess) -> None:
    async with AsyncConsumer.open({"bootstrap.servers": broker.bootstrap}) as consumer:
        with pytest.raises(KafkaException):
            consumer.subscribe(["x"])
