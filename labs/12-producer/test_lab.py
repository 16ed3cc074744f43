"""Lab 12's checks: each exercise's answer, from the traces, against the ground truth.

The scenario runs once for the module. Its ``truth.json`` was recorded apart from every
trace: for each record, when the application called ``produce()`` and when its delivery
report was served, with the offset the report gave; and the batches as the partition's
leader stored them, read from its files after the cluster stopped. From these:

- the batches are the stored ones, one for one (same base offsets, record counts and
  bytes, since the leader stores an uncompressed batch as the producer sent it);
- a batch's time, ``queue_ms + in_flight_ms``, lies inside its first record's latency
  as the application measured it (the record was produced before the batch was created
  and reported after the answer was handled), and close to it;
- a batch that left ``full`` had no room for the next record, by the accumulator's own
  size estimate computed from the records' sizes;
- each request the brokers served carried one batch (each topic has one partition), and
  its time at the broker lies inside that batch's time in flight.

``MINIKAFKA_LAB_IMPL`` chooses the answers checked (``solutions`` by default).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession

from minikafka.client import PendingRecord, ProducerBatchCompleted
from minikafka.client._accumulator import BATCH_OVERHEAD
from minikafka.labs import (
    IMPLEMENTATION_ENV,
    ExerciseNotDone,
    check_exercises_start_unfinished,
    implementations,
    lab_of,
    load_answers,
    read_events,
    scenario_run,
)
from minikafka.net import RequestCompleted
from minikafka.trace import read_trace

LAB = lab_of(__file__)
pytestmark = pytest.mark.timeout(600)

Truth = dict[str, Any]
Record = dict[str, Any]
"""One trace event as read in plain Python from the trace files."""

# The time from a record's produce() call to the batch's creation, plus the time from
# the Sender handling the answer to the application's poll() serving the report: the
# two ends of a record's latency that the batch's times leave out. Each is a hand-over
# between the application's thread and the producer's I/O thread, which can wait for
# the GIL (its switch interval is 5 ms) on a busy machine: medians under 0.5 ms on the
# two-core VM, with the cluster's four processes on the same cores. 20 ms is room for a
# machine loaded by other tests besides.
HAND_OVER_MS = 20.0
EXACT = 1e-6  # the same clock on both sides; only float rounding between them


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_run(LAB, tmp_path_factory, seed=11, scale=1.0)


@pytest.fixture(scope="module")
def truth(run_dir: Path) -> Truth:
    document: Truth = json.loads((run_dir / "truth.json").read_text())
    return document


@pytest.fixture(scope="module")
def raw(run_dir: Path) -> list[Record]:
    return list(read_trace(run_dir / "traces"))


@pytest.fixture(scope="module")
def raw_batches(raw: list[Record]) -> list[Record]:
    return [
        r
        for r in raw
        if (r["component"], r["event"])
        == (ProducerBatchCompleted.COMPONENT, ProducerBatchCompleted.EVENT)
    ]


@pytest.fixture(scope="module")
def raw_produces(raw: list[Record]) -> list[Record]:
    return [
        r
        for r in raw
        if (r["component"], r["event"])
        == (RequestCompleted.COMPONENT, RequestCompleted.EVENT)
        and r["api_name"] == "Produce"
    ]


@pytest.fixture(scope="module")
def batches(spark: SparkSession, run_dir: Path) -> DataFrame:
    return read_events(spark, run_dir / "traces", ProducerBatchCompleted).cache()


@pytest.fixture(scope="module")
def requests(spark: SparkSession, run_dir: Path) -> DataFrame:
    return read_events(spark, run_dir / "traces", RequestCompleted).cache()


@pytest.fixture(scope="module", params=implementations(LAB))
def answers(request: pytest.FixtureRequest) -> ModuleType:
    """The reference, then each mutant (a wrong answer the checks must fail)."""
    return load_answers(LAB, request.param)


# --- the ground truth, and plain Python for comparison -------------------------------


def settings(truth: Truth) -> dict[str, Truth]:
    """client_id -> that producer's part of the truth."""
    found: dict[str, Truth] = truth["settings"]
    return found


def of_client(records: Iterable[Record], client_id: str) -> list[Record]:
    return sorted(
        (r for r in records if r["client_id"] == client_id),
        key=lambda r: (r.get("base_offset", 0), r["ts"]),
    )


def percentile(values: Iterable[float], p: float) -> float:
    """Exact, linear between the nearest ranks: what Spark's ``percentile`` computes."""
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def first_record_latencies(setting: Truth) -> list[float]:
    """Per stored batch, its first record's latency in ms: produce() called to the
    delivery report served. Reports give offsets in production order (one partition,
    an idempotent producer), so a record's offset is its index."""
    sent = setting["messages"]
    return [
        (sent["reported"][b["base_offset"]] - sent["called"][b["base_offset"]]) * 1000
        for b in setting["stored"]
    ]


def without_room(setting: Truth) -> int:
    """Stored batches the next record could not have joined, by the accumulator's own
    estimate of their sizes (``PendingRecord.size``, a batch's header on top)."""
    sizes = [
        PendingRecord("t", None, b"x" * n, (), 0).size
        for n in setting["messages"]["value_bytes"]
    ]
    limit = setting["batch_size"]
    count = 0
    for batch in setting["stored"]:
        first, last = batch["base_offset"], batch["last_offset"]
        estimate = BATCH_OVERHEAD + sum(sizes[first : last + 1])
        following = sizes[last + 1] if last + 1 < len(sizes) else 0
        if estimate >= limit or (following and estimate + following > limit):
            count += 1
    return count


def rows_by(rows: list[Row], *keys: str) -> dict[tuple[Any, ...], Row]:
    table = {tuple(row[key] for key in keys): row for row in rows}
    assert len(table) == len(rows), f"more than one row per {keys}"
    return table


def per_client(rows: list[Row], truth: Truth) -> dict[str, Row]:
    """One row per producer, ordered by client_id."""
    assert [row.client_id for row in rows] == sorted(settings(truth)), (
        "one row per producer, ordered by client_id"
    )
    return {key: row for (key,), row in rows_by(rows, "client_id").items()}


def answer(answers: ModuleType, exercise: str, *args: Any) -> DataFrame:
    """The exercise's DataFrame; an unfinished exercise fails its check in one line."""
    try:
        result: DataFrame = getattr(answers, exercise)(*args)
    except ExerciseNotDone as error:
        unfinished = str(error)
    else:
        return result
    pytest.fail(unfinished, pytrace=False)  # outside `except`: no chained traceback


def approx(value: float) -> Any:
    return pytest.approx(value, rel=1e-9, abs=1e-9)


# --- the trace itself ----------------------------------------------------------------


def test_the_trace_holds_the_stored_batches_one_for_one(
    raw_batches: list[Record], truth: Truth
) -> None:
    for client_id, setting in settings(truth).items():
        sent = setting["messages"]
        # Every record acknowledged once, at offsets in the order it was produced.
        assert sent["offset"] == list(range(setting["records"])), client_id
        mine = of_client(raw_batches, client_id)
        assert [(r["base_offset"], r["records"], r["size_bytes"]) for r in mine] == [
            (b["base_offset"], b["records"], b["size_bytes"]) for b in setting["stored"]
        ], client_id
        for r in mine:
            assert (r["topic"], r["partition"], r["error"]) == (client_id, 0, None)
            assert r["node"] == truth["client_node"]


# --- the exercises -------------------------------------------------------------------


def test_batch_shapes(answers: ModuleType, batches: DataFrame, truth: Truth) -> None:
    result = answer(answers, "batch_shapes", batches)
    assert result.columns == [
        "client_id",
        "batches",
        "records",
        "records_per_batch",
        "max_records",
        "mean_bytes",
    ]
    assert_shapes_ordered(answers, batches)
    table = per_client(result.collect(), truth)
    for client_id, setting in settings(truth).items():
        row, stored = table[client_id], setting["stored"]
        assert row.batches == len(stored), client_id
        assert row.records == setting["records"] == sum(b["records"] for b in stored)
        assert row.records_per_batch == approx(setting["records"] / len(stored))
        assert row.max_records == max(b["records"] for b in stored), client_id
        mean = sum(b["size_bytes"] for b in stored) / len(stored)
        assert row.mean_bytes == approx(mean), client_id
        # The accumulator's estimate of a record's size is above its real size, so a
        # batch never holds more than batch.size bytes (none of these records alone do).
        assert max(b["size_bytes"] for b in stored) <= setting["batch_size"]

    # The same rate, lingering longer: fewer batches, more records in each. (Not 0
    # against 5: with linger.ms=0 records gather while all five requests are in flight,
    # and a loaded machine's round trips can gather as many as 5 ms do.)
    linger0, linger5, linger50 = (table[f"lab12-linger{ms}"] for ms in (0, 5, 50))
    assert linger5.batches > linger50.batches
    assert linger0.batches > 2 * linger50.batches
    assert linger50.records_per_batch > linger0.records_per_batch
    # About rate x linger.ms records a batch (20 here); half of it leaves room for a
    # loaded machine's stalls, which cut some batches short.
    setting = settings(truth)["lab12-linger50"]
    assert linger50.records_per_batch >= 0.5 * setting["rate"] * 0.050


def test_leave_reasons(
    answers: ModuleType,
    batches: DataFrame,
    raw_batches: list[Record],
    truth: Truth,
) -> None:
    result = answer(answers, "leave_reasons", batches)
    assert result.columns == [
        "client_id",
        "reason",
        "batches",
        "share",
        "mean_records",
        "min_queue_ms",
    ]
    assert_reasons_ordered(answers, batches)
    rows = rows_by(result.collect(), "client_id", "reason")
    assert list(rows) == sorted(rows), "ordered by client_id and reason"
    for client_id, setting in settings(truth).items():
        mine = of_client(raw_batches, client_id)
        counted = Counter(r["reason"] for r in mine)
        found = {reason: row for (c, reason), row in rows.items() if c == client_id}
        assert {reason: row.batches for reason, row in found.items()} == dict(counted)
        for reason, row in found.items():
            chosen = [r for r in mine if r["reason"] == reason]
            assert row.share == approx(len(chosen) / len(mine)), (client_id, reason)
            mean = sum(r["records"] for r in chosen) / len(chosen)
            assert row.mean_records == approx(mean), (client_id, reason)
            assert row.min_queue_ms == approx(min(r["queue_ms"] for r in chosen))
        # One partition per producer (no piggyback), flushed before closing (no close),
        # and buffer.memory (32 MiB) far above what is ever unacknowledged (no memory).
        assert set(found) <= {"full", "linger", "flush"}, client_id
        # A batch that left full had no room for the record after it.
        full = found["full"].batches if "full" in found else 0
        assert full <= without_room(setting), client_id
        # flush() starts after the last produce(): only the last batch can be waiting
        # for it without being full or lingered out.
        assert ("flush" not in found) or found["flush"].batches == 1, client_id
        if "linger" in found:
            # Taken only once its first record had waited linger.ms.
            assert found["linger"].min_queue_ms >= setting["linger_ms"] - EXACT

    # 2,000 records a second fill a 1,024-byte batch in about 4 ms, well within its
    # linger.ms (20): batch.size decides. The others are the last batch and those an
    # application stall of 20 ms or more cut short; 80% leaves room for a loaded
    # machine.
    assert rows["lab12-batch1k", "full"].share >= 0.8


def made_batches(batches: DataFrame, rows: list[tuple[str, str]]) -> DataFrame:
    """Batches made from a real one: one per (client_id, reason) given."""
    real = batches.limit(1).collect()[0].asDict()
    made = [{**real, "client_id": c, "reason": reason} for c, reason in rows]
    return batches.sparkSession.createDataFrame(made, batches.schema)


def assert_shapes_ordered(answers: ModuleType, batches: DataFrame) -> None:
    """A run's producers can sort alike by client_id and by another column (their batch
    counts fall in the names' order when the machine is loaded): three producers with
    one, three and two batches tell client_id's order apart from any other."""
    rows = [("a", "full")] + [("b", "full")] * 3 + [("c", "full")] * 2
    result = answer(answers, "batch_shapes", made_batches(batches, rows))
    found = [row.client_id for row in result.collect()]
    assert found == ["a", "b", "c"], "one row per producer, ordered by client_id"


def assert_reasons_ordered(answers: ModuleType, batches: DataFrame) -> None:
    """The run's own rows can sort alike by (client_id, reason) and by (reason,
    client_id): when, say, only the first producer left batches for more reasons than
    one. Two producers with two reasons each, made from real rows, tell the two orders
    apart whatever the run did."""
    pairs = [("a", "linger"), ("b", "full"), ("a", "flush"), ("b", "linger")]
    result = answer(answers, "leave_reasons", made_batches(batches, pairs))
    found = [(row.client_id, row.reason) for row in result.collect()]
    assert found == sorted(pairs), "ordered by client_id, then reason"


def test_batch_latency(
    answers: ModuleType,
    batches: DataFrame,
    raw_batches: list[Record],
    truth: Truth,
) -> None:
    result = answer(answers, "batch_latency", batches)
    assert result.columns == [
        "client_id",
        "batches",
        "queue_p50_ms",
        "queue_p99_ms",
        "in_flight_p50_ms",
        "total_p50_ms",
        "total_p99_ms",
    ]
    table = per_client(result.collect(), truth)
    for client_id, setting in settings(truth).items():
        row, mine = table[client_id], of_client(raw_batches, client_id)
        queue = [r["queue_ms"] for r in mine]
        total = [r["queue_ms"] + r["in_flight_ms"] for r in mine]
        assert row.batches == len(mine)
        assert row.queue_p50_ms == approx(percentile(queue, 0.5)), client_id
        assert row.queue_p99_ms == approx(percentile(queue, 0.99)), client_id
        in_flight = [r["in_flight_ms"] for r in mine]
        assert row.in_flight_p50_ms == approx(percentile(in_flight, 0.5)), client_id
        assert row.total_p50_ms == approx(percentile(total, 0.5)), client_id
        assert row.total_p99_ms == approx(percentile(total, 0.99)), client_id

        # Against the application's clock. Batch by batch (the trace's batches are the
        # stored ones), the batch's time lies inside its first record's latency, so
        # each percentile of the one is at most the other's, and not far below it.
        latencies = first_record_latencies(setting)
        for p, got in ((0.5, row.total_p50_ms), (0.99, row.total_p99_ms)):
            expected = percentile(latencies, p)
            assert got <= expected + EXACT, (client_id, p, got, expected)
        assert row.total_p50_ms >= percentile(latencies, 0.5) - HAND_OVER_MS

    # A batch that lingers waits its linger.ms first: more than half of them do, all
    # but the last one (flush) and any cut short because they filled.
    for ms in (5, 50):
        assert table[f"lab12-linger{ms}"].queue_p50_ms >= ms - EXACT
    assert table["lab12-linger0"].queue_p50_ms < table["lab12-linger50"].queue_p50_ms


def test_produce_requests(
    answers: ModuleType,
    batches: DataFrame,
    requests: DataFrame,
    raw_batches: list[Record],
    raw_produces: list[Record],
    truth: Truth,
) -> None:
    result = answer(answers, "produce_requests", batches, requests)
    assert result.columns == [
        "client_id",
        "records",
        "batches",
        "requests",
        "records_per_request",
        "broker_p50_ms",
        "in_flight_p50_ms",
    ]
    table = per_client(result.collect(), truth)
    for client_id, setting in settings(truth).items():
        row = table[client_id]
        mine = of_client(raw_batches, client_id)
        served = [r["total_ms"] for r in raw_produces if r["client_id"] == client_id]
        assert (row.records, row.batches) == (
            setting["records"],
            len(setting["stored"]),
        ), client_id
        # One batch a request (one partition), and a request more for each retry.
        retries = sum(r["retries"] for r in mine)
        assert row.requests == len(served) == len(setting["stored"]) + retries
        assert row.records_per_request == approx(setting["records"] / len(served))
        assert row.broker_p50_ms == approx(percentile(served, 0.5)), client_id
        in_flight = [r["in_flight_ms"] for r in mine]
        assert row.in_flight_p50_ms == approx(percentile(in_flight, 0.5)), client_id
        if retries == 0:
            # Request by request, the broker's time (last byte in to last byte out)
            # lies inside the batch's time in flight, measured on the same clock.
            assert row.broker_p50_ms <= row.in_flight_p50_ms + EXACT, client_id

    linger0, linger50 = table["lab12-linger0"], table["lab12-linger50"]
    assert linger50.records_per_request > linger0.records_per_request
    assert linger50.requests < linger0.requests


@pytest.mark.skipif(
    os.environ.get(IMPLEMENTATION_ENV) == "exercises",
    reason="checks exercises.py as shipped, not the reader's answers",
)
def test_the_exercises_start_unfinished() -> None:
    check_exercises_start_unfinished(LAB)
