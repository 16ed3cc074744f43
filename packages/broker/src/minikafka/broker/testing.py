"""Helpers for tests and benchmarks that need a real broker.

:class:`BrokerProcess` runs ``python -m minikafka.broker broker`` as a child process,
the way a user runs it (or forked from a process that imported the broker once, with
``MINIKAFKA_FORK_SERVER=1``: ``_fork_server``), and waits (with a deadline, never a bare
sleep) for the line it prints when it is ready for clients. The compatibility tests, the
crash-safety test and the benchmarks drive it with real Kafka clients; ``kill()`` is
SIGKILL, ``stop()`` is SIGTERM and a clean shutdown. With ``trace_dir`` it runs with
``--trace-dir``: after ``stop()`` the directory holds every event the broker emitted
(read it with ``minikafka.trace.read_trace``); after ``kill()``, what it had written out
by then.

:func:`running_broker` runs a :class:`BrokerServer` inside the test's own trio loop on
an OS-chosen port, for tests that talk to it with the NetworkClient; :func:`tool_cluster`
connects the client's :class:`AsyncAdminClient` (what the command-line tools use) to it
and :class:`WireClient` one NetworkClient connection. :func:`request_body`,
:func:`request_class` and :func:`element` build a request of any version from kio's
classes, field by field. :class:`LocalCluster` is a whole cluster's cores in one
process, stepped in virtual time (``_local_cluster``); :class:`ProcessCluster` a real
one, a process per node (what ``make cluster`` runs), and :func:`free_ports` (from
``minikafka.common.testing``) the ports a test gives it. :func:`replica_batches` reads a
replica's batch headers from its files, to compare replicas once their brokers have
stopped.
"""

from __future__ import annotations

import os
import re
import select
import signal
import struct
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast, get_args, get_type_hints

import attrs
import trio
from kio.static.protocol import Entity, RequestPayload

from minikafka.client import AsyncAdminClient
from minikafka.common.testing import free_ports as free_ports
from minikafka.net import NetworkClient, Node, build, request_schema, response_schema
from minikafka.tools import connect

from ._config import KafkaConfig
from ._fork_server import FORK_SERVER_ENV as FORK_SERVER_ENV
from ._fork_server import NodeProcess as NodeProcess
from ._fork_server import start_node
from ._local_cluster import LocalBroker as LocalBroker
from ._local_cluster import LocalCluster as LocalCluster
from ._process_cluster import ClusterError as ClusterError
from ._process_cluster import ProcessCluster as ProcessCluster
from ._server import BrokerServer

_READY = re.compile(r"minikafka broker ready on (?P<host>[^\s]+):(?P<port>\d+)")


class BrokerFailed(RuntimeError):
    """The broker process exited or did not become ready in time; carries its output."""


@attrs.define(eq=False)
class BrokerProcess:
    """A broker in a child process with its data in ``data_dir``."""

    data_dir: Path
    port: int = 0  # 0: the OS picks one at the first start; restarts keep it
    overrides: Mapping[str, str] = attrs.field(factory=dict)
    host: str = "127.0.0.1"
    trace_dir: Path | None = None
    """``--trace-dir``: the broker's trace events go here (None: no flag; the broker then
    honours ``MINIKAFKA_TRACE_DIR`` if this process's environment sets it)."""
    trace_events: Sequence[str] | None = None
    """``--trace-events``: the kinds written (``"net.request"``); None: every kind."""
    process: NodeProcess | None = attrs.field(init=False, default=None)
    output: list[str] = attrs.field(init=False, factory=list)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        props = {
            "listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "log.dirs": str(self.data_dir),
            **self.overrides,
        }
        args = ["broker"]
        for key, value in props.items():
            args += ["--override", f"{key}={value}"]
        if self.trace_dir is not None:
            args += ["--trace-dir", str(self.trace_dir)]
        if self.trace_events is not None:
            args += ["--trace-events", ",".join(self.trace_events)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = start_node(args, output=None, env=env)
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        stdout = self.process.stdout
        # poll, not select: a test process may hold more than FD_SETSIZE (1024) files.
        poller = select.poll()
        poller.register(stdout, select.POLLIN)
        buffer = b""
        while time.monotonic() < deadline:
            ready = poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
            if not ready:
                break
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                self.process.wait()
                raise BrokerFailed(self._describe("exited during start-up"))
            buffer += chunk
            *lines, rest = buffer.split(b"\n")
            buffer = rest
            for raw in lines:
                line = raw.decode(errors="replace")
                self.output.append(line)
                match = _READY.search(line)
                if match:
                    self.port = int(match["port"])
                    self._drain_in_background()
                    return
        self.kill()
        raise BrokerFailed(self._describe(f"not ready after {timeout:.0f}s"))

    def _drain_in_background(self) -> None:
        # The broker keeps logging; a full pipe would block it. A daemon thread reads on.
        assert self.process is not None
        assert self.process.stdout is not None
        stdout = self.process.stdout

        def drain() -> None:
            for raw in iter(stdout.readline, b""):
                self.output.append(raw.decode(errors="replace").rstrip("\n"))

        threading.Thread(target=drain, daemon=True).start()

    def _describe(self, what: str) -> str:
        tail = "\n".join(self.output[-40:])
        return f"broker {what}; its output:\n{tail}"

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait for the clean shutdown; the exit status."""
        if self.process is None:
            return 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BrokerFailed(
                self._describe(f"did not stop within {timeout:.0f}s")
            ) from None
        finally:
            self.process = None

    def kill(self) -> None:
        """SIGKILL: the process dies with whatever is in its memory (a crash)."""
        if self.process is None:
            return
        self.process.kill()
        self.process.wait()
        self.process = None

    def restart(self, timeout: float = 60.0) -> None:
        self.stop()
        self.start(timeout)

    def __enter__(self) -> BrokerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.stop()


def single_node_config(
    data_dir: Path, overrides: Mapping[str, str] | None = None
) -> KafkaConfig:
    """A single-node config on 127.0.0.1 port 0 with data in ``data_dir``."""
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data_dir),
        **(overrides or {}),
    }
    return KafkaConfig.from_properties(props)


@asynccontextmanager
async def running_broker(config: KafkaConfig) -> AsyncIterator[BrokerServer]:
    """A BrokerServer in this trio loop, shut down cleanly on exit."""
    server = BrokerServer.open(config)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            yield server
        finally:
            await server.shutdown()


@asynccontextmanager
async def tool_cluster(config: KafkaConfig) -> AsyncIterator[AsyncAdminClient]:
    """A broker of ``config`` in this trio loop and an AsyncAdminClient connected to it."""
    async with running_broker(config) as server:
        host, port = server.bound_address()
        async with connect(f"{host}:{port}", client_id="tests") as cluster:
            yield cluster


def bootstrap(cluster: AsyncAdminClient) -> str:
    """The ``--bootstrap-server`` value that reaches ``cluster``'s broker."""
    node = cluster.bootstrap[0]
    return f"{node.host}:{node.port}"


def element(cls: type[Entity], field_name: str) -> type[Entity]:
    """The element class of a ``tuple[X, ...]`` or ``tuple[X, ...] | None`` field."""
    hint = get_type_hints(cls)[field_name]
    if type(None) in get_args(hint):  # an optional array
        [hint] = [a for a in get_args(hint) if a is not type(None)]
    [item, _ellipsis] = get_args(hint)
    assert isinstance(item, type)
    return cast(type[Entity], item)


def request_class(api_key: int, version: int) -> type[RequestPayload]:
    """kio's class of ``api_key`` v``version`` (a version kio has)."""
    cls = request_schema(api_key, version)
    assert cls is not None
    return cls


def request_body(api_key: int, version: int, **fields: object) -> RequestPayload:
    """``api_key`` v``version`` from the fields that version has (the others are dropped)."""
    return build(request_class(api_key, version), **fields)


@attrs.define
class WireClient:
    """One NetworkClient connection to a broker: a group member, or an admin tool."""

    network: NetworkClient
    node: Node
    deadline: float = 30.0  # seconds; generous for a shared 2-core machine

    async def call(self, body: RequestPayload) -> Any:
        with trio.fail_after(self.deadline):
            response = await self.network.send(self.node, body)
        # The answer to vN of an API is that API's vN response class.
        expected = response_schema(int(body.__api_key__), int(body.__version__))
        assert type(response) is expected, response
        return response


@attrs.frozen
class StoredBatchHeader:
    """What identifies a record batch in a replica's files: equal headers (CRC included)
    on two replicas mean the same records at the same offsets, in the same epoch."""

    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    crc: int


# base offset, length, epoch, magic, crc, attrs, delta
_BATCH_HEAD = struct.Struct(">qiibIhi")


def replica_batches(partition_dir: Path) -> list[StoredBatchHeader]:
    """The batch headers of every segment in ``partition_dir``, in offset order (read
    from the files, without a broker: the replica's broker must have stopped)."""
    batches = []
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position + _BATCH_HEAD.size <= len(data):
            base, length, epoch, _magic, crc, _attrs, delta = _BATCH_HEAD.unpack_from(
                data, position
            )
            if length <= 0 or position + 12 + length > len(data):
                break  # a torn tail: not a batch
            batches.append(StoredBatchHeader(base, base + delta, epoch, crc))
            position += 12 + length
    return batches
