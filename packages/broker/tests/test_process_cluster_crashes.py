"""The crash check of the suites of real processes: ``ProcessCluster.crashes()`` and the
teardowns that call it (tests/cluster, tests/e2e, tests/compat).

Guarantees tested: a node that wrote a Python traceback to its output, or whose process
ended without being told to (not a ``kill``, ``stop`` or ``down`` through the cluster),
is reported, in any of its runs (the log is appended to across restarts); a node killed
or stopped on purpose is not, nor a traceback cut short by a SIGKILL while it was being
printed; and a test whose broker died of an exception fails, although its own asserts
passed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from minikafka.broker._node_exits import tracebacks
from minikafka.broker.testing import ClusterError, ProcessCluster, free_ports

# Real processes started and killed: a minute on a loaded two-core machine.
pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[3]
WAIT = 60.0

CRASH = """\
2026-01-01 10:00:00,000 INFO minikafka.broker: minikafka broker 1 listening
Traceback (most recent call last):
  File "/x/_fetcher.py", line 120, in _fetch_once
    log.append_as_follower(records)
  File "/x/_log.py", line 300, in append_as_follower
    header = read_batch_header(buffer, position)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
minikafka.log.CorruptRecordError: a batch of 1200 bytes ends past the buffer
"""

GROUP = """\
  + Exception Group Traceback (most recent call last):
  |   File "/x/_run.py", line 61, in run_broker
  |     trio.run(_serve, server)
  | ExceptionGroup: Exceptions from Trio nursery (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/x/_fetcher.py", line 120, in _fetch_once
    |     log.append_as_follower(records)
    | KeyError: 3
    +------------------------------------
"""

CHAINED = """\
Traceback (most recent call last):
  File "/x/a.py", line 1, in f
    g()
ValueError: first

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/x/a.py", line 3, in h
    f()
RuntimeError
2026-01-01 10:00:01,000 INFO minikafka.broker: shutting down
"""

# What a SIGKILL leaves of a traceback being printed, then the next run's first lines.
CUT = """\
2026-01-01 10:00:00,000 ERROR minikafka.net: Fetch request from c1 failed
Traceback (most recent call last):
  File "/x/_server.py", line 320, in _handler_loop
    await self.handler.handle(request)
  File "/x/_apis.py", line 90, in han
minikafka broker: tracing to /tmp/traces/trace-node1-*.jsonl
2026-01-01 10:00:05,000 INFO minikafka.broker: minikafka broker 1 listening
minikafka broker ready on 127.0.0.1:9092
"""


def test_complete_tracebacks_are_found_and_a_cut_one_is_not() -> None:
    [(line, crash)] = tracebacks(CRASH)
    assert line == 2
    assert crash.endswith(
        "CorruptRecordError: a batch of 1200 bytes ends past the buffer"
    )
    [(_, group)] = tracebacks(GROUP)
    assert "KeyError: 3" in group, "an exception group is one traceback, to its end"
    [(_, chained)] = tracebacks(CHAINED)
    assert chained.startswith("Traceback")
    assert chained.endswith("RuntimeError")
    assert tracebacks(CUT) == [], "a traceback a SIGKILL cut short is not a crash"
    assert tracebacks(CUT.rstrip("\n") + "\n" + CRASH) != []
    assert tracebacks("INFO: Traceback-free output\n") == []


def laid_out(root: Path, brokers: int = 2) -> ProcessCluster:
    ports = free_ports(brokers + 1)
    return ProcessCluster.create(
        root,
        brokers,
        controller_port=ports[0],
        broker_ports=ports[1:],
        overrides={"default.replication.factor": "1"},
    )


def test_crashes_reads_every_nodes_log(tmp_path: Path) -> None:
    """No process needed: a log holding a traceback is a crash of its node, wherever in
    the log (an earlier run's) it is; a log a SIGKILL cut short is none."""
    cluster = laid_out(tmp_path / "cluster")
    assert cluster.crashes() == []
    cluster.log_file(1).write_text(CUT + CRASH + "later output of a restarted run\n")
    cluster.log_file(2).write_text(CUT)
    [crash] = cluster.crashes()
    assert crash.node == 1
    assert "CorruptRecordError" in crash.detail
    assert str(cluster.log_file(1)) in str(crash)
    # A pid file naming a process that is gone: a node another invocation started
    # (``minikafka cluster up``) that ended without ``minikafka cluster kill`` or ``down``.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    cluster.pid_file(2).write_text(f"{gone.pid}\n")
    assert [c.node for c in ProcessCluster.load(cluster.root).crashes()] == [2, 1]


def test_a_killed_node_is_no_crash_and_one_that_died_of_an_exception_is(
    tmp_path: Path,
) -> None:
    cluster = laid_out(tmp_path / "cluster", brokers=1)
    try:
        cluster.up()
        cluster.kill(1)  # SIGKILL, told: no crash
        cluster.restart(1)
        cluster.stop(1)  # SIGTERM, told
        cluster.start(1)
        assert cluster.crashes() == [], "a node killed or stopped on purpose crashed"

        # Killed by something else than the test (the OOM killer, a bug's abort()).
        pid = cluster.pid(1)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + WAIT
        while cluster.pid(1) is not None:
            assert time.monotonic() < deadline, "the killed broker is still running"
            time.sleep(0.05)  # polling the process, inside the deadline
        [killed] = cluster.crashes()
        assert "died of SIGKILL without being told to" in killed.what

        # A segment file not named after an offset: loading the logs raises, and the
        # node dies of it with a traceback (after a run cut short mid-traceback: the
        # new run starts on a line of its own, and the cut traceback is none).
        with cluster.log_file(1).open("a") as log:
            log.write(
                'Traceback (most recent call last):\n  File "x", line 1, in f\n  '
            )
        partition = cluster.node_dir(1) / "bad-0"
        partition.mkdir()
        (partition / "not-an-offset.log").write_bytes(b"")
        with pytest.raises(ClusterError, match="exited while starting"):
            cluster.start(1, timeout=WAIT)
        crashes = cluster.crashes()
        exits = [c.what for c in crashes if c.what.startswith("(pid")]
        assert len(exits) == 2, crashes
        assert any("exited with status 1 without being told to" in e for e in exits)
        [traceback] = [c for c in crashes if "traceback" in c.what]
        assert "not-an-offset.log" in traceback.detail
        assert traceback.detail.startswith("Traceback (most recent call last):")
    finally:
        cluster.kill_all()


def run_pytest(directory: Path, conftest: str, test: str) -> str:
    (directory / "conftest.py").write_text(textwrap.dedent(conftest))
    (directory / "test_inner.py").write_text(textwrap.dedent(test))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rA",
            str(directory),
        ],
        cwd=REPO,  # ``tests.cluster`` importable
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    return done.stdout + done.stderr


def test_a_cluster_test_whose_broker_died_of_an_exception_fails(
    tmp_path: Path,
) -> None:
    """tests/cluster's teardown: the test's asserts pass, its broker died of an
    exception; the test is reported as an error. A broker killed on purpose is not."""
    output = run_pytest(
        tmp_path,
        """
        from tests.cluster.conftest import _no_node_crashed, make_cluster  # noqa: F401
        from tests.conftest import pytest_runtest_makereport  # noqa: F401
        """,
        """
        import time

        def test_dies(make_cluster):
            cluster = make_cluster(brokers=1)
            cluster.kill(1)
            partition = cluster.node_dir(1) / "bad-0"
            partition.mkdir()
            (partition / "not-an-offset.log").write_bytes(b"")
            cluster.start(1, wait=False)
            deadline = time.monotonic() + 60
            while cluster.pid(1) is not None:
                assert time.monotonic() < deadline
                time.sleep(0.05)

        def test_killed(make_cluster):
            cluster = make_cluster(brokers=1)
            cluster.kill(1)
        """,
    )
    assert "2 passed, 1 error" in output, output
    assert "ERROR at teardown of test_dies" in output, output
    assert "No node process dies of an unexpected exception" in output, output
    assert "not-an-offset.log" in output, output


def test_an_e2e_test_whose_broker_died_of_an_exception_fails(tmp_path: Path) -> None:
    """tests/e2e's (and tests/compat's) teardown: every BrokerProcess is watched, even
    one the test started itself and expected to fail."""
    output = run_pytest(
        tmp_path,
        """
        from tests.conftest import pytest_runtest_makereport  # noqa: F401
        from tests.e2e.conftest import (  # noqa: F401
            _no_broker_crashed,
            _watch_broker_processes,
        )
        """,
        """
        import pytest
        from minikafka.broker.testing import BrokerFailed, BrokerProcess

        def test_dies(tmp_path):
            partition = tmp_path / "data" / "bad-0"
            partition.mkdir(parents=True)
            (partition / "not-an-offset.log").write_bytes(b"")
            with pytest.raises(BrokerFailed):
                BrokerProcess(tmp_path / "data").start()

        def test_killed(tmp_path):
            broker = BrokerProcess(tmp_path / "data")
            broker.start()
            broker.kill()
            broker.start()
            assert broker.stop() == 0
        """,
    )
    assert "2 passed, 1 error" in output, output
    assert "ERROR at teardown of test_dies" in output, output
    assert "not-an-offset.log" in output, output
