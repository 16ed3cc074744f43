"""Lab 19's checks: each exercise's answer against the chaos checker's own, on every
history of the scenario (a recorded chaos run and seeded ones).

The scenario runs once for the module; its ``truth.json`` is what
``chaos.checker.check`` reports for each history, as rows of the exercises' columns.
The checks also make sure each generated history holds every case the rules must tell
apart (the scenario's episodes), so a rule that gets one case wrong fails on every
seed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from chaos.checker import check
from chaos.history import parse_final_state, parse_history
from minikafka.labs import (
    IMPLEMENTATION_ENV,
    ExerciseNotDone,
    check_exercises_start_unfinished,
    implementations,
    lab_of,
    load_answers,
    scenario_run,
)

LAB = lab_of(__file__)
pytestmark = pytest.mark.timeout(600)

Tables = dict[str, tuple[DataFrame, DataFrame]]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_run(LAB, tmp_path_factory, seed=1, scale=1.0)


@pytest.fixture(scope="module")
def truth(run_dir: Path) -> dict[str, Any]:
    histories: dict[str, Any] = json.loads((run_dir / "truth.json").read_text())[
        "histories"
    ]
    return histories


@pytest.fixture(scope="module")
def tables(spark: SparkSession, run_dir: Path, truth: dict[str, Any]) -> Tables:
    scenario = LAB.module("scenario")
    loaded: Tables = {}
    for name in truth:
        home = run_dir / "histories" / name
        history = scenario.read_history(spark, home).cache()
        final = scenario.read_final(spark, home).cache()
        loaded[name] = (history, final)
    return loaded


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


# --- the data holds every case -------------------------------------------------------


def test_truth_is_the_checkers_verdict_on_each_history(
    run_dir: Path, truth: dict[str, Any]
) -> None:
    scenario = LAB.module("scenario")
    for name, verdict in truth.items():
        home = run_dir / "histories" / name
        ops = parse_history((home / "history.jsonl").read_text().splitlines())
        final = parse_final_state((home / "final.json").read_text())
        counts = check(ops, final).counts()
        assert verdict == scenario.truth(ops, final), name
        assert len(verdict["lost"]) == counts["lost"], name
        assert len(verdict["duplicates"]) == counts["duplicate"], name
    # The recorded run: seed 3's two duplicates, from a producer epoch bump.
    recorded = truth["recorded-seed3"]
    assert recorded["lost"] == []
    assert [(d["partition"], d["value"]) for d in recorded["duplicates"]] == [
        (2, 3670),
        (3, 3671),
    ]


def test_each_generated_history_holds_every_case(run_dir: Path) -> None:
    scenario = LAB.module("scenario")
    generated = sorted((run_dir / "histories").glob("generated-*"))
    assert len(generated) == scenario.GENERATED
    for home in generated:
        ops = parse_history((home / "history.jsonl").read_text().splitlines())
        final = parse_final_state((home / "final.json").read_text())
        kept = {(tp, value) for tp, records in final.items() for _, value in records}
        read = {
            (op.tp, value) for op in ops if op.kind == "poll" for _, value in op.records
        }
        sends = [op for op in ops if op.kind == "send"]
        lost = [s for s in sends if s.outcome == "ok" and (s.tp, s.value) not in kept]
        live = [s for s in lost if s.topic != scenario.SCRATCH]
        # Lost, read first and not; an unknown send gone; a deleted topic's records.
        assert any((s.tp, s.value) in read for s in live), home.name
        assert any((s.tp, s.value) not in read for s in live), home.name
        assert any(
            s.outcome == "unknown" and (s.tp, s.value) not in kept for s in sends
        )
        assert any(s.topic == scenario.SCRATCH for s in lost), home.name
        assert any(op.kind == "delete_topic" for op in ops), home.name
        # Twice in the log from an idempotent producer and from one without; and a
        # copy only a read saw (the final log holds the value once).
        places: dict[tuple[Any, int], set[int]] = {}
        for tp, records in final.items():
            for offset, value in records:
                places.setdefault((tp, value), set()).add(offset)
        twice = {key for key, offsets in places.items() if len(offsets) > 1}
        by_key = {(s.tp, s.value): s for s in sends}
        assert any(by_key[key].idempotent for key in twice), home.name
        assert any(not by_key[key].idempotent for key in twice), home.name
        seen_once = [
            op
            for op in ops
            if op.kind == "poll"
            for offset, value in op.records
            if places.get((op.tp, value), {offset}) != {offset}
            and len(places[(op.tp, value)]) == 1
        ]
        assert seen_once, home.name


# --- the checks ------------------------------------------------------------------------


def test_lost_writes(
    answers: ModuleType, tables: Tables, truth: dict[str, Any]
) -> None:
    for name, (history, final) in tables.items():
        result = answer(answers, "lost_writes", history, final)
        assert result.columns == ["topic", "partition", "value", "offset", "op"]
        assert rows(result) == truth[name]["lost"], (
            f"{name}: the checker's lost writes, in (topic, partition, value) order"
        )


def test_duplicates(answers: ModuleType, tables: Tables, truth: dict[str, Any]) -> None:
    for name, (history, final) in tables.items():
        result = answer(answers, "duplicates", history, final)
        assert result.columns == ["topic", "partition", "value", "offsets"]
        assert rows(result) == truth[name]["duplicates"], (
            f"{name}: the checker's duplicates, offsets ascending"
        )


def test_every_exercise_starts_unfinished() -> None:
    if os.environ.get(IMPLEMENTATION_ENV) == "exercises":
        pytest.skip("checks the exercises.py the lab ships with; you are writing yours")
    check_exercises_start_unfinished(LAB)
