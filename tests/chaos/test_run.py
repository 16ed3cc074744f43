"""A short seeded chaos run over a real KRaft cluster (one controller, three brokers):
with a broker paused, the active controller SIGKILLed and a broker SIGKILLed (seed 1's
schedule over 45 seconds), an idempotent ``acks=all`` producer loses, duplicates and
reorders nothing, the consumer group's commits never go back, no read is dirty, and the
traces show one leader per leader epoch and one active controller per epoch.

Marked serial (as the cluster tests are, by directory): its four processes must not
compete with a crowd of other tests for the two cores.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from chaos.history import parse_history
from chaos.runner import RunOptions, run

pytestmark = [pytest.mark.serial, pytest.mark.timeout(600)]

SEED = 1
DURATION = 45.0


def test_a_seeded_kraft_run_through_kills_and_pauses_shows_no_anomaly(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    status = run(RunOptions(SEED, DURATION), tmp_path, out)
    summary = out.getvalue()
    assert status == 0, summary
    # The faults were carried out, not only scheduled: each started and healed.
    faults = [json.loads(line) for line in (tmp_path / "faults.jsonl").open()]
    assert {f["kind"] for f in faults} == {"pause", "kill", "kill-active-controller"}
    assert all(f["started_at"] and f["healed_at"] and not f["error"] for f in faults)
    # And the workloads ran through them: acknowledged sends, reads and commits.
    ops = parse_history((tmp_path / "history.jsonl").read_text().splitlines())
    done = {(op.kind, op.outcome) for op in ops}
    assert {("send", "ok"), ("poll", "ok"), ("commit", "ok")} <= done, summary
    # The run's timeline chart is drawn, with a lane for each node a fault held.
    timeline = (tmp_path / "timeline.svg").read_text()
    for node in {n for f in faults for n in f["nodes"]}:
        assert f"node {node}" in timeline
