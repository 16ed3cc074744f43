"""A run's timeline shows each fault on its nodes' lanes, the operations by outcome and
every anomaly at the moment its earliest operation completed; ``python -m chaos
timeline RUN_DIR`` draws the same file again from the run's files."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import attrs

from chaos.__main__ import main
from chaos.checker import check
from chaos.history import Op, Outcome, encode_final_state, format_history
from chaos.timeline import FILE, anomaly_marks, redraw, save

START = 1_800_000_000.0


def _history() -> list[Op]:
    """Four sends, the second acknowledged then lost; the third times out."""
    outcomes: tuple[Outcome, ...] = ("ok", "ok", "unknown", "ok")
    return [
        Op(
            i,
            0,
            "send",
            outcome,
            START + i,
            START + i + 0.5,
            topic="t",
            partition=0,
            value=10 + i,
            offset=i if outcome == "ok" else None,
        )
        for i, outcome in enumerate(outcomes)
    ]


def _write_run(run: Path) -> None:
    run.mkdir()
    ops = _history()
    (run / "history.jsonl").write_text("".join(format_history(ops)))
    final = {("t", 0): ((0, 10), (3, 13))}
    (run / "final.json").write_text(encode_final_state(final))
    fault = {
        "kind": "kill",
        "nodes": [2],
        "started_at": START + 0.8,
        "healed_at": START + 2.5,
    }
    skipped = {"kind": "pause", "nodes": [3], "started_at": None, "healed_at": None}
    lines = [json.dumps(fault), json.dumps(skipped)]
    (run / "faults.jsonl").write_text("\n".join(lines) + "\n")


def test_an_anomaly_is_marked_when_its_earliest_operation_completed() -> None:
    ops = _history()
    final = {("t", 0): ((0, 10), (3, 13))}
    marks = anomaly_marks(ops, check(ops, final).anomalies)
    assert marks == [(START + 1.5, "lost")]


def test_an_anomaly_without_operations_sits_at_the_run_end() -> None:
    ops = _history()[:1]
    (duplicate,) = check(ops, {("t", 0): ((0, 10), (1, 10))}).anomalies
    assert duplicate.kind == "duplicate"
    assert anomaly_marks(ops, [duplicate]) == [(START + 0.5, "duplicate")]
    alone = attrs.evolve(duplicate, ops=())
    assert anomaly_marks(ops, [alone]) == [(math.inf, "duplicate")]


def test_the_timeline_shows_fault_lanes_outcomes_and_anomalies(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_run(run)
    svg = redraw(run).read_text()
    assert (run / FILE).exists()
    # The carried-out fault has a lane; the skipped one none.
    assert "node 2" in svg
    assert "node 3" not in svg
    assert "kill" in svg
    assert "lost" in svg
    for outcome in ("failed", "unknown"):
        assert outcome in svg


def test_the_command_redraws_the_same_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_run(run)
    first = redraw(run).read_bytes()
    out = io.StringIO()
    assert main(["timeline", str(run)], out) == 0
    assert out.getvalue().strip() == str(run / FILE)
    assert (run / FILE).read_bytes() == first


def test_anomalies_of_one_kind_at_one_moment_share_a_labelled_line(
    tmp_path: Path,
) -> None:
    ops = _history()
    marks = [
        (START + 1.5, "duplicate"),
        (START + 1.52, "duplicate"),
        (START + 3, "lost"),
    ]
    svg = save(tmp_path / FILE, ops, [], marks).read_text()
    assert "duplicate x2" in svg
    assert "lost" in svg
