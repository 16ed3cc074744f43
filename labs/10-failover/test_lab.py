"""Lab 10's checks: each exercise's answer, from both clusters' traces, against clients.

The scenario runs once for the module. Its ``truth.json`` was written on the clients'
side, apart from the brokers: per mode, which broker was killed and when, every
record's send and delivery times, and each surviving broker's Metadata answers over
time. The guarantees and facts checked:

- a dead leader's partitions fail over to another replica at a higher leader epoch,
  and nothing is written to them in between: the producer's first delivery after the
  kill comes after the new leader started leading;
- the controller notices the death within its liveness timeout: a session (or a
  heartbeat session) that lapses between one heartbeat interval before the timeout
  and a little after it;
- each surviving broker acts on the new leader before (or as) its Metadata answers
  show it, and within a second of the election.

Each answer is also compared, row for row, with the same table computed in plain Python
from the trace files (loops, not Spark), so a plausible but wrong answer (the wrong old
leader, the wrong epoch, a late event taken for the first) fails even where the
clients' view leaves room.

``MINIKAFKA_LAB_IMPL`` chooses the answers checked (``solutions`` by default).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from functools import reduce
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from minikafka.controller import PartitionLeaderElected
from minikafka.labs import (
    IMPLEMENTATION_ENV,
    check_exercises_start_unfinished,
    implementations,
    lab_of,
    load_answers,
    read_events,
    scenario_run,
)
from minikafka.replication import BecameFollower, BecameLeader, FollowerFetched
from minikafka.trace import TraceEvent, read_trace

LAB = lab_of(__file__)
pytestmark = pytest.mark.timeout(900)

# Tolerances, in seconds, for a loaded two-core machine.
LOST_TAIL = 0.2  # a killed node's trace ends within its tracer's flush interval
FETCH_GAP = 0.3  # followers fetch continuously under the producer's load
PROPAGATED = 1.0  # an election reaches every surviving broker within this

Truth = dict[str, Any]
Record = dict[str, Any]
"""One trace event as read in plain Python from the trace files."""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_run(LAB, tmp_path_factory)


@pytest.fixture(scope="module")
def truth(run_dir: Path) -> Truth:
    document: Truth = json.loads((run_dir / "truth.json").read_text())
    return document


def both_modes(
    spark: SparkSession, run_dir: Path, event_type: type[TraceEvent]
) -> DataFrame:
    """``event_type``'s events of both runs, with the ``mode`` column the lab adds."""
    frames = [
        read_events(spark, run_dir / mode / "traces", event_type).withColumn(
            "mode", F.lit(mode)
        )
        for mode in ("kraft", "zookeeper")
    ]
    return reduce(DataFrame.unionByName, frames)


@pytest.fixture(scope="module")
def events(spark: SparkSession, run_dir: Path) -> Iterator[dict[str, DataFrame]]:
    frames = {
        "elections": both_modes(spark, run_dir, PartitionLeaderElected),
        "leaders": both_modes(spark, run_dir, BecameLeader),
        "followers": both_modes(spark, run_dir, BecameFollower),
        "fetches": both_modes(spark, run_dir, FollowerFetched),
    }
    for frame in frames.values():
        frame.cache()
    yield frames
    for frame in frames.values():
        frame.unpersist()


@pytest.fixture(scope="module")
def raw(run_dir: Path, truth: Truth) -> dict[str, dict[str, list[Record]]]:
    """Per mode, the lab topic's events of each type, in time order."""
    kinds: dict[str, type[TraceEvent]] = {
        "elections": PartitionLeaderElected,
        "leaders": BecameLeader,
        "followers": BecameFollower,
        "fetches": FollowerFetched,
    }
    modes = {}
    for mode in truth["modes"]:
        found: dict[str, list[Record]] = {name: [] for name in kinds}
        for record in read_trace(run_dir / mode / "traces"):
            for name, kind in kinds.items():
                ours = record.get("topic") == truth["topic"]
                if ours and (record["component"], record["event"]) == (
                    kind.COMPONENT,
                    kind.EVENT,
                ):
                    found[name].append(record)
        modes[mode] = {n: sorted(e, key=lambda r: r["ts"]) for n, e in found.items()}
    return modes


@pytest.fixture(scope="module", params=implementations(LAB))
def answers(request: pytest.FixtureRequest) -> ModuleType:
    """The reference, then each mutant (a wrong answer the checks must fail)."""
    return load_answers(LAB, request.param)


# --- plain Python, for comparison ----------------------------------------------------


def failovers(events: dict[str, list[Record]]) -> list[Record]:
    return [
        e
        for e in events["elections"]
        if e["reason"] != "new_partition" and e["leader"] >= 0
    ]


def python_leaderless(
    events: dict[str, list[Record]],
) -> dict[int, tuple[int, int, int, float, float, float]]:
    """Partition -> (old leader, new leader, epoch, last seen, elected, led)."""
    found = {}
    for e in failovers(events):
        p, epoch = e["partition"], e["leader_epoch"]
        earlier = [
            (b["leader_epoch"], b["node"])
            for b in events["leaders"]
            if b["partition"] == p and b["leader_epoch"] < epoch
        ]
        old = max(earlier)[1]
        last_seen = max(
            f["ts"]
            for f in events["fetches"]
            if f["partition"] == p and f["node"] == old
        )
        (led,) = [
            b["ts"]
            for b in events["leaders"]
            if (b["partition"], b["node"], b["leader_epoch"]) == (p, e["leader"], epoch)
        ]
        found[p] = (old, e["leader"], epoch, last_seen, e["ts"], led)
    return found


def python_propagation(
    events: dict[str, list[Record]],
) -> dict[tuple[int, int], tuple[str, float, float]]:
    """(partition, broker) -> (role, elected, applied)."""
    acted = [(r, "leader") for r in events["leaders"]] + [
        (r, "follower") for r in events["followers"]
    ]
    found: dict[tuple[int, int], tuple[str, float, float]] = {}
    for e in failovers(events):
        for r, role in sorted(acted, key=lambda pair: pair[0]["ts"]):
            same = (r["partition"], r["leader_epoch"]) == (
                e["partition"],
                e["leader_epoch"],
            )
            if same and r["ts"] >= e["ts"]:
                found.setdefault((e["partition"], r["node"]), (role, e["ts"], r["ts"]))
    return found


# --- the ground truth ----------------------------------------------------------------


def first_delivery_after(part: Truth, partition: int) -> float:
    """When the producer first heard a record sent after the kill was written."""
    return min(
        float(r["acked_ts"])
        for r in part["records"]
        if r["partition"] == partition
        and r["produced_ts"] > part["killed_ts"]
        and r.get("error") is None
    )


def seen_by(part: Truth, broker: int, partition: int, epoch: int) -> float:
    """When ``broker``'s Metadata first answered ``partition`` at ``epoch``."""
    return min(
        float(s["ts"])
        for s in part["metadata_seen"][str(broker)]
        if s["partition"] == partition and s["leader_epoch"] >= epoch
    )


def detection_window(truth: Truth) -> tuple[float, float]:
    """Seconds from the kill in which the controller must notice: the liveness
    timeout, less the time since the victim's last heartbeat (KRaft's interval, or a
    ZooKeeper client's ping, a third of its session) and ZooKeeper's tick, plus a
    check's period."""
    timeout = truth["session_timeout_ms"] / 1000
    since_last_beat = max(truth["heartbeat_interval_ms"] / 1000, timeout / 3)
    return timeout - since_last_beat - 0.5, timeout + 1.5


# --- the exercises -------------------------------------------------------------------


def test_leaderless(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw: dict[str, dict[str, list[Record]]],
) -> None:
    frame = answers.leaderless(
        events["elections"], events["leaders"], events["fetches"]
    )
    assert frame.columns == [
        "mode",
        "topic",
        "partition",
        "old_leader",
        "new_leader",
        "leader_epoch",
        "last_seen_ts",
        "elected_ts",
        "led_ts",
        "detect_ms",
        "outage_ms",
    ]
    rows = frame.collect()
    keys = [(r.mode, r.topic, r.partition) for r in rows]
    assert keys == sorted(keys), "ordered by mode, topic, partition"
    low, high = detection_window(truth)
    for mode, part in truth["modes"].items():
        mine = [r for r in rows if r.mode == mode]
        killed, victim = part["killed_ts"], part["victim"]
        # The victim led partitions 0-2; each failed over once, to a live replica.
        assert sorted(r.partition for r in mine) == [0, 1, 2], (mode, mine)
        expected = python_leaderless(raw[mode])
        assert {
            r.partition: (r.old_leader, r.new_leader, r.leader_epoch) for r in mine
        } == {p: e[:3] for p, e in expected.items()}
        for row in mine:
            times = (row.last_seen_ts, row.elected_ts, row.led_ts)
            assert times == pytest.approx(expected[row.partition][3:], abs=1e-6)
            assert row.old_leader == victim, row
            assert row.new_leader in part["brokers"], row
            assert row.new_leader != victim, row
            # Its last fetch answered just before the kill (the tail may be lost).
            assert killed - LOST_TAIL - FETCH_GAP <= row.last_seen_ts <= killed, row
            assert low <= row.elected_ts - killed <= high, (mode, row)
            assert row.elected_ts <= row.led_ts <= row.elected_ts + PROPAGATED, row
            # Nothing sent after the kill was written before a new leader led.
            assert row.led_ts <= first_delivery_after(part, row.partition), row
            assert row.detect_ms == pytest.approx(
                (row.elected_ts - row.last_seen_ts) * 1000, abs=0.01
            )
            assert row.outage_ms == pytest.approx(
                (row.led_ts - row.last_seen_ts) * 1000, abs=0.01
            )


def test_propagation(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw: dict[str, dict[str, list[Record]]],
) -> None:
    frame = answers.propagation(
        events["elections"], events["leaders"], events["followers"]
    )
    assert frame.columns == [
        "mode",
        "topic",
        "partition",
        "leader_epoch",
        "broker",
        "role",
        "elected_ts",
        "applied_ts",
        "delay_ms",
    ]
    rows = frame.collect()
    keys = [(r.mode, r.topic, r.partition, r.broker) for r in rows]
    assert keys == sorted(keys), "ordered by mode, topic, partition, broker"
    # The first event at the epoch after the election, whatever else the trace holds:
    # the same events again later, and old ones a minute before, change nothing.
    f = events["followers"]
    noisy = f.unionByName(f.withColumn("ts", F.col("ts") + 0.5)).unionByName(
        f.withColumn("ts", F.col("ts") - 60)
    )
    again = answers.propagation(events["elections"], events["leaders"], noisy)
    assert again.collect() == rows
    poll = truth["poll_interval_s"]
    for mode, part in truth["modes"].items():
        mine = [r for r in rows if r.mode == mode]
        survivors = sorted(b for b in part["brokers"] if b != part["victim"])
        # Every surviving broker acted on each of the three failovers, once.
        assert sorted((r.partition, r.broker) for r in mine) == [
            (p, b) for p in (0, 1, 2) for b in survivors
        ]
        expected = python_propagation(raw[mode])
        assert set(expected) == {(r.partition, r.broker) for r in mine}
        for row in mine:
            role, elected, applied = expected[row.partition, row.broker]
            assert row.role == role
            assert (row.elected_ts, row.applied_ts) == pytest.approx(
                (elected, applied), abs=1e-6
            )
        for row in mine:
            assert 0 <= row.delay_ms <= PROPAGATED * 1000, row
            assert row.delay_ms == pytest.approx(
                (row.applied_ts - row.elected_ts) * 1000, abs=0.01
            )
            leaders = [r for r in mine if r.partition == row.partition]
            assert [r.role for r in leaders].count("leader") == 1
            seen = seen_by(part, row.broker, row.partition, row.leader_epoch)
            # The broker's own Metadata shows the new leader about when it acts on it:
            # not before (by more than the two updates' order), and within a poll.
            assert row.applied_ts - 0.1 <= seen <= row.applied_ts + poll + PROPAGATED


def test_compare_modes(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw: dict[str, dict[str, list[Record]]],
) -> None:
    outages = answers.leaderless(
        events["elections"], events["leaders"], events["fetches"]
    )
    delays = answers.propagation(
        events["elections"], events["leaders"], events["followers"]
    )
    frame = answers.compare_modes(outages, delays)
    assert frame.columns == [
        "mode",
        "partitions",
        "max_detect_ms",
        "max_outage_ms",
        "max_propagation_ms",
    ]
    collected = frame.collect()
    assert [r.mode for r in collected] == sorted(truth["modes"]), "one row per mode"
    rows = {r.mode: r for r in collected}
    low, high = detection_window(truth)
    for mode, part in truth["modes"].items():
        row = rows[mode]
        lost = python_leaderless(raw[mode]).values()
        reached = python_propagation(raw[mode]).values()
        assert (
            row.partitions,
            row.max_detect_ms,
            row.max_outage_ms,
            row.max_propagation_ms,
        ) == (
            len(lost),
            pytest.approx(max((e[4] - e[3]) * 1000 for e in lost), abs=1e-3),
            pytest.approx(max((e[5] - e[3]) * 1000 for e in lost), abs=1e-3),
            pytest.approx(max((a - e) * 1000 for _, e, a in reached), abs=1e-3),
        )
        assert row.partitions == 3
        killed = part["killed_ts"]
        # The worst outage as the producer saw it bounds the trace's from above.
        worst = max(first_delivery_after(part, p) for p in (0, 1, 2)) - killed
        assert low * 1000 <= row.max_detect_ms <= row.max_outage_ms
        assert row.max_outage_ms <= (worst + LOST_TAIL + FETCH_GAP) * 1000
        assert row.max_detect_ms <= (high + LOST_TAIL + FETCH_GAP) * 1000
        assert 0 < row.max_propagation_ms <= PROPAGATED * 1000
    # A mode's three partitions mostly share their last fetch (one request answered
    # for all) and their election's time (one controller event, one ``now``), and so
    # their detect_ms: the worst is also checked where the partitions' differ.
    spread = outages.withColumn(
        "detect_ms", F.col("detect_ms") + F.col("partition") * 100.0
    )
    spread_rows = answers.compare_modes(spread, delays).collect()
    worst_detect = {r.mode: r.max_detect_ms for r in spread_rows}
    for mode in truth["modes"]:
        failed = python_leaderless(raw[mode])
        assert worst_detect[mode] == pytest.approx(
            max((e[4] - e[3]) * 1000 + 100.0 * p for p, e in failed.items()), abs=1e-3
        )


@pytest.mark.skipif(
    os.environ.get(IMPLEMENTATION_ENV) == "exercises",
    reason="checks exercises.py as shipped, not the reader's answers",
)
def test_the_exercises_start_unfinished() -> None:
    check_exercises_start_unfinished(LAB)
