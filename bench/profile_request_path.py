"""Where a request's time goes: cProfile of the servers, attributed to hops.

``python -m bench.profile_request_path [--quick] [--keep DIR] [--allocations] [--only NAME]``
profiles five workloads, each against a server in its own process, started through this
module's ``--serve`` harness (``python -m bench.profile_request_path --serve OUT
net|broker ARGS...``), which runs ``python -m minikafka.net`` or ``python -m
minikafka.broker`` unchanged and turns a ``cProfile.Profile`` on at SIGUSR1 and off
(writing ``OUT``) at SIGUSR2, so that start-up and warm-up stay out of the profile:

- ``reactor latency``: the Reactor, 1 connection, one ApiVersions v3 at a time;
- ``reactor pipelined``: the Reactor, 16 connections x 32 Metadata v9 in flight;
- ``broker produce``: the broker, 4 connections x 32 Produce v8 in flight, each one
  100-byte record, acks=1, to one partition (frames built before the clock starts);
- ``broker large produce``: the broker, 1 connection x 4 Produce v8 in flight, each one
  uncompressed batch of 9,362 100-byte records (1 MiB, as ``broker_produce``'s large
  scenario), acks=1. Its figures are per request, that is per MiB;
- ``broker fetch``: the broker, 4 connections x 32 Fetch v12 in flight, each a
  consumer's read (no fetch session, max_wait 0) of one partition's first batch, one
  100-byte record (:func:`fetch_request`). A follower's fetch needs a second broker
  the leader counts as a replica, which this single-server harness does not run.

With ``--trace`` the broker runs with ``--trace-dir`` (a scratch directory): what tracing
costs per request, and where.

With ``--allocations`` each workload runs a third time on a fresh server under memray's
``Tracker`` (``--serve-memray``, started and stopped by the same signals), which records
every allocation, the Python allocator's included: the allocations per request, each
given to the hop of the innermost frame of its stack that has one. The two Reactor
workloads are also run against ``bench.echo_server`` (``--serve-memray OUT echo``), the
least a server allocates to answer the same frames.

Each workload runs twice on one server: first unprofiled (the server's CPU time per
request, from ``/proc``), then profiled. Every function's own time (cProfile's tottime)
goes to a hop by where the function lives (below, ``_RULES``); code of no hop of its own
(the standard library, attrs, kio, trio's socket helpers) takes its callers' hops, in
proportion to the time each caller spent in it. A hop's µs per request is its share of
the profile times the unprofiled CPU time per request: cProfile inflates the cost of
every Python call, so its own totals overstate every hop, but (roughly) in proportion.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import os
import pstats
import re
import runpy
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.produce.v8.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.schema.produce.v8.response import ProduceResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64

from minikafka.log import build_batch, make_records
from minikafka.net import NetworkClient, Node

from ._common import (
    BenchError,
    ServerProcess,
    build_label,
    markdown_table,
    process_cpu_seconds,
    spawned_server,
)
from .net_reactor import Scenario, _Connection, scenarios

HOPS = (
    "read",
    "frame",
    "parse",
    "queue",
    "handler",
    "encode",
    "respond",
    "write",
    "other",
)
"""The request path's hops, in order; ``other`` is what belongs to none (metrics, tracing,
the accept loop); time blocked in ``epoll_wait`` is left out."""

COVERS = {
    "read": "socket receive (trio receive_some, recv)",
    "frame": "FrameDecoder, memory pool",
    "parse": "request header and body (kio)",
    "queue": "RequestChannel, task switches, trio",
    "handler": "DemoApis / KafkaApis, ReplicaManager, Log",
    "encode": "response building and kio encoding",
    "respond": "respond, response queue, unmute",
    "write": "send_all, send",
    "other": "metrics, quotas, accept, unowned",
}

TOPIC = "bench-small-produce"
FETCH_TOPIC = "bench-small-fetch"
"""The consumer fetch's topic: its own, so that the produce workloads' batches are not
what it reads."""
_READY = re.compile(
    r"(?:listening on|minikafka broker ready on) (?P<host>[^\s:]+):(?P<port>\d+)"
)

# (path fragment, function name pattern or None for any, hop). First match wins.
_RULES: tuple[tuple[str, str | None, str], ...] = (
    ("minikafka/net/_framing.py", None, "frame"),
    ("minikafka/net/_memory_pool.py", None, "frame"),
    (
        "minikafka/net/_connection.py",
        r"_next_frame|_reserve|_hand_over_memory",
        "frame",
    ),
    ("minikafka/net/_connection.py", r"_parse", "parse"),
    ("minikafka/net/_headers.py", r"encode_response_header", "encode"),
    ("minikafka/net/_headers.py", None, "parse"),
    ("minikafka/net/_codec.py", r"decode|_decode|request_schema", "parse"),
    ("minikafka/net/_codec.py", r"encode_entity", "encode"),
    ("minikafka/net/_request.py", r"body_as", "parse"),
    ("minikafka/net/_request.py", r"respond|_complete", "respond"),
    ("minikafka/net/_channel.py", r"send_response", "respond"),
    ("minikafka/net/_channel.py", None, "queue"),
    ("minikafka/net/_server.py", r"_handler_loop", "queue"),
    ("minikafka/net/_connection.py", r"_serve|run", "queue"),
    ("minikafka/net/_connection.py", r"deliver", "respond"),
    ("minikafka/net/_connection.py", r"_write|send_file_region|_sendfile", "write"),
    ("minikafka/net/_processor.py", None, "respond"),
    ("minikafka/net/_demo.py", None, "handler"),
    (
        "minikafka/net/_codec.py",
        r"build|nested|has_field|_fields|_hints|_message_fields",
        "encode",
    ),
    ("minikafka/net/_request.py", r"metrics", "other"),
    ("minikafka/net/_events.py", None, "other"),
    ("minikafka/net/_quotas.py", None, "other"),
    ("minikafka/net/_server.py", r"accept", "other"),
    ("minikafka/net/", None, ""),
    ("minikafka/trace/", None, "other"),
    ("minikafka/", None, "handler"),  # broker, replication, log, coordination, common
    ("trio/_highlevel_socket.py", r"receive", "read"),
    ("trio/_highlevel_socket.py", r"send", "write"),
    ("trio/_socket.py", r"recv", "read"),
    ("trio/_socket.py", r"send", "write"),
    ("trio/_core/_io_epoll.py", r"get_events", "other"),
    ("trio/_highlevel_socket.py", None, ""),
    ("trio/_socket.py", None, ""),
    ("trio/_core/_io_epoll.py", None, ""),
    ("trio/", None, "queue"),  # the scheduler, channels, cancel scopes, checkpoints
    ("~", r"method 'recv.* of '_socket", "read"),
    ("~", r"method 'send.* of '_socket", "write"),
    ("~", r"method 'poll' of 'select.epoll", "idle"),
)


def _own_hop(func: tuple[str, int, str]) -> str:
    """The hop a function's own time belongs to, or "" if it takes its callers'."""
    path, _line, name = func
    path = path.replace(os.sep, "/")
    for fragment, pattern, hop in _RULES:
        if fragment in path and (pattern is None or re.search(pattern, name)):
            return hop
    return ""


def attribute(stats: Mapping[Any, Any]) -> dict[str, float]:
    """Seconds of own time per hop in ``pstats.Stats(...).stats``."""
    memo: dict[Any, dict[str, float]] = {}

    def shares(func: Any, seen: frozenset[Any]) -> dict[str, float]:
        """How ``func``'s own time splits over hops (fractions summing to 1)."""
        if func in memo:
            return memo[func]
        hop = _own_hop(func)
        if hop:
            result = {hop: 1.0}
        else:
            callers = stats[func][4] if func in stats else {}
            weights = {
                c: edge[2] or edge[1] for c, edge in callers.items() if c not in seen
            }
            total = sum(weights.values())
            result = {}
            if not total:
                result = {"other": 1.0}
            else:
                for caller, weight in weights.items():
                    for h, part in shares(caller, seen | {func}).items():
                        result[h] = result.get(h, 0.0) + part * weight / total
        memo[func] = result
        return result

    seconds = dict.fromkeys((*HOPS, "idle"), 0.0)
    for func, (_cc, _nc, tottime, _ct, _callers) in stats.items():
        for hop, part in shares(func, frozenset()).items():
            seconds[hop] += tottime * part
    del seconds["idle"]  # blocked in epoll_wait: no CPU, and the 0.2 s before the run
    return seconds


# --- the server side ----------------------------------------------------------------


SERVERS = {
    "net": "minikafka.net",
    "broker": "minikafka.broker",
    "echo": "bench.echo_server",
}


def serve(out: Path, target: str, args: Sequence[str]) -> None:
    """Run ``python -m <SERVERS[target]> ARGS`` here, profiled between SIGUSR1 and SIGUSR2."""
    profiler = cProfile.Profile()

    def start(_signum: int, _frame: object) -> None:
        profiler.enable()

    def stop(_signum: int, _frame: object) -> None:
        profiler.disable()
        profiler.dump_stats(str(out) + ".part")
        os.replace(str(out) + ".part", out)

    _run_server(target, args, start, stop)


def serve_memray(out: Path, target: str, args: Sequence[str]) -> None:
    """As :func:`serve`, but recording every allocation between the signals with memray."""
    import memray  # only here: the Tracker is the allocation counter's instrument

    part = Path(str(out) + ".part")
    # Uncompressed: the capture is read once, right away, and compressing it failed here.
    destination = memray.FileDestination(part, overwrite=True, compress_on_exit=False)
    tracker = memray.Tracker(destination=destination, trace_python_allocators=True)

    def start(_signum: int, _frame: object) -> None:
        tracker.__enter__()

    def stop(_signum: int, _frame: object) -> None:
        tracker.__exit__(None, None, None)
        os.replace(part, out)

    _run_server(target, args, start, stop)


_Handler = Callable[[int, Any], None]


def _run_server(
    target: str, args: Sequence[str], start: _Handler, stop: _Handler
) -> None:
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    module = SERVERS[target]
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


@contextmanager
def _spawn(
    target: str, args: Sequence[str], profile: Path, harness: str = "--serve"
) -> Iterator[ServerProcess]:
    """The server under ``harness``, stopped with SIGTERM; SIGUSR2 writes ``profile``."""
    argv = [sys.executable, "-m", "bench.profile_request_path", harness, str(profile)]
    with spawned_server(
        [*argv, target, *args], start_timeout=60.0, ready=_READY, stop_timeout=30.0
    ) as server:
        yield server


# --- the client side ----------------------------------------------------------------


LARGE_RECORDS = 9_362
"""100-byte records in a large produce's one batch: a 1 MiB frame, as ``broker_produce``."""


def produce_request(count: int = 1, topic: str = TOPIC) -> ProduceRequest:
    """``count`` 100-byte records in one batch, acks=1, partition 0 of ``topic``."""
    records = make_records(
        [(None, b"x" * 100)] * count, timestamp_ms=int(time.time() * 1000)
    )
    return ProduceRequest(
        transactional_id=None,
        acks=i16(1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    PartitionProduceData(
                        index=i32(0), records=Records(build_batch(records))
                    ),
                ),
            ),
        ),
    )


def fetch_request() -> FetchRequest:
    """A consumer's Fetch v12 of partition 0 of ``FETCH_TOPIC`` from offset 0, answered at
    once (max_wait 0), without a fetch session (epoch -1). ``partition_max_bytes`` 1:
    the partition's first batch alone, whole (KIP-74), however many batches the topic
    has had produced to it by earlier runs (each run's set-up produces one)."""
    return FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(datetime.timedelta(0)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName(FETCH_TOPIC),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        fetch_offset=i64(0),
                        partition_max_bytes=i32(1),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


async def _prepare_topics(host: str, port: int) -> None:
    """``TOPIC`` and ``FETCH_TOPIC``, each with a record produced."""
    await _prepare_topic(host, port, TOPIC)
    await _prepare_topic(host, port, FETCH_TOPIC)


async def _prepare_topic(host: str, port: int, topic: str) -> None:
    """Create ``topic`` (auto-creation by Metadata), wait for its leader, produce once."""
    node = Node(-1, host, port)
    request = MetadataRequest(
        topics=(MetadataRequestTopic(name=TopicName(topic)),),
        allow_auto_topic_creation=True,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    async with NetworkClient.open(client_id="bench") as client:
        with trio.fail_after(60):
            while True:
                metadata = await client.send(node, request)
                assert isinstance(metadata, MetadataResponse)
                answer = metadata.topics[0]
                partitions = answer.partitions
                if (
                    answer.error_code == ErrorCode.none
                    and partitions
                    and partitions[0].leader_id >= 0
                ):
                    break
                await trio.sleep(0.1)
            produced = await client.send(node, produce_request(topic=topic))
        assert isinstance(produced, ProduceResponse)
        error = produced.responses[0].partition_responses[0].error_code
        if error != ErrorCode.none:
            raise BenchError(f"a Produce to {topic} answered {error.name}")


async def _drive(
    server: ServerProcess, scenario: Scenario, signals: tuple[int, int] | None
) -> tuple[int, float]:
    """Warm up, then the timed rounds (profiled if ``signals``): (requests, server CPU s)."""
    batches = scenario.batches(scenario.rounds)
    warmup, timed = batches[: scenario.warmup_rounds], batches[scenario.warmup_rounds :]
    connections = [
        _Connection(await trio.open_tcp_stream(server.host, server.port))
        for _ in range(scenario.connections)
    ]
    try:
        async with trio.open_nursery() as nursery:
            for c in connections:
                nursery.start_soon(c.drive, warmup, scenario.in_flight, False)
        if signals is not None:
            server.process.send_signal(signals[0])
            await trio.sleep(0.2)  # the signal lands between the server's turns
        before = process_cpu_seconds(server.process.pid) or 0.0
        async with trio.open_nursery() as nursery:
            for c in connections:
                nursery.start_soon(c.drive, timed, scenario.in_flight, True)
        after = process_cpu_seconds(server.process.pid) or 0.0
        if signals is not None:
            server.process.send_signal(signals[1])
    finally:
        for c in connections:
            await c.stream.aclose()
    return sum(c.responses for c in connections), after - before


@attrs.frozen
class Profiled:
    name: str
    requests: int
    cpu_us_per_request: float
    """The server's CPU time per request without the profiler."""
    profiled_us_per_request: float
    hop_seconds: dict[str, float]

    def share(self, hop: str) -> float:
        return self.hop_seconds[hop] / sum(self.hop_seconds.values())


def _wait_for(path: Path, server: ServerProcess) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():  # the server writes it between two of its turns
        if time.monotonic() > deadline:
            raise BenchError(
                f"the server wrote no profile:\n{''.join(server.output[-20:])}"
            )
        time.sleep(0.1)


def _profile(
    name: str, target: str, args: Sequence[str], scenario: Scenario, scratch: Path
) -> Profiled:
    path = scratch / f"{name.replace(' ', '_')}.prof"
    path.unlink(missing_ok=True)  # a --keep directory's last run must not be read
    with _spawn(target, args, path) as server:
        if target == "broker":
            trio.run(_prepare_topics, server.host, server.port)
        requests, cpu = trio.run(_drive, server, scenario, None)
        profiled, _cpu = trio.run(
            _drive, server, scenario, (signal.SIGUSR1, signal.SIGUSR2)
        )
        _wait_for(path, server)
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    hops = attribute(stats)
    return Profiled(
        name=name,
        requests=requests,
        cpu_us_per_request=cpu / requests * 1e6,
        profiled_us_per_request=sum(hops.values()) / profiled * 1e6,
        hop_seconds=hops,
    )


ALLOCATION_REQUESTS = 2_048
"""Requests recorded per workload under memray (``--quick``: 256): it records every
allocation, so a few thousand requests give the count without a file of gigabytes."""


@attrs.frozen
class Allocations:
    name: str
    requests: int
    by_hop: dict[str, float]
    """Allocations per request, by the hop that made them."""
    echo_per_request: float | None
    """``bench.echo_server``'s allocations per request on the same workload, if run."""

    @property
    def per_request(self) -> float:
        return sum(self.by_hop.values())


def count_allocations(path: Path) -> dict[str, int]:
    """Allocations in a memray capture, by hop (frees and unmaps are not allocations)."""
    import memray

    frees = {
        memray.AllocatorType.FREE,
        memray.AllocatorType.PYMALLOC_FREE,
        memray.AllocatorType.MUNMAP,
    }
    counts = dict.fromkeys(HOPS, 0)
    for record in memray.FileReader(path).get_allocation_records():
        if record.allocator in frees:
            continue
        counts[_stack_hop(record.stack_trace(max_stacks=24))] += record.n_allocations
    return counts


def _stack_hop(frames: Sequence[tuple[str, str, int]]) -> str:
    """The hop of the innermost frame (memray's ``(function, file, line)``) that has one."""
    for function, path, line in frames:
        hop = _own_hop((path, line, function))
        if hop and hop != "idle":
            return hop
    return "other"


def _count(
    name: str,
    target: str,
    args: Sequence[str],
    scenario: Scenario,
    scratch: Path,
    quick: bool,
) -> tuple[int, dict[str, int]]:
    """Run ``scenario`` under memray on a fresh server: (requests, allocations by hop)."""
    per_round = scenario.connections * scenario.in_flight
    budget = min(
        256 if quick else ALLOCATION_REQUESTS, scenario.requests(scenario.rounds)
    )
    scenario = attrs.evolve(scenario, rounds=max(1, budget // per_round))
    path = scratch / f"{name.replace(' ', '_')}.{target}.memray"
    path.unlink(missing_ok=True)
    with _spawn(target, args, path, "--serve-memray") as server:
        if target == "broker":
            trio.run(_prepare_topics, server.host, server.port)
        requests, _cpu = trio.run(
            _drive, server, scenario, (signal.SIGUSR1, signal.SIGUSR2)
        )
        _wait_for(path, server)
    return requests, count_allocations(path)


def _allocations(
    name: str,
    target: str,
    args: Sequence[str],
    scenario: Scenario,
    scratch: Path,
    quick: bool,
) -> Allocations:
    requests, counts = _count(name, target, args, scenario, scratch, quick)
    echo: float | None = None
    # the Reactor's workloads have a ceiling that frames the same bytes
    if target == "net":
        echo_requests, echo_counts = _count(
            name, "echo", ["--port", "0"], scenario, scratch, quick
        )
        echo = sum(echo_counts.values()) / echo_requests
    return Allocations(
        name=name,
        requests=requests,
        by_hop={hop: n / requests for hop, n in counts.items()},
        echo_per_request=echo,
    )


def allocation_table(results: Sequence[Allocations]) -> str:
    header = ["hop", *[f"{r.name} allocations/req" for r in results]]
    rows = [[hop, *[f"{r.by_hop[hop]:.1f}" for r in results]] for hop in HOPS]
    rows.append(["total", *[f"{r.per_request:.1f}" for r in results]])
    rows.append(
        [
            "ceiling (bench.echo_server)",
            *[
                "-" if r.echo_per_request is None else f"{r.echo_per_request:.1f}"
                for r in results
            ],
        ]
    )
    rows.append(["requests", *[f"{r.requests:,}" for r in results]])
    return markdown_table(header, rows)


def workloads(
    quick: bool, data_dir: Path, trace_dir: Path | None = None
) -> list[tuple[str, str, list[str], Scenario]]:
    """The four workloads; with ``trace_dir`` the broker runs with ``--trace-dir``."""
    latency, pipelined = scenarios(quick)
    net = ["--port", "0", "--quiet"]
    broker = [
        "broker",
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0",
        "--override",
        f"log.dirs={data_dir}",
    ]
    if trace_dir is not None:
        broker += ["--trace-dir", str(trace_dir)]
    produce = Scenario(
        name="produce",
        title="broker produce: 4 conns x 32 in flight, 1 x 100 B record, acks=1",
        body=produce_request(),
        connections=4,
        in_flight=32,
        warmup_rounds=2 if quick else 10,
        rounds=5 if quick else 60,
        ceiling_rounds=0,
    )
    large = Scenario(
        name="large produce",
        title="broker large produce: 1 conn x 4 in flight, 1 MiB batch of 100 B records, acks=1",
        body=produce_request(LARGE_RECORDS),
        connections=1,
        in_flight=4,
        warmup_rounds=2 if quick else 5,
        rounds=3 if quick else 40,  # every write is built beforehand: 4 MiB a round
        ceiling_rounds=0,
    )
    fetch = Scenario(
        name="fetch",
        title="broker fetch: 4 conns x 32 in flight, a consumer's Fetch v12 of 1 x 100 B record",
        body=fetch_request(),
        connections=4,
        in_flight=32,
        warmup_rounds=2 if quick else 10,
        rounds=5 if quick else 60,
        ceiling_rounds=0,
    )
    return [
        (
            "reactor latency",
            "net",
            net,
            attrs.evolve(latency, rounds=latency.rounds // 2),
        ),
        (
            "reactor pipelined",
            "net",
            net,
            attrs.evolve(pipelined, rounds=pipelined.rounds // 2),
        ),
        ("broker produce", "broker", broker, produce),
        ("broker large produce", "broker", broker, large),
        ("broker fetch", "broker", broker, fetch),
    ]


def table(results: Sequence[Profiled]) -> str:
    header = ["hop", "covers", *[f"{r.name} µs/req (share)" for r in results]]
    rows = [
        [
            hop,
            COVERS[hop],
            *[
                f"{r.share(hop) * r.cpu_us_per_request:.1f} ({r.share(hop):.0%})"
                for r in results
            ],
        ]
        for hop in HOPS
    ]
    rows.append(
        [
            "total",
            "server CPU, unprofiled",
            *[f"{r.cpu_us_per_request:.1f}" for r in results],
        ]
    )
    rows.append(
        [
            "under cProfile",
            "its inflated total",
            *[f"{r.profiled_us_per_request:.1f}" for r in results],
        ]
    )
    rows.append(["requests", "profiled", *[f"{r.requests:,}" for r in results]])
    return markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--serve"]:
        serve(Path(args[1]), args[2], args[3:])
        return 0
    if args[:1] == ["--serve-memray"]:
        serve_memray(Path(args[1]), args[2], args[3:])
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile_request_path", description=__doc__
    )
    parser.add_argument(
        "--quick", action="store_true", help="small counts: a smoke run"
    )
    parser.add_argument(
        "--keep", type=Path, help="keep the .prof files in this directory"
    )
    parser.add_argument(
        "--allocations",
        action="store_true",
        help="also count each workload's allocations per request under memray",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="WORKLOAD",
        help='profile only this workload (repeatable), e.g. --only "broker large produce"',
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="run the broker with --trace-dir (a scratch directory): what tracing costs",
    )
    options = parser.parse_args(args)
    with tempfile.TemporaryDirectory(prefix="minikafka-profile-") as tmp:
        scratch = options.keep or Path(tmp)
        scratch.mkdir(parents=True, exist_ok=True)
        data_dir = Path(tmp) / "broker-data"
        trace_dir = Path(tmp) / "broker-trace" if options.trace else None
        results = [
            _profile(name, target, server_args, scenario, scratch)
            for name, target, server_args, scenario in workloads(
                options.quick, data_dir, trace_dir
            )
            if not options.only or name in options.only
        ]
        if not results:
            parser.error(f"no workload is named {options.only}")
        counted = [
            _allocations(name, target, server_args, scenario, scratch, options.quick)
            for name, target, server_args, scenario in workloads(
                options.quick, data_dir, trace_dir
            )
            if options.allocations and (not options.only or name in options.only)
        ]
    print(f"minikafka: the {build_label()}")
    print(table(results))
    if counted:
        print()
        print(allocation_table(counted))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
