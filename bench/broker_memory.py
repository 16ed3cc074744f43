"""The broker's memory: resident set idle, with 1,000 idle connections, under produce load.

The memory benchmark. What a connection costs the broker (Kafka's answer is a
``KafkaChannel`` with its buffers in a Processor's ``Selector``; here a Processor-owned
connection, its ``FrameDecoder`` and a trio task) and what the small-produce load adds,
read from the kernel: ``VmRSS`` in ``/proc/<pid>/status`` (resident pages: heap, the
interpreter, mapped code, socket buffers are the kernel's and not in it).

Each repeat starts a fresh broker (``python -m minikafka.broker broker``, defaults, data in
a fresh temporary directory, a one-partition topic created, one Produce served) and a
fresh ceiling (``bench.echo_server``: a bare trio server holding each connection in one
task with a 64 KiB read at a time), and on each, in turn:

1. **idle**: its RSS once it has served that much;
2. **1,000 idle connections**: 1,000 TCP connections from this process, each with one
   ApiVersions v3 exchanged (so that each is a real Kafka connection the broker has read
   from and answered), its RSS with all of them open; the per-connection figure is
   the difference from idle over 1,000;
3. **under small produce**: those closed, the small-produce load of ``broker_produce``
   (16 connections x 32 in flight, one 100-byte record per Produce v8, acks=1), its
   RSS sampled every 20 ms while it runs: the peak.

Client limits: this process raises its soft ``RLIMIT_NOFILE`` to the hard limit before
anything starts (the servers inherit it); the broker's ``max.connections`` and
``max.connections.per.ip`` default to unlimited, as Kafka's do. The table quotes the
median of ``REPEATS`` repeats.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio

from minikafka.net import FrameDecoder
from minikafka.net.testing import request_frame

from ._common import (
    BenchError,
    Report,
    ServerProcess,
    bar_chart_svg,
    machine_facts,
    markdown_table,
    now_utc,
    pinned_client,
    report_header,
    spawned_server,
)
from ._wire import (
    CLIENT_ID,
    MEASUREMENT_DEADLINE,
    Pipeline,
    ProduceCheck,
    ProduceFrames,
    broker_argv,
    create_topic,
    learn_produce_check,
    produce_request,
    raise_open_files_limit,
    record_batch,
    rss_kib,
    spawned_broker,
)
from .net_reactor import API_VERSIONS_V3

NAME = "broker_memory"
REPEATS = 3
IDLE_CONNECTIONS = 1_000
TOPIC = "bench-memory-produce"
ECHO_ARGV = (sys.executable, "-m", "bench.echo_server", "--port", "0")
CONNECTING_AT_ONCE = 50
"""Connections opened concurrently: well inside the listen backlog."""
SAMPLE_SECONDS = 0.02
LOAD_CONNECTIONS = 16
LOAD_PER_GROUP = 16
LOAD_WINDOW = 32


@attrs.frozen
class Memory:
    """One server's figures in one repeat, in KiB."""

    idle_kib: int
    connections: int
    with_connections_kib: int
    load_requests: int
    load_seconds: float
    load_peak_kib: int
    load_samples: int

    @property
    def per_connection_kib(self) -> float:
        return (self.with_connections_kib - self.idle_kib) / self.connections


def _rss(server: ServerProcess) -> int:
    server.check_alive()
    value = rss_kib(server.pid)
    if value is None:
        raise BenchError(f"no VmRSS for pid {server.pid} (this needs Linux /proc)")
    return value


async def _open_idle(server: ServerProcess, count: int) -> list[trio.SocketStream]:
    """``count`` connections, each with one ApiVersions v3 exchanged and checked."""
    streams: list[trio.SocketStream] = []
    limiter = trio.CapacityLimiter(CONNECTING_AT_ONCE)

    async def one(correlation: int) -> None:
        async with limiter:
            stream = await trio.open_tcp_stream(server.host, server.port)
            streams.append(stream)
            await stream.send_all(
                request_frame(API_VERSIONS_V3, correlation, CLIENT_ID)
            )
            decoder = FrameDecoder()
            while (frame := decoder.next_frame()) is None:
                data = await stream.receive_some(65536)
                if not data:
                    raise BenchError(
                        f"connection {correlation} closed before its ApiVersions"
                    )
                decoder.feed(data)
            got = int.from_bytes(frame[:4], "big", signed=True)
            # header v0, error_code
            error = int.from_bytes(frame[4:6], "big", signed=True)
            if got != correlation or error != 0:
                raise BenchError(
                    f"ApiVersions {correlation}: correlation {got}, error {error}"
                )

    async with trio.open_nursery() as nursery:
        for i in range(count):
            nursery.start_soon(one, i)
    return streams


async def _measure(
    server: ServerProcess,
    frames: ProduceFrames,
    check: ProduceCheck,
    requests: int,
    is_broker: bool,
) -> Memory:
    with trio.fail_after(MEASUREMENT_DEADLINE):
        idle = _rss(server)
        streams = await _open_idle(server, IDLE_CONNECTIONS)
        try:
            with_connections = _rss(server)
        finally:
            for stream in streams:
                await stream.aclose()
        pipes = [
            Pipeline(
                await trio.open_tcp_stream(server.host, server.port), check, is_broker
            )
            for _ in range(LOAD_CONNECTIONS)
        ]
        for pipe in pipes:
            pipe.next_correlation = 1
        groups = frames.groups(1, requests, LOAD_PER_GROUP)
        peak, samples = 0, 0
        try:
            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for pipe in pipes:
                    nursery.start_soon(pipe.drive, groups, LOAD_WINDOW, True)
                while any(p.responses < requests for p in pipes):
                    peak, samples = max(peak, _rss(server)), samples + 1
                    await trio.sleep(SAMPLE_SECONDS)  # a sampling period, not a wait
            seconds = time.perf_counter() - started
            peak, samples = max(peak, _rss(server)), samples + 1
        finally:
            for pipe in pipes:
                await pipe.stream.aclose()
    return Memory(
        idle_kib=idle,
        connections=len(streams),
        with_connections_kib=with_connections,
        load_requests=sum(p.responses for p in pipes),
        load_seconds=seconds,
        load_peak_kib=peak,
        load_samples=samples,
    )


def _one_repeat(
    scratch: Path, requests: int, server_cpus: set[int] | None
) -> tuple[Memory, Memory]:
    frames = ProduceFrames.of(produce_request(TOPIC, record_batch(1), acks=1))
    with spawned_broker(scratch / "data", server_cpus) as broker:
        trio.run(create_topic, broker.host, broker.port, TOPIC)
        first = trio.run(learn_produce_check, broker.host, broker.port, frames, TOPIC)
        check = ProduceCheck.learn(first, TOPIC)
        on_broker = trio.run(_measure, broker, frames, check, requests, True)
    argv = (*ECHO_ARGV, "--response-bytes", str(len(first) + 4))
    with spawned_server(argv, server_cpus) as echo:
        on_echo = trio.run(_measure, echo, frames, check, requests, False)
    return on_broker, on_echo


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    repeats = 1 if quick else REPEATS
    requests = 128 if quick else 1_024  # per load connection
    open_files = raise_open_files_limit()
    if open_files < IDLE_CONNECTIONS + 100:
        raise BenchError(
            f"RLIMIT_NOFILE's hard limit is {open_files}: too few for the run"
        )
    broker_runs: list[Memory] = []
    echo_runs: list[Memory] = []
    with pinned_client() as pinning:
        for i in range(repeats):
            with tempfile.TemporaryDirectory(
                prefix="minikafka-bench-memory-"
            ) as scratch:
                on_broker, on_echo = _one_repeat(
                    Path(scratch), requests, pinning.servers
                )
            broker_runs.append(on_broker)
            echo_runs.append(on_echo)
            print(
                f"  repeat {i + 1}/{repeats}: broker idle {on_broker.idle_kib / 1024:.1f} MiB, "
                f"{on_broker.per_connection_kib:.1f} KiB/connection, "
                f"peak under load {on_broker.load_peak_kib / 1024:.1f} MiB",
                flush=True,
            )
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "units": "KiB (VmRSS)",
        "rlimit_nofile": open_files,
        "servers": {
            "broker": " ".join(["python", *broker_argv(Path("<scratch>/data"))[1:]]),
            "ceiling": " ".join(["python", *ECHO_ARGV[1:], "--response-bytes", "N"]),
        },
        "load": {
            "connections": LOAD_CONNECTIONS,
            "requests_per_connection": requests,
            "in_flight": LOAD_WINDOW,
            "per_send_all": LOAD_PER_GROUP,
        },
        "cpu_pinning": pinning.document,
        "machine": machine_facts(),
        "broker_runs": [
            {**attrs.asdict(m), "per_connection_kib": m.per_connection_kib}
            for m in broker_runs
        ],
        "ceiling_runs": [
            {**attrs.asdict(m), "per_connection_kib": m.per_connection_kib}
            for m in echo_runs
        ],
    }
    return Report(
        NAME, document, _table(broker_runs, echo_runs), _chart(broker_runs, echo_runs)
    )


def _median(runs: Sequence[Memory], figure: str) -> float:
    return statistics.median(float(getattr(m, figure)) for m in runs)


_FIGURES = (
    ("idle", "RSS MiB", "idle_kib", 1 / 1024),
    (
        f"{IDLE_CONNECTIONS:,} idle connections (ApiVersions each)",
        "RSS MiB",
        "with_connections_kib",
        1 / 1024,
    ),
    ("", "KiB per connection", "per_connection_kib", 1.0),
    (
        f"small produce: {LOAD_CONNECTIONS} conns x {LOAD_WINDOW} in flight, 1 x 100 B, acks=1",
        "peak RSS MiB",
        "load_peak_kib",
        1 / 1024,
    ),
)


def _table(broker: Sequence[Memory], echo: Sequence[Memory]) -> str:
    header = [
        "scenario",
        "figure",
        "broker",
        "ceiling (bench.echo_server)",
        "broker / ceiling",
    ]
    rows: list[list[str]] = []
    for title, figure, field, scale in _FIGURES:
        b, c = _median(broker, field) * scale, _median(echo, field) * scale
        spread = ""
        if len(broker) > 1:
            values = [float(getattr(m, field)) * scale for m in broker]
            spread = f" ({min(values):.1f}-{max(values):.1f})"
        rows.append(
            [
                title,
                f"{figure} (median of {len(broker)})",
                f"{b:.1f}{spread}",
                f"{c:.1f}",
                f"{b / c:.3g}x" if c > 0 else "-",
            ]
        )
    rate = [m.load_requests / m.load_seconds for m in broker]
    rows.append(
        [
            "",
            "load req/s",
            f"{statistics.median(rate):,.0f}",
            f"{statistics.median(m.load_requests / m.load_seconds for m in echo):,.0f}",
            "",
        ]
    )
    return markdown_table(header, rows)


def _chart(broker: Sequence[Memory], echo: Sequence[Memory]) -> str:
    """The RSS figures (the per-connection one, in KiB, is in the table only)."""
    return bar_chart_svg(
        "minikafka broker memory (VmRSS) vs a bare trio echo server, median of repeats",
        "MiB",
        [
            (
                title,
                [
                    ("broker", _median(broker, field) * scale),
                    ("ceiling (bench.echo_server)", _median(echo, field) * scale),
                ],
            )
            for title, _figure, field, scale in _FIGURES
            if title
        ],
    )
