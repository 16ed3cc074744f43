"""No acks=all answer while the replica a reassignment adds may already lead (the chaos
run of seed 127, in ZooKeeper mode, replayed on one ReplicaManager).

Broker 1 leads ``orders-0`` with ISR (1, 2); a reassignment to (3, 2) adds broker 3.
Broker 3 catches up to the HW, so broker 1 proposes ISR (1, 2, 3); an acks=all produce
appends two records, and broker 2 fetches them. The controller commits the expansion
and, in the same step, completes the reassignment: broker 3 leads, from a log that ends
at the old HW. Whatever the controller answers broker 1 (NEW_LEADER_ELECTED, as the
KRaft controller does; the ISR it wrote, on broker 1's own leader epoch, as the
ZooKeeper-mode controller does), broker 1 must keep counting broker 3 for the HW, and so
must not acknowledge the produce: the new leader never had those records. The
StopReplica that follows answers the produce with a retriable error (the partition gone
from this broker), and the producer sends it again to the new leader.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import LogConfig, LogManager
from minikafka.log.testing import keyed_batch
from minikafka.replication import (
    FetchParams,
    FetchPartition,
    IsrChangeAnswer,
    PartitionState,
    ProduceResponse,
    ReplicaManager,
    TopicSettings,
)

TP = TopicPartition("orders", 0)
PRODUCE = 7


def fetch(manager: ReplicaManager, broker: int, offset: int, now: float) -> None:
    params = FetchParams(broker, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    manager.fetch_messages(params, [FetchPartition(TP, offset, 1 << 20)], 100, now)


@pytest.mark.parametrize(
    "answer",
    [
        # KRaft's answer, and what minikafka's ZooKeeper-mode controller answered in
        # seed 127: the leadership moved in the same step.
        IsrChangeAnswer(TP, ErrorCode.new_leader_elected),
        # Kafka's ZooKeeper-mode controller: the ISR written, on broker 1's epoch.
        IsrChangeAnswer(TP, ErrorCode.none, (1, 2, 3), 1, 2),
    ],
    ids=["new_leader_elected", "isr_written"],
)
def test_the_old_leader_does_not_acknowledge_what_the_added_replica_lacks(
    answer: IsrChangeAnswer,
) -> None:
    settings = TopicSettings(LogConfig(), min_insync_replicas=2)
    logs = LogManager.startup([Path(tempfile.mkdtemp())])
    manager = ReplicaManager(1, logs, lambda topic: settings)
    # Phase A of the reassignment: replicas (3, 2, 1), a new leader epoch.
    state = PartitionState(1, 1, 1, replicas=(3, 2, 1), isr=(1, 2))
    manager.become_leader_or_follower({TP: (uuid.uuid4(), state)}, {}, now=0.0)
    manager.append_records(
        30_000, Acks.ALL, {TP: keyed_batch([(b"k", b"v")] * 4)}, 1, now=0.0
    )
    fetch(manager, 2, 4, now=1.0)
    partition = manager.get_partition(TP)
    assert partition is not None
    assert partition.log.high_watermark == 4
    fetch(manager, 3, 4, now=1.0)  # broker 3 reaches the HW: proposed into the ISR
    assert partition.maximal_isr == frozenset({1, 2, 3})
    parked = manager.append_records(
        30_000, Acks.ALL, {TP: keyed_batch([(b"k", b"acked?")] * 2)}, PRODUCE, now=2.0
    )
    assert [r.request_id for r in parked.replies] == []
    fetch(manager, 2, 6, now=3.0)  # broker 2 has offsets 4 and 5; broker 3 has not
    answered = manager.on_isr_change_answers([answer], now=4.0)
    assert [r.request_id for r in answered.replies] == []
    fetch(manager, 2, 6, now=5.0)
    assert partition.log.high_watermark == 4
    # The controller's StopReplica: the produce is answered, but not as written.
    stopped = manager.stop_replicas([TP], now=6.0)
    (reply,) = [r for r in stopped.replies if r.request_id == PRODUCE]
    assert isinstance(reply, ProduceResponse)
    # Retriable either way: the producer sends it again to the new leader.
    assert reply.results[TP].error_code in (
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
    )
