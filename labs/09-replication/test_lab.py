"""Lab 9's checks: each exercise's answer, from the leader's trace, against the clients.

The scenario runs once for the module. Its ``truth.json`` was written on the clients'
side, apart from the brokers: each phase's window (when the scenario delayed, stalled
and healed follower 3's link), every record's send and delivery times and offset, and
the ISR an AdminClient saw in Metadata. The guarantees and facts checked:

- acks=all: a record is acknowledged only after every follower in the ISR has it, so
  the trace's wait for an in-sync follower, and its commit, never exceed the latency
  the producer measured for that record;
- a follower on a link delayed by d seconds each way is at least 2d behind (a fetch's
  round trip), and it is the one acks=all waits for while it is in the ISR; once it is
  out of the ISR, acks=all no longer waits for it;
- it leaves the ISR ``replica.lag.time.max.ms`` (to half again that, the check's
  period) after it last caught up, and comes back after the link heals, as clients
  see in Metadata soon after;
- the lag its first fetch after the stall shows is what was appended meanwhile;
- a transaction holds the last stable offset back at its first offset from the moment
  the high watermark passes it, at least until the producer commits, and releases it
  before a read_committed ListOffsets sees it move; with follower 3's link delayed the
  release after the commit waits for that follower's fetches of the marker.

Each answer is also compared, row for row, with the same table computed in plain Python
from the trace files (loops over the events in time order, not Spark), so an answer
that is plausible but wrong (a run off by one, the wrong follower, the wrong proposal)
fails even where the clients' view leaves room.

``MINIKAFKA_LAB_IMPL`` chooses the answers checked (``solutions`` by default).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from minikafka.labs import (
    IMPLEMENTATION_ENV,
    check_exercises_start_unfinished,
    implementations,
    lab_of,
    load_answers,
    read_events,
    scenario_run,
)
from minikafka.log import LastStableOffsetMoved
from minikafka.replication import (
    FollowerFetched,
    HighWatermarkAdvanced,
    IsrChanged,
    IsrChangeProposed,
)
from minikafka.trace import TraceEvent, read_trace

LAB = lab_of(__file__)
pytestmark = pytest.mark.timeout(900)

# Tolerances, in seconds, for a loaded two-core machine.
TRACE_BEFORE_CLIENT = 0.03  # the broker's events precede the client's callback
METADATA_DELAY = 2.0  # an ISR change reaches a client's Metadata within this

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


@pytest.fixture(scope="module")
def events(spark: SparkSession, run_dir: Path) -> Iterator[dict[str, DataFrame]]:
    traces = run_dir / "traces"
    frames = {
        "fetches": read_events(spark, traces, FollowerFetched),
        "hws": read_events(spark, traces, HighWatermarkAdvanced),
        "proposals": read_events(spark, traces, IsrChangeProposed),
        "changes": read_events(spark, traces, IsrChanged),
        "lso_moves": read_events(spark, traces, LastStableOffsetMoved),
    }
    for frame in frames.values():
        frame.cache()
    yield frames
    for frame in frames.values():
        frame.unpersist()


@pytest.fixture(scope="module")
def raw(run_dir: Path, truth: Truth) -> dict[str, list[Record]]:
    """The lab topic's events by type, in time order (ties in file order)."""
    kinds: dict[str, type[TraceEvent]] = {
        "fetches": FollowerFetched,
        "hws": HighWatermarkAdvanced,
        "proposals": IsrChangeProposed,
        "changes": IsrChanged,
    }
    found: dict[str, list[Record]] = {name: [] for name in kinds}
    for record in read_trace(run_dir / "traces"):
        for name, kind in kinds.items():
            ours = record.get("topic") == truth["topic"]
            if ours and (record["component"], record["event"]) == (
                kind.COMPONENT,
                kind.EVENT,
            ):
                found[name].append(record)
    return {
        name: sorted(events, key=lambda r: r["ts"]) for name, events in found.items()
    }


@pytest.fixture(scope="module")
def raw_txn(run_dir: Path, truth: Truth) -> dict[str, list[Record]]:
    """The transactional topic's HW advances and LSO moves on the leader, in time
    order (ties in file order)."""
    kinds: dict[str, type[TraceEvent]] = {
        "hws": HighWatermarkAdvanced,
        "lso_moves": LastStableOffsetMoved,
    }
    found: dict[str, list[Record]] = {name: [] for name in kinds}
    for record in read_trace(run_dir / "traces"):
        if (record.get("topic"), record["node"]) != (
            truth["txn_topic"],
            truth["leader"],
        ):
            continue
        for name, kind in kinds.items():
            if (record["component"], record["event"]) == (kind.COMPONENT, kind.EVENT):
                found[name].append(record)
    return {
        name: sorted(events, key=lambda r: r["ts"]) for name, events in found.items()
    }


@pytest.fixture(scope="module", params=implementations(LAB))
def answers(request: pytest.FixtureRequest) -> ModuleType:
    """The reference, then each mutant (a wrong answer the checks must fail)."""
    return load_answers(LAB, request.param)


# --- plain Python, for comparison ----------------------------------------------------


def first_times(moves: list[tuple[float, int | None, int]]) -> dict[int, float]:
    """Offset -> the first time a move ``(ts, from, to)`` revealed it (from <= o < to)."""
    first: dict[int, float] = {}
    for ts, low, high in moves:
        if low is None:
            continue
        for offset in range(low, high):
            first.setdefault(offset, ts)
    return first


def python_waits(
    raw: dict[str, list[Record]],
) -> dict[tuple[int, int], tuple[float, float]]:
    """(offset, follower) -> (appended_ts, replicated_ts), from the fetches."""
    seen: int | None = None
    leader_moves = []
    for r in raw["fetches"]:
        leader_moves.append((r["ts"], seen, r["log_end_offset"]))
        seen = r["log_end_offset"] if seen is None else max(seen, r["log_end_offset"])
    appended = first_times(leader_moves)
    waits = {}
    for follower in {r["follower"] for r in raw["fetches"]}:
        held: int | None = None
        moves = []
        for r in raw["fetches"]:
            if r["follower"] == follower:
                moves.append((r["ts"], held, r["fetch_offset"]))
                held = r["fetch_offset"]
        for offset, ts in first_times(moves).items():
            if offset in appended:
                waits[offset, follower] = (appended[offset], ts)
    return waits


def python_commits(raw: dict[str, list[Record]]) -> dict[int, tuple[float, int]]:
    """Offset -> (committed_ts, the follower waited for)."""
    committed = first_times(
        [(r["ts"], r["previous"], r["high_watermark"]) for r in raw["hws"]]
    )
    replicated: dict[int, list[tuple[float, int]]] = {}
    for (offset, follower), (_, ts) in python_waits(raw).items():
        replicated.setdefault(offset, []).append((ts, follower))
    commits = {}
    for offset, ts in committed.items():
        before = [(t, f) for t, f in replicated.get(offset, []) if t <= ts]
        if before:
            commits[offset] = (ts, max(before)[1])
    return commits


def python_episodes(
    raw: dict[str, list[Record]],
) -> list[tuple[int, float, float | None, float]]:
    """(replica, shrunk_ts, expanded_ts, lag_ms) per departure from the ISR."""
    moves: dict[int, list[tuple[float, str]]] = {}
    for r in raw["changes"]:
        before, after = set(r["previous_isr"]), set(r["isr"])
        for replica in before - after:
            moves.setdefault(replica, []).append((r["ts"], "shrink"))
        for replica in after - before:
            moves.setdefault(replica, []).append((r["ts"], "expand"))
    episodes = []
    for replica, history in sorted(moves.items()):
        for (ts, kind), following in zip(history, [*history[1:], None], strict=True):
            if kind != "shrink":
                continue
            back = following[0] if following and following[1] == "expand" else None
            causes = [
                (p["ts"], lag)
                for p in raw["proposals"]
                if p["kind"] == "shrink" and p["ts"] <= ts
                for r, lag in zip(p["replicas"], p["lag_ms"], strict=True)
                if r == replica
            ]
            if not causes:
                # Taken out by the controller, not proposed by the leader (a controlled
                # shutdown as the cluster stops): no cause to join, as in the answer.
                continue
            episodes.append((replica, ts, back, max(causes)[1]))
    return episodes


# --- the ground truth ----------------------------------------------------------------


def phase(truth: Truth, name: str) -> tuple[float, float]:
    (found,) = [p for p in truth["phases"] if p["name"] == name]
    return found["start"], found["end"]


def latency_by_offset(truth: Truth) -> dict[int, float]:
    """Offset -> seconds from ``produce()`` to the delivery report, as the client saw."""
    return {
        r["offset"]: r["acked_ts"] - r["produced_ts"]
        for r in truth["records"]
        if r.get("offset") is not None
    }


def seen_without(truth: Truth, replica: int) -> tuple[float, float]:
    """When a client first saw the ISR without ``replica``, and then with it again."""
    changes = truth["isr_seen"]
    out = next(c["ts"] for c in changes if replica not in c["isr"])
    back = next(c["ts"] for c in changes if c["ts"] > out and replica in c["isr"])
    return out, back


def inside(ts: float, window: tuple[float, float]) -> bool:
    return window[0] <= ts < window[1]


# --- the exercises -------------------------------------------------------------------


def test_follower_waits(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw: dict[str, list[Record]],
) -> None:
    frame = answers.follower_waits(events["fetches"])
    assert frame.columns == [
        "topic",
        "partition",
        "offset",
        "follower",
        "appended_ts",
        "replicated_ts",
        "wait_ms",
    ]
    rows = frame.where(frame.topic == truth["topic"]).collect()
    latency = latency_by_offset(truth)
    fast, slow = truth["fast_follower"], truth["slow_follower"]
    acked = {r["offset"]: r["acked_ts"] for r in truth["records"]}
    stall = phase(truth, "stalled")[0]
    keys = [(r.offset, r.follower) for r in rows]
    assert len(keys) == len(set(keys)), "one row per offset and follower"
    assert keys == sorted(keys), "ordered by offset, then follower"
    produced = {
        r["offset"]: r["produced_ts"]
        for r in truth["records"]
        if r.get("offset") is not None
    }
    for row in rows:
        # A record cannot be appended before the producer sent it.
        assert row.appended_ts >= produced.get(row.offset, truth["started"]), row
    expected = python_waits(raw)
    assert set(keys) == set(expected)
    for row in rows:
        assert (row.appended_ts, row.replicated_ts) == pytest.approx(
            expected[row.offset, row.follower], abs=1e-6
        ), row
    # Every acknowledged record was copied by the fast follower (always in the ISR).
    assert {o for o, f in keys if f == fast} >= set(latency) - {0}
    for row in rows:
        assert row.wait_ms == pytest.approx(
            (row.replicated_ts - row.appended_ts) * 1000, abs=0.01
        )
        assert row.wait_ms >= 0, row
        # Follower 3 was in the ISR for every record acknowledged before the stall.
        in_isr = row.follower == fast or acked.get(row.offset, stall) < stall
        if in_isr and row.offset in latency:
            # acks=all: answered only once every follower in the ISR had the record.
            assert row.wait_ms / 1000 <= latency[row.offset] + TRACE_BEFORE_CLIENT, row
    delay = truth["delay_s"]
    delayed = phase(truth, "delayed")
    for follower, (low, high) in {slow: (2 * delay, None), fast: (None, delay)}.items():
        waits = [
            r.wait_ms / 1000
            for r in rows
            if r.follower == follower and inside(r.appended_ts, delayed)
        ]
        assert len(waits) >= 20, (follower, waits)
        middle = statistics.median(waits)
        # Follower 3's fetches cross the delayed link both ways: a round trip at least.
        assert low is None or middle >= low * 0.9, (follower, middle)
        assert high is None or middle < high, (follower, middle)
    healthy = [
        r.wait_ms for r in rows if inside(r.appended_ts, phase(truth, "healthy"))
    ]
    assert statistics.median(healthy) < delay * 1000


def test_commit_waits(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw: dict[str, list[Record]],
) -> None:
    waits = answers.follower_waits(events["fetches"])
    frame = answers.commit_waits(waits, events["hws"])
    assert frame.columns == [
        "topic",
        "partition",
        "offset",
        "appended_ts",
        "committed_ts",
        "committed_ms",
        "waited_for",
    ]
    rows = frame.where(frame.topic == truth["topic"]).collect()
    latency = latency_by_offset(truth)
    assert len({r.offset for r in rows}) == len(rows)
    assert [r.offset for r in rows] == sorted(r.offset for r in rows), "by offset"
    # Appended when follower_waits says it was: the leader's time, not a follower's.
    appended = {offset: ts for (offset, _), (ts, _) in python_waits(raw).items()}
    for row in rows:
        assert row.appended_ts == pytest.approx(appended[row.offset], abs=1e-6), row
    # In a run the first follower's copy can show up in the very fetch that reveals the
    # append (then both times are one), so the input's appended_ts is also moved 5 ms
    # earlier: commit_waits must carry it through, whatever the followers did.
    earlier = waits.withColumn("appended_ts", waits.appended_ts - 0.005)
    moved = answers.commit_waits(earlier, events["hws"])
    for row in moved.where(moved.topic == truth["topic"]).collect():
        assert row.appended_ts == pytest.approx(
            appended[row.offset] - 0.005, abs=1e-6
        ), row
    assert {r.offset for r in rows} >= set(latency) - {0}
    expected = python_commits(raw)
    assert {r.offset: (r.committed_ts, r.waited_for) for r in rows} == {
        offset: (pytest.approx(ts, abs=1e-6), follower)
        for offset, (ts, follower) in expected.items()
    }
    for row in rows:
        assert row.committed_ms == pytest.approx(
            (row.committed_ts - row.appended_ts) * 1000, abs=0.01
        )
        if row.offset in latency:
            # Committed before the producer heard so (acks=all answers at the HW).
            assert row.committed_ms / 1000 <= latency[row.offset] + TRACE_BEFORE_CLIENT
    slow, fast = truth["slow_follower"], truth["fast_follower"]
    stall = phase(truth, "stalled")[0]
    delayed = [
        r
        for r in rows
        if inside(r.appended_ts, phase(truth, "delayed")) and r.committed_ts < stall
    ]
    waited = [r.waited_for for r in delayed]
    # On the delayed link, follower 3 is the last in the ISR to have each record.
    assert len(waited) >= 50
    assert waited.count(slow) >= 0.95 * len(waited), waited
    out, _ = seen_without(truth, slow)
    heal, _ = phase(truth, "healed")
    after_shrink = [r for r in rows if out <= r.appended_ts < heal]
    assert after_shrink, "records appended while follower 3 was out of the ISR"
    # Out of the ISR it is not waited for: acks=all needs only the leader and 2.
    assert {r.waited_for for r in after_shrink} == {fast}
    assert max(r.committed_ms for r in after_shrink) < truth["delay_s"] * 1000


def test_isr_episodes(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw: dict[str, list[Record]],
) -> None:
    frame = answers.isr_episodes(events["proposals"], events["changes"])
    assert frame.columns == [
        "topic",
        "partition",
        "replica",
        "shrunk_ts",
        "expanded_ts",
        "out_ms",
        "lag_ms",
    ]
    rows = frame.where(frame.topic == truth["topic"]).collect()
    expected = python_episodes(raw)
    assert len(rows) == len(expected)
    for row, (replica, shrunk, expanded, lag) in zip(rows, expected, strict=True):
        assert row.replica == replica
        assert (row.shrunk_ts, row.lag_ms) == pytest.approx((shrunk, lag), abs=1e-6)
        assert row.expanded_ts == (
            None if expanded is None else pytest.approx(expanded, abs=1e-6)
        )
        assert row.out_ms == (
            None
            if expanded is None
            else pytest.approx((expanded - shrunk) * 1000, abs=0.01)
        )
    # The experiment's episodes: the cluster's stop at the end is a controlled shutdown,
    # which takes each stopping follower out of the ISR too (whether the leader still
    # applies that change before it stops itself is a race, and not the lab's subject).
    end = truth["phases"][-1]["end"]
    during = [r for r in rows if r.shrunk_ts <= end]
    assert [r.replica for r in during] == [truth["slow_follower"]]
    (row,) = during
    lag_max = truth["replica_lag_time_max_ms"] / 1000
    stall, heal = phase(truth, "stalled")[0], phase(truth, "healed")[0]
    # Not caught up for longer than replica.lag.time.max.ms, found by a check that runs
    # every half of it; the last catch-up was the last fetch before the stall.
    assert row.lag_ms / 1000 > lag_max
    assert stall + lag_max - 0.6 <= row.shrunk_ts <= stall + 1.5 * lag_max + 1.0
    assert row.expanded_ts is not None
    assert row.expanded_ts >= heal
    assert row.out_ms == pytest.approx(
        (row.expanded_ts - row.shrunk_ts) * 1000, abs=0.01
    )
    out, back = seen_without(truth, truth["slow_follower"])
    # Clients learn of each change from Metadata after the leader applied it.
    assert row.shrunk_ts - 0.01 <= out <= row.shrunk_ts + METADATA_DELAY
    assert row.expanded_ts - 0.01 <= back <= row.expanded_ts + METADATA_DELAY


def test_follower_lag(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw: dict[str, list[Record]],
) -> None:
    frame = answers.follower_lag(events["fetches"])
    assert frame.columns == [
        "topic",
        "partition",
        "follower",
        "second",
        "fetches",
        "max_lag",
        "max_hw_lag",
        "max_caught_up_ms_ago",
    ]
    rows = frame.where(frame.topic == truth["topic"]).collect()
    keys = [(r.follower, r.second) for r in rows]
    assert keys == sorted(keys), "ordered by follower, then second"
    expected: dict[tuple[int, int], tuple[int, int, int, float]] = {}
    for r in raw["fetches"]:
        key = (r["follower"], math.floor(r["ts"]))
        count, lag, hw_lag, ago = expected.get(key, (0, 0, 0, 0.0))
        expected[key] = (
            count + 1,
            max(lag, r["lag"]),
            max(hw_lag, r["high_watermark"] - r["fetch_offset"]),
            max(ago, r["caught_up_ms_ago"]),
        )
    assert {
        (r.follower, r.second): (
            r.fetches,
            r.max_lag,
            r.max_hw_lag,
            r.max_caught_up_ms_ago,
        )
        for r in rows
    } == expected
    slow, fast = truth["slow_follower"], truth["fast_follower"]
    stall, heal = phase(truth, "stalled")[0], phase(truth, "healed")[0]
    # A stalled link carries no fetch: the leader hears nothing from follower 3.
    silent = [
        r
        for r in rows
        if r.follower == slow and stall + 1 <= r.second and r.second + 1 <= heal
    ]
    assert silent == []
    first_back = min(
        (r for r in rows if r.follower == slow and r.second + 1 > heal),
        key=lambda r: r.second,
    )
    appended = sum(
        1
        for r in truth["records"]
        if r.get("offset") is not None and stall <= r["acked_ts"] < heal
    )
    # Its first fetch after the stall lacks what was written meanwhile.
    assert first_back.max_lag >= 0.8 * appended, (first_back, appended)
    # And the committed ones: the HW moved on without it, follower 2 alone in the ISR.
    assert first_back.max_hw_lag >= 0.8 * appended, (first_back, appended)
    assert first_back.max_caught_up_ms_ago >= (heal - stall - 0.7) * 1000
    # Follower 2 keeps up: its fetches lack at most about a second's records. Seldom
    # more, when the producer's backlog from the stall lands at once (the records
    # waiting for follower 3 until the ISR shrank) or a loaded machine delays a fetch;
    # never anything like what follower 3 lacks when it comes back.
    rate = truth["rate"]
    fast_lags = sorted(r.max_lag for r in rows if r.follower == fast)
    assert fast_lags[int(0.9 * (len(fast_lags) - 1))] <= rate, ("2 keeps up", fast_lags)
    assert fast_lags[-1] <= min(3 * rate, first_back.max_lag / 2), (
        "2 keeps up",
        fast_lags,
        first_back,
    )
    # An in-sync follower never lacks a committed record: the HW waits for it.
    assert {r.max_hw_lag for r in rows if r.follower == fast} == {0}


def python_lso_holds(
    raw_txn: dict[str, list[Record]],
) -> dict[int, tuple[float, float]]:
    """First offset -> (held, released): each LSO move away from x, and the HW advance
    that passed x before it."""
    holds: dict[int, tuple[float, float]] = {}
    for move in raw_txn["lso_moves"]:
        x = move["previous"]
        passed = [
            h["ts"]
            for h in raw_txn["hws"]
            if h["previous"] <= x < h["high_watermark"] and h["ts"] <= move["ts"]
        ]
        if passed:
            holds[x] = (passed[0], move["ts"])
    return holds


def test_lso_holds(
    answers: ModuleType,
    events: dict[str, DataFrame],
    truth: Truth,
    raw_txn: dict[str, list[Record]],
) -> None:
    frame = answers.lso_holds(events["lso_moves"], events["hws"])
    assert frame.columns == [
        "node",
        "topic",
        "partition",
        "first_offset",
        "held_ts",
        "released_ts",
        "hold_ms",
    ]
    leader = frame.where(
        (frame.topic == truth["txn_topic"]) & (frame.node == truth["leader"])
    )
    rows = {r.first_offset: r for r in leader.collect()}
    # One hold per transaction, at its first offset.
    transactions = {t["first_offset"]: t for t in truth["transactions"]}
    assert sorted(rows) == sorted(transactions)
    # The same as plain Python over the trace files.
    expected = python_lso_holds(raw_txn)
    assert sorted(expected) == sorted(rows)
    for x, row in rows.items():
        held, released = expected[x]
        assert math.isclose(row.held_ts, held, abs_tol=1e-6), (x, row, held)
        assert math.isclose(row.released_ts, released, abs_tol=1e-6), (x, row)
        assert math.isclose(row.hold_ms, (released - held) * 1000, abs_tol=1e-3)
    slack = TRACE_BEFORE_CLIENT
    for x, txn in transactions.items():
        row = rows[x]
        # Held from no earlier than its first record was sent, and before that record
        # was acknowledged (acks=all: the HW passed it first) ...
        assert txn["produced_ts"] - slack <= row.held_ts <= txn["acked_ts"] + slack
        # ... and released no sooner than the producer asked to commit (the marker is
        # written after EndTxn), and before a client saw the LSO past it.
        assert txn["commit_called_ts"] - slack <= row.released_ts
        assert row.released_ts <= txn["released_seen_ts"] + slack, (x, row, txn)
    # After the commit, the release waits for the marker to reach every in-sync
    # follower: a delayed follower's fetch round trip (2 x delay_s) at least.
    after = {
        delayed: statistics.median(
            rows[t["first_offset"]].released_ts - t["commit_called_ts"]
            for t in truth["transactions"]
            if t["delayed"] is delayed
        )
        for delayed in (False, True)
    }
    assert after[True] >= after[False] + truth["delay_s"], after


@pytest.mark.skipif(
    os.environ.get(IMPLEMENTATION_ENV) == "exercises",
    reason="checks exercises.py as shipped, not the reader's answers",
)
def test_the_exercises_start_unfinished() -> None:
    check_exercises_start_unfinished(LAB)
