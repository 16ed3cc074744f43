"""The follower's fetcher against a real leader, both in this process (seed 000; KIP-101,
KIP-279, KIP-320).

Two ReplicaManagers on their own log directories play brokers 1 and 2; the fetcher's
requests are handed to the leader's ``fetch_messages`` and OffsetsForLeaderEpoch answers
come from the leader's Partition, as the shell would carry them over the network.
Guarantees tested:

- a follower's log becomes byte-for-byte the leader's, and an acks=all produce is
  answered only once the follower has fetched past it (acknowledged means on the ISR);
- a replica that led with writes nobody fetched, then follows the new leader, truncates
  exactly the records the new leader never had, and then holds the new leader's log;
- a follower naming an old leader epoch is fenced and backs off instead of fetching;
- a fetch answer cut inside a batch appends the whole batches and the follower asks for
  the rest again, and a first batch larger than ``replica.fetch.max.bytes`` comes whole
  (min_one_message): the follower always progresses and ends byte for byte the leader's;
- a partition whose records are corrupt fails alone: the others advance in the same
  round, it is retried after ``replica.fetch.backoff.ms``, reported once, and recovers;
- a partition answered goes last in the next request (each gets its turn to be first).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import attrs
import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log.testing import value_batch
from minikafka.replication import (
    EpochRequest,
    FetchedPartition,
    FetchParams,
    FetchResponse,
    Partition,
    PartitionState,
    ProduceResponse,
    ReplicaFetcher,
    ReplicaManager,
)
from minikafka.replication.testing import replica_manager_core

TP = TopicPartition("replicated", 0)
TOPIC_ID = uuid.UUID(int=7)


def state(leader: int, epoch: int, isr: tuple[int, ...] = (1, 2)) -> PartitionState:
    return PartitionState(leader, epoch, epoch, replicas=(1, 2), isr=isr)


def lead(manager: ReplicaManager, s: PartitionState, now: float = 0.0) -> None:
    manager.become_leader_or_follower({TP: (TOPIC_ID, s)}, {}, now)


def follow(manager: ReplicaManager, s: PartitionState, now: float = 0.0) -> None:
    manager.become_leader_or_follower({}, {TP: (TOPIC_ID, s)}, now)


@attrs.define
class Link:
    """The fetcher of ``follower`` pointed at ``leader``, and what the leader answered
    to others along the way (produce answers completed by the follower's fetches)."""

    leader: ReplicaManager
    fetcher: ReplicaFetcher
    completed: list[ProduceResponse] = attrs.field(factory=list)
    truncations: list[tuple[TopicPartition, int]] = attrs.field(factory=list)
    _next_id: int = 1000

    def pump(self, now: float) -> None:
        """One round: OffsetsForLeaderEpoch if truncating, then one Fetch."""
        answers = self.leader.last_offsets_for_leader_epochs(
            self.fetcher.epoch_requests(now).messages
        )
        round_ = self.fetcher.on_epoch_answers(answers, now)
        assert round_.failures == ()
        self.truncations += round_.truncated
        fetches = list(self.fetcher.fetch_request(now).messages)
        if not fetches:
            return
        self._next_id += 1
        params = FetchParams(
            self.fetcher.broker_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20
        )
        fetched: list[FetchedPartition] = []
        result = self.leader.fetch_messages(params, fetches, self._next_id, now)
        for response in result.replies:
            if isinstance(response, ProduceResponse):
                self.completed.append(response)
                continue
            assert isinstance(response, FetchResponse)
            fetched += [FetchedPartition.of(f, r) for f, r in response.results]
        assert self.fetcher.on_fetch_answers(fetched, now).failures == ()


def log_bytes(manager: ReplicaManager) -> bytes:
    log = manager.partitions[TP].log
    read = log.read(log.log_start_offset, 1 << 30)
    return read.records.read_bytes() if read.records is not None else b""


def link(
    follower: ReplicaManager, leader: ReplicaManager, fetch_max_bytes: int = 1 << 20
) -> Link:
    fetcher = ReplicaFetcher(
        follower.broker_id,
        leader.broker_id,
        follower.partitions,
        fetch_max_bytes=fetch_max_bytes,
    )
    fetcher.add_partitions([TP])
    return Link(leader, fetcher)


def test_a_follower_replicates_the_leader_and_acks_all_waits_for_it(
    tmp_path: Path,
) -> None:
    broker1 = replica_manager_core(tmp_path / "1", broker_id=1)
    broker2 = replica_manager_core(tmp_path / "2", broker_id=2)
    lead(broker1, state(1, 0))
    follow(broker2, state(1, 0))
    to_leader = link(broker2, broker1)
    answered = broker1.append_records(
        30_000, Acks.ALL, {TP: value_batch(3)}, 1, now=0.0
    )
    assert answered.replies == ()  # the follower has nothing yet: the HW stays at 0
    to_leader.pump(1.0)  # brings offsets 0-2 to the follower
    assert broker2.partitions[TP].log.log_end_offset == 3
    assert to_leader.completed == []  # the leader learns it only from the next fetch
    to_leader.pump(2.0)
    [produce] = to_leader.completed
    assert produce.request_id == 1
    assert produce.results[TP].error_code is ErrorCode.none
    assert broker1.partitions[TP].log.high_watermark == 3
    # the HW travels in the answer
    assert broker2.partitions[TP].log.high_watermark == 3
    broker1.append_records(30_000, Acks.LEADER, {TP: value_batch(5)}, 2, now=3.0)
    to_leader.pump(4.0)
    assert log_bytes(broker2) == log_bytes(broker1)  # byte for byte, offsets and epochs


def test_a_returning_leader_truncates_what_the_new_leader_never_had(
    tmp_path: Path,
) -> None:
    broker1 = replica_manager_core(tmp_path / "1", broker_id=1)
    broker2 = replica_manager_core(tmp_path / "2", broker_id=2)
    lead(broker1, state(1, 0))
    follow(broker2, state(1, 0))
    to_1 = link(broker2, broker1)
    broker1.append_records(30_000, Acks.LEADER, {TP: value_batch(2)}, 1, now=0.0)
    to_1.pump(1.0)
    to_1.pump(2.0)  # both have offsets 0-1, committed
    # acks=1 writes the follower never fetches: broker 1 then dies.
    broker1.append_records(30_000, Acks.LEADER, {TP: value_batch(2)}, 2, now=3.0)
    assert broker1.partitions[TP].log.log_end_offset == 4
    # Broker 2 is elected in epoch 1 and takes a write of its own at offset 2.
    lead(broker2, state(2, 1, isr=(2,)), now=4.0)
    broker2.append_records(30_000, Acks.LEADER, {TP: value_batch(1)}, 3, now=4.0)
    # Broker 1 returns as a follower of broker 2.
    follow(broker1, state(2, 1, isr=(2,)), now=5.0)
    to_2 = link(broker1, broker2)
    to_2.pump(6.0)
    # Epoch 0 ends at offset 2 on the new leader: offsets 2-3 of broker 1 were never
    # committed, and are gone; offset 2 is now the new leader's record.
    assert to_2.truncations == [(TP, 2)]
    assert broker1.partitions[TP].log.log_end_offset == 3
    assert log_bytes(broker1) == log_bytes(broker2)
    epochs = [
        (e.epoch, e.start_offset)
        for e in broker1.partitions[TP].log.leader_epoch_cache.entries
    ]
    assert epochs == [(0, 0), (1, 2)]


def test_a_follower_with_an_old_epoch_is_fenced_and_backs_off(tmp_path: Path) -> None:
    broker1 = replica_manager_core(tmp_path / "1", broker_id=1)
    broker2 = replica_manager_core(tmp_path / "2", broker_id=2)
    lead(broker1, state(1, 0))
    follow(broker2, state(1, 0))
    to_leader = link(broker2, broker1)
    broker1.append_records(30_000, Acks.LEADER, {TP: value_batch(1)}, 1, now=0.0)
    to_leader.pump(1.0)
    # a new leader epoch the follower has not heard of
    lead(broker1, state(1, 3), now=2.0)
    to_leader.pump(2.0)  # FENCED_LEADER_EPOCH
    assert not to_leader.fetcher.fetch_request(2.5)  # backing off (1 s by default)
    assert to_leader.fetcher.fetch_request(3.0).messages
    follow(broker2, state(1, 3), now=3.0)  # the metadata arrives: fetch in epoch 3
    to_leader.fetcher.add_partitions([TP])
    broker1.append_records(30_000, Acks.LEADER, {TP: value_batch(2)}, 2, now=3.0)
    to_leader.pump(3.0)
    to_leader.pump(3.5)
    assert log_bytes(broker2) == log_bytes(broker1)


def test_a_follower_behind_the_leaders_log_start_starts_over_there(
    tmp_path: Path,
) -> None:
    # The leader's retention deleted offsets 0-7 while the follower was away: fetching
    # from 0 is out of range, so the follower starts empty at the leader's log start.
    broker1 = replica_manager_core(tmp_path / "1", broker_id=1)
    broker2 = replica_manager_core(tmp_path / "2", broker_id=2)
    lead(broker1, state(1, 0, isr=(1,)))
    for _ in range(10):
        broker1.append_records(30_000, Acks.LEADER, {TP: value_batch(1)}, 1, now=0.0)
    leader_log = broker1.partitions[TP].log
    assert leader_log.maybe_increment_log_start_offset(8, "retention")
    leader_log.delete_old_segments()
    follow(broker2, state(1, 0, isr=(1,)))
    to_leader = link(broker2, broker1)
    to_leader.pump(1.0)  # OFFSET_OUT_OF_RANGE at 0
    to_leader.pump(2.0)  # from 8
    follower_log = broker2.partitions[TP].log
    assert (follower_log.log_start_offset, follower_log.log_end_offset) == (8, 10)
    assert log_bytes(broker2) == log_bytes(broker1)


def test_a_fetch_cut_inside_a_batch_appends_the_whole_batches_and_asks_again(
    tmp_path: Path,
) -> None:
    broker1 = replica_manager_core(tmp_path / "1", broker_id=1)
    broker2 = replica_manager_core(tmp_path / "2", broker_id=2)
    lead(broker1, state(1, 0))
    follow(broker2, state(1, 0))
    for request_id in range(6):
        broker1.append_records(
            30_000, Acks.LEADER, {TP: value_batch(3)}, request_id, now=0.0
        )
    size = len(log_bytes(broker1)) // 6
    # Each answer holds one and a half batches: every one ends inside a batch.
    to_leader = link(broker2, broker1, fetch_max_bytes=size * 3 // 2)
    ends = []
    for round_ in range(10):
        to_leader.pump(1.0 + round_)  # Link.pump: no partition failed
        ends.append(broker2.partitions[TP].log.log_end_offset)
    assert ends[:6] == [3, 6, 9, 12, 15, 18], "one whole batch a round, none torn"
    assert log_bytes(broker2) == log_bytes(broker1)


def test_a_first_batch_larger_than_the_fetch_limit_comes_whole(tmp_path: Path) -> None:
    broker1 = replica_manager_core(tmp_path / "1", broker_id=1)
    broker2 = replica_manager_core(tmp_path / "2", broker_id=2)
    lead(broker1, state(1, 0))
    follow(broker2, state(1, 0))
    broker1.append_records(30_000, Acks.LEADER, {TP: value_batch(20, 1000)}, 1, now=0.0)
    to_leader = link(broker2, broker1, fetch_max_bytes=1024)  # the batch is ~20 KB
    to_leader.pump(1.0)
    assert broker2.partitions[TP].log.log_end_offset == 20, "min_one_message"
    assert log_bytes(broker2) == log_bytes(broker1)


TP2 = TopicPartition("replicated", 1)


def two_followed(tmp_path: Path) -> tuple[ReplicaManager, ReplicaFetcher]:
    broker2 = replica_manager_core(tmp_path, broker_id=2)
    broker2.become_leader_or_follower(
        {}, {TP: (TOPIC_ID, state(1, 0)), TP2: (TOPIC_ID, state(1, 0))}, 0.0
    )
    fetcher = ReplicaFetcher(2, 1, broker2.partitions)
    fetcher.add_partitions([TP, TP2])
    assert not fetcher.epoch_requests(0.0)  # empty logs: nothing to truncate
    return broker2, fetcher


def answer(tp: TopicPartition, records: bytes) -> FetchedPartition:
    return FetchedPartition(tp, ErrorCode.none, 0, 0, records)


def test_a_corrupt_partition_fails_alone_and_is_retried_after_the_backoff(
    tmp_path: Path,
) -> None:
    broker2, fetcher = two_followed(tmp_path)
    good = bytes(value_batch(2))
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF  # under the CRC
    round_ = fetcher.on_fetch_answers(
        [answer(TP, bytes(corrupt)), answer(TP2, good)], now=1.0
    )
    [failure] = round_.failures
    assert (failure.topic_partition, failure.fetch_offset, failure.first) == (
        TP,
        0,
        True,
    )
    assert round_.advanced == 1, "the other partition advanced in the same round"
    assert broker2.partitions[TP2].log.log_end_offset == 2
    assert broker2.partitions[TP].log.log_end_offset == 0, "nothing of it appended"
    assert fetcher.failed_partitions()[TP].state == "failed"
    assert "CorruptRecordError" in str(fetcher.states[TP].error)
    asked = [f.topic_partition for f in fetcher.fetch_request(1.5).messages]
    assert asked == [TP2], "the failed partition waits replica.fetch.backoff.ms"
    asked = [f.topic_partition for f in fetcher.fetch_request(2.0).messages]
    assert TP in asked
    again = fetcher.on_fetch_answers([answer(TP, bytes(corrupt))], now=2.0)
    assert [f.first for f in again.failures] == [False], "reported once, not each round"
    assert fetcher.states[TP].failures == 2
    healed = fetcher.on_fetch_answers([answer(TP, good)], now=3.5)
    assert healed.failures == ()
    assert healed.advanced == 1
    assert fetcher.failed_partitions() == {}
    assert fetcher.states[TP].state == "fetching"


def test_an_unexpected_error_in_one_partition_fails_only_that_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker2, fetcher = two_followed(tmp_path)
    original = Partition.append_records_to_follower

    def broken(self: Partition, records: bytes, hw: int, log_start: int) -> None:
        if self.topic_partition == TP:
            raise RuntimeError("a bug")
        original(self, records, hw, log_start)

    monkeypatch.setattr(Partition, "append_records_to_follower", broken)
    good = bytes(value_batch(1))
    round_ = fetcher.on_fetch_answers([answer(TP, good), answer(TP2, good)], now=1.0)
    assert [str(f.error) for f in round_.failures] == ["a bug"]
    assert broker2.partitions[TP2].log.log_end_offset == 1


def test_an_answered_partition_goes_last_in_the_next_request(tmp_path: Path) -> None:
    _, fetcher = two_followed(tmp_path)
    assert [f.topic_partition for f in fetcher.fetch_request(1.0).messages] == [TP, TP2]
    fetcher.on_fetch_answers([answer(TP, b"")], now=1.0)
    assert [f.topic_partition for f in fetcher.fetch_request(1.0).messages] == [TP2, TP]


def test_offset_for_leader_epoch_of_a_partition_not_here_is_unknown(
    tmp_path: Path,
) -> None:
    # Guarantee: OffsetForLeaderEpoch of a partition this broker does not host answers
    # UNKNOWN_TOPIC_OR_PARTITION, as Fetch does and as Kafka 4.1 does (the differential
    # corpus compares them); a hosted one answers where its epoch ends.
    leader = replica_manager_core(tmp_path / "leader")
    lead(leader, state(1, 0))
    missing = TopicPartition("replicated", 7)
    [unknown, known] = leader.last_offsets_for_leader_epochs(
        [EpochRequest(missing, -1, 0), EpochRequest(TP, -1, 0)]
    )
    assert (unknown.topic_partition, unknown.error_code) == (
        missing,
        ErrorCode.unknown_topic_or_partition,
    )
    assert (known.error_code, known.leader_epoch, known.end_offset) == (
        ErrorCode.none,
        0,
        0,
    )
