"""A real ZooKeeper on this machine: Debian's ``zookeeper`` package, run standalone.

ZooKeeper mode (seed 001) needs the real thing: sessions that expire, ephemeral znodes
that vanish with them, watches that fire once, conditional updates by version. Debian
packages the Java server as ``/usr/share/java/zookeeper.jar``; :class:`ZooKeeperServer`
writes a configuration of its own (a standalone server on 127.0.0.1, its data under one
directory), starts ``ZooKeeperServerMain`` in a process of its own and waits until the
server answers the ``ruok`` four-letter command with ``imok``. The layout:

.. code-block:: text

    zookeeper/
      zoo.cfg          the configuration below
      data/            snapshots and transaction logs (dataDir)
      zookeeper.log    the server's stdout and stderr
      zookeeper.pid    the pid of the running server

``tickTime`` is ZooKeeper's unit of time: a session's timeout must lie between 2 and 20
ticks unless bounded explicitly, so the configuration sets ``maxSessionTimeout`` high
enough for Kafka's default ``zookeeper.session.timeout.ms`` (18 s).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import attrs

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
INSTALL = "apt-get install -y zookeeper"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
DEFAULT_PORT = 2181


class ZooKeeperError(RuntimeError):
    """ZooKeeper is not installed, or did not start or stop in time (the message says
    which, with the end of its log)."""


@attrs.define(eq=False)
class ZooKeeperServer:
    """One standalone ZooKeeper server in ``root``, listening on 127.0.0.1:``port``."""

    root: Path
    port: int = DEFAULT_PORT
    tick_ms: int = 500
    max_session_timeout_ms: int = 60_000
    host: str = "127.0.0.1"
    _child: subprocess.Popen[bytes] | None = attrs.field(init=False, default=None)

    @property
    def connect_string(self) -> str:
        """What ``zookeeper.connect`` names: ``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def config_file(self) -> Path:
        return self.root / "zoo.cfg"

    @property
    def log_file(self) -> Path:
        return self.root / "zookeeper.log"

    @property
    def pid_file(self) -> Path:
        return self.root / "zookeeper.pid"

    def write_config(self) -> None:
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        lines = {
            "tickTime": self.tick_ms,
            "dataDir": self.root / "data",
            "clientPort": self.port,
            "clientPortAddress": self.host,
            "maxSessionTimeout": self.max_session_timeout_ms,
            # No embedded Jetty admin server (it would take port 8080), and only the two
            # four-letter commands used here.
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "ruok,srvr",
        }
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))

    # --- the process ---------------------------------------------------------------------

    def pid(self) -> int | None:
        """The running server's pid, or None."""
        if self._child is not None:
            return self._child.pid if self._child.poll() is None else None
        try:
            pid = int(self.pid_file.read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        # Started by this process through another ZooKeeperServer object: once it exits
        # it is a zombie until reaped, and a zombie still answers kill(pid, 0).
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return None
        return pid

    def start(self, timeout: float = 60.0) -> None:
        """Start the server (detached: it outlives this process) and wait until it
        answers ``ruok``."""
        java = shutil.which("java")
        if not ZOOKEEPER_JAR.exists() or java is None:
            raise ZooKeeperError(
                f"ZooKeeper is not installed: run `{INSTALL}` (as root)"
            )
        if self.pid() is not None:
            raise ZooKeeperError(f"ZooKeeper in {self.root} is already running")
        self.write_config()
        command = [
            java,
            "-Xmx256m",
            "-cp",
            str(ZOOKEEPER_JAR),
            MAIN_CLASS,
            str(self.config_file),
        ]
        with self.log_file.open("ab") as out:
            self._child = subprocess.Popen(
                command,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid_file.write_text(f"{self._child.pid}\n")
        deadline = time.monotonic() + timeout
        while not self.is_ok():
            if self.pid() is None:
                raise ZooKeeperError(f"ZooKeeper exited while starting:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise ZooKeeperError(
                    f"ZooKeeper not up after {timeout:.0f}s:\n{self.tail()}"
                )
            time.sleep(0.1)  # polling the port, inside the deadline

    def is_ok(self) -> bool:
        """Whether the server answers the ``ruok`` command with ``imok``."""
        return self.four_letters("ruok") == "imok"

    def four_letters(self, command: str) -> str:
        """A four-letter command's answer ("" if the server cannot be reached)."""
        try:
            with socket.create_connection((self.host, self.port), timeout=2.0) as s:
                s.sendall(command.encode())
                chunks = []
                while chunk := s.recv(4096):
                    chunks.append(chunk)
        except OSError:
            return ""
        return b"".join(chunks).decode(errors="replace")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, and wait for the process to go."""
        self._signal(signal.SIGTERM, timeout)

    def kill(self, timeout: float = 30.0) -> None:
        """SIGKILL: the server stops dead (its data directory stays)."""
        self._signal(signal.SIGKILL, timeout)

    def _signal(self, signum: signal.Signals, timeout: float) -> None:
        pid = self.pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
        deadline = time.monotonic() + timeout
        while self.pid() is not None:
            if time.monotonic() > deadline:
                raise ZooKeeperError(
                    f"ZooKeeper (pid {pid}) still running after {timeout:.0f}s"
                )
            if self._child is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._child.wait(timeout=0.05)
            else:
                time.sleep(0.05)  # not our child: poll its pid, inside the deadline
        self._child = None
        self.pid_file.unlink(missing_ok=True)

    def tail(self, lines: int = 20) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
