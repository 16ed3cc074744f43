"""An idempotent producer's retries across failovers, simulated in virtual time (KIP-98).

``LocalCluster`` (three brokers' cores and the controller, stepped by the test) with an
idempotent producer that keeps five batches in flight and sends each one again until it
is acknowledged: on a refusal, after a request timeout, or at once on a second
connection while the first attempt still waits for the ISR. Leaders are killed and
restarted, cleanly or as after SIGKILL (the logs recovered, the producer state rebuilt
from a snapshot and the log after it); followers become leaders with the batches they
fetched, and truncate where their new leader's log ends. Small segments make the rolls,
and the producer snapshots each writes, happen all along.

What Kafka's ProducerStateManager promises, checked on the final log: a batch the
leader's log holds is recognised when it comes again (answered with its first offset,
or refused out of sequence), so each sequence is in the log exactly once, in order, at
the offset its acknowledgement named, whichever replica took the retry.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import LocalCluster
from minikafka.common import Acks, TopicPartition
from minikafka.log import LogConfig, build_batch, make_records

TP = TopicPartition("orders", 0)
PRODUCER_ID = 1000
IN_FLIGHT = 5  # max.in.flight.requests.per.connection with idempotence
REQUEST_TIMEOUT_ROUNDS = 6  # 3 virtual seconds
CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=100)


def batch_of(sequence: int) -> bytes:
    """The producer's batch at ``sequence``: every attempt sends these bytes."""
    records = make_records([(None, b"seq %d" % sequence)], timestamp_ms=0)
    return build_batch(
        records, producer_id=PRODUCER_ID, producer_epoch=0, base_sequence=sequence
    )


def producer_batches(cluster: LocalCluster, broker_id: int) -> list[tuple[int, int]]:
    """(base sequence, base offset) of each of the producer's batches in a replica."""
    log = cluster.brokers[broker_id].manager.partitions[TP].log
    return [
        (header.base_sequence, header.base_offset)
        for _, _, header in log.batches()
        if header.producer_id == PRODUCER_ID
    ]


class Producer:
    """An idempotent producer of one partition: sequences sent in order, at most
    ``IN_FLIGHT`` unacknowledged, each sent again until it is acknowledged."""

    def __init__(self, cluster: LocalCluster, rng: random.Random) -> None:
        self.cluster = cluster
        self.rng = rng
        self.next_sequence = 0
        self.done = 0  # every sequence below is acknowledged (or one after it is)
        self.acknowledged: dict[int, int] = {}  # sequence -> the offset answered
        self.waiting: dict[int, tuple[int, int]] = {}  # request -> (sequence, round)
        self.attempts = 0

    def round(self, number: int, new_batches: bool = True) -> None:
        self._take_answers(number)
        if new_batches:
            while self.next_sequence < self.done + IN_FLIGHT:
                self._send(self.next_sequence, number)
                self.next_sequence += 1
        outstanding = {sequence for sequence, _ in self.waiting.values()}
        for sequence in range(self.done, self.next_sequence):
            # Not in flight (refused, timed out, or never reached a leader), or a
            # duplicate sent while the first attempt waits (another connection).
            if sequence not in outstanding or self.rng.random() < 0.1:
                self._send(sequence, number)

    def _send(self, sequence: int, number: int) -> None:
        request_id = self.cluster.produce_batch(TP, batch_of(sequence), Acks.ALL)
        self.attempts += 1
        if request_id is not None:
            self.waiting[request_id] = (sequence, number)

    def _take_answers(self, number: int) -> None:
        for request_id, (sequence, sent) in list(self.waiting.items()):
            answer = self.cluster.acknowledged.get(request_id)
            if answer is None:
                if number - sent >= REQUEST_TIMEOUT_ROUNDS:
                    del self.waiting[request_id]  # request.timeout.ms: send it again
                continue
            del self.waiting[request_id]
            result = answer[TP]
            if result.error_code is not ErrorCode.none:
                continue  # NOT_LEADER, NOT_ENOUGH_REPLICAS, OUT_OF_ORDER...: again
            previous = self.acknowledged.setdefault(sequence, result.base_offset)
            assert previous == result.base_offset, (
                f"sequence {sequence} acknowledged at {previous} and at "
                f"{result.base_offset}"
            )
            # The log holds the producer's sequences in order: one acknowledged means
            # every one before it is in the log (a retry of those may be refused out of
            # sequence after a restart, as Kafka refuses it: it keeps the last batch).
            self.done = max(self.done, sequence + 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_retries_of_an_idempotent_producer_are_appended_once_across_failovers(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    cluster = LocalCluster.start(
        tmp_path, seed=seed, min_insync_replicas=2, log_config=CONFIG
    )
    cluster.create_topic(TP.topic, 1, 3)
    producer = Producer(cluster, rng)
    killed: dict[int, int] = {}  # broker -> the round it comes back
    restarts = {True: 0, False: 0}
    leaders: set[int] = set()
    for number in range(240):
        producer.round(number)
        leader = cluster.leader_of(TP)
        leaders.add(leader)
        if not killed and leader > 0 and rng.random() < 0.08:
            # Kill the leader right after it took batches the followers have not
            # fetched: they are lost, or on the new leader if fetched before.
            cluster.kill(leader)
            killed[leader] = number + rng.randint(4, 30)
        elif rng.random() < 0.02 and not killed:
            follower = rng.choice([b for b in cluster.brokers if b != leader])
            cluster.kill(follower)
            killed[follower] = number + rng.randint(2, 20)
        for broker_id, back in list(killed.items()):
            if number >= back:
                clean = rng.random() < 0.5
                cluster.restart(broker_id, clean=clean)
                restarts[clean] += 1
                del killed[broker_id]
        if number % 10 == 0:
            for broker in cluster.brokers.values():
                if broker.alive:  # the flusher, and the recovery-point checkpoint
                    logs = broker.manager.log_manager
                    for log in logs.logs.values():
                        log.flush()
                    logs.checkpoint_recovery_points()
        cluster.step()
    for broker_id in killed:
        cluster.restart(broker_id, clean=False)
    for number in range(240, 480):  # no more faults: every batch gets acknowledged
        producer.round(number, new_batches=False)
        cluster.step()
        if producer.done == producer.next_sequence:
            break
    assert producer.done == producer.next_sequence > 100
    assert restarts[True], "no clean restart"
    assert restarts[False], "no restart as after SIGKILL"
    assert len(leaders - {-1}) >= 2
    assert producer.attempts > 2 * producer.next_sequence  # many retries were sent

    for _ in range(120):  # let the followers catch up
        cluster.step()
    leader = cluster.leader_of(TP)
    stored = producer_batches(cluster, leader)
    assert [sequence for sequence, _ in stored] == list(range(producer.next_sequence))
    offsets = dict(stored)
    for sequence, offset in producer.acknowledged.items():
        assert offsets[sequence] == offset
    for broker_id in cluster.brokers:
        assert producer_batches(cluster, broker_id) == stored


def test_a_replica_that_truncated_and_fetched_again_answers_a_retry_when_it_leads(
    tmp_path: Path,
) -> None:
    """The old leader's unreplicated batches are retried on the new leader after
    another write, so they land at other offsets; the old leader comes back, truncates
    to where its epoch ends on the new leader (KIP-101) and fetches them there. Leading
    again, it answers their retries with the offsets its log now holds them at: the
    truncation rebuilt its producer state from what remained."""
    cluster = LocalCluster.start(
        tmp_path, (1, 2), min_insync_replicas=1, log_config=CONFIG
    )
    cluster.create_topic(TP.topic, 1, 2)
    cluster.run(2.0)
    first = cluster.leader_of(TP)
    (second,) = set(cluster.brokers) - {first}

    def send(sequence: int) -> int:
        request_id = cluster.produce_batch(TP, batch_of(sequence), Acks.LEADER)
        assert request_id is not None
        result = cluster.acknowledged[request_id][TP]
        assert result.error_code is ErrorCode.none
        return result.base_offset

    assert [send(sequence) for sequence in range(3)] == [0, 1, 2]
    cluster.run(2.0)  # replicated
    assert [send(3), send(4)] == [3, 4]  # the answers are lost with the leader
    cluster.kill(first)
    cluster.run(15.0)  # past the session timeout: the follower leads
    assert cluster.leader_of(TP) == second
    assert cluster.produce(TP, [b"another producer"], Acks.LEADER) is not None
    assert [send(3), send(4)] == [4, 5]  # the retries, appended on the new leader

    cluster.restart(first)
    cluster.run(5.0)  # truncated to 3, fetched offsets 3-5 from the leader
    assert producer_batches(cluster, first) == [(0, 0), (1, 1), (2, 2), (3, 4), (4, 5)]
    cluster.kill(second)
    cluster.run(15.0)
    assert cluster.leader_of(TP) == first
    assert [send(4), send(3)] == [5, 4]  # duplicates, with their offsets here
    assert producer_batches(cluster, first) == [(0, 0), (1, 1), (2, 2), (3, 4), (4, 5)]
