"""``python -m bench security_cost``: what TLS and SASL cost one broker.

One broker (``python -m minikafka.broker broker``) with four client listeners: PLAINTEXT,
SSL, SASL_SSL (SCRAM-SHA-512) and SASL_PLAINTEXT (PLAIN), the TLS ones with a throw-away
CA's certificate (``minikafka.net.testing.make_pki``), the users configured in each
listener's JAAS line. The client is raw trio sockets (``trio.SSLStream`` for TLS),
authenticating as Kafka's clients do: SaslHandshake v1, then SaslAuthenticate v1 rounds
(``minikafka.security.ScramSaslClient`` for SCRAM). Measured, the listeners alternating:

- large produce: one connection, 1 MiB Produce v8 requests (acks=1) one at a time,
  MB/s; each listener's against PLAINTEXT's, as a ratio;
- small produce: one connection, one 100 B record per Produce, one at a time, p50 and
  p99 of the request's round trip; as ratios to PLAINTEXT's;
- handshakes: new connections opened one after another, each authenticated (TLS
  handshake, SASL exchange) and asked one ApiVersions, per second; the client's share
  (its TLS handshake, its own 4096 PBKDF2 rounds for SCRAM) is in the same process and
  counts in the rate, not in the broker's CPU per handshake.

And for each, the broker's CPU time (``/proc``): per MiB, per small request, per
handshake.

Every Produce response is checked (error NONE, base offsets stepping by the batch's
records). The figures are the median of the rounds, and the machine's load is in the
JSON: other processes slow every listener alike, so the ratios say more than the rates.
"""

from __future__ import annotations

import os
import ssl
import statistics
import tempfile
import time
from pathlib import Path

import trio
from kio.schema.api_versions.v2.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v8.response import ProduceResponse
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_authenticate.v1.response import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.broker.testing import free_ports
from minikafka.net import FrameDecoder, decode_response_body
from minikafka.net.testing import ThrowawayPki, make_pki, request_frame
from minikafka.security import SCRAM_SHA_512, ScramSaslClient

from ._common import (
    BenchError,
    Report,
    ServerProcess,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    now_utc,
    percentile,
    report_header,
)
from ._wire import (
    CLIENT_ID,
    MEASUREMENT_DEADLINE,
    PRODUCE_VERSION,
    ProduceFrames,
    batch_of_about,
    create_topic,
    produce_request,
    record_batch,
    spawned_broker,
)

NAME = "security_cost"
LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT")
MECHANISM = {"SASL_SSL": "SCRAM-SHA-512", "SASL_PLAINTEXT": "PLAIN"}
USER, PASSWORD = "bench", "bench-secret"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
LARGE_BYTES = 1 << 20

Stream = trio.SocketStream | trio.SSLStream[trio.SocketStream]


def _overrides(ports: dict[str, int], pki: ThrowawayPki) -> list[str]:
    users = f'user_{USER}="{PASSWORD}"'
    return [
        "listeners=" + ",".join(f"{n}://127.0.0.1:{ports[n]}" for n in LISTENERS),
        "listener.security.protocol.map=" + ",".join(f"{n}:{n}" for n in LISTENERS),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
        f"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={SCRAM_MODULE} "
        f"required {users};",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} "
        f"required {users};",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={pki.server.keystore}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={pki.ca}",
    ]


class Connection:
    """One authenticated connection; requests one at a time."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.decoder = FrameDecoder()
        self.correlation = 0

    async def frame(self) -> bytes:
        while (frame := self.decoder.next_frame()) is None:
            data = await self.stream.receive_some(1 << 16)
            if not data:
                raise BenchError("the broker closed the connection")
            self.decoder.feed(data)
        return bytes(frame)

    async def call(self, body: RequestPayload) -> ResponsePayload:
        self.correlation += 1
        await self.stream.send_all(request_frame(body, self.correlation, CLIENT_ID))
        frame = await self.frame()
        return decode_response_body(
            int(body.__api_key__), int(body.__version__), frame, 4
        )

    async def authenticate(self, mechanism: str) -> None:
        shake = await self.call(SaslHandshakeRequest(mechanism=mechanism))
        assert isinstance(shake, SaslHandshakeResponse)
        if shake.error_code != ErrorCode.none:
            raise BenchError(f"SaslHandshake {mechanism}: {shake.error_code.name}")
        if mechanism == "PLAIN":
            await self._round(f"\0{USER}\0{PASSWORD}".encode())
            return
        client = ScramSaslClient(SCRAM_SHA_512, USER, PASSWORD)
        challenge = await self._round(client.first_message())
        client.evaluate_challenge(
            await self._round(client.evaluate_challenge(challenge))
        )
        if not client.complete:
            raise BenchError("the SCRAM exchange did not complete")

    async def _round(self, token: bytes) -> bytes:
        answer = await self.call(SaslAuthenticateRequest(auth_bytes=token))
        assert isinstance(answer, SaslAuthenticateResponse)
        if answer.error_code != ErrorCode.none:
            raise BenchError(f"SaslAuthenticate: {answer.error_message}")
        return answer.auth_bytes


async def connect(listener: str, port: int, pki: ThrowawayPki) -> Connection:
    """A connection to ``listener``, TLS handshake and SASL exchange done."""
    sock = await trio.open_tcp_stream("127.0.0.1", port)
    stream: Stream = sock
    if listener in ("SSL", "SASL_SSL"):
        context = _client_context(pki)
        stream = trio.SSLStream(sock, context, server_hostname="localhost")
        await stream.do_handshake()
    connection = Connection(stream)
    if listener in MECHANISM:
        await connection.authenticate(MECHANISM[listener])
    return connection


_CONTEXTS: dict[Path, ssl.SSLContext] = {}


def _client_context(pki: ThrowawayPki) -> ssl.SSLContext:
    """One context per CA: a client reuses its context, as librdkafka and Java do."""
    context = _CONTEXTS.get(pki.ca)
    if context is None:
        context = _CONTEXTS[pki.ca] = ssl.create_default_context(cafile=str(pki.ca))
    return context


async def _produce(
    connection: Connection, frames: ProduceFrames, count: int, records: int
) -> list[float]:
    """``count`` Produce requests one at a time (after one untimed): each one's round
    trip, in seconds; every answer checked."""
    last = await _send_produce(connection, frames)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        offset = await _send_produce(connection, frames)
        times.append(time.perf_counter() - start)
        if offset != last + records:
            raise BenchError(f"base offset {offset} after {last}: lost or doubled")
        last = offset
    return times


async def _send_produce(connection: Connection, frames: ProduceFrames) -> int:
    """One Produce; its base offset."""
    connection.correlation += 1
    await connection.stream.send_all(frames.frame(connection.correlation))
    body = decode_response_body(0, PRODUCE_VERSION, await connection.frame(), 4)
    assert isinstance(body, ProduceResponse)
    partition = body.responses[0].partition_responses[0]
    if partition.error_code != ErrorCode.none:
        raise BenchError(f"Produce answered {partition.error_code.name}")
    return int(partition.base_offset)


async def _handshakes(listener: str, port: int, pki: ThrowawayPki, count: int) -> float:
    """New connections per second, each authenticated and asked one ApiVersions."""
    start = time.perf_counter()
    for _ in range(count):
        connection = await connect(listener, port, pki)
        answer = await connection.call(ApiVersionsRequest())
        if getattr(answer, "error_code", None) != ErrorCode.none:
            raise BenchError(f"ApiVersions on {listener}: {answer}")
        await connection.stream.aclose()
    return count / (time.perf_counter() - start)


async def _measure(
    ports: dict[str, int],
    pki: ThrowawayPki,
    rounds: int,
    sizes: dict[str, int],
    broker: ServerProcess,
) -> dict[str, dict[str, list[float]]]:
    """Per listener: each round's large-produce MB/s, small-produce p50 and p99 (ms),
    handshakes per second, and the broker's CPU for each (per MiB, per small request,
    per handshake: what load elsewhere on the machine disturbs least); the listeners
    alternate within each round."""
    large = batch_of_about(LARGE_BYTES)
    large_records, small_records = _records(large), 1
    frames: dict[tuple[str, str], ProduceFrames] = {}
    for listener in LISTENERS:
        topic = f"security-cost-{listener.lower()}"
        await create_topic("127.0.0.1", ports["PLAINTEXT"], topic)
        frames[listener, "large"] = ProduceFrames.of(produce_request(topic, large, 1))
        frames[listener, "small"] = ProduceFrames.of(
            produce_request(topic, record_batch(small_records), 1)
        )
    out: dict[str, dict[str, list[float]]] = {
        n: {
            "large_mb_s": [],
            "small_p50_ms": [],
            "small_p99_ms": [],
            "handshakes_s": [],
            "large_cpu_ms_per_mib": [],
            "small_cpu_us": [],
            "handshake_cpu_ms": [],
        }
        for n in LISTENERS
    }
    for _ in range(rounds):
        for listener in LISTENERS:
            port, figures = ports[listener], out[listener]
            with trio.fail_after(MEASUREMENT_DEADLINE):
                connection = await connect(listener, port, pki)
                cpu = _cpu(broker)
                times = await _produce(
                    connection, frames[listener, "large"], sizes["large"], large_records
                )
                mib = len(large) * len(times) / (1 << 20)
                figures["large_cpu_ms_per_mib"].append(
                    (_cpu(broker) - cpu) * 1e3 / (mib + len(large) / (1 << 20))
                )
                figures["large_mb_s"].append(len(large) * len(times) / sum(times) / 1e6)
                cpu = _cpu(broker)
                times = sorted(
                    await _produce(
                        connection, frames[listener, "small"], sizes["small"], 1
                    )
                )
                figures["small_cpu_us"].append(
                    (_cpu(broker) - cpu) * 1e6 / (len(times) + 1)
                )
                figures["small_p50_ms"].append(percentile(times, 50) * 1e3)
                figures["small_p99_ms"].append(percentile(times, 99) * 1e3)
                await connection.stream.aclose()
                cpu = _cpu(broker)
                figures["handshakes_s"].append(
                    await _handshakes(listener, port, pki, sizes["handshakes"])
                )
                figures["handshake_cpu_ms"].append(
                    (_cpu(broker) - cpu) * 1e3 / sizes["handshakes"]
                )
    return out


def _cpu(broker: ServerProcess) -> float:
    seconds = broker.cpu_seconds()
    if seconds is None:
        raise BenchError("cannot read the broker's CPU time (/proc)")
    return seconds


def _records(batch: bytes) -> int:
    # A v2 record batch holds its record count at byte 57 (int32, big-endian).
    return int.from_bytes(batch[57:61], "big")


def run(quick: bool) -> Report:
    rounds = 1 if quick else 3
    sizes = (
        {"large": 8, "small": 100, "handshakes": 10}
        if quick
        else {"large": 64, "small": 2000, "handshakes": 200}
    )
    started, clock = now_utc(), time.perf_counter()
    busy_before, wall_before = machine_busy_seconds(), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-security-") as scratch:
        root = Path(scratch)
        pki = make_pki(root / "pki", clients=())
        ports = dict(zip(LISTENERS, free_ports(len(LISTENERS)), strict=True))
        (root / "data").mkdir()
        with spawned_broker(root / "data", None, *_overrides(ports, pki)) as broker:
            figures = trio.run(_measure, ports, pki, rounds, sizes, broker)
    busy_after, wall = machine_busy_seconds(), time.monotonic() - wall_before
    medians = {
        n: {k: statistics.median(v) for k, v in f.items()} for n, f in figures.items()
    }
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, rounds, started, clock),
        "machine": machine_facts(),
        "machine_busy_cores": None
        if busy_before is None or busy_after is None
        else round((busy_after - busy_before) / wall, 2),
        "load_average": os.getloadavg(),
        "sizes": sizes,
        "runs": figures,
        "medians": medians,
    }
    return Report(NAME, document, _table(medians))


def _table(medians: dict[str, dict[str, float]]) -> str:
    base = medians["PLAINTEXT"]

    def cell(m: dict[str, float], key: str, spec: str) -> str:
        # /proc counts CPU in clock ticks (10 ms): a quick run may see none.
        ratio = f"{m[key] / base[key]:.2f}x" if base[key] else "-"
        return f"{m[key]:{spec}} ({ratio})"

    rows = []
    for listener in LISTENERS:
        m = medians[listener]
        name = listener + (f" ({MECHANISM[listener]})" if listener in MECHANISM else "")
        rows.append(
            [
                name,
                cell(m, "large_mb_s", ",.1f"),
                cell(m, "large_cpu_ms_per_mib", ".2f"),
                cell(m, "small_p50_ms", ".2f"),
                cell(m, "small_p99_ms", ".2f"),
                cell(m, "small_cpu_us", ",.0f"),
                cell(m, "handshakes_s", ",.0f"),
                cell(m, "handshake_cpu_ms", ".2f"),
            ]
        )
    header = [
        "listener (x PLAINTEXT)",
        "large produce MB/s",
        "broker CPU ms/MiB",
        "small p50 ms",
        "small p99 ms",
        "broker CPU µs/small",
        "handshakes/s",
        "broker CPU ms/handshake",
    ]
    return markdown_table(header, rows)
