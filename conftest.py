"""How ``make pytest`` spreads the test run over pytest-xdist's workers.

``make pytest`` runs the tests twice over: first every test not marked ``serial`` on
``PYTEST_WORKERS`` workers (``-n N --dist loadgroup``), then the ``serial`` ones alone,
one at a time, on a machine no other test is loading. The first run hands out tests one
by one (a module's broker then starts once on each worker that runs some of its tests,
a few seconds each), except the groups of :func:`group_of`, each run whole by one
worker: every test under ``labs/`` (the labs' checks keep their scenario runs in
``labs/.runs/`` and share one Spark session), every test of ``tests/reference``
(Apache Kafka's node, ``kafka_reference``: one JVM for them all, as in a serial run)
and each fuzz module (its broker is warmed up with the whole corpus). The groups are
this file's scheduler's (:func:`pytest_xdist_make_scheduler`), by path: pytest-xdist's
own ``loadgroup`` reads ``xdist_group`` marks by renaming tests, which pytest 9.2 no
longer lets it do.

``serial``: the tests whose checks measure time on a real cluster, or whose processes
must not compete with others for the two cores (a lab's checks on its scenario's trace,
failover and soak tests of clusters of processes, benchmarks). Whole directories are
marked here (:data:`SERIAL_DIRS`); a test elsewhere is marked in its own module.

A section of the terminal summary (the fuzz suite's reports) reaches it in the reports
of the tests that wrote it (``user_properties`` named ``summary:<title>``): a worker's
own summary is never printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SUMMARY = "summary:"
_sections: dict[str, list[str]] = {}

ROOT = Path(__file__).resolve().parent

SERIAL_DIRS = (
    # Each lab's checks: a trace lab's on its scenario's run (lags, delays and orders
    # measured on a real cluster), an extend lab's on clusters it starts.
    *sorted(ROOT.glob("labs/[0-9][0-9]-*")),
    # Clusters of processes killed, stopped, proxied and soaked under load.
    ROOT / "tests" / "cluster",
    # Apache Kafka and minikafka side by side, timed.
    ROOT / "tests" / "bench",
)


def group_of(nodeid: str) -> str:
    """The tests one worker runs whole, named; a test of no group is its own."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("labs/"):
        return "labs"
    if path.startswith("tests/reference/"):
        return "kafka-reference"
    if path.startswith("tests/fuzz/"):
        return path
    return nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's scheduling by scope, the scopes :func:`group_of`'s."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)


def pytest_itemcollected(item: pytest.Item) -> None:
    if any(item.path.is_relative_to(d) for d in SERIAL_DIRS):
        item.add_marker(pytest.mark.serial)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for key, value in report.user_properties:
        if isinstance(key, str) and key.startswith(SUMMARY):
            _sections.setdefault(key.removeprefix(SUMMARY), []).append(str(value))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, texts in _sections.items():
        terminalreporter.section(title)
        for text in texts:
            terminalreporter.write_line(text)
