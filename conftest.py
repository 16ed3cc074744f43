"""How ``make pytest`` spreads the test run over pytest-xdist's workers.

``make pytest`` runs the tests twice over: first every test not marked ``serial`` on
``PYTEST_WORKERS`` workers (``-n N --dist loadgroup``), then the ``serial`` ones alone,
one at a time, on a machine no other test is loading. The first run hands out tests one
by one (a module's broker then starts once on each worker that runs some of its tests,
a few seconds each), except the groups given here (``xdist_group``), each run whole by
one worker: every test under ``labs/`` (the labs' checks keep their scenario runs in
``labs/.runs/`` and share one Spark session), every test of Apache Kafka's node
(``kafka_reference``: one JVM for them all, as in a serial run) and each fuzz module
(its broker is warmed up with the whole corpus).

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
LABS = ROOT / "labs"
FUZZ = ROOT / "tests" / "fuzz"


def _group(item: pytest.Item) -> str | None:
    """The xdist group of ``item``, or None: any worker may run it."""
    path = item.path
    if path.is_relative_to(LABS):
        return "labs"
    if "kafka_reference" in getattr(item, "fixturenames", ()):
        return "kafka-reference"
    if path.is_relative_to(FUZZ):
        return f"fuzz:{path.stem}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # First: pytest-xdist reads the groups in a hook of its own.
    for item in items:
        if any(item.path.is_relative_to(d) for d in SERIAL_DIRS):
            item.add_marker(pytest.mark.serial)
        group = _group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for key, value in report.user_properties:
        if isinstance(key, str) and key.startswith(SUMMARY):
            _sections.setdefault(key.removeprefix(SUMMARY), []).append(str(value))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, texts in _sections.items():
        terminalreporter.section(title)
        for text in texts:
            terminalreporter.write_line(text)
