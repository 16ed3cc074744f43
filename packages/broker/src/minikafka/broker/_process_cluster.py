"""A KRaft cluster of real processes on one machine: what ``make cluster`` runs and what
the fault tests kill, pause and restart.

:class:`ProcessCluster` is a :class:`~._cluster_layout.ClusterLayout` (its nodes, ports
and files, written once and read back) that starts, signals and watches the nodes'
processes. In ZooKeeper mode its ZooKeeper server (Debian's, standalone) is started
before the brokers and stopped after them; the brokers elect their controller among
themselves. Each ``minikafka cluster`` command is a separate invocation, so pid files,
not child handles, say which processes are running.

:meth:`ProcessCluster.crashes` says which nodes crashed: a node whose log holds a Python
traceback (every run's output, the log being appended to), or whose process ended
without being told to. Told is a SIGKILL, SIGTERM or SIGINT sent through
:meth:`~ProcessCluster.signal` (``kill``, ``stop``, ``restart``, ``down``), or by another
invocation, which removes the pid file once the process is gone; a process that ends on
its own leaves its pid file behind. The tests fail a test after which it finds one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import attrs

from minikafka.zk import ZooKeeperError, ZooKeeperServer

from ._cluster_layout import ClusterLayout
from ._fork_server import NodeProcess, start_node
from ._node_exits import ENDING_SIGNALS, NodeCrash, describe_exit, tracebacks


class ClusterError(RuntimeError):
    """A node did not start, or did not stop, in time; the message says which and why."""


@attrs.define(eq=False)
class ProcessCluster(ClusterLayout):
    """The nodes of a :class:`ClusterLayout` as processes: started, signalled, watched."""

    _children: dict[int, NodeProcess] = attrs.field(init=False, factory=dict)
    _told: set[int] = attrs.field(init=False, factory=set)
    """Pids sent one of :data:`ENDING_SIGNALS` through this object."""
    _exits: dict[int, tuple[int, int, bool]] = attrs.field(init=False, factory=dict)
    """Pid -> (node, returncode, whether its pid file still named it) of every child
    seen to have exited."""
    _zookeeper_server: ZooKeeperServer | None = attrs.field(init=False, default=None)
    command_prefix: dict[int, list[str]] = attrs.field(init=False, factory=dict)
    """Node -> a command its process is started under, which execs it in place
    (``ip netns exec NS``: a chaos run puts each node in a network namespace)."""

    @property
    def zookeeper(self) -> ZooKeeperServer:
        """ZooKeeper mode's server (its files under ``zookeeper/``)."""
        if self.zookeeper_port is None:
            raise ClusterError("a KRaft cluster has no ZooKeeper")
        if self._zookeeper_server is None:
            self._zookeeper_server = ZooKeeperServer(
                self.root / "zookeeper", self.zookeeper_port, host=self.host
            )
        return self._zookeeper_server

    # --- processes ----------------------------------------------------------------------------

    def pid(self, node: int) -> int | None:
        """The pid of ``node``'s running process, or None if it is not running."""
        child = self._children.get(node)
        if child is not None:
            if child.poll() is None:
                return child.pid
            self._note_exit(node, child)
            return None
        try:
            pid = int(self.pid_file(node).read_text())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        return pid

    def start(self, node: int, *, wait: bool = True, timeout: float = 60.0) -> None:
        """Start ``node``'s process (detached: it outlives this one) and, with ``wait``,
        return once it has printed that it is ready."""
        if self.pid(node) is not None:
            raise ClusterError(f"node {node} is already running (pid {self.pid(node)})")
        log = self.log_file(node)
        self._end_last_line(log)
        offset = log.stat().st_size if log.exists() else 0
        args = [
            "broker",
            str(self.properties_file(node)),
            "--trace-dir",
            str(self.root / "traces"),
        ]
        with log.open("ab") as out:
            # A new session: Ctrl-C in the terminal is not meant for it.
            child = start_node(
                args,
                output=out.fileno(),
                new_session=True,
                prefix=self.command_prefix.get(node, ()),
            )
        self._children[node] = child
        self.pid_file(node).write_text(f"{child.pid}\n")
        if wait:
            self.wait_ready(node, offset, timeout)

    @staticmethod
    def _end_last_line(log: Path) -> None:
        """End a line the last run's SIGKILL cut short, so this run's output starts on a
        line of its own."""
        with contextlib.suppress(OSError), log.open("rb+") as f:
            if f.seek(0, os.SEEK_END) > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")

    def wait_ready(self, node: int, offset: int, timeout: float) -> None:
        """Wait until ``node`` prints its ready line after ``offset`` of its log file."""
        deadline = time.monotonic() + timeout
        marker = f"minikafka {self.role(node)} ready on".encode()
        while time.monotonic() < deadline:
            with self.log_file(node).open("rb") as f:
                f.seek(offset)
                if marker in f.read():
                    return
            if self.pid(node) is None:
                raise ClusterError(
                    f"node {node} exited while starting:\n{self.tail(node)}"
                )
            time.sleep(0.05)  # polling a file, inside the deadline
        raise ClusterError(
            f"node {node} not ready after {timeout:.0f}s:\n{self.tail(node)}"
        )

    def tail(self, node: int, lines: int = 20) -> str:
        try:
            text = self.log_file(node).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def up(self, timeout: float = 60.0) -> None:
        """Start every node that is not running: the controllers first (together: a
        quorum elects its leader once a majority is up), then the brokers, which register
        with the active controller and catch up with its metadata log."""
        if self.zookeeper_port is not None and self.zookeeper.pid() is None:
            try:
                self.zookeeper.start(timeout)
            except ZooKeeperError as exc:
                raise ClusterError(str(exc)) from None
        for group in (self.controller_ids, sorted(self.broker_ports)):
            offsets = {}
            for node in group:
                if self.pid(node) is None:
                    log = self.log_file(node)
                    self._end_last_line(log)
                    offsets[node] = log.stat().st_size if log.exists() else 0
                    self.start(node, wait=False)
            for node, offset in offsets.items():
                self.wait_ready(node, offset, timeout)

    def signal(self, node: int, signum: signal.Signals) -> None:
        pid = self.pid(node)
        if pid is None:
            raise ClusterError(f"node {node} is not running")
        if signum in ENDING_SIGNALS:
            self._told.add(pid)
        os.kill(pid, signum)

    def kill(self, node: int) -> None:
        """SIGKILL: the node stops dead, as a crashed machine does."""
        self.signal(node, signal.SIGKILL)
        self.wait_exit(node, 30.0)

    def stop(self, node: int, timeout: float = 60.0) -> None:
        """SIGTERM: a broker moves its leaderships away (controlled shutdown), finishes
        what is in flight and closes its logs cleanly."""
        if self.pid(node) is None:
            return
        self.signal(node, signal.SIGTERM)
        self.wait_exit(node, timeout)

    def wait_exit(self, node: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        child = self._children.get(node)
        while self.pid(node) is not None:
            if time.monotonic() > deadline:
                raise ClusterError(f"node {node} still running after {timeout:.0f}s")
            if child is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=0.05)
            else:
                time.sleep(0.05)  # not our child: poll its pid, inside the deadline
        if child is not None:
            self._note_exit(node, child)
        self._children.pop(node, None)
        self.pid_file(node).unlink(missing_ok=True)

    def _note_exit(self, node: int, child: NodeProcess) -> None:
        if child.pid in self._exits or child.returncode is None:
            return
        try:
            named = int(self.pid_file(node).read_text()) == child.pid
        except (OSError, ValueError):
            named = False
        self._exits[child.pid] = (node, child.returncode, named)

    def crashes(self) -> list[NodeCrash]:
        """Every node that crashed, in any of its runs so far: its process ended without
        being told to (a child of this object: with a status other than 0; another
        invocation's: its pid file names a process that is gone), or its log holds a
        traceback (:func:`tracebacks`)."""
        found = []
        for node in self.node_ids:
            self.pid(node)  # notes a child's exit
        for pid, (node, returncode, named) in sorted(self._exits.items()):
            # Not named by its pid file any more: another invocation stopped it.
            if returncode != 0 and pid not in self._told and named:
                what = f"(pid {pid}) {describe_exit(returncode)} without being told to"
                found.append(NodeCrash(node, what, self.tail(node)))
        for node in self.node_ids:
            if node in self._children or not self.pid_file(node).exists():
                continue
            if self.pid(node) is None:
                what = (
                    f"ended without being told to: its pid file "
                    f"{self.pid_file(node)} names a process that is gone"
                )
                found.append(NodeCrash(node, what, self.tail(node)))
        for node in self.node_ids:
            try:
                text = self.log_file(node).read_text(errors="replace")
            except OSError:
                continue
            for line, traceback in tracebacks(text):
                what = f"wrote a traceback to {self.log_file(node)} (line {line})"
                found.append(NodeCrash(node, what, traceback))
        return found

    def restart(self, node: int, timeout: float = 60.0) -> None:
        """Start a node again (after kill or stop); its data is as it left it."""
        if self.pid(node) is not None:
            self.stop(node, timeout)
        self.start(node, timeout=timeout)

    def down(self, timeout: float = 60.0) -> None:
        """Stop the brokers (together: each moves its leaderships away), then the
        controllers, which they need for that."""
        for group in (sorted(self.broker_ports), self.controller_ids):
            running = [n for n in group if self.pid(n) is not None]
            for node in running:
                self.signal(node, signal.SIGTERM)
            for node in running:
                self.wait_exit(node, timeout)
        if self.zookeeper_port is not None:
            self.zookeeper.stop()

    def kill_all(self) -> None:
        """SIGKILL every running node (a test's cleanup), and ZooKeeper."""
        for node in self.node_ids:
            if self.pid(node) is not None:
                self.kill(node)
        if self.zookeeper_port is not None:
            self.zookeeper.kill()

    def __enter__(self) -> ProcessCluster:
        """``with ProcessCluster.create(...) as cluster:``: every node up; a node that
        does not start leaves none running."""
        try:
            self.up()
        except BaseException:
            self.kill_all()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        """Every node stopped cleanly (:meth:`down`), or killed if one will not stop."""
        try:
            self.down()
        except BaseException:
            self.kill_all()
            raise
