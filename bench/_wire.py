"""What the broker benchmarks share: a broker process, Produce frames, a client.

- :func:`spawned_broker` runs ``python -m minikafka.broker broker`` (KRaft combined
  mode, one node, data in a directory of the caller's) through ``_common.spawned_server``,
  so it is always stopped (SIGTERM, then SIGKILL) however the benchmark ends.
- :func:`create_topic` creates a one-partition topic with CreateTopics v4 (Kafka's
  admin path) and waits, by Metadata, for its leader.
- :class:`ProduceFrames` encodes one Produce v8 request (acks, one record batch v2, one
  partition) once, and copies it with correlation ids patched in, before any clock starts.
- :class:`ProduceCheck` checks every Produce response without decoding it in Python
  object by object: the first response is decoded with kio, which fixes the frame's
  length and where its error code and base offset sit; every later response must have
  that length, error code 0 (NONE) at that place, and (against a broker) a base offset
  of its own.
- :class:`Pipeline` drives one connection with a window of requests in flight (a writer
  and a reader task), the way a producer with ``max.in.flight.requests.per.connection``
  pipelines; the broker mutes the connection (one request at a time), so the window only
  keeps its socket fed.
"""

from __future__ import annotations

import datetime
import itertools
import re
import resource
import struct
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs
import trio
from kio.schema.create_topics.v4.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v4.response import CreateTopicsResponse
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.produce.v8.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.schema.produce.v8.response import ProduceResponse
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from minikafka.log import Record, build_batch
from minikafka.net import FrameDecoder, NetworkClient, Node, decode_response_body
from minikafka.net.testing import request_frame

from ._common import BenchError, ServerProcess, spawned_server

BROKER_READY = re.compile(r"minikafka broker ready on (?P<host>[^\s:]+):(?P<port>\d+)")
CLIENT_ID = "bench"
VALUE_BYTES = 100
RECEIVE_BYTES = 1 << 20
PRODUCE_VERSION = 8
"""The newest Produce the broker serves (its ApiVersions lists 3-8)."""
MEASUREMENT_DEADLINE = 300.0  # seconds; only so that a wedged server fails the run

_CORRELATION = struct.Struct(">i")
# in a whole request frame: size (4), api_key (2), api_version (2)
_CORRELATION_OFFSET = 8
_HEAD_BYTES = _CORRELATION_OFFSET + _CORRELATION.size
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")


def broker_argv(data_dir: Path, *overrides: str) -> list[str]:
    argv = [sys.executable, "-m", "minikafka.broker", "broker"]
    for setting in (
        "listeners=PLAINTEXT://127.0.0.1:0",
        f"log.dirs={data_dir}",
        *overrides,
    ):
        argv += ["--override", setting]
    return argv


@contextmanager
def spawned_broker(
    data_dir: Path,
    cpus: set[int] | None = None,
    *overrides: str,
    stop_timeout: float = 30.0,
) -> Iterator[ServerProcess]:
    """A broker process, ready for clients; stopped on exit (also on errors): SIGTERM,
    then SIGKILL after ``stop_timeout`` (its return code then is -9)."""
    with spawned_server(
        broker_argv(data_dir, *overrides),
        cpus,
        start_timeout=60.0,
        ready=BROKER_READY,
        stop_timeout=stop_timeout,
    ) as server:
        yield server


def raise_open_files_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (children inherit it);
    the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def rss_kib(pid: int) -> int | None:
    """A process's resident set (``VmRSS`` in ``/proc/<pid>/status``), in KiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


async def create_topic(host: str, port: int, topic: str) -> None:
    """Create ``topic`` with one partition (replication factor 1) and wait for its leader."""
    node = Node(-1, host, port)
    create = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName(topic),
                num_partitions=i32(1),
                replication_factor=i16(1),
                assignments=(),
                configs=(),
            ),
        ),
    )
    metadata = MetadataRequest(
        topics=(MetadataRequestTopic(name=TopicName(topic)),),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    async with NetworkClient.open(client_id=CLIENT_ID) as client:
        with trio.fail_after(60):
            created = await client.send(node, create)
            assert isinstance(created, CreateTopicsResponse)
            error = created.topics[0].error_code
            if error not in (ErrorCode.none, ErrorCode.topic_already_exists):
                raise BenchError(f"CreateTopics {topic} answered {error.name}")
            while True:
                answer = await client.send(node, metadata)
                assert isinstance(answer, MetadataResponse)
                found = answer.topics[0]
                partitions = found.partitions
                if (
                    found.error_code == ErrorCode.none
                    and partitions
                    and partitions[0].leader_id >= 0
                ):
                    return
                await trio.sleep(0.05)  # polling for the leader, under fail_after


# --- Produce requests ---------------------------------------------------------------------


def value(i: int) -> bytes:
    """Record ``i``'s value: ``VALUE_BYTES`` bytes."""
    return (b"%010d" % i + b"-minikafka-bench" * 7)[:VALUE_BYTES]


def record_batch(records: int, timestamp_ms: int | None = None) -> bytes:
    """One uncompressed v2 batch of ``records`` 100-byte values, no key, no headers."""
    now = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    return build_batch([Record(i, now, None, value(i)) for i in range(records)])


def batch_of_about(limit: int) -> bytes:
    """The largest batch of 100-byte records no larger than ``limit`` bytes."""
    count = limit // (VALUE_BYTES + 12)  # a record's framing is 8-11 bytes here
    batch = record_batch(count)
    while len(batch) > limit:
        count -= 16
        batch = record_batch(count)
    return batch


def produce_request(topic: str, batch: bytes, acks: int) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=i16(acks),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    PartitionProduceData(index=i32(0), records=Records(batch)),
                ),
            ),
        ),
    )


@attrs.frozen
class ProduceFrames:
    """One request's frame, encoded once; copies with their correlation ids patched in."""

    template: bytes

    @classmethod
    def of(cls, body: ProduceRequest) -> ProduceFrames:
        template = request_frame(body, 0, CLIENT_ID)
        if request_frame(body, 12345, CLIENT_ID) != _patched(template, 12345):
            raise BenchError(
                "the correlation id is not where the request header puts it"
            )
        return cls(template)

    def frame(self, correlation_id: int) -> bytes:
        return _patched(self.template, correlation_id)

    def groups(self, first: int, count: int, per_group: int) -> list[Group]:
        """``count`` frames from correlation id ``first``, joined ``per_group`` at a time."""
        out: list[Group] = []
        for start in range(first, first + count, per_group):
            n = min(per_group, first + count - start)
            out.append(((b"".join(self.frame(start + i) for i in range(n)),), n))
        return out

    def split_groups(self, first: int, count: int) -> list[Group]:
        """``count`` frames from correlation id ``first``, one a group, each as its first
        12 bytes (size, api key, version, correlation id) and the rest, shared: large
        requests are written with one ``sendmsg`` of both instead of a copy apiece."""
        tail = memoryview(self.template)[_HEAD_BYTES:]
        return [
            ((self.frame(i)[:_HEAD_BYTES], tail), 1)
            for i in range(first, first + count)
        ]


Group = tuple[tuple["bytes | memoryview", ...], int]
"""The buffers one write sends, and how many requests they hold."""


def _patched(frame: bytes, correlation_id: int) -> bytes:
    patched = bytearray(frame)
    _CORRELATION.pack_into(patched, _CORRELATION_OFFSET, correlation_id)
    return bytes(patched)


@attrs.frozen
class ProduceCheck:
    """Where a Produce v8 response to one partition holds its error code and base offset."""

    frame_bytes: int
    """The response frame's length, size prefix excluded."""
    error_offset: int
    base_offset_offset: int

    @classmethod
    def learn(cls, frame: bytes, topic: str) -> ProduceCheck:
        """From a response to a request for ``topic`` (a frame without its size prefix)."""
        body = decode_response_body(0, PRODUCE_VERSION, frame, _CORRELATION.size)
        assert isinstance(body, ProduceResponse)
        partition = body.responses[0].partition_responses[0]
        if partition.error_code != ErrorCode.none:
            raise BenchError(
                f"a Produce to {topic} answered {partition.error_code.name}"
            )
        # correlation id, responses count, topic name (int16 length), partitions count,
        # partition index: then error_code (int16) and base_offset (int64).
        error_offset = 4 + 4 + 2 + len(topic.encode()) + 4 + 4
        check = cls(len(frame), error_offset, error_offset + _I16.size)
        if check.base_offset(frame) != partition.base_offset:
            raise BenchError("the Produce response's layout is not the one expected")
        return check

    def error_code(self, frame: bytes | bytearray | memoryview) -> int:
        return int(_I16.unpack_from(frame, self.error_offset)[0])

    def base_offset(self, frame: bytes | bytearray | memoryview) -> int:
        return int(_I64.unpack_from(frame, self.base_offset_offset)[0])


async def learn_produce_check(
    host: str, port: int, frames: ProduceFrames, topic: str
) -> bytes:
    """One Produce over a fresh connection: its response frame (size prefix excluded)."""
    with trio.fail_after(60):
        stream = await trio.open_tcp_stream(host, port)
        async with stream:
            await stream.send_all(frames.frame(0))
            decoder = FrameDecoder()
            while (frame := decoder.next_frame()) is None:
                data = await stream.receive_some(RECEIVE_BYTES)
                if not data:
                    raise BenchError(f"the server closed the connection to {topic}")
                decoder.feed(data)
    return bytes(frame)


# --- the pipelined client -----------------------------------------------------------------


@attrs.define(eq=False)
class Pipeline:
    """One connection: writes pre-joined groups of requests with at most ``window``
    requests unanswered, reads and checks every response in order."""

    stream: trio.SocketStream
    check: ProduceCheck
    collect_offsets: bool
    """Keep every base offset (a broker's; the ceiling answers zeros)."""
    next_correlation: int = 0
    latencies: list[float] = attrs.field(factory=list)
    base_offsets: list[int] = attrs.field(factory=list)
    responses: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0

    async def drive(self, groups: Sequence[Group], window: int, record: bool) -> None:
        credits = trio.Semaphore(window)
        send_times: list[float] = []

        async def writer() -> None:
            clock = time.perf_counter
            for parts, n in groups:
                for _ in range(n):
                    await credits.acquire()
                now = clock()
                send_times.extend([now] * n)
                if len(parts) == 1:
                    await self.stream.send_all(parts[0])
                else:
                    await _send_vectored(self.stream.socket, parts)
                if record:
                    self.bytes_sent += sum(len(part) for part in parts)

        async def reader() -> None:
            decoder = FrameDecoder()
            clock = time.perf_counter
            expected = sum(n for _, n in groups)
            done = 0
            while done < expected:
                data = await self.stream.receive_some(RECEIVE_BYTES)
                if not data:
                    raise BenchError("the server closed a connection mid-run")
                arrived = clock()
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    self._check(frame)
                    if record:
                        self.responses += 1
                        self.bytes_received += len(frame) + 4
                        self.latencies.append(arrived - send_times[done])
                        if self.collect_offsets:
                            self.base_offsets.append(self.check.base_offset(frame))
                    done += 1
                    credits.release()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            nursery.start_soon(reader)

    def _check(self, frame: bytes | bytearray | memoryview) -> None:
        (correlation,) = _CORRELATION.unpack_from(frame)
        if correlation != self.next_correlation:
            raise BenchError(
                f"response for correlation id {correlation}, expected {self.next_correlation}"
            )
        self.next_correlation += 1
        if len(frame) != self.check.frame_bytes:
            raise BenchError(
                f"a {len(frame)}-byte Produce response where {self.check.frame_bytes} were "
                f"expected (an error message or record errors?)"
            )
        if (error := self.check.error_code(frame)) != 0:
            raise BenchError(
                f"a Produce answered error code {error} ({ErrorCode(error).name})"
            )


async def _send_vectored(
    sock: trio.socket.SocketType, parts: Sequence[bytes | memoryview]
) -> None:
    """Write every byte of ``parts`` with ``sendmsg`` (a gather write), however the
    kernel splits it."""
    views = [memoryview(part) for part in parts]
    while views:
        sent = await sock.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if views and sent:
            views[0] = views[0][sent:]


def check_offsets(offsets: Sequence[int], records_per_request: int) -> None:
    """Every acknowledged Produce got a base offset of its own, and together they cover
    one contiguous range: nothing lost, nothing counted twice."""
    ordered = sorted(offsets)
    for a, b in itertools.pairwise(ordered):
        if b - a != records_per_request:
            raise BenchError(
                f"base offsets {a} then {b}: acknowledged produces are not contiguous "
                f"({records_per_request} records each)"
            )
