"""The network layer's Reactor against a bare trio loopback server, in one run.

Two servers, each in its own process on 127.0.0.1, driven by the same client with the
same bytes:

- ``reactor``: ``python -m minikafka.net --port 0 --quiet``, the Reactor as shipped
  (Acceptor, 3 Processors, a RequestChannel of 500, 8 handler tasks, ``DemoApis``),
  with Kafka's one-request-in-flight-per-connection muting;
- ``ceiling``: ``python -m bench.echo_server``, which frames the requests and answers
  each with a fixed frame of the same size as the Reactor's answer, and nothing else.

Two scenarios, each with a warm-up the figures leave out:

- ``latency``: one connection, one ApiVersions v3 request at a time: the round trip of
  a single request through every stage, with nothing queued ahead of it;
- ``pipelined``: 16 connections, each writing 32 Metadata v9 requests in one
  ``send_all`` and reading the 32 responses before writing the next 32: throughput,
  with the latency of a request that waits behind those ahead of it on its connection.

The client is raw trio sockets with frames encoded before the clock starts
(``minikafka.net.testing.request_frame``, correlation ids patched in) and a
``FrameDecoder``; it checks every response's correlation id. A request's latency is
from just before its batch's ``send_all`` to the ``receive_some`` that completed its
response. Process CPU time over the measured interval shows which side was saturated.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from collections.abc import Sequence

import attrs
import trio
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.static.protocol import RequestPayload

from minikafka.net import FrameDecoder
from minikafka.net.testing import METADATA_V9, request_frame

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

NAME = "net_reactor"

REACTOR_ARGV = (sys.executable, "-m", "minikafka.net", "--port", "0", "--quiet")
CEILING_ARGV = (sys.executable, "-m", "bench.echo_server", "--port", "0")
CLIENT_ID = "bench"
RECEIVE_BYTES = 65536
REPEATS = 3
"""Runs of each scenario on each server (``--quick``: one); the median run is quoted."""
BUSY_MACHINE_PERCENT = 20.0
"""Other processes' CPU use during a run above which the table carries a warning."""
# seconds; only so a wedged server fails the run, never a check
MEASUREMENT_DEADLINE = 300.0

_CORRELATION = struct.Struct(">i")
# in a whole request frame: size (4), api_key (2), api_version (2)
_CORRELATION_OFFSET = 8


@attrs.frozen
class Scenario:
    name: str
    title: str
    body: RequestPayload
    connections: int
    in_flight: int
    """Requests per connection written in one ``send_all``, all answered before the next."""
    warmup_rounds: int
    rounds: int
    """Timed writes per connection against the Reactor."""
    ceiling_rounds: int
    """Timed writes per connection against the ceiling: more, as it is far faster, so that
    its run lasts long enough to time (and to read CPU use from 10 ms ticks)."""

    @property
    def api(self) -> str:
        name = type(self.body).__name__.removesuffix("Request")
        return f"{name} v{int(self.body.__version__)}"

    def requests(self, rounds: int) -> int:
        return self.connections * self.in_flight * rounds

    def batches(self, rounds: int) -> list[bytes]:
        """Every write one connection makes, warm-up first; correlation ids count up from 0.

        Encoded once through the real request encoder, then copied with each
        correlation id patched in, so the client spends nothing on encoding while timed.
        """
        template = request_frame(self.body, 0, CLIENT_ID)
        if request_frame(self.body, 12345, CLIENT_ID) != _with_correlation(
            template, 12345
        ):
            raise BenchError(
                "the correlation id is not where the request header puts it"
            )
        correlation = 0
        out: list[bytes] = []
        for _ in range(self.warmup_rounds + rounds):
            frames = []
            for _ in range(self.in_flight):
                frames.append(_with_correlation(template, correlation))
                correlation += 1
            out.append(b"".join(frames))
        return out


def _with_correlation(frame: bytes, correlation_id: int) -> bytes:
    patched = bytearray(frame)
    _CORRELATION.pack_into(patched, _CORRELATION_OFFSET, correlation_id)
    return bytes(patched)


API_VERSIONS_V3 = ApiVersionsRequest(
    client_software_name="minikafka-bench", client_software_version="0.1.0"
)


def scenarios(quick: bool) -> list[Scenario]:
    return [
        Scenario(
            name="latency",
            title="latency: 1 conn x 1 in flight, ApiVersions v3",
            body=API_VERSIONS_V3,
            connections=1,
            in_flight=1,
            warmup_rounds=50 if quick else 500,
            rounds=1_000 if quick else 10_000,
            ceiling_rounds=1_000 if quick else 10_000,
        ),
        Scenario(
            name="pipelined",
            title="pipelined: 16 conns x 32 in flight, Metadata v9",
            body=METADATA_V9,
            connections=16,
            in_flight=32,
            warmup_rounds=1 if quick else 2,
            rounds=6 if quick else 100,
            ceiling_rounds=100 if quick else 1_000,
        ),
    ]


# --- the client ------------------------------------------------------------------------


@attrs.define(eq=False)
class _Connection:
    """One client connection: writes batches, reads and checks their responses."""

    stream: trio.SocketStream
    decoder: FrameDecoder = attrs.field(factory=FrameDecoder)
    next_correlation: int = 0
    latencies: list[float] = attrs.field(factory=list)
    responses: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0

    async def drive(
        self, batches: Sequence[bytes], per_batch: int, record: bool
    ) -> None:
        clock = time.perf_counter
        for batch in batches:
            sent = clock()
            await self.stream.send_all(batch)
            if record:
                self.bytes_sent += len(batch)
            remaining = per_batch
            while remaining > 0:
                data = await self.stream.receive_some(RECEIVE_BYTES)
                if not data:
                    raise BenchError("the server closed a connection mid-run")
                arrived = clock()
                self.decoder.feed(data)
                while (frame := self.decoder.next_frame()) is not None:
                    (correlation,) = _CORRELATION.unpack_from(frame)
                    if correlation != self.next_correlation:
                        raise BenchError(
                            f"response for correlation id {correlation}, "
                            f"expected {self.next_correlation}"
                        )
                    self.next_correlation += 1
                    remaining -= 1
                    if record:
                        self.responses += 1
                        self.bytes_received += len(frame) + 4
                        self.latencies.append(arrived - sent)


@attrs.frozen
class Measurement:
    server: str
    requests: int
    seconds: float
    requests_per_s: float
    latency: dict[str, float]
    bytes_sent: int
    bytes_received: int
    mb_per_s: float
    """Request plus response bytes (both directions), per second, in 10^6 bytes."""
    response_frame_bytes: float
    server_cpu_percent: float | None
    client_cpu_percent: float
    other_cpu_percent: float | None
    """CPU the rest of the machine used meanwhile: high means the figures are disturbed."""


async def _measure(
    server: ServerProcess, label: str, scenario: Scenario, rounds: int
) -> Measurement:
    batches = scenario.batches(rounds)
    warmup, timed = batches[: scenario.warmup_rounds], batches[scenario.warmup_rounds :]
    connections: list[_Connection] = []
    with trio.fail_after(MEASUREMENT_DEADLINE):
        try:
            for _ in range(scenario.connections):
                stream = await trio.open_tcp_stream(server.host, server.port)
                connections.append(_Connection(stream))
            async with trio.open_nursery() as nursery:
                for connection in connections:
                    nursery.start_soon(
                        connection.drive, warmup, scenario.in_flight, False
                    )
            meter = CpuMeter.start(server.cpu_seconds)
            async with trio.open_nursery() as nursery:
                for connection in connections:
                    nursery.start_soon(
                        connection.drive, timed, scenario.in_flight, True
                    )
            use = meter.stop()
        finally:
            for connection in connections:
                await connection.stream.aclose()
    seconds = use.seconds
    responses = sum(c.responses for c in connections)
    if responses != scenario.requests(rounds):
        raise BenchError(
            f"{responses} responses to {scenario.requests(rounds)} requests"
        )
    sent = sum(c.bytes_sent for c in connections)
    received = sum(c.bytes_received for c in connections)
    latencies = [x for c in connections for x in c.latencies]
    return Measurement(
        server=label,
        requests=responses,
        seconds=seconds,
        requests_per_s=responses / seconds,
        latency=latency_summary(latencies),
        bytes_sent=sent,
        bytes_received=received,
        mb_per_s=(sent + received) / seconds / 1e6,
        response_frame_bytes=received / responses,
        server_cpu_percent=use.server_percent,
        client_cpu_percent=use.client_percent,
        other_cpu_percent=use.other_percent,
    )


# --- the run ---------------------------------------------------------------------------


@attrs.frozen
class Outcome:
    """A scenario's repeated runs on both servers; the figures quoted are the median run's."""

    scenario: Scenario
    reactor_runs: list[Measurement]
    ceiling_runs: list[Measurement]

    @property
    def reactor(self) -> Measurement:
        return _median_run(self.reactor_runs)

    @property
    def ceiling(self) -> Measurement:
        return _median_run(self.ceiling_runs)


def _median_run(runs: Sequence[Measurement]) -> Measurement:
    return median_run(runs, lambda m: m.requests_per_s)


def run(quick: bool = False) -> Report:
    """Every scenario, ``REPEATS`` times on each server, alternating the two so that a
    burst of load from elsewhere on the machine does not land on one server only."""
    started, clock = now_utc(), time.perf_counter()
    repeats = 1 if quick else REPEATS
    with pinned_client() as pinning:
        outcomes = _run_scenarios(scenarios(quick), repeats, pinning.servers)
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, repeats, started, clock),
        "servers": {
            "reactor": " ".join(["python", *REACTOR_ARGV[1:]]),
            "ceiling": " ".join(["python", *CEILING_ARGV[1:], "--response-bytes", "N"]),
        },
        "cpu_pinning": pinning.document,
        "machine": machine_facts(),
        "scenarios": [_scenario_document(outcome) for outcome in outcomes],
    }
    return Report(NAME, document, _table(outcomes), _chart(outcomes))


def _run_scenarios(
    scenarios: Sequence[Scenario], repeats: int, server_cpus: set[int] | None
) -> list[Outcome]:
    outcomes: list[Outcome] = []
    with spawned_server(REACTOR_ARGV, server_cpus) as reactor:
        for scenario in scenarios:
            reactor_runs = [
                trio.run(_measure, reactor, "reactor", scenario, scenario.rounds)
            ]
            # The ceiling answers with frames as large as the Reactor's, so bytes/s compare.
            response_bytes = round(reactor_runs[0].response_frame_bytes)
            argv = (*CEILING_ARGV, "--response-bytes", str(response_bytes))
            with spawned_server(argv, server_cpus) as echo:
                ceiling_runs: list[Measurement] = []
                for i in range(repeats):
                    if i > 0:
                        reactor_runs.append(
                            trio.run(
                                _measure, reactor, "reactor", scenario, scenario.rounds
                            )
                        )
                    ceiling_runs.append(
                        trio.run(
                            _measure, echo, "ceiling", scenario, scenario.ceiling_rounds
                        )
                    )
            outcomes.append(Outcome(scenario, reactor_runs, ceiling_runs))
    return outcomes


def _scenario_document(outcome: Outcome) -> dict[str, object]:
    scenario = outcome.scenario
    return {
        "name": scenario.name,
        "title": scenario.title,
        "api": scenario.api,
        "connections": scenario.connections,
        "in_flight_per_connection": scenario.in_flight,
        "warmup_requests_per_run": scenario.requests(scenario.warmup_rounds),
        "request_frame_bytes": len(request_frame(scenario.body, 0, CLIENT_ID)),
        "response_frame_bytes": outcome.reactor.response_frame_bytes,
        "reactor": attrs.asdict(outcome.reactor),
        "ceiling": attrs.asdict(outcome.ceiling),
        "reactor_over_ceiling": _ratios(outcome.reactor, outcome.ceiling),
        "reactor_runs": [attrs.asdict(m) for m in outcome.reactor_runs],
        "ceiling_runs": [attrs.asdict(m) for m in outcome.ceiling_runs],
    }


def _ratios(reactor: Measurement, ceiling: Measurement) -> dict[str, float]:
    return {
        "requests_per_s": reactor.requests_per_s / ceiling.requests_per_s,
        "p50_latency": reactor.latency["p50_ms"] / ceiling.latency["p50_ms"],
        "p99_latency": reactor.latency["p99_ms"] / ceiling.latency["p99_ms"],
        "bytes_per_s": reactor.mb_per_s / ceiling.mb_per_s,
    }


def _table(outcomes: Sequence[Outcome]) -> str:
    header = [
        "scenario",
        "server",
        "requests",
        "seconds",
        "req/s",
        "req/s range",
        "p50 ms",
        "p99 ms",
        "MB/s in+out",
        "server CPU",
        "client CPU",
        "other CPU",
    ]
    rows: list[list[str]] = []
    for outcome in outcomes:
        reactor, ceiling = outcome.reactor, outcome.ceiling
        for title, name, m, runs in (
            (outcome.scenario.title, "reactor", reactor, outcome.reactor_runs),
            ("", "ceiling (bare trio echo)", ceiling, outcome.ceiling_runs),
        ):
            rates = [run.requests_per_s for run in runs]
            rows.append(
                [
                    title,
                    name,
                    f"{m.requests:,}",
                    f"{m.seconds:.2f}",
                    f"{m.requests_per_s:,.0f}",
                    f"{min(rates):,.0f}-{max(rates):,.0f}" if len(rates) > 1 else "",
                    f"{m.latency['p50_ms']:.3f}",
                    f"{m.latency['p99_ms']:.3f}",
                    f"{m.mb_per_s:.2f}",
                    _format_percent(m.server_cpu_percent),
                    _format_percent(m.client_cpu_percent),
                    _format_percent(m.other_cpu_percent),
                ]
            )
        ratios = _ratios(reactor, ceiling)
        rows.append(
            [
                "",
                "reactor / ceiling",
                "",
                "",
                f"{ratios['requests_per_s']:.3g}x",
                "",
                f"{ratios['p50_latency']:.3g}x",
                f"{ratios['p99_latency']:.3g}x",
                f"{ratios['bytes_per_s']:.3g}x",
                "",
                "",
                "",
            ]
        )
    table = markdown_table(header, rows)
    busiest = max(
        (
            m.other_cpu_percent or 0.0
            for o in outcomes
            for m in (*o.reactor_runs, *o.ceiling_runs)
        ),
        default=0.0,
    )
    if busiest > BUSY_MACHINE_PERCENT:
        table += (
            f"\nwarning: other processes used up to {busiest:.0f}% CPU during the runs "
            f"(of {100 * (os.cpu_count() or 1)}%); these figures are disturbed, rerun when idle."
        )
    return table


def _format_percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _chart(outcomes: Sequence[Outcome]) -> str:
    return bar_chart_svg(
        "minikafka.net Reactor vs bare trio echo (127.0.0.1), median run",
        "req/s",
        [
            (
                outcome.scenario.title,
                [
                    ("reactor", outcome.reactor.requests_per_s),
                    ("ceiling (bare trio echo)", outcome.ceiling.requests_per_s),
                ],
            )
            for outcome in outcomes
        ],
    )
