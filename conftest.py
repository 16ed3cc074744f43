"""How ``make pytest`` spreads the test run over pytest-xdist's workers.

``make pytest`` runs the tests twice over: first every test not marked ``serial`` on
``PYTEST_WORKERS`` workers (``-n N --dist loadgroup``), then the ``serial`` ones on
``SERIAL_WORKERS`` (two), each module whole on one worker, so at most two clusters (or a
cluster and a lab's scenario) share the machine, never a crowd of other tests. The first
run hands out tests one by one (a module's broker then starts once on each worker that
runs some of its tests, a few seconds each), except the groups of :func:`group_of`, each
run whole by one worker: the labs' tests that use Spark (:data:`SPARK_TESTS`, and the
checks of the trace labs that time nothing, :data:`UNTIMED_LABS`: one Spark
session, a JVM, for them all, not one per worker), every test of ``tests/reference``
(Apache Kafka's node, ``kafka_reference``: one JVM for them all, as in a serial run)
and each fuzz module (its broker is warmed up with the whole corpus). The groups are
this file's scheduler's (:func:`pytest_xdist_make_scheduler`), by path: pytest-xdist's
own ``loadgroup`` reads ``xdist_group`` marks by renaming tests, which pytest 9.2 no
longer lets it do. In both runs the groups known to take minutes go first, longest
first (:data:`LONGEST_FIRST`), and a worker is handed its next group only when it has
one test left, so no long group waits in one worker's queue while another is idle.

``serial``: the tests whose checks measure time on a real cluster, or whose processes
must not compete with others for the two cores (a lab's checks on its scenario's trace,
failover and soak tests of clusters of processes, benchmarks). Whole directories are
marked here (:data:`SERIAL_DIRS`, bar :data:`UNTIMED_LABS`); a test elsewhere is
marked in its own module.

``MINIKAFKA_FORK_SERVER=1`` (set here, before pytest-xdist starts its workers): the
brokers the tests start fork from a process that imported the broker once
(``minikafka.broker._fork_server``).

``MINIKAFKA_TEST_TIMES=FILE`` appends each test's setup, call and teardown durations to
FILE (``nodeid``, phase, seconds, the worker that ran it, the outcome, the Unix time the
phase ended; tab-separated):
what the scheduling of both runs is tuned from, beyond the ten slowest each run prints.

A section of the terminal summary (the fuzz suite's reports) reaches it in the reports
of the tests that wrote it (``user_properties`` named ``summary:<title>``): a worker's
own summary is never printed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

SUMMARY = "summary:"
_sections: dict[str, list[str]] = {}

ROOT = Path(__file__).resolve().parent

UNTIMED_LABS = frozenset(
    ROOT / "labs" / name / "test_lab.py"
    for name in ("18-partition-handover", "19-chaos-checker")
)
"""The trace labs whose checks time nothing (lab 18's compare each answer with the
reference computed over the same cluster run, whatever its timings; lab 19 draws its
chaos histories from a seed and a recorded run, and starts no broker): they run in the
first run, in the Spark group (:data:`SPARK_TESTS`), on the one Spark session of its
worker (a JVM that takes half a minute to start on a loaded machine)."""

SERIAL_DIRS = (
    # Each lab's checks: a trace lab's on its scenario's run (lags, delays and orders
    # measured on a real cluster), an extend lab's on clusters it starts.
    *sorted(ROOT.glob("labs/[0-9][0-9]-*")),
    # Clusters of processes killed, stopped, proxied and soaked under load.
    ROOT / "tests" / "cluster",
    # Apache Kafka and minikafka side by side, timed.
    ROOT / "tests" / "bench",
    # librdkafka's own test runner against a SASL_SSL cluster, one for the module.
    ROOT / "tests" / "compat" / "test_librdkafka_suite.py",
    # The two-minute chaos runs, KRaft's then ZooKeeper mode's, on one worker.
    ROOT / "tests" / "chaos" / "test_run.py",
)


SPARK_TESTS = frozenset(
    f"labs/tests/{name}.py" for name in ("test_harness", "test_parquet")
)
"""The labs' test modules that ask for the ``spark`` fixture (``labs/conftest.py``)."""

WITH_LAB_8 = "labs/tests/test_standalone.py"
"""Lab 8's checks again, on a Spark cluster, on the run lab 8's own test keeps: serial,
in lab 8's group, after it."""


LONGEST_FIRST = (
    # the first run, longest first (seconds, fresh clone, four workers)
    "kafka-reference",  # 300
    "labs-spark",  # 64, and labs 18 and 19's checks (lab 19's: 110 on a loaded machine)
    "labs/tests/test_mutants.py",  # 12 to 142 a lab (lab 13's: 142, about 107 since)
    "tests/fuzz/",
    "tests/e2e/test_many_partitions.py",
    "labs/tests/test_build_labs.py",  # 22 (lab 17 written from its skeleton: 16)
    # the serial run, longest first as measured (seconds, fresh clone, two workers; the
    # ones marked "since": what that run's figure less what was cut after it, measured
    # module by module on a loaded machine)
    "tests/chaos/test_run.py",  # 262: two two-minute chaos runs, 130 s each
    "labs/08-requests/",  # 131 with test_standalone, in its group
    "tests/cluster/test_soak.py",  # 122 (two minutes of restarts)
    "tests/cluster/test_failover.py",  # 191, about 100 since
    "tests/cluster/test_cluster_cli.py",  # 100
    "tests/cluster/test_transactions.py",  # 82
    "tests/cluster/test_secure_cluster.py",  # 80
    "tests/cluster/test_consumer_group_failover.py",  # 89, about 73 since
    "tests/cluster/test_replication_faults.py",  # 104, about 60 since
    "labs/09-replication/",  # 60
    "labs/tests/test_extend_labs.py",  # 56 (three labs)
    "tests/cluster/test_volume.py",  # 52
    "labs/10-failover/",  # 39
    "tests/cluster/test_zookeeper_mode.py",  # 38
    "labs/11-rebalances/",  # 36
    "labs/12-producer/",  # 30
)
"""The groups (:func:`group_of`) known to take minutes, handed out before the rest, in
this order, longest first: a worker given one of them last would run alone while the
others sit idle (the first run: each lab's deliberately wrong solutions, the Spark
group, Apache Kafka's node, the fuzz suite, a broker with thousands of partitions; the
serial run: chaos runs, failover and soak clusters, the trace labs' scenarios). The
seconds in the comments are a fresh clone's ``MINIKAFKA_TEST_TIMES``, to keep in order
as tests are added. Handed out in this order, that run's serial groups (their tests'
own seconds, each to the worker free first) end on both workers within 20 s of each
other (830 and 849 s; with the "since" figures, 755 and 773 s); an earlier run's, with
xdist's own order (scopes with the most tests first, which
:func:`pytest_xdist_make_scheduler` turns off), left one worker idle for the last
120 s (745 and 865 s)."""


def group_of(nodeid: str) -> str:
    """The tests one worker runs whole, named; a test of no group is its own."""
    path = nodeid.split("::", 1)[0]
    if path == WITH_LAB_8:
        return next(
            str(p.relative_to(ROOT)) for p in ROOT.glob("labs/08-*/test_lab.py")
        )
    if is_serial(ROOT / path):
        # a serial module: its cluster or its scenario's run, and its checks
        return path
    if path in SPARK_TESTS or ROOT / path in UNTIMED_LABS:
        return "labs-spark"
    if path.startswith("tests/reference/"):
        return "kafka-reference"
    if path.startswith("tests/fuzz/"):
        return path
    return nodeid


def is_serial(path: Path) -> bool:
    """A test module of :data:`SERIAL_DIRS` (bar :data:`UNTIMED_LABS`)."""
    return path not in UNTIMED_LABS and any(path.is_relative_to(d) for d in SERIAL_DIRS)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's scheduling by scope, the scopes :func:`group_of`'s."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    # xdist's scope scheduling hands out the scopes with the most tests first unless
    # told not to (--no-loadscope-reorder): that undoes LONGEST_FIRST, and put a
    # one-test two-minute group (a chaos run, the soak) last behind a lab's many checks.
    config.option.loadscopereorder = False

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

        def _reschedule(self, node: Any) -> None:
            # xdist hands a worker its next group while it still has two tests to go;
            # of the serial run's groups of one or two tests (a chaos run, a soak),
            # a worker would then hold two or three at once, queued behind a long one,
            # while the other worker runs out of work. A worker runs a test only once
            # it knows the next (its teardown depends on it), so the next group goes
            # out when one test is left: the least a worker can hold without waiting.
            if self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

    return GroupScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """:data:`LONGEST_FIRST` first, in their order (a stable sort, by group, so a
    group's tests keep theirs): xdist's scheduler hands the groups out in the order they
    were collected."""

    def rank(item: pytest.Item) -> int:
        group = group_of(item.nodeid)
        for i, prefix in enumerate(LONGEST_FIRST):
            if group.startswith(prefix):
                return i
        return len(LONGEST_FIRST)

    items.sort(key=rank)


def pytest_itemcollected(item: pytest.Item) -> None:
    if is_serial(item.path):
        item.add_marker(pytest.mark.serial)


TIMES_ENV = "MINIKAFKA_TEST_TIMES"

# Some five hundred broker starts a run, each a second of CPU less. Every test process
# and every process they start inherits it; a test that needs Popen unsets it.
os.environ.setdefault("MINIKAFKA_FORK_SERVER", "1")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    times = os.environ.get(TIMES_ENV)
    if times and "PYTEST_XDIST_WORKER" not in os.environ:  # the controller writes
        worker = getattr(report, "node", None)
        name = getattr(worker, "gateway", None)
        with open(times, "a") as out:
            out.write(
                f"{report.nodeid}\t{report.when}\t{report.duration:.3f}"
                f"\t{getattr(name, 'id', '-')}\t{report.outcome}\t{report.stop:.3f}\n"
            )
    for key, value in report.user_properties:
        if isinstance(key, str) and key.startswith(SUMMARY):
            _sections.setdefault(key.removeprefix(SUMMARY), []).append(str(value))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, texts in _sections.items():
        terminalreporter.section(title)
        for text in texts:
            terminalreporter.write_line(text)
