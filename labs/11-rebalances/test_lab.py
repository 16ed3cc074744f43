"""Lab 11's checks: each exercise's answer, from the broker's trace, against the clients.

The scenario runs once for the module. Its ``truth.json`` was written on the clients'
side, apart from the broker: the scenario's action log (what it did to which member and
when, and when the group had settled again) and every member's rebalance callbacks with
wall-clock times. From it the tests derive what the trace must show:

- eager groups rebalance once per action; cooperative ones once, plus a second round
  (``member_rejoined``, by a member that revoked partitions) when partitions had to move,
  now and then two (``expected_rebalances`` says when); a crash's rebalance starts about
  one session timeout after the kill;
- the time each member stood without partitions, as its own callbacks saw it (the
  trace's intervals lie inside the client's: a member revokes before it rejoins and
  runs its assign callback after its SyncGroup is answered);
- as many generations as rebalances.

``MINIKAFKA_LAB_IMPL`` chooses the answers checked (``solutions`` by default).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from minikafka.coordination import (
    GroupStateChanged,
    MemberAssigned,
    MemberJoined,
    RebalanceCompleted,
    RebalanceStarted,
)
from minikafka.labs import (
    IMPLEMENTATION_ENV,
    check_exercises_start_unfinished,
    implementations,
    lab_of,
    load_answers,
    read_events,
    scenario_run,
)
from minikafka.net import RequestCompleted

LAB = lab_of(__file__)

# Tolerances, in seconds, for a loaded two-core machine.
NESTED = 0.05  # the trace's intervals lie inside the client's, up to this
JOIN_BOUNCE = 0.2  # the first JoinGroup's answer to the accepted rejoin (KIP-394)
PER_INTERVAL = 0.1  # revoke to JoinGroup plus SyncGroup to the assign callback

Truth = dict[str, Any]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_run(LAB, tmp_path_factory)


@pytest.fixture(scope="module")
def truth(run_dir: Path) -> Truth:
    document: Truth = json.loads((run_dir / "truth.json").read_text())
    return document


@pytest.fixture(scope="module")
def events(spark: SparkSession, run_dir: Path) -> Iterator[dict[str, DataFrame]]:
    traces = run_dir / "traces"
    frames = {
        "starts": read_events(spark, traces, RebalanceStarted),
        "ends": read_events(spark, traces, RebalanceCompleted),
        "joins": read_events(spark, traces, MemberJoined),
        "syncs": read_events(spark, traces, MemberAssigned),
        "changes": read_events(spark, traces, GroupStateChanged),
        "requests": read_events(spark, traces, RequestCompleted),
    }
    for frame in frames.values():
        frame.cache()
    yield frames
    for frame in frames.values():
        frame.unpersist()


@pytest.fixture(scope="module", params=implementations(LAB))
def answers(request: pytest.FixtureRequest) -> ModuleType:
    """The reference, then each mutant (a wrong answer the checks must fail)."""
    return load_answers(LAB, request.param)


# --- the ground truth ----------------------------------------------------------------------


def groups(truth: Truth) -> dict[str, Truth]:
    """group_id -> that protocol's part of the truth, with ``cooperative`` added."""
    return {
        part["group_id"]: {**part, "cooperative": protocol == "cooperative"}
        for protocol, part in truth["groups"].items()
    }


REASONS = {"join": "member_joined", "leave": "member_left", "crash": "session_timeout"}


def revokes(part: Truth, action: Truth) -> list[str]:
    """The members' revoke callbacks that gave partitions up while the group settled
    after ``action``, one client id per callback (not the one leaving: its revoke is part
    of its close)."""
    found = []
    for client_id, log in part["members"].items():
        if client_id == action["client_id"] and action["action"] != "join":
            continue
        for event in log:
            inside = action["ts"] <= event["ts"] <= action["settled_ts"]
            if inside and event["kind"] == "revoke" and event["partitions"]:
                found.append(client_id)
    return found


def trace_reasons(events: dict[str, DataFrame], group_id: str) -> list[str]:
    """The reasons of the group's ``rebalance_start`` events, in generation order."""
    starts = events["starts"].where(F.col("group_id") == group_id)
    return [r.reason for r in starts.orderBy("generation_id").collect()]


def expected_rebalances(
    part: Truth, reasons: list[str]
) -> list[tuple[str, set[str], Truth]]:
    """Per rebalance of the group, in order: its reason, the client ids that may have
    caused it, and the scenario action it belongs to; ``reasons`` (the trace's, in
    generation order) only says how many second rounds each action took, and that
    number is checked against the clients' callbacks.

    Each action causes one rebalance with its own reason. In a cooperative group, when
    partitions had to move, the members that gave some up rejoin at once and the
    partitions go to their new owners in a second round (KIP-429): at least one such
    ``member_rejoined`` rebalance, and at most one per revoke callback. Usually one: the
    revoking members rejoin together. Now and then two: a member whose SyncGroup reaches
    the coordinator after another's rejoin has begun the next round is answered
    REBALANCE_IN_PROGRESS (its generation is over), so it rejoins still owning what it
    was to give up, gives it up on that round's assignment, and rejoins once more.
    """
    expected: list[tuple[str, set[str], Truth]] = []
    position = 0
    for action in part["actions"]:
        expected.append((REASONS[action["action"]], {action["client_id"]}, action))
        position += 1
        moved = revokes(part, action) if part["cooperative"] else []
        rounds = 0
        while position < len(reasons) and reasons[position] == "member_rejoined":
            rounds += 1
            position += 1
        least, most = (1, len(moved)) if moved else (0, 0)
        assert least <= rounds <= most, (part["group_id"], action, moved, reasons)
        expected += [("member_rejoined", set(moved), action)] * rounds
    return expected


def client_view(log: list[Truth], cooperative: bool) -> tuple[float, float, int, int]:
    """From a member's callbacks: seconds without partitions before its first ones and
    after, the number of stopped intervals, and the number of assign callbacks."""
    held: frozenset[int] = frozenset()
    had_some = False
    waiting = stopped = 0.0
    intervals = assigns = 0
    previous = log[0]["ts"]  # subscribe
    for event in log[1:]:
        if event["kind"] == "close":
            break  # what happens while it leaves is not a rebalance of its group
        if not held:
            if had_some:
                stopped += event["ts"] - previous
                intervals += 1
            else:
                waiting += event["ts"] - previous
        parts = frozenset(event.get("partitions") or ())
        if event["kind"] == "assign":
            assigns += 1
            held = held | parts if cooperative else parts
        elif event["kind"] in ("revoke", "lost"):
            held = held - parts if cooperative else frozenset()
        had_some = had_some or bool(held)
        previous = event["ts"]
    return waiting, stopped, intervals, assigns


def by_group(rows: list[Row]) -> dict[str, list[Row]]:
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        grouped.setdefault(row.group_id, []).append(row)
    return grouped


# --- the exercises -------------------------------------------------------------------------


@pytest.mark.timeout(900)
def test_rebalances(
    answers: ModuleType, events: dict[str, DataFrame], truth: Truth
) -> None:
    frame = answers.rebalances(events["starts"], events["ends"])
    assert frame.columns == [
        "group_id",
        "generation_id",
        "start_ts",
        "end_ts",
        "duration_ms",
        "reason",
        "members",
    ]
    collected = frame.collect()
    keys = [(r.group_id, r.generation_id) for r in collected]
    assert keys == sorted(keys), "ordered by group_id, generation_id"
    found = by_group(collected)
    reported = {
        (r.group_id, r.generation_id): r.duration_ms for r in events["ends"].collect()
    }
    # The as-of join in plain Python: each end, and the latest start of its group at or
    # before it.
    ended = {(r.group_id, r.generation_id): r for r in events["ends"].collect()}
    starts = events["starts"].collect()
    assert set(keys) == set(ended), "one row per rebalance_end"
    for row in collected:
        end = ended[row.group_id, row.generation_id]
        start = max(
            (s for s in starts if s.group_id == row.group_id and s.ts <= end.ts),
            key=lambda s: s.ts,
        )
        assert (row.start_ts, row.end_ts) == pytest.approx(
            (start.ts, end.ts), abs=1e-6
        ), row
        assert (row.reason, row.members) == (start.reason, end.members), row
    # A start that never ends (a group that went Empty) is not a rebalance.
    latest = events["starts"].orderBy(F.desc("ts")).limit(1)
    dangling = events["starts"].unionByName(latest.withColumn("ts", F.col("ts") + 3600))
    assert answers.rebalances(dangling, events["ends"]).collect() == collected
    session = truth["session_timeout_ms"] / 1000
    for group_id, part in groups(truth).items():
        rows = found.get(group_id, [])
        expected = expected_rebalances(part, trace_reasons(events, group_id))
        owners = [action for _, _, action in expected]
        assert len(rows) == len(expected), (
            group_id,
            [(r.reason, r.generation_id) for r in rows],
        )
        assert [r.reason for r in rows] == [reason for reason, _, _ in expected]
        assert [r.generation_id for r in rows] == list(range(1, len(rows) + 1))
        for row, action in zip(rows, owners, strict=True):
            # Each rebalance starts after its action and ends before the clients settled.
            assert action["ts"] <= row.start_ts <= row.end_ts <= action["settled_ts"], (
                row
            )
            assert row.duration_ms == pytest.approx(
                (row.end_ts - row.start_ts) * 1000, abs=1
            )
            assert row.duration_ms == pytest.approx(
                reported[group_id, row.generation_id], abs=1
            )
            if action["action"] == "crash":
                # Noticed only when the session of the last heartbeat before the kill ran
                # out: at most one session, at least a session less a heartbeat period or so.
                assert session - 1.0 <= row.start_ts - action["ts"] <= session + 2.0, (
                    row
                )
        last = {id(a): r for r, a in zip(rows, owners, strict=True)}
        for action in part["actions"]:
            assert last[id(action)].members == len(action["live"])


@pytest.mark.timeout(900)
def test_stop_the_world(
    answers: ModuleType, events: dict[str, DataFrame], truth: Truth
) -> None:
    frame = answers.stop_the_world(events["joins"], events["syncs"], events["ends"])
    assert frame.columns == [
        "group_id",
        "client_id",
        "rebalances",
        "waiting_ms",
        "stopped_ms",
    ]
    collected = frame.collect()
    keys = [(r.group_id, r.client_id) for r in collected]
    assert keys == sorted(keys), "ordered by group_id, client_id"
    for row in collected:
        # Milliseconds, 0.0 when none: never null.
        assert isinstance(row.waiting_ms, float), row
        assert isinstance(row.stopped_ms, float), row
    found = {(r.group_id, r.client_id): r for r in collected}
    # Before its first JoinGroup is answered a member is bootstrapping, finding its
    # coordinator (the first waits for __consumer_offsets to be created): time its
    # client counts as waiting and the coordinator cannot see. The broker's request log
    # says when that was, for any load on the machine.
    first_join = {
        r.client_id: r.ts
        for r in events["requests"]
        .where(F.col("api_name") == "JoinGroup")
        .groupBy("client_id")
        .agg(F.min("ts").alias("ts"))
        .collect()
    }
    stopped_total: dict[bool, float] = {}
    for group_id, part in groups(truth).items():
        cooperative = part["cooperative"]
        assert {c for g, c in found if g == group_id} == set(part["members"])
        for client_id, log in part["members"].items():
            row = found[group_id, client_id]
            waiting, stopped, intervals, assigns = client_view(log, cooperative)
            where = (
                f"{client_id}: trace {row},"
                f" client waiting {waiting:.3f}s stopped {stopped:.3f}s"
            )
            # One SyncGroup answer per assign callback, also an empty incremental one.
            assert row.rebalances == assigns, where
            trace_waiting, trace_stopped = row.waiting_ms / 1000, row.stopped_ms / 1000
            assert trace_waiting <= waiting + NESTED, where
            unseen = first_join[client_id] - log[0]["ts"] + JOIN_BOUNCE
            assert trace_waiting >= waiting - unseen - 0.1 * waiting, where
            assert trace_stopped <= stopped + NESTED, where
            assert trace_stopped >= stopped - PER_INTERVAL * (intervals + 1), where
            if cooperative:
                # KIP-429: a member that holds partitions keeps some through a rebalance.
                assert stopped == 0.0, where
            else:
                assert intervals > 0, where  # eager: every member revoked at least once
            stopped_total[cooperative] = (
                stopped_total.get(cooperative, 0.0) + trace_stopped
            )
    assert stopped_total[False] > stopped_total[True]


@pytest.mark.timeout(900)
def test_generations(
    answers: ModuleType, events: dict[str, DataFrame], truth: Truth
) -> None:
    frame = answers.generations(events["changes"])
    assert frame.columns == ["group_id", "generations", "final_generation"]
    collected = frame.collect()
    assert [r.group_id for r in collected] == sorted(r.group_id for r in collected)
    found = {r.group_id: (r.generations, r.final_generation) for r in collected}
    expected = {}
    for group_id, part in groups(truth).items():
        # each completed rebalance is a generation
        count = len(expected_rebalances(part, trace_reasons(events, group_id)))
        expected[group_id] = (count, count)
    assert found == expected


@pytest.mark.timeout(900)
def test_rebalance_causes(
    answers: ModuleType, events: dict[str, DataFrame], truth: Truth
) -> None:
    frame = answers.rebalance_causes(events["starts"], events["requests"])
    assert frame.columns == [
        "group_id",
        "generation_id",
        "reason",
        "client_id",
        "silent_ms",
    ]
    collected = frame.collect()
    keys = [(r.group_id, r.generation_id) for r in collected]
    assert keys == sorted(keys), "ordered by group_id, generation_id"
    found = by_group(collected)
    session_ms = truth["session_timeout_ms"]
    started = {(r.group_id, r.generation_id): r.ts for r in events["starts"].collect()}
    assert set(keys) == set(started), "one row per rebalance_start"
    # Silence in plain Python: from the causing client's last Heartbeat at or before
    # the start.
    heartbeats: dict[str, list[float]] = {}
    for r in events["requests"].where("api_name = 'Heartbeat'").collect():
        heartbeats.setdefault(r.client_id, []).append(r.ts)
    for row in collected:
        at = started[row.group_id, row.generation_id]
        before = [ts for ts in heartbeats.get(row.client_id, []) if ts <= at]
        expected = (at - max(before)) * 1000 if before else None
        assert row.silent_ms == (
            None if expected is None else pytest.approx(expected, abs=1e-3)
        ), row
    for group_id, part in groups(truth).items():
        rows = found.get(group_id, [])
        expected = expected_rebalances(part, trace_reasons(events, group_id))
        assert len(rows) == len(expected), (group_id, rows)
        assert [r.generation_id for r in rows] == list(range(len(rows)))
        for row, (reason, clients, action) in zip(rows, expected, strict=True):
            assert (row.reason, row.client_id in clients) == (reason, True), (
                row,
                clients,
            )
            if reason == "member_joined":
                assert row.silent_ms is None, row  # a new member has not heartbeated
            elif reason == "member_left":
                assert row.silent_ms is not None, row
                assert row.silent_ms < session_ms / 2, row
            elif reason == "session_timeout":
                # Removed one session after its last heartbeat, which came before the kill.
                assert session_ms - 250 <= row.silent_ms <= session_ms + 2000, row
                last_heartbeat = (
                    started[group_id, row.generation_id] - row.silent_ms / 1000
                )
                assert last_heartbeat <= action["ts"] + 0.01, (row, action)


@pytest.mark.skipif(
    os.environ.get(IMPLEMENTATION_ENV) == "exercises",
    reason="checks exercises.py as shipped, not the reader's answers",
)
def test_the_exercises_start_unfinished() -> None:
    check_exercises_start_unfinished(LAB)
