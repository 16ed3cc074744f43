"""Lab 18's checks: each exercise's answer against the lab's reference on the scenario's
traces (both protocols' groups going through one membership change on a cluster of
real processes).

The scenario runs once for the module; its ``truth.json`` holds the reference answers,
computed in plain Python from the same run's trace and records, so the checks compare
with what this run did, never with fixed numbers (live timings vary from run to run).
The checks also make sure the run holds what the exercises' rules must tell apart: a
member that still owns a partition while it is pending revocation, a partition
unowned more than once, one never unowned, and groups of both protocols. A record's
timestamp (milliseconds) seldom falls exactly on a stretch's end or start, where the
second exercise's rule decides; so its check adds, to the run's records, one at each
stretch's start and end of its partition, and compares over those records too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from minikafka.coordination import MemberAssignmentChanged
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
from minikafka.trace import read_trace

LAB = lab_of(__file__)
pytestmark = pytest.mark.timeout(600)

PRODUCED = T.StructType(
    [
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("ts", T.DoubleType()),
    ]
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_run(LAB, tmp_path_factory)


@pytest.fixture(scope="module")
def truth(run_dir: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((run_dir / "truth.json").read_text())
    return document


@pytest.fixture(scope="module")
def assignments(spark: SparkSession, run_dir: Path) -> DataFrame:
    return read_events(spark, run_dir / "traces", MemberAssignmentChanged).cache()


@pytest.fixture(scope="module")
def produced(spark: SparkSession, run_dir: Path) -> DataFrame:
    return spark.read.json(str(run_dir / "produced.jsonl"), schema=PRODUCED).cache()


@pytest.fixture(scope="module", params=implementations(LAB))
def answers(request: pytest.FixtureRequest) -> ModuleType:
    """The reference, then each mutant (a wrong answer the checks must fail)."""
    return load_answers(LAB, request.param)


def answer(answers: ModuleType, exercise: str, *args: Any) -> DataFrame:
    """The exercise's DataFrame; an unfinished exercise fails its check in one line."""
    try:
        result: DataFrame = getattr(answers, exercise)(*args)
    except ExerciseNotDone as error:
        unfinished = str(error)
    else:
        return result
    pytest.fail(unfinished, pytrace=False)  # outside `except`: no chained traceback


def rows(frame: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.collect()]


def gaps_frame(spark: SparkSession, truth: dict[str, Any]) -> DataFrame:
    """The reference's gaps, as the second exercise's input (it is checked on its own)."""
    schema = T.StructType(
        [
            T.StructField("group_type", T.StringType()),
            T.StructField("partition", T.IntegerType()),
            T.StructField("start_ts", T.DoubleType()),
            T.StructField("end_ts", T.DoubleType()),
        ]
    )
    return spark.createDataFrame(
        [tuple(g.values()) for g in truth["gaps"]], schema=schema
    )


def produced_records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "produced.jsonl").open()]


def boundary_records(
    gaps: list[dict[str, Any]], produced: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A record at each stretch's start and at its end, on its partition, numbered after
    the run's last: where a stretch's bounds decide whether a record waited."""
    next_offset: dict[int, int] = {}
    for record in produced:
        partition = int(record["partition"])
        next_offset[partition] = max(
            next_offset.get(partition, 0), record["offset"] + 1
        )
    probes = []
    for gap in gaps:
        for ts in (gap["start_ts"], gap["end_ts"]):
            partition = int(gap["partition"])
            offset = next_offset.get(partition, 0)
            next_offset[partition] = offset + 1
            probes.append({"partition": partition, "offset": offset, "ts": ts})
    return probes


# --- the data holds every case -------------------------------------------------------


def test_the_traces_hold_what_the_rules_must_tell_apart(
    run_dir: Path, truth: dict[str, Any]
) -> None:
    scenario = LAB.module("scenario")
    events: list[dict[str, Any]] = [
        r for r in read_trace(run_dir / "traces") if r["event"] == "member_assignment"
    ]
    assert {e["group_type"] for e in events} == {"classic", "consumer"}
    # KIP-848: a partition a member must give back is still its own for a while
    assert any(e["partitions_pending_revocation"] for e in events)
    # the reference is the scenario's, over this run's trace and records
    produced = produced_records(run_dir)
    assert scenario.unowned(events) == truth["gaps"]
    assert scenario.delayed(truth["gaps"], produced) == truth["delayed"]
    # some partition went unowned twice, some never, and records waited in both groups
    assert any(r["gaps"] >= 2 for r in truth["delayed"])
    assert any(r["gaps"] == 0 for r in truth["delayed"])
    for group_type in ("classic", "consumer"):
        mine = [r for r in truth["delayed"] if r["group_type"] == group_type]
        assert sum(r["delayed_records"] for r in mine) > 0, group_type
    # a partition never owned twice at once in either group (the coordinator's promise)
    owned: dict[tuple[str, str], set[str]] = {}
    for e in sorted(events, key=lambda e: float(e["ts"])):
        owned[e["group_type"], e["member_id"]] = {
            *e["assigned_partitions"],
            *e["partitions_pending_revocation"],
        }
        for group_type in ("classic", "consumer"):
            held = [p for (g, _), ps in owned.items() if g == group_type for p in ps]
            assert len(held) == len(set(held))


# --- the checks ------------------------------------------------------------------------


def test_unowned(
    answers: ModuleType, assignments: DataFrame, truth: dict[str, Any]
) -> None:
    result = answer(answers, "unowned", assignments)
    assert result.columns == ["group_type", "partition", "start_ts", "end_ts"]
    found = rows(result)
    assert [(r["group_type"], r["partition"]) for r in found] == [
        (g["group_type"], g["partition"]) for g in truth["gaps"]
    ], "one row per stretch without owner, ordered by group_type, partition, start_ts"
    for row, gap in zip(found, truth["gaps"], strict=True):
        assert (row["start_ts"], row["end_ts"]) == pytest.approx(
            (gap["start_ts"], gap["end_ts"]), abs=1e-6
        ), (row, gap)


@pytest.fixture(scope="module")
def probed(
    spark: SparkSession, produced: DataFrame, truth: dict[str, Any], run_dir: Path
) -> tuple[DataFrame, list[dict[str, Any]]]:
    """The run's records and one at each stretch's bounds (:func:`boundary_records`),
    and the reference's answer over them."""
    records = produced_records(run_dir)
    probes = boundary_records(truth["gaps"], records)
    frame = produced.unionByName(spark.createDataFrame(probes, schema=PRODUCED))
    expected = LAB.module("scenario").delayed(truth["gaps"], records + probes)
    return frame.cache(), expected


def test_delayed(
    spark: SparkSession,
    answers: ModuleType,
    probed: tuple[DataFrame, list[dict[str, Any]]],
    truth: dict[str, Any],
) -> None:
    records, expected_rows = probed
    result = answer(answers, "delayed", gaps_frame(spark, truth), records)
    assert result.columns == [
        "group_type",
        "partition",
        "gaps",
        "unowned_ms",
        "delayed_records",
    ]
    found = rows(result)
    assert [(r["group_type"], r["partition"]) for r in found] == [
        (r["group_type"], r["partition"]) for r in expected_rows
    ], "every partition under each group type, ordered by group_type, partition"
    for row, expected in zip(found, expected_rows, strict=True):
        assert row["unowned_ms"] == pytest.approx(expected["unowned_ms"], abs=1e-3)
        assert (row["gaps"], row["delayed_records"]) == (
            expected["gaps"],
            expected["delayed_records"],
        ), (row, expected)


def test_every_exercise_starts_unfinished() -> None:
    if os.environ.get(IMPLEMENTATION_ENV) == "exercises":
        pytest.skip("checks the exercises.py the lab ships with; you are writing yours")
    check_exercises_start_unfinished(LAB)
