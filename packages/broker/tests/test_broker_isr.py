"""The leader's ISR shrink through the real controller (seed 000, KIP-497).

One node leads a partition whose other replica, broker 2, is registered (and stays
alive by heartbeats) but never fetches. Guarantee tested: an acks=all produce is not
acknowledged while broker 2 is in the ISR, and is acknowledged once the leader's
AlterPartition, sent after ``replica.lag.time.max.ms``, has removed it; the committed
metadata says the same ISR. Real time, every wait bounded by a deadline.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import running_broker, single_node_config
from minikafka.common import Acks, TopicPartition
from minikafka.controller import (
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreatableTopic,
    CreateTopicsRequest,
)
from minikafka.log.testing import value_batch
from minikafka.net.testing import wait_until
from minikafka.replication import ProducePartitionResult

DEADLINE = 20.0
TP = TopicPartition("replicated", 0)


async def test_a_follower_that_never_fetches_is_shrunk_out_and_acks_all_completes(
    tmp_path: Path,
) -> None:
    overrides = {
        "replica.lag.time.max.ms": "1000",
        "broker.session.timeout.ms": "60000",
    }
    async with running_broker(single_node_config(tmp_path, overrides)) as node:
        controller = node.local_controller
        registered = await controller.submit(
            BrokerRegistrationRequest(
                2, uuid.uuid4(), (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 19092),)
            )
        )
        assert isinstance(registered, BrokerRegistrationResponse)
        beat = await controller.submit(
            BrokerHeartbeatRequest(2, registered.broker_epoch, controller.image.offset)
        )
        assert isinstance(beat, BrokerHeartbeatResponse)
        created = await controller.submit(
            CreateTopicsRequest((CreatableTopic(TP.topic, assignments=((1, 2),)),))
        )
        assert created is not None
        await wait_until(
            lambda: node.replica_manager.get_partition(TP) is not None, DEADLINE
        )
        partition = node.replica_manager.get_partition(TP)
        assert partition is not None
        assert partition.isr == frozenset({1, 2})
        answered: list[dict[TopicPartition, ProducePartitionResult]] = []
        done = trio.Event()

        def respond(answer: dict[TopicPartition, ProducePartitionResult]) -> None:
            answered.append(answer)
            done.set()

        started = trio.current_time()
        node.replica_manager.append_records(
            30_000, Acks.ALL, {TP: value_batch(3)}, respond
        )
        assert not answered  # broker 2 holds the HW at 0
        with trio.fail_after(DEADLINE):
            await done.wait()
        # not before replica.lag.time.max.ms
        assert trio.current_time() - started >= 1.0
        assert answered[0][TP].error_code is ErrorCode.none
        assert partition.isr == frozenset({1})
        await wait_until(
            lambda: (
                controller.image.topics[partition.topic_id].partitions[0].isr == (1,)
            ),
            DEADLINE,
        )
