"""A node forked from a fork server is, to its caller, the process ``Popen`` would have
started: the same output, exit status, signals, working directory, environment and
session (``minikafka.broker._fork_server``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from minikafka.broker._fork_server import (
    FORK_SERVER_ENV,
    ForkServer,
    NodeProcess,
    _server_for,
    start_node,
)
from minikafka.broker.testing import BrokerProcess

WAIT = 60.0


@pytest.fixture(params=["popen", "fork-server"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each check twice: a node started with Popen, and one from a fork server."""
    monkeypatch.setenv(FORK_SERVER_ENV, "1" if request.param == "fork-server" else "0")
    return str(request.param)


def _output(process: NodeProcess) -> str:
    assert process.stdout is not None
    return process.stdout.read().decode()


def test_a_bad_config_ends_the_node_with_the_same_status_and_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["broker", "--override", "num.partitions=zero"]
    args += ["--override", f"log.dirs={tmp_path}"]
    ended = {}
    for how in ("0", "1"):
        monkeypatch.setenv(FORK_SERVER_ENV, how)
        process = start_node(args, output=None)
        ended[how] = (process.wait(WAIT), _output(process))
    assert ended["0"] == ended["1"]
    status, output = ended["1"]
    assert status != 0
    assert "num.partitions" in output


def test_a_broker_runs_stops_and_is_killed_as_a_process_is(
    how: str, tmp_path: Path
) -> None:
    broker = BrokerProcess(tmp_path / "data")
    broker.start()
    process = broker.process
    assert process is not None
    assert process.poll() is None
    assert process.pid != os.getpid()
    # its own process: its parent is this one (Popen) or the fork server
    parent = int(Path(f"/proc/{process.pid}/stat").read_text().split(")")[1].split()[1])
    assert (parent == os.getpid()) == (how == "popen")
    assert broker.stop() == 0  # SIGTERM: a clean shutdown
    # Killed by a signal, as a node the caller holds (not a BrokerProcess: a suite that
    # watches those for deaths it did not ask for would blame the test that comes next).
    process = start_node(
        ["broker", "--override", f"log.dirs={tmp_path / 'data'}"], output=None
    )
    process.send_signal(signal.SIGKILL)
    assert process.wait(WAIT) == -signal.SIGKILL
    assert process.poll() == -signal.SIGKILL
    assert process.stdout is not None
    process.stdout.close()


def test_a_node_takes_the_callers_directory_session_and_file(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "node.log"
    log.write_bytes(b"before\n")
    with log.open("ab") as out:
        process = start_node(
            # relative: resolved in the caller's working directory
            [
                "broker",
                "--override",
                "log.dirs=data",
                "--override",
                "listeners=PLAINTEXT://127.0.0.1:0",
            ],
            output=out.fileno(),
            new_session=True,
        )
    try:
        deadline = time.monotonic() + WAIT
        while b"ready on" not in log.read_bytes():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)  # polling a file, inside the deadline
        assert os.getsid(process.pid) == process.pid  # a session of its own
        assert (tmp_path / "data" / "meta.properties").exists()
        assert os.readlink(f"/proc/{process.pid}/cwd") == str(tmp_path)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0
    assert log.read_text().startswith("before\n")  # appended to


def test_wait_gives_up_at_its_timeout(how: str, tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data")
    broker.start()
    try:
        assert broker.process is not None
        with pytest.raises(subprocess.TimeoutExpired):
            broker.process.wait(0.1)
    finally:
        broker.stop()


def test_nodes_outlive_the_server_that_forked_them(tmp_path: Path) -> None:
    env = {**os.environ, FORK_SERVER_ENV: "1", "PYTHONUNBUFFERED": "1"}
    server = ForkServer(env)
    process = server.start(
        [
            "broker",
            "--override",
            f"log.dirs={tmp_path}",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
        ],
        None,
        False,
    )
    assert process.stdout is not None
    assert b"ready on" in _read_until(process, b"ready on")
    server.close()  # the server ends ...
    os.kill(process.pid, 0)  # ... and the node goes on
    os.kill(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + WAIT
    while Path(f"/proc/{process.pid}").exists() and _state(process.pid) != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)  # not our child: polling its pid, inside the deadline


def _read_until(process: NodeProcess, marker: bytes) -> bytes:
    assert process.stdout is not None
    seen = b""
    for line in iter(process.stdout.readline, b""):
        seen += line
        if marker in line:
            break
    return seen


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
    except OSError:
        return "gone"


def test_a_child_takes_the_callers_environment_not_its_servers() -> None:
    """A server is shared by callers whose environments differ only in what changes
    while they run (pytest's PYTEST_CURRENT_TEST); each child still gets its caller's
    environment exactly: here ``COLUMNS``, which sets the width of ``--help``."""
    base = {**os.environ, FORK_SERVER_ENV: "1", "COLUMNS": "200"}
    server = ForkServer(base)
    try:
        widths = []
        for columns in ("50", "200"):
            child = server.start(["--help"], None, False, {**base, "COLUMNS": columns})
            text = _output(child)
            assert child.wait(WAIT) == 0, text
            widths.append(max(len(line) for line in text.splitlines()))
        assert widths[0] <= 50 < widths[1]
    finally:
        server.close()
    # It ended at the close, by itself: not killed after close's wait.
    assert server._process.returncode == 0
    first = {**base, "PYTEST_CURRENT_TEST": "a.py::one (call)"}
    second = {**base, "PYTEST_CURRENT_TEST": "a.py::two (setup)"}
    assert _server_for(first) is _server_for(second)
    assert _server_for(first) is not _server_for({**base, "COLUMNS": "80"})
