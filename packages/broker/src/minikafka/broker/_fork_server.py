"""Broker processes forked from a process that has imported the broker once.

A broker started as ``python -m minikafka.broker broker ...`` spends about a second of
CPU importing its modules before it reads its configuration. The test suite starts some
five hundred brokers a run on two cores: minutes of ``make test`` spent importing the
same modules again. A fork server is a process that has imported ``minikafka.broker``
once, started with the caller's environment (so it imports what a fresh process would:
a lab's switched-in code too), and forks a child per broker. The child takes the
caller's working directory, arguments, output and session, runs the ``minikafka``
command as ``python -m minikafka.broker`` would, and its exit status is reported back,
as a parent's ``waitpid`` would see it.

:func:`start_node` is how :class:`~.testing.BrokerProcess` and
:class:`~.ProcessCluster` start a node: from a fork server when the environment sets
``MINIKAFKA_FORK_SERVER=1`` (the test suite's ``conftest.py`` does), otherwise with
``subprocess.Popen``, as a user's shell would. Either way the caller holds a
:class:`NodeProcess`: a pid to signal, ``poll``, ``wait`` and its output.

The server and its callers speak over a ``SOCK_SEQPACKET`` socket pair, one JSON
message a packet: a job in (arguments, working directory and environment, a new session
or not) with the file descriptor of its output attached (``SCM_RIGHTS``); out, the
child's pid, then later its exit code. The server ends when its caller closes the
socket; children still running then go on, as a ``Popen`` child outlives its parent.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from typing import IO, Any, NoReturn, Protocol

FORK_SERVER_ENV = "MINIKAFKA_FORK_SERVER"
_PACKET = 1 << 20


class NodeProcess(Protocol):
    """What the callers use of a node's process: ``subprocess.Popen``'s own names."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def stdout(self) -> IO[bytes] | None: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...
    def kill(self) -> None: ...


def start_node(
    args: Sequence[str],
    *,
    output: int | None,
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
    prefix: Sequence[str] = (),
) -> NodeProcess:
    """``python -m minikafka.broker ARGS``; ``output`` a file descriptor for its stdout
    and stderr, or None for a pipe (``stdout`` of the result). ``prefix`` is a command
    that execs the rest in place (``ip netns exec NS``: the pid stays the node's), and
    means a fresh process: a fork server's children share its namespaces."""
    environment = dict(os.environ if env is None else env)
    if environment.get(FORK_SERVER_ENV) == "1" and not prefix:
        return _server_for(environment).start(args, output, new_session, environment)
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "minikafka.broker", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if output is None else output,
        stderr=subprocess.STDOUT,
        env=environment,
        start_new_session=new_session,
    )


_servers: dict[frozenset[tuple[str, str]], ForkServer] = {}
_servers_lock = threading.Lock()


VOLATILE = frozenset({"PYTEST_CURRENT_TEST"})
"""Variables no import reads, which change while a caller runs (pytest names the test
and its phase in ``PYTEST_CURRENT_TEST``): a child gets the caller's value, and they do
not tell servers apart."""


def _server_for(env: dict[str, str]) -> ForkServer:
    """One server per environment (but for :data:`VOLATILE`): what a child imported is
    what a fresh process started with that environment would import, and the child
    then takes the caller's environment exactly. A new server ends the others that have
    no child running (each holds the broker's modules in memory, and a test that sets a
    variable of its own makes one)."""
    key = frozenset((k, v) for k, v in env.items() if k not in VOLATILE)
    with _servers_lock:
        server = _servers.get(key)
        if server is None or server.lost:
            for other, idle in list(_servers.items()):
                if idle.idle():
                    idle.close()
                    del _servers[other]
            server = _servers[key] = ForkServer(env)
        return server


class ForkedNode:
    """A child of a fork server, seen from the process that asked for it."""

    def __init__(self, pid: int, stdout: IO[bytes] | None, server: ForkServer) -> None:
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None
        self._server = server
        self._ended = threading.Event()

    def ended(self, returncode: int | None) -> None:
        self.returncode = returncode
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"minikafka (pid {self.pid})", timeout or 0)
        if self.returncode is None:
            raise ChildProcessError(
                f"the fork server of pid {self.pid} ended before the child did"
            )
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:  # as Popen: an ended child's pid may be reused
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The caller's end: start a server, ask it for children, hear of their ends."""

    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._socket = ours
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "minikafka.broker._fork_server",
                str(theirs.fileno()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            pass_fds=[theirs.fileno()],
        )
        theirs.close()
        self._env = dict(env)
        self.lost = False
        self._lock = threading.Lock()  # one job at a time: its answer is the next pid
        self._started: list[ForkedNode] = []
        self._answer = threading.Condition()
        self._children: dict[int, ForkedNode] = {}
        threading.Thread(target=self._listen, daemon=True).start()
        atexit.register(self.close)

    def start(
        self,
        args: Sequence[str],
        output: int | None,
        new_session: bool,
        env: Mapping[str, str] | None = None,
    ) -> ForkedNode:
        """A child running ``args``, in this process's working directory, with ``env``
        (default: the server's own)."""
        job = {
            "args": list(args),
            "cwd": os.getcwd(),
            "new_session": new_session,
            "env": dict(self._env if env is None else env),
        }
        if output is not None:
            return self._ask(job, output)
        read_end, write_end = os.pipe()
        try:
            child = self._ask(job, write_end)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)  # the child holds its own copy
        child.stdout = os.fdopen(read_end, "rb")
        return child

    def _ask(self, job: dict[str, Any], output: int) -> ForkedNode:
        with self._lock, self._answer:
            socket.send_fds(self._socket, [json.dumps(job).encode()], [output])
            while not self._started and not self.lost:
                self._answer.wait()
            if self.lost:
                raise ChildProcessError("the fork server ended")
            return self._started.pop()

    def idle(self) -> bool:
        """No child of this server is running (or unreaped)."""
        with self._answer:
            return not self._children

    def close(self) -> None:
        """Close the socket: the server ends (its children go on)."""
        atexit.unregister(self.close)
        # Shut down before closing: the listening thread's recv holds the socket open
        # (a close alone would leave the server waiting for an end that never comes).
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _listen(self) -> None:
        while True:
            try:
                packet = self._socket.recv(_PACKET)
            except OSError:
                packet = b""
            if not packet:
                break
            message = json.loads(packet)
            with self._answer:
                if "started" in message:
                    child = ForkedNode(message["started"], None, self)
                    self._children[child.pid] = child
                    self._started.append(child)
                    self._answer.notify_all()
                else:
                    ended = self._children.pop(message["ended"])
                    ended.ended(message["returncode"])
        with self._answer:
            self.lost = True
            for child in self._children.values():
                child.ended(None)
            self._answer.notify_all()


# --- the server ------------------------------------------------------------------------


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.send(json.dumps(message).encode())


def _child(job: dict[str, Any], output: int) -> NoReturn:
    """Be the node: never returns to the server's loop."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if job["new_session"]:
            os.setsid()
        os.dup2(output, 1)
        os.dup2(output, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        # The server's socket, its children's pidfds, this job's descriptors: not the
        # node's to hold (a Popen child is started with only 0, 1 and 2 open).
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        # What ``python -m minikafka.broker`` puts there.
        sys.argv = [
            os.path.join(os.path.dirname(__file__), "__main__.py"),
            *job["args"],
        ]
        from minikafka.broker._cli import main

        main()
        code = 0
    except KeyboardInterrupt:
        # As an interpreter ends on an uncaught KeyboardInterrupt: killed by SIGINT.
        traceback.print_exc()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:  # reported in its output, as an interpreter reports it
        traceback.print_exc()
    finally:
        # What an interpreter does at exit, then out without unwinding into the loop.
        atexit._run_exitfuncs()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(fd: int) -> None:
    """Fork a child per job until the caller closes the socket."""
    sock = socket.socket(fileno=fd)
    # Ctrl-C in a terminal reaches the whole process group: the caller handles it, and
    # closing the socket is what ends this server.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import minikafka.broker._cli  # noqa: F401  (what each child would import)

    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ, None)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                packet, fds, _flags, _address = socket.recv_fds(sock, _PACKET, 1)
                if not packet:
                    return
                pid = os.fork()
                if pid == 0:
                    _child(json.loads(packet), fds[0])
                for received in fds:
                    os.close(received)
                selector.register(os.pidfd_open(pid), selectors.EVENT_READ, pid)
                _send(sock, {"started": pid})
            else:
                selector.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(key.data, 0)
                code = os.waitstatus_to_exitcode(status)
                _send(sock, {"ended": key.data, "returncode": code})


if __name__ == "__main__":
    serve(int(sys.argv[1]))
