"""A KRaft cluster of real processes on one machine: what ``make cluster`` runs and what
the fault tests kill, pause and restart.

One controller-only node (``process.roles=controller``, node id 0) and N broker-only nodes
(ids 1..N), each a ``minikafka broker`` process of its own, laid out under one root
directory the way an operator would lay out separate machines. With ``controllers=3``
(or 5) the controllers are a Raft quorum: node ids 0..C-1 on ports counting
down from the first controller's (9090, 9089, 9088), and the brokers' ids follow them
(C..C+N-1), as Kafka's own multi-node examples number controllers first:

.. code-block:: text

    cluster/
      cluster.json              the layout: cluster id, ports, broker overrides
      node-0.properties         each node's server.properties
      node-0/                   its log.dirs (and metadata.log.dir)
      node-0.log                its stdout and stderr, appended across restarts
      node-0.pid                the pid of its running process
      traces/                   every node's trace files (``--trace-dir``)

With ``zookeeper=True`` the cluster is in ZooKeeper mode instead: no
controller node, brokers numbered from 0, and a ZooKeeper server (Debian's, standalone)
under ``zookeeper/`` on ``zookeeper_port``, started before the brokers and stopped after
them; the brokers elect their controller among themselves.

The layout is written once (:meth:`ProcessCluster.create`: a cluster id from
``storage random-uuid``, every node formatted with it, as kafka-storage.sh would) and
read back by each later command (:meth:`ProcessCluster.load`), so ``minikafka cluster``
can start, stop, kill and restart nodes from separate invocations; pid files, not child
handles, say which processes are running.

:meth:`ProcessCluster.crashes` says which nodes crashed: a node whose log holds a Python
traceback (every run's output, the log being appended to), or whose process ended
without being told to. Told is a SIGKILL, SIGTERM or SIGINT sent through
:meth:`~ProcessCluster.signal` (``kill``, ``stop``, ``restart``, ``down``), or by another
invocation, which removes the pid file once the process is gone; a process that ends on
its own leaves its pid file behind. The tests fail a test after which it finds one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from minikafka.zk import ZooKeeperError, ZooKeeperServer

from ._config import KafkaConfig
from ._meta_properties import format_storage, new_cluster_id

CONTROLLER_ID = 0
LAYOUT_FILE = "cluster.json"
DEFAULT_BROKER_PORT = 9092
DEFAULT_CONTROLLER_PORT = 9090
DEFAULT_ZOOKEEPER_PORT = 2181
CLUSTER_DEFAULTS: Mapping[str, str] = {
    # Kafka's defaults for a cluster (its sample configs set 1 for a single node).
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
}


class ClusterError(RuntimeError):
    """A node did not start, or did not stop, in time; the message says which and why."""


TRACEBACK = "Traceback (most recent call last)"
"""What Python prints first of an exception it did not expect (an exception group's too)."""
ENDING_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT})
"""Signals that tell a node to end: its exit after one is no crash."""

# The gutter of an exception group's traceback ("  | ", "    +-+---- 1 ----").
_GUTTER = re.compile(r"^(?:[ ]*[|+][ ]?)*")
# What ends a traceback: the exception, "ValueError: ..." or "pkg.mod.Error" (no indent).
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::.*)?$")
_CHAINING = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


def tracebacks(text: str) -> list[tuple[int, str]]:
    """Every complete Python traceback in ``text`` (a process's output), with the number
    of its first line (from 1): from its ``Traceback (most recent call last):`` line,
    through chained and grouped ones, to its last exception line. A traceback cut short
    before any exception line (its process killed while printing it) is not one: what
    the process was about to say is unknown."""
    if TRACEBACK not in text:
        return []
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        if TRACEBACK not in lines[i]:
            i += 1
            continue
        start, last_exception = i, -1
        i += 1
        while i < len(lines):
            line = _GUTTER.sub("", lines[i], count=1)
            if TRACEBACK in line:
                pass  # a chained or grouped one: the same traceback goes on
            elif line.startswith(" ") or not line.strip() or line in _CHAINING:
                pass  # a frame, its code, a blank line
            elif line.startswith(("-", "...")):
                pass  # an exception group's separator, or "... (N more exceptions)"
            elif _EXCEPTION_LINE.match(line):
                last_exception = i
            else:
                break  # a log line, or the next run's first: the traceback is over
            i += 1
        if last_exception >= 0:
            found.append((start + 1, "\n".join(lines[start : last_exception + 1])))
    return found


def describe_exit(returncode: int) -> str:
    """``exited with status 1``, or ``died of SIGSEGV`` (a negative Popen returncode)."""
    if returncode < 0:
        try:
            return f"died of {signal.Signals(-returncode).name}"
        except ValueError:
            return f"died of signal {-returncode}"
    return f"exited with status {returncode}"


@attrs.frozen
class NodeCrash:
    """A node's process that ended without being told to, or wrote a traceback."""

    node: int
    what: str
    """``(pid 123) exited with status 1 without being told to``, or ``wrote a traceback
    to .../node-1.log (line 40)``: a crash's identity (two are equal if these are)."""
    detail: str = attrs.field(default="", eq=False)
    """The traceback, or the end of the node's log when it was found."""

    def __str__(self) -> str:
        text = f"node {self.node} {self.what}"
        return f"{text}:\n{self.detail}" if self.detail else text


@attrs.define(eq=False)
class ProcessCluster:
    root: Path
    cluster_id: str
    controller_ports: dict[int, int]
    broker_ports: dict[int, int]
    overrides: dict[str, str] = attrs.field(factory=dict)
    """Applied to every node's properties (the brokers' and the controller's)."""
    replication_ports: dict[int, tuple[int, int]] = attrs.field(factory=dict)
    """Broker -> (port, advertised port) of a REPLICATION listener that brokers reach each
    other by (``inter.broker.listener.name``); a test advertises a fault proxy's port to
    put the proxy on every link into that broker. Empty: PLAINTEXT for everything."""
    controller_listen_ports: dict[int, int] = attrs.field(factory=dict)
    """Controller -> the port it listens on when that is not the one the voters name (a
    test puts a fault proxy on the named port). Empty: each listens where it is named."""
    zookeeper_port: int | None = None
    """ZooKeeper mode's server port; None: a KRaft cluster."""
    racks: dict[int, str] = attrs.field(factory=dict)
    """Broker -> its ``broker.rack``; a broker not named has none."""
    host: str = "127.0.0.1"
    _children: dict[int, subprocess.Popen[bytes]] = attrs.field(
        init=False, factory=dict
    )
    _told: set[int] = attrs.field(init=False, factory=set)
    """Pids sent one of :data:`ENDING_SIGNALS` through this object."""
    _exits: dict[int, tuple[int, int, bool]] = attrs.field(init=False, factory=dict)
    """Pid -> (node, returncode, whether its pid file still named it) of every child
    seen to have exited."""
    _zookeeper_server: ZooKeeperServer | None = attrs.field(init=False, default=None)

    # --- layout -----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        root: Path,
        brokers: int = 3,
        *,
        broker_port: int = DEFAULT_BROKER_PORT,
        controller_port: int = DEFAULT_CONTROLLER_PORT,
        broker_ports: Sequence[int] | None = None,
        controllers: int = 1,
        controller_ports: Sequence[int] | None = None,
        replication_ports: Mapping[int, tuple[int, int]] | None = None,
        controller_listen_ports: Mapping[int, int] | None = None,
        overrides: Mapping[str, str] | None = None,
        zookeeper: bool = False,
        zookeeper_port: int = DEFAULT_ZOOKEEPER_PORT,
        racks: Mapping[int, str] | None = None,
    ) -> ProcessCluster:
        """Write the layout and every node's properties, and format every node. Brokers
        listen on consecutive ports from ``broker_port``, or on ``broker_ports``; the
        controllers on ports down from ``controller_port``, or on ``controller_ports``."""
        root = Path(root).resolve()
        ports = list(broker_ports or range(broker_port, broker_port + brokers))
        if zookeeper:
            controllers = 0  # the brokers elect their controller through ZooKeeper
        cports = list(
            controller_ports
            or range(controller_port, controller_port - controllers, -1)
        )
        cluster = cls(
            root,
            "" if zookeeper else new_cluster_id(),  # ZooKeeper mode's is /cluster/id's
            {c: cports[c] for c in range(controllers)},
            {controllers + b: ports[b] for b in range(brokers)},
            {**CLUSTER_DEFAULTS, **(overrides or {})},
            dict(replication_ports or {}),
            dict(controller_listen_ports or {}),
            zookeeper_port if zookeeper else None,
            dict(racks or {}),
        )
        root.mkdir(parents=True, exist_ok=True)
        (root / "traces").mkdir(exist_ok=True)
        layout = {
            "cluster_id": cluster.cluster_id,
            "controller_ports": {
                str(c): p for c, p in cluster.controller_ports.items()
            },
            "broker_ports": {str(b): p for b, p in cluster.broker_ports.items()},
            "overrides": cluster.overrides,
            "replication_ports": {
                str(b): list(p) for b, p in cluster.replication_ports.items()
            },
            "controller_listen_ports": {
                str(c): p for c, p in cluster.controller_listen_ports.items()
            },
            "zookeeper_port": cluster.zookeeper_port,
            "racks": {str(b): rack for b, rack in cluster.racks.items()},
        }
        (root / LAYOUT_FILE).write_text(json.dumps(layout, indent=2) + "\n")
        for node in cluster.node_ids:
            cluster.add_node(node)
        return cluster

    @classmethod
    def load(cls, root: Path) -> ProcessCluster:
        root = Path(root).resolve()
        layout = json.loads((root / LAYOUT_FILE).read_text())
        if "controller_ports" in layout:
            controllers = {
                int(c): int(p) for c, p in layout["controller_ports"].items()
            }
        else:  # a layout written before several controllers existed
            controllers = {CONTROLLER_ID: int(layout["controller_port"])}
        return cls(
            root,
            layout["cluster_id"],
            controllers,
            {int(b): int(p) for b, p in layout["broker_ports"].items()},
            dict(layout["overrides"]),
            {
                int(b): (int(p[0]), int(p[1]))
                for b, p in layout["replication_ports"].items()
            },
            {
                int(c): int(p)
                for c, p in layout.get("controller_listen_ports", {}).items()
            },
            layout.get("zookeeper_port"),
            {int(b): str(rack) for b, rack in layout.get("racks", {}).items()},
        )

    def add_node(self, node: int) -> None:
        """Write ``node``'s properties and format its directory (a new broker joins with
        the cluster's id, as an operator adds a machine)."""
        if node not in self.controller_ports and node not in self.broker_ports:
            self.broker_ports[node] = max(self.broker_ports.values()) + 1
            self._save_ports()
        props = self.properties(node)
        self.properties_file(node).write_text(
            "".join(f"{key}={value}\n" for key, value in props.items())
        )
        config = KafkaConfig.from_properties(props)
        if config.zookeeper_mode:
            return  # ZooKeeper mode's directories need no formatting
        format_storage(
            config.broker.log_dirs,
            config.metadata_log_dir,
            self.cluster_id,
            node,
            ignore_formatted=True,
        )

    def _save_ports(self) -> None:
        path = self.root / LAYOUT_FILE
        layout = json.loads(path.read_text())
        layout["broker_ports"] = {str(b): p for b, p in self.broker_ports.items()}
        path.write_text(json.dumps(layout, indent=2) + "\n")

    @property
    def node_ids(self) -> list[int]:
        return [*sorted(self.controller_ports), *sorted(self.broker_ports)]

    @property
    def controller_ids(self) -> list[int]:
        return sorted(self.controller_ports)

    @property
    def controller_port(self) -> int:
        """The first controller's port."""
        return self.controller_ports[min(self.controller_ports)]

    @property
    def bootstrap(self) -> str:
        return ",".join(
            f"{self.host}:{p}" for _, p in sorted(self.broker_ports.items())
        )

    @property
    def zookeeper_mode(self) -> bool:
        return self.zookeeper_port is not None

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

    def properties(self, node: int) -> dict[str, str]:
        if self.zookeeper_port is not None:
            return self._zookeeper_mode_properties(node, self.zookeeper_port)
        voters = ",".join(
            f"{c}@{self.host}:{p}" for c, p in sorted(self.controller_ports.items())
        )
        common = {
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
            "log.dirs": str(self.node_dir(node)),
        }
        if node in self.controller_ports:
            role = {
                "process.roles": "controller",
                "listeners": f"CONTROLLER://{self.host}:{self.listen_port(node)}",
            }
        elif node in self.replication_ports:
            port, advertised = self.replication_ports[node]
            client = f"PLAINTEXT://{self.host}:{self.broker_ports[node]}"
            role = {
                "process.roles": "broker",
                "listeners": f"{client},REPLICATION://{self.host}:{port}",
                "advertised.listeners": (
                    f"{client},REPLICATION://{self.host}:{advertised}"
                ),
                "listener.security.protocol.map": (
                    "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"
                ),
                "inter.broker.listener.name": "REPLICATION",
            }
        else:
            role = {
                "process.roles": "broker",
                "listeners": f"PLAINTEXT://{self.host}:{self.broker_ports[node]}",
                "inter.broker.listener.name": "PLAINTEXT",
            }
        return {**common, **role, **self._rack(node), **self.overrides}

    def _zookeeper_mode_properties(
        self, node: int, zookeeper_port: int
    ) -> dict[str, str]:
        props = {
            "broker.id": str(node),
            "zookeeper.connect": f"{self.host}:{zookeeper_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.broker_ports[node]}",
            "log.dirs": str(self.node_dir(node)),
        }
        if node in self.replication_ports:
            port, advertised = self.replication_ports[node]
            client = f"PLAINTEXT://{self.host}:{self.broker_ports[node]}"
            props |= {
                "listeners": f"{client},REPLICATION://{self.host}:{port}",
                "advertised.listeners": f"{client},REPLICATION://{self.host}:{advertised}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
                "inter.broker.listener.name": "REPLICATION",
            }
        return {**props, **self._rack(node), **self.overrides}

    def _rack(self, node: int) -> dict[str, str]:
        return {"broker.rack": self.racks[node]} if node in self.racks else {}

    def listen_port(self, node: int) -> int:
        """Where ``node`` listens (a controller behind a proxy listens apart from the
        port the voters name)."""
        return self.controller_listen_ports.get(node) or self.port(node)

    def node_dir(self, node: int) -> Path:
        return self.root / f"node-{node}"

    def properties_file(self, node: int) -> Path:
        return self.root / f"node-{node}.properties"

    def log_file(self, node: int) -> Path:
        return self.root / f"node-{node}.log"

    def pid_file(self, node: int) -> Path:
        return self.root / f"node-{node}.pid"

    def role(self, node: int) -> str:
        return "controller" if node in self.controller_ports else "broker"

    def port(self, node: int) -> int:
        return self.controller_ports.get(node) or self.broker_ports[node]

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
        command = [
            sys.executable,
            "-m",
            "minikafka.broker",
            "broker",
            str(self.properties_file(node)),
            "--trace-dir",
            str(self.root / "traces"),
        ]
        with log.open("ab") as out:
            child = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the terminal is not meant for it
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

    def _note_exit(self, node: int, child: subprocess.Popen[bytes]) -> None:
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
