"""Replication and failover across brokers, simulated in one process in virtual time.

Three brokers' cores (ReplicaManager, replica fetchers, metadata replay) and the
QuorumController, stepped by ``LocalCluster``: every message between them is a call, and
time passes only when the test says so. Seeded: a failing run repeats exactly.
Guarantees tested:

- acknowledged means durable: with RF 3 and ``min.insync.replicas=2``, every record an
  ``acks=all`` producer was told is written survives any number of leader kills and
  restarts, exactly once, in the order it was acknowledged;
- the replicas converge: once all are back, every replica's log is byte for byte the
  leader's;
- a killed follower leaves the ISR (the controller fences it after the session timeout)
  and comes back into it after it catches up (the leader's AlterPartition);
- with too few in-sync replicas, ``acks=all`` is refused (NOT_ENOUGH_REPLICAS) and
  ``acks=1`` still works.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import LocalCluster
from minikafka.common import Acks, TopicPartition
from minikafka.log import iter_records

TP = TopicPartition("orders", 0)


def log_bytes(cluster: LocalCluster, broker_id: int) -> bytes:
    log = cluster.brokers[broker_id].manager.partitions[TP].log
    read = log.read(log.log_start_offset, 1 << 30)
    return read.records.read_bytes() if read.records is not None else b""


def values_in(cluster: LocalCluster, broker_id: int) -> list[bytes]:
    return [r.value or b"" for r in iter_records(log_bytes(cluster, broker_id))]


def settle(cluster: LocalCluster, seconds: float = 60.0) -> None:
    """Step until every replica is in the ISR and holds the leader's log."""
    for _ in range(int(seconds / 0.5)):
        cluster.step()
        leader = cluster.leader_of(TP)
        partition = (
            cluster.brokers[leader].manager.partitions[TP] if leader > 0 else None
        )
        if (
            partition is not None
            and partition.isr == frozenset(cluster.brokers)
            and all(
                log_bytes(cluster, b) == log_bytes(cluster, leader)
                for b in cluster.brokers
            )
        ):
            return
    raise AssertionError(f"not settled after {seconds} virtual seconds")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_acknowledged_records_survive_leader_kills(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    cluster = LocalCluster.start(tmp_path, seed=seed, min_insync_replicas=2)
    cluster.create_topic(TP.topic, 1, 3)
    sent: dict[int, list[bytes]] = {}
    killed: int | None = None
    number = 0
    leaders: set[int] = set()
    for round_ in range(150):
        values = [f"{seed}-{number + i}".encode() for i in range(rng.randint(1, 4))]
        request_id = cluster.produce(TP, values, Acks.ALL)
        if request_id is not None:
            sent[request_id] = values
            number += len(values)
        if killed is None and round_ % 50 == 10:
            # The leader dies right after taking a batch no follower has fetched: that
            # batch must not have been acknowledged, and the leader, when it returns,
            # must drop it (the new leader never had it).
            killed = cluster.leader_of(TP)
            cluster.kill(killed)
        elif killed is not None and round_ % 50 == 40:  # 15 s: past the session timeout
            cluster.restart(killed)
            killed = None
        cluster.step()
        leaders.add(cluster.leader_of(TP))
    if killed is not None:
        cluster.restart(killed)
    settle(cluster)
    acknowledged = [
        value
        for request_id, values in sorted(sent.items())
        if (answer := cluster.acknowledged.get(request_id)) is not None
        and answer[TP].error_code is ErrorCode.none
        for value in values
    ]
    assert len(acknowledged) > 50  # the run did produce, across the failures
    assert len(leaders - {-1}) >= 2  # and leadership did move
    leader = cluster.leader_of(TP)
    stored = values_in(cluster, leader)
    # Exactly once each, and in the order acknowledged (the producer sent one at a time).
    kept = [v for v in stored if v in set(acknowledged)]
    assert kept == acknowledged
    for broker_id in cluster.brokers:
        assert log_bytes(cluster, broker_id) == log_bytes(cluster, leader)


def test_a_dead_follower_leaves_the_isr_and_returns(tmp_path: Path) -> None:
    cluster = LocalCluster.start(tmp_path, seed=7, min_insync_replicas=2)
    cluster.create_topic(TP.topic, 1, 3)
    cluster.run(2.0)
    leader = cluster.leader_of(TP)
    follower = next(b for b in cluster.brokers if b != leader)
    partition = cluster.brokers[leader].manager.partitions[TP]
    assert partition.isr == frozenset({1, 2, 3})
    cluster.kill(follower)
    cluster.run(12.0)  # past broker.session.timeout.ms (9 s): fenced, out of every ISR
    assert follower not in partition.isr
    request_id = cluster.produce(TP, [b"still-two"], Acks.ALL)
    # the other follower fetches it, then tells the leader at its next fetch
    cluster.run(1.0)
    assert request_id is not None
    assert cluster.acknowledged[request_id][TP].error_code is ErrorCode.none
    cluster.restart(follower)
    settle(cluster)  # caught up: the leader proposed it back
    assert partition.isr == frozenset({1, 2, 3})
    assert b"still-two" in values_in(cluster, follower)


def test_too_few_in_sync_replicas_refuse_acks_all_but_not_acks_1(
    tmp_path: Path,
) -> None:
    cluster = LocalCluster.start(tmp_path, seed=11, min_insync_replicas=2)
    cluster.create_topic(TP.topic, 1, 3)
    cluster.run(2.0)
    leader = cluster.leader_of(TP)
    for broker_id in cluster.brokers:
        if broker_id != leader:
            cluster.kill(broker_id)
    cluster.run(12.0)
    assert cluster.leader_of(TP) == leader
    all_id = cluster.produce(TP, [b"all"], Acks.ALL)
    one_id = cluster.produce(TP, [b"one"], Acks.LEADER)
    assert all_id is not None
    assert one_id is not None
    assert cluster.acknowledged[all_id][TP].error_code is ErrorCode.not_enough_replicas
    assert cluster.acknowledged[one_id][TP].error_code is ErrorCode.none


def test_a_controlled_shutdown_moves_leadership_before_the_broker_stops(
    tmp_path: Path,
) -> None:
    cluster = LocalCluster.start(tmp_path, seed=5, min_insync_replicas=2)
    cluster.create_topic(TP.topic, 1, 3)
    cluster.run(2.0)
    leader = cluster.leader_of(TP)
    cluster.shutdown(leader)
    # The stopping broker leads nothing, and nobody waits a session timeout for it.
    assert cluster.leader_of(TP) not in (leader, -1)
    request_id = cluster.produce(TP, [b"right-after"], Acks.ALL)
    cluster.run(1.0)
    assert request_id is not None
    assert cluster.acknowledged[request_id][TP].error_code is ErrorCode.none


@pytest.mark.parametrize("unclean", [False, True])
def test_unclean_election_loses_exactly_the_out_of_sync_writes(
    tmp_path: Path, unclean: bool
) -> None:
    # Seed 000: only a replica outside the ISR may lead after the ISR is gone, and only
    # if unclean.leader.election.enable; what the old leader took alone is then lost.
    cluster = LocalCluster.start(tmp_path, (1, 2), seed=13)
    configs = (("unclean.leader.election.enable", str(unclean).lower()),)
    cluster.create_topic(TP.topic, 1, 2, configs)
    cluster.produce(TP, [b"both-have-this"], Acks.ALL)
    cluster.run(2.0)
    leader = cluster.leader_of(TP)
    follower = 3 - leader
    cluster.kill(follower)
    cluster.run(12.0)  # fenced: the ISR is the leader alone
    alone = cluster.produce(TP, [b"only-the-leader-had-this"], Acks.LEADER)
    cluster.step()
    assert alone is not None
    assert cluster.acknowledged[alone][TP].error_code is ErrorCode.none
    cluster.kill(leader)
    cluster.run(12.0)
    assert cluster.leader_of(TP) == -1  # offline: nobody in the ISR is alive
    cluster.restart(follower)
    cluster.run(2.0)
    if not unclean:
        assert cluster.leader_of(TP) == -1  # stays offline rather than lose data
        cluster.restart(leader)
        settle(cluster)
        assert values_in(cluster, follower) == [
            b"both-have-this",
            b"only-the-leader-had-this",
        ]
        return
    assert cluster.leader_of(TP) == follower  # elected from outside the ISR
    cluster.restart(leader)
    settle(cluster)
    # Exactly what the old leader took while alone is gone, from every replica.
    for broker_id in (1, 2):
        assert values_in(cluster, broker_id) == [b"both-have-this"]


def test_a_reassignment_copies_the_log_and_drops_the_old_replica(
    tmp_path: Path,
) -> None:
    # KIP-236 with seed 000's follower mechanics: the new replica really fetches the log,
    # joins the ISR through the leader's AlterPartition, and only then is the old one
    # removed, its log deleted; a producer writing throughout loses nothing.
    cluster = LocalCluster.start(tmp_path, (1, 2, 3, 4), seed=17, min_insync_replicas=2)
    cluster.create_topic(TP.topic, 1, 3)
    cluster.run(2.0)
    old = set(cluster.harness.partition(TP.topic, 0).replicas)
    joining = (set(cluster.brokers) - old).pop()  # the broker with no replica yet
    leaving = min(old)
    new = (*sorted(old - {leaving}), joining)
    written = []
    for i in range(10):
        request_id = cluster.produce(TP, [f"before-{i}".encode()], Acks.ALL)
        assert request_id is not None
        written.append(request_id)
        cluster.step()
    assert cluster.reassign(TP, new) is ErrorCode.none
    for i in range(20):
        request_id = cluster.produce(TP, [f"during-{i}".encode()], Acks.ALL)
        if request_id is not None:
            written.append(request_id)
        cluster.step()
    cluster.run(5.0)
    registration = cluster.harness.partition(TP.topic, 0)
    assert set(registration.replicas) == set(new)
    assert not registration.adding_replicas
    assert not registration.removing_replicas
    assert TP not in cluster.brokers[leaving].manager.partitions  # stopped, log deleted
    # Renamed for deletion at once (Kafka's ``-delete`` suffix); the files go after
    # file.delete.delay.ms, as in Kafka.
    assert not (tmp_path / f"broker-{leaving}" / str(TP)).exists()
    acknowledged = [
        request_id
        for request_id in written
        if cluster.acknowledged.get(request_id, {}).get(TP) is not None
        and cluster.acknowledged[request_id][TP].error_code is ErrorCode.none
    ]
    assert len(acknowledged) == len(written)  # nothing refused, nothing lost
    leader = cluster.leader_of(TP)
    for broker_id in new:
        assert log_bytes(cluster, broker_id) == log_bytes(cluster, leader)
        assert len(values_in(cluster, broker_id)) == 30


def test_a_leader_reassigned_away_counts_the_replica_elected_until_the_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # KRaft mode: the AlterPartition that puts the last target replica in sync ends the
    # move in the same change and elects that replica, and the leader that asked hears
    # NEW_LEADER_ELECTED. Until the metadata tells it so, it must keep counting the new
    # replica for its HW (Kafka's handleAlterPartitionError): its other followers could
    # otherwise move the HW past the new leader's log end, and an acks=all write would be
    # acknowledged and then truncated away.
    cluster = LocalCluster.start(tmp_path, (1, 2, 3, 4), seed=17, min_insync_replicas=2)
    cluster.create_topic(TP.topic, 1, 3)
    cluster.run(2.0)
    registration = cluster.harness.partition(TP.topic, 0)
    leaving = registration.leader
    joining = (set(cluster.brokers) - set(registration.replicas)).pop()
    staying = tuple(r for r in registration.replicas if r != leaving)
    for i in range(5):
        cluster.produce(TP, [f"before-{i}".encode()], Acks.ALL)
        cluster.step()
    # What the old leader counts at the moment the controller's move reaches the
    # brokers: just before each publication of the committed metadata.
    seen: list[bool] = []
    publish = LocalCluster._publish

    def observed_publish(self: LocalCluster) -> None:
        old = self.brokers[leaving].manager.get_partition(TP)
        moved = self.harness.partition(TP.topic, 0).leader == joining
        if moved and old is not None and old.is_leader:
            seen.append(joining in old.maximal_isr)
        publish(self)

    monkeypatch.setattr(LocalCluster, "_publish", observed_publish)
    assert cluster.reassign(TP, (joining, *staying)) is ErrorCode.none
    for _ in range(40):
        cluster.produce(TP, [b"during"], Acks.ALL)
        cluster.step()
        if seen:
            break
    assert seen == [True]
    cluster.run(5.0)
    assert TP not in cluster.brokers[leaving].manager.partitions


def test_a_preferred_election_returns_leadership_after_a_failover(
    tmp_path: Path,
) -> None:
    # After a failover the preferred replica comes back as a follower; once it is in sync
    # again, ElectLeaders (preferred) gives it the leadership back, and a producer writing
    # across the move loses nothing.
    cluster = LocalCluster.start(tmp_path, seed=19, min_insync_replicas=2)
    cluster.create_topic(TP.topic, 1, 3)
    cluster.run(2.0)
    preferred = cluster.harness.partition(TP.topic, 0).replicas[0]
    assert cluster.leader_of(TP) == preferred
    cluster.kill(preferred)
    cluster.run(12.0)
    assert cluster.leader_of(TP) != preferred
    assert cluster.elect_preferred(TP) == {TP: ErrorCode.preferred_leader_not_available}
    cluster.restart(preferred)
    settle(cluster)  # back in the ISR, through the leader's AlterPartition
    ids = []
    for i in range(6):
        request_id = cluster.produce(TP, [f"v{i}".encode()], Acks.ALL)
        assert request_id is not None
        ids.append(request_id)
        if i == 2:
            assert cluster.elect_preferred(TP) == {TP: ErrorCode.none}
            assert cluster.leader_of(TP) == preferred
        cluster.run(1.0)
    settle(cluster)
    answered = [cluster.acknowledged.get(i, {}).get(TP) for i in ids]
    # The batch in flight at the move may be refused (NOT_LEADER, a client retries it);
    # every acknowledged one is on every replica, in order.
    acked = [
        f"v{i}".encode()
        for i, a in enumerate(answered)
        if a is not None and a.error_code is ErrorCode.none
    ]
    assert len(acked) >= 5
    for broker_id in cluster.brokers:
        assert [v for v in values_in(cluster, broker_id) if v in set(acked)] == acked


def test_a_deletion_is_answered_once_every_in_sync_replica_moved_its_start(
    tmp_path: Path,
) -> None:
    # Guarantee: DeleteRecords moves the leader's log start at once and is answered
    # only when every in-sync follower has moved its own (the low watermark, KIP-107);
    # the next leader, after the old one is killed, starts at the deleted offset.
    cluster = LocalCluster.start(tmp_path, seed=5)
    cluster.create_topic(TP.topic, 1, 3)
    cluster.produce(TP, [b"%d" % i for i in range(10)], Acks.ALL)
    cluster.run(3.0)
    request = cluster.delete_records(TP, 6)
    assert request is not None
    leader = cluster.leader_of(TP)
    assert cluster.brokers[leader].manager.partitions[TP].log.log_start_offset == 6
    assert request not in cluster.deleted
    for _ in range(10):
        cluster.step()
        if request in cluster.deleted:
            break
    [(tp, answer)] = cluster.deleted[request].items()
    assert (tp, answer.error_code, answer.low_watermark) == (TP, ErrorCode.none, 6)
    starts = {
        b: broker.manager.partitions[TP].log.log_start_offset
        for b, broker in cluster.brokers.items()
    }
    assert starts == dict.fromkeys(cluster.brokers, 6)
    cluster.kill(leader)
    cluster.run(12.0)
    new_leader = cluster.leader_of(TP)
    assert new_leader not in (-1, leader)
    partition = cluster.brokers[new_leader].manager.partitions[TP]
    assert partition.log.log_start_offset == 6
