"""The run's end when a partition cannot be read back (chaos seeds 133 and 139): the
wait for a whole ISR and the read-back of each partition each get their own time, a
partition that still cannot be read is named in a note (the run then exits 2, its
history and summary written) and left out of the final state, and the checker does
not take its missing log for an empty one. Unit level: the cluster is replaced by
fakes, the clock by a counter."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from chaos import runner, workload
from chaos.checker import check
from chaos.history import Op, Record

PARTITIONS = 4


class Clock:
    """``time.monotonic`` for the run's end: moves only when a fake spends time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fake_read(
    clock: Clock, unreadable: frozenset[int] = frozenset()
) -> Callable[[str, str, int, float], tuple[Record, ...]]:
    """``_read_partition`` as the real one ends: records up to the high watermark, or
    the AssertionError it raises once ``deadline`` has passed before it read them."""

    def read(
        bootstrap: str, topic: str, partition: int, deadline: float
    ) -> tuple[Record, ...]:
        if partition in unreadable or clock() > deadline:
            raise AssertionError(f"read 0 records of {topic}-{partition} up to 13450")
        return ((0, 100 + partition),)

    return read


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock()
    monkeypatch.setattr(time, "monotonic", ticking)
    return ticking


def test_a_whole_isr_wait_that_ran_out_leaves_the_read_back_its_own_time(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 133: the wait for three in-sync replicas spent the whole SETTLE (a replica
    was left on brokers shut down for good) and the read-back, given the same deadline,
    found it passed before reading a record. Each now has its own."""

    def whole_never(servers: str, partitions: int, deadline: float) -> list[str]:
        clock.now = deadline + 0.5  # polled until its deadline, in vain
        return ["2: leader 1 replicas [1, 2, 3] isr [1, 2]"]

    monkeypatch.setattr(runner, "not_whole", whole_never)
    monkeypatch.setattr(workload, "_read_partition", fake_read(clock))
    notes: list[str] = []
    final, unread, deadline = runner.settle_and_read("servers", PARTITIONS, notes)
    assert notes == [
        "not every partition had its whole ISR again after healing: "
        "2: leader 1 replicas [1, 2, 3] isr [1, 2]"
    ]
    assert unread == []
    assert sorted(final) == [(runner.TOPIC, p) for p in range(PARTITIONS)]
    assert deadline > clock()  # the transactional read-back's time is not spent either


def test_a_partition_that_cannot_be_read_back_is_named_not_a_crash(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read-back of one partition failing no longer raises out of the run: the
    others are read, and a note says which partition and why (notes make the exit
    status 2)."""
    monkeypatch.setattr(runner, "not_whole", lambda servers, partitions, deadline: [])
    monkeypatch.setattr(
        workload, "_read_partition", fake_read(clock, unreadable=frozenset({0}))
    )
    notes: list[str] = []
    final, unread, _ = runner.settle_and_read("servers", PARTITIONS, notes)
    assert unread == [(runner.TOPIC, 0)]
    assert sorted(final) == [(runner.TOPIC, p) for p in range(1, PARTITIONS)]
    assert notes == [
        "chaos-0 could not be read back (read 0 records of chaos-0 up to 13450): "
        "its final log is not checked"
    ]


def test_a_partition_with_no_leader_does_not_spend_the_next_partitions_time(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 139: ``chaos-2`` had no leader (its ISR's one replica on a broker shut
    down for good), its high watermark was asked for until the read-back's deadline,
    and ``chaos-3``, read next, found the deadline passed and read 0 records though
    it had a leader. Each partition now has its own time."""
    read = fake_read(clock)

    def leaderless_2(
        bootstrap: str, topic: str, partition: int, deadline: float
    ) -> tuple[Record, ...]:
        if partition == 2:
            clock.now = deadline + 0.5  # asked again and again, in vain
            raise AssertionError(f"the high watermark of {topic}-2: Unknown partition")
        return read(bootstrap, topic, partition, deadline)

    monkeypatch.setattr(runner, "not_whole", lambda servers, partitions, deadline: [])
    monkeypatch.setattr(workload, "_read_partition", leaderless_2)
    notes: list[str] = []
    final, unread, deadline = runner.settle_and_read("servers", PARTITIONS, notes)
    assert unread == [(runner.TOPIC, 2)]
    assert sorted(final) == [(runner.TOPIC, p) for p in (0, 1, 3)]
    assert notes == [
        "chaos-2 could not be read back (the high watermark of chaos-2: Unknown "
        "partition): its final log is not checked"
    ]
    assert deadline > clock()  # nor the transactional read-back's


def _send(index: int, partition: int, value: int) -> Op:
    return Op(
        index=index,
        kind="send",
        outcome="ok",
        invoke=float(index),
        complete=index + 0.5,
        process=0,
        topic=runner.TOPIC,
        partition=partition,
        value=value,
        offset=0,
    )


def test_an_unread_partition_is_not_checked_as_empty() -> None:
    """A partition left out of the final state because it could not be read back
    does not turn every write acknowledged on it into a ``lost`` anomaly; the same
    partition read back empty does."""
    ops = [_send(0, 0, 100), _send(1, 1, 101)]
    final = {(runner.TOPIC, 1): ((0, 101),)}
    assert check(ops, final, unread=[(runner.TOPIC, 0)]).anomalies == ()
    lost = check(ops, {**final, (runner.TOPIC, 0): ()}).anomalies
    assert [(a.kind, a.partition) for a in lost] == [("lost", 0)]
