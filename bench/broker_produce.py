"""The broker's produce path from raw sockets, small and large requests, each beside a ceiling.

The produce benchmarks. One broker, ``python -m minikafka.broker broker`` with its
defaults (KRaft combined mode, one node, data in a fresh temporary directory), and a
one-partition topic created first with CreateTopics. The client is raw trio sockets in
this process: every request frame is a Produce v8 with ``acks=1`` encoded once and
copied with its correlation id patched in before the clock starts, and every response
is checked (correlation id, length, error code NONE, and a base offset of its own: the
acknowledged produces must cover one contiguous range of offsets).

- ``small produce``: 16 connections, each writing its requests 16 to a ``send_all`` with
  up to 32 unanswered (the broker mutes a connection, one request at a time, so the
  window only keeps its socket fed); each request carries ONE record of 100 bytes in
  one record batch v2 (about 190 bytes a frame). Ceiling: ``bench.echo_server``, which
  frames the same requests and answers each with a frame as large as the broker's
  Produce response, and nothing else.
- ``large produce``: one connection, up to 4 requests unanswered, each carrying one
  uncompressed batch of 100-byte records just under 1 MiB (the broker's default
  ``message.max.bytes`` is 1 MiB + 12). Ceiling: ``bench.sink_server``, which reads each
  frame into place with ``recv_into`` and answers the same small frame: what it costs to
  take 1 MiB off a loopback socket in trio. The requests are written with one
  ``sendmsg`` each of their first 12 bytes (size, API key and version, correlation id)
  and the rest, shared, so that hundreds of them need no copy of a megabyte apiece.
- ``large kept``: the same requests against a second ceiling, ``bench.sink_server
  --append-to FILE``, which also appends every frame to a file (one ``write`` each, to
  the page cache, as the broker's log does); it gets as many requests as the broker,
  since the machine's page cache, not the loopback, is its limit. The broker's figure
  is measured again beside it.

Each ceiling gets ten times the broker's requests, since it is far faster: its run must
last long enough to time and to read CPU use from 10 ms ticks.

Each scenario runs ``REPEATS`` times on each server, alternating; the median run (by
rate) is quoted with the range. Server CPU is the server process's user+system time
over the timed interval (``/proc``), as a percentage of one core. With two or more CPUs
the client is pinned to the first half of them and the servers to the other half.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio

from ._common import (
    BenchError,
    CpuMeter,
    Report,
    ServerProcess,
    bar_chart_svg,
    latency_summary,
    machine_facts,
    markdown_table,
    median_run,
    now_utc,
    pinned_client,
    report_header,
    spawned_server,
)
from ._wire import (
    MEASUREMENT_DEADLINE,
    Pipeline,
    ProduceCheck,
    ProduceFrames,
    batch_of_about,
    broker_argv,
    check_offsets,
    create_topic,
    learn_produce_check,
    produce_request,
    record_batch,
    spawned_broker,
)

NAME = "broker_produce"
REPEATS = 3
"""Runs of each scenario on each server (``--quick``: one); the median run is quoted."""
ECHO_ARGV = (sys.executable, "-m", "bench.echo_server", "--port", "0")
SINK_ARGV = (sys.executable, "-m", "bench.sink_server", "--port", "0")
SCRATCH_FILE = "{scratch}/sink.log"
"""Where the appending sink writes: in the run's scratch directory, beside the broker's."""
LARGE_BATCH_LIMIT = 1024 * 1024
BUSY_MACHINE_PERCENT = 20.0
SMALL_GOAL_REQ_S = 25_000.0
LARGE_GOAL_RATIO = 0.5


@attrs.frozen
class Scenario:
    name: str
    title: str
    topic: str
    records_per_request: int
    connections: int
    per_group: int
    """Requests written in one ``send_all``."""
    window: int
    """Requests a connection may have unanswered."""
    warmup: int
    """Untimed requests per connection before each run."""
    requests: int
    """Timed requests per connection against the broker."""
    ceiling_requests: int
    """Timed requests per connection against the ceiling."""
    ceiling: str
    ceiling_argv: tuple[str, ...]
    goal: str


def scenarios(quick: bool) -> list[Scenario]:
    small = Scenario(
        name="small",
        title="small produce: 16 conns x 32 in flight, 1 x 100 B record, acks=1",
        topic="bench-small-produce",
        records_per_request=1,
        connections=16,
        per_group=16,
        window=32,
        warmup=64,
        requests=128 if quick else 2_048,
        ceiling_requests=1_280 if quick else 20_480,
        ceiling="ceiling (bench.echo_server)",
        ceiling_argv=ECHO_ARGV,
        goal=f">= {SMALL_GOAL_REQ_S:,.0f} req/s",
    )
    large = Scenario(
        name="large",
        title="large produce: 1 conn x 4 in flight, 1 MiB batch of 100 B records, acks=1",
        topic="bench-large-produce",
        records_per_request=0,  # filled in from the batch built
        connections=1,
        per_group=1,
        window=4,
        warmup=8,
        requests=48 if quick else 512,
        ceiling_requests=480 if quick else 5_120,
        ceiling="ceiling (bench.sink_server)",
        ceiling_argv=SINK_ARGV,
        goal=f">= {LARGE_GOAL_RATIO}x the ceiling",
    )
    # The same requests against a sink that also keeps the bytes: the page cache, not
    # loopback, is its limit, so it gets as many requests as the broker.
    kept = attrs.evolve(
        large,
        name="large kept",
        title="large produce, against a sink that appends each frame to a file",
        topic="bench-large-kept-produce",
        ceiling_requests=large.requests,
        ceiling="ceiling (bench.sink_server --append-to)",
        ceiling_argv=(*SINK_ARGV, "--append-to", SCRATCH_FILE),
        goal="(no goal: where the page cache puts the ceiling)",
    )
    return [small, large, kept]


@attrs.frozen
class Measurement:
    server: str
    requests: int
    seconds: float
    requests_per_s: float
    mb_per_s: float
    """Request bytes (size prefixes included) per second, 10^6 B."""
    latency: dict[str, float]
    server_cpu_percent: float | None
    client_cpu_percent: float
    other_cpu_percent: float | None


async def _measure(
    server: ServerProcess,
    label: str,
    scenario: Scenario,
    frames: ProduceFrames,
    check: ProduceCheck,
    timed_requests: int,
    is_broker: bool,
) -> Measurement:
    if scenario.per_group > 1:
        warmup = frames.groups(1, scenario.warmup, scenario.per_group)
        timed = frames.groups(1 + scenario.warmup, timed_requests, scenario.per_group)
    else:
        warmup = frames.split_groups(1, scenario.warmup)
        timed = frames.split_groups(1 + scenario.warmup, timed_requests)
    pipes: list[Pipeline] = []
    with trio.fail_after(MEASUREMENT_DEADLINE):
        try:
            for _ in range(scenario.connections):
                stream = await trio.open_tcp_stream(server.host, server.port)
                pipes.append(Pipeline(stream, check, collect_offsets=is_broker))
            for pipe in pipes:
                # correlation id 0 went to learn_produce_check
                pipe.next_correlation = 1
            async with trio.open_nursery() as nursery:
                for pipe in pipes:
                    nursery.start_soon(pipe.drive, warmup, scenario.window, False)
            meter = CpuMeter.start(server.cpu_seconds)
            async with trio.open_nursery() as nursery:
                for pipe in pipes:
                    nursery.start_soon(pipe.drive, timed, scenario.window, True)
            use = meter.stop()
        finally:
            for pipe in pipes:
                await pipe.stream.aclose()
    seconds = use.seconds
    responses = sum(p.responses for p in pipes)
    if responses != timed_requests * scenario.connections:
        raise BenchError(
            f"{responses} responses to {timed_requests * scenario.connections}"
        )
    if is_broker:
        check_offsets(
            [o for p in pipes for o in p.base_offsets], scenario.records_per_request
        )
    return Measurement(
        server=label,
        requests=responses,
        seconds=seconds,
        requests_per_s=responses / seconds,
        mb_per_s=sum(p.bytes_sent for p in pipes) / seconds / 1e6,
        latency=latency_summary([x for p in pipes for x in p.latencies]),
        server_cpu_percent=use.server_percent,
        client_cpu_percent=use.client_percent,
        other_cpu_percent=use.other_percent,
    )


@attrs.frozen
class Outcome:
    scenario: Scenario
    request_frame_bytes: int
    response_frame_bytes: int
    broker_runs: list[Measurement]
    ceiling_runs: list[Measurement]

    @property
    def broker(self) -> Measurement:
        return _median_run(self.broker_runs)

    @property
    def ceiling(self) -> Measurement:
        return _median_run(self.ceiling_runs)


def _median_run(runs: Sequence[Measurement]) -> Measurement:
    return median_run(runs, lambda m: m.requests_per_s)


def _run_scenario(
    broker: ServerProcess,
    scenario: Scenario,
    repeats: int,
    server_cpus: set[int] | None,
    scratch: str,
) -> Outcome:
    records = 1 if scenario.name == "small" else 0
    batch = record_batch(1) if records else batch_of_about(LARGE_BATCH_LIMIT)
    if not records:
        records = _records_in(batch)
        scenario = attrs.evolve(scenario, records_per_request=records)
    frames = ProduceFrames.of(produce_request(scenario.topic, batch, acks=1))
    trio.run(create_topic, broker.host, broker.port, scenario.topic)
    first = trio.run(
        learn_produce_check, broker.host, broker.port, frames, scenario.topic
    )
    check = ProduceCheck.learn(first, scenario.topic)
    response_bytes = len(first) + 4
    ceiling_argv = [a.replace("{scratch}", scratch) for a in scenario.ceiling_argv]
    argv = (*ceiling_argv, "--response-bytes", str(response_bytes))
    broker_runs: list[Measurement] = []
    ceiling_runs: list[Measurement] = []
    with spawned_server(argv, server_cpus) as ceiling:
        for _ in range(repeats):
            broker_runs.append(
                trio.run(
                    _measure,
                    broker,
                    "broker",
                    scenario,
                    frames,
                    check,
                    scenario.requests,
                    True,
                )
            )
            ceiling_runs.append(
                trio.run(
                    _measure,
                    ceiling,
                    scenario.ceiling,
                    scenario,
                    frames,
                    check,
                    scenario.ceiling_requests,
                    False,
                )
            )
            print(
                f"  {scenario.name:<6} broker {broker_runs[-1].requests_per_s:>10,.0f} req/s "
                f"{broker_runs[-1].mb_per_s:>8,.1f} MB/s   ceiling "
                f"{ceiling_runs[-1].requests_per_s:>10,.0f} req/s "
                f"{ceiling_runs[-1].mb_per_s:>8,.1f} MB/s",
                flush=True,
            )
    return Outcome(
        scenario, len(frames.template), response_bytes, broker_runs, ceiling_runs
    )


def _records_in(batch: bytes) -> int:
    # A v2 batch header keeps its record count in the last four of its 61 bytes.
    return int.from_bytes(batch[57:61], "big")


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    repeats = 1 if quick else REPEATS
    with (
        pinned_client() as pinning,
        tempfile.TemporaryDirectory(prefix="minikafka-bench-produce-") as scratch,
        spawned_broker(Path(scratch) / "data", pinning.servers) as broker,
    ):
        outcomes = [
            _run_scenario(broker, s, repeats, pinning.servers, scratch)
            for s in scenarios(quick)
        ]
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "servers": {
            "broker": " ".join(["python", *broker_argv(Path("<scratch>/data"))[1:]]),
            "echo": " ".join(["python", *ECHO_ARGV[1:], "--response-bytes", "N"]),
            "sink": " ".join(["python", *SINK_ARGV[1:], "--response-bytes", "N"]),
            "sink, appending": " ".join(
                [
                    "python",
                    *SINK_ARGV[1:],
                    "--append-to",
                    SCRATCH_FILE,
                    "--response-bytes",
                    "N",
                ]
            ),
        },
        "cpu_pinning": pinning.document,
        "machine": machine_facts(),
        "scenarios": [_document(o) for o in outcomes],
    }
    return Report(NAME, document, _table(outcomes), _chart(outcomes))


def _document(o: Outcome) -> dict[str, object]:
    return {
        **attrs.asdict(o.scenario),
        "request_frame_bytes": o.request_frame_bytes,
        "response_frame_bytes": o.response_frame_bytes,
        "broker": attrs.asdict(o.broker),
        "ceiling": attrs.asdict(o.ceiling),
        "broker_over_ceiling": {
            "requests_per_s": o.broker.requests_per_s / o.ceiling.requests_per_s,
            "mb_per_s": o.broker.mb_per_s / o.ceiling.mb_per_s,
        },
        "broker_runs": [attrs.asdict(m) for m in o.broker_runs],
        "ceiling_runs": [attrs.asdict(m) for m in o.ceiling_runs],
    }


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _range(runs: Sequence[Measurement], field: str, fmt: str) -> str:
    if len(runs) < 2:
        return ""
    values = [getattr(m, field) for m in runs]
    return f" ({format(min(values), fmt)}-{format(max(values), fmt)})"


def _table(outcomes: Sequence[Outcome]) -> str:
    header = [
        "scenario",
        "figure",
        "broker",
        "ceiling",
        "broker / ceiling",
        "goal",
    ]
    rows: list[list[str]] = []
    for o in outcomes:
        b, c = o.broker, o.ceiling
        main, fmt = (
            ("req/s", ",.0f") if o.scenario.name == "small" else ("MB/s", ",.1f")
        )
        field = "requests_per_s" if main == "req/s" else "mb_per_s"
        rows.append(
            [
                o.scenario.title,
                f"{main} (median of {len(o.broker_runs)})",
                format(getattr(b, field), fmt) + _range(o.broker_runs, field, fmt),
                format(getattr(c, field), fmt) + _range(o.ceiling_runs, field, fmt),
                f"{getattr(b, field) / getattr(c, field):.3g}x",
                o.scenario.goal,
            ]
        )
        other = (
            ("MB/s", "mb_per_s", ",.1f")
            if main == "req/s"
            else ("req/s", "requests_per_s", ",.0f")
        )
        rows.append(
            [
                "",
                other[0],
                format(getattr(b, other[1]), other[2]),
                format(getattr(c, other[1]), other[2]),
                "",
                "",
            ]
        )
        for pct in ("p50", "p99"):
            key = f"{pct}_ms"
            rows.append(
                [
                    "",
                    f"{pct} ms",
                    f"{b.latency[key]:.2f}",
                    f"{c.latency[key]:.2f}",
                    f"{b.latency[key] / c.latency[key]:.3g}x",
                    "",
                ]
            )
        for label, attr in (
            ("server CPU", "server_cpu_percent"),
            ("client CPU", "client_cpu_percent"),
        ):
            rows.append(
                [
                    "",
                    label,
                    _percent(getattr(b, attr)),
                    _percent(getattr(c, attr)),
                    "",
                    "",
                ]
            )
        rows.append(
            ["", "timed requests", f"{b.requests:,}", f"{c.requests:,}", "", ""]
        )
    table = markdown_table(header, rows)
    busiest = max(
        (
            m.other_cpu_percent or 0.0
            for o in outcomes
            for m in (*o.broker_runs, *o.ceiling_runs)
        ),
        default=0.0,
    )
    if busiest > BUSY_MACHINE_PERCENT:
        table += (
            f"\nwarning: other processes used up to {busiest:.0f}% CPU during the runs "
            f"(of {100 * (os.cpu_count() or 1)}%); these figures are disturbed, rerun when idle."
        )
    return table


def _chart(outcomes: Sequence[Outcome]) -> str:
    return bar_chart_svg(
        "minikafka broker produce vs bare trio ceilings (127.0.0.1), median run",
        "MB/s",
        [
            (
                o.scenario.title,
                [
                    ("broker", o.broker.mb_per_s),
                    (o.scenario.ceiling, o.ceiling.mb_per_s),
                ],
            )
            for o in outcomes
        ],
    )
