"""Where a Produce request is queued on its broker's connection: by the sender loop
itself while the connection is ready and no request waits before it (no round of
trio's scheduler between a record's batch being drained and its request written, on the
way of every record sent with ``linger.ms=0``), else by the broker's own task, which
connects first; either way in the order the Sender made them.

The shell runs against a fake client in virtual time (``autojump_clock``)."""

from __future__ import annotations

from typing import cast

import trio
import trio.testing
from kio.schema.produce.v8.request import ProduceRequest

from minikafka.client import (
    ClientMetadata,
    ProducerConfig,
    RecordAccumulator,
    Sender,
    TopicInfo,
)
from minikafka.client._producer import new_record
from minikafka.client._shell import ProducerShell
from minikafka.common import TopicPartition
from minikafka.net import NetworkClient, Node

TP = TopicPartition("t", 0)
LEADER = Node(1, "h", 9001)


class Unanswered:
    async def response(self) -> object:
        await trio.sleep_forever()


class Connection:
    """Broker 1's connection: not ready until :attr:`connected` is set (a request
    queued meanwhile waits for it, as ``NetworkClient.enqueue`` connects first); notes
    each queued request's first record and the task that queued it."""

    def __init__(self) -> None:
        self.connected = trio.Event()
        self.queued: list[tuple[bytes, str]] = []

    def load(self, node: Node) -> int | None:
        return 0 if self.connected.is_set() else None

    async def enqueue(
        self, node: Node, body: object, *, expect_response: bool = True
    ) -> Unanswered:
        assert isinstance(body, ProduceRequest)
        await self.connected.wait()
        records = body.topic_data[0].partition_data[0].records
        assert records is not None
        value = bytes(records)[-3:-1]  # the last record's value, then its 0 headers
        self.queued.append((value, trio.lowlevel.current_task().name.split(".")[-1]))
        return Unanswered()


def producer(connection: Connection) -> ProducerShell:
    config = ProducerConfig.from_dict(
        {
            "bootstrap.servers": "h:9001",
            "linger.ms": 0,
            "acks": "all",
            "enable.idempotence": False,
        }
    )
    metadata = ClientMetadata((LEADER,))
    metadata.nodes = {1: LEADER}
    metadata.topics["t"] = TopicInfo(0, (1,))
    sender = Sender(config, RecordAccumulator(16384, 1 << 20, 0, 100), metadata)
    return ProducerShell(
        sender,
        cast(NetworkClient, connection),
        on_deliveries=lambda done: None,
        clock=trio.current_time,
    )


async def test_a_ready_connection_gets_the_request_from_the_sender_loop_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    connection = Connection()
    shell = producer(connection)

    async def produce(value: bytes) -> None:
        record = new_record(shell.sender.config, "t", value, None, 0, None, None)
        with shell.lock:
            shell.accumulator.append(TP, record, trio.current_time())
        shell.wake()
        await trio.sleep(0.01)  # the batch drained and its request made

    with trio.fail_after(10):  # virtual time
        async with trio.open_nursery() as nursery:
            await nursery.start(shell.run)
            await produce(b"v0")  # connecting: the broker's task waits with it
            await produce(b"v1")  # waits behind it, in the broker's task's queue
            connection.connected.set()
            await trio.sleep(0.01)
            await produce(b"v2")  # ready, nothing waiting: the sender loop queues it
            nursery.cancel_scope.cancel()
    assert connection.queued == [
        (b"v0", "_node_task"),
        (b"v1", "_node_task"),
        (b"v2", "_sender_loop"),
    ]
