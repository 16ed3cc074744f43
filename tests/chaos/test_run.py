"""A two-minute seeded chaos run over a real cluster in each controller mode (KRaft with
one controller and three brokers, then ZooKeeper mode's three brokers; chaos/README.md
"The runs in make test"): through the brokers paused and SIGKILLed, the active
controller SIGKILLed and, where network namespaces can be made (as root), real
partitions, seed 10's schedule, the idempotent ``acks=all`` producers lose, duplicate
and reorder nothing, the consumer group's commits never go back, no read is dirty, and
the traces show one leader per leader epoch and one active controller per epoch. Any
anomaly fails the test (and ``make test``).

Marked serial, and one group in ``conftest.py`` (``SERIAL_DIRS``): the two runs go one
after the other on one worker, so their clusters never compete with each other for
the two cores.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from chaos.faults import PROCESS_KINDS
from chaos.history import parse_history
from chaos.nemesis import PARTITION_KINDS
from chaos.netns import unavailable
from chaos.runner import RunOptions, run
from minikafka.zk._server import ZOOKEEPER_JAR

pytestmark = [pytest.mark.serial, pytest.mark.timeout(900)]

SEED = 10
"""Its schedule, in both modes, holds a kill, a pause and a killed active controller
(and, with partitions, an isolated node and a cut into halves or a bridge)."""
DURATION = 120.0


def _faults() -> tuple[str, ...]:
    """Partitions too where namespaces can be made; the process faults anywhere."""
    return PROCESS_KINDS + (PARTITION_KINDS if unavailable() is None else ())


MODES = ["kraft", "zk"]


@pytest.mark.parametrize("mode", MODES)
def test_a_two_minute_seeded_run_through_kills_pauses_and_partitions_shows_no_anomaly(
    tmp_path: Path, mode: str
) -> None:
    if mode == "zk" and not ZOOKEEPER_JAR.exists():
        pytest.skip("Debian's zookeeper is installed by `make test`")
    faults = _faults()
    out = io.StringIO()
    status = run(RunOptions(SEED, DURATION, mode=mode, faults=faults), tmp_path, out)
    summary = out.getvalue()
    assert status == 0, summary
    # The faults were carried out, not only scheduled: each of the process kinds at
    # least once (and a partition where namespaces exist), each started and healed.
    done = [json.loads(line) for line in (tmp_path / "faults.jsonl").open()]
    started = [f for f in done if f["started_at"] and not f["skipped"]]
    assert set(PROCESS_KINDS) <= {f["kind"] for f in started}, summary
    if PARTITION_KINDS[0] in faults:
        assert any(f["kind"] in PARTITION_KINDS for f in started), summary
    assert all(f["healed_at"] and not f["error"] for f in started), summary
    # And the workloads ran through them: acknowledged sends, reads and commits.
    ops = parse_history((tmp_path / "history.jsonl").read_text().splitlines())
    outcomes = {(op.kind, op.outcome) for op in ops}
    assert {("send", "ok"), ("poll", "ok"), ("commit", "ok")} <= outcomes, summary
    # The run's timeline chart is drawn, with a lane for each node a fault held.
    timeline = (tmp_path / "timeline.svg").read_text()
    for node in {n for f in started for n in f["nodes"]}:
        assert f"node {node}" in timeline
