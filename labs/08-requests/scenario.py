"""Lab 8's scenario: one broker, producers with every ``acks``, consumers with and without
long polling, and a burst (ARCHITECTURE.md, "Traces and labs").

``run(out)`` starts ``minikafka broker`` (:class:`BrokerProcess`) with its data in
``out/data`` and its trace in ``out/traces``, creates the topic ``lab08`` (one partition)
and drives it with confluent-kafka (librdkafka), one client per setting so that a
request's ``client_id`` says which setting sent it:

1. **flush**: ``lab08-producer-acks0``, ``-acks1`` and ``-acksall`` take turns sending one
   small message and calling ``flush()``: one Produce request per message, paced at
   :data:`FLUSH_RATE` requests a second.
2. **batched**: the same producers queue :data:`BATCHED` messages each and flush once, so
   ``linger.ms`` packs many messages into each request.
3. **burst**: ``lab08-producer-burst`` (acks=1) sends one message per request as fast as it
   can for :data:`BURST_SECONDS`, starting on a whole second of the wall clock: the
   busiest second of the run, with its start and end recorded.
4. **consume**: ``lab08-consumer-wait500`` (``fetch.wait.max.ms=500``, long polling) and
   ``lab08-consumer-wait10`` (10 ms) read the topic from the beginning, then stay
   assigned for an idle tail of :data:`IDLE_SECONDS` with nothing to read, so their
   fetches wait out ``fetch.wait.max.ms`` in the broker's fetch purgatory.

The ground truth, ``out/truth.json``, is what the clients saw, recorded apart from the
broker's trace: each client's settings and librdkafka's own statistics (``stats_cb``: per
broker connection the requests sent per API, ``tx``/``txbytes``, ``rx``/``rxbytes``, and
the ``rtt`` windows), taken once every client is quiet, after its last request; the
delivery latency of every produced message, measured here from ``produce()`` to its
delivery callback; the message counts; and the wall-clock window of each phase.

Payload sizes come from ``random.Random(seed)``; ``scale`` multiplies the message counts
(the book runs a small scale, the tests 1.0). ``python scenario.py OUT`` runs it too.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from minikafka.broker.testing import BrokerProcess

TOPIC = "lab08"
STATS_INTERVAL_MS = 250
"""librdkafka's ``statistics.interval.ms``: how often each client reports its counters."""

FLUSH_MESSAGES = 120
"""Messages per producer in the flush phase (times ``scale``), one request each."""
FLUSH_RATE = 150.0
"""Produce requests per second in the flush phase, all producers together."""
BATCHED = 1500
"""Messages per producer in the batched phase (times ``scale``)."""
BURST_SECONDS = 1.0
IDLE_SECONDS = 3.5
"""How long the consumers stay assigned with nothing left to read."""
PHASE_GAP_SECONDS = 0.2
"""A pause between phases, so every request of one phase is over before the next starts."""

PRODUCERS = {
    "lab08-producer-acks0": "0",
    "lab08-producer-acks1": "1",
    "lab08-producer-acksall": "all",
}
BURST_PRODUCER = "lab08-producer-burst"
CONSUMERS = {"lab08-consumer-wait500": 500, "lab08-consumer-wait10": 10}
ADMIN = "lab08-admin"

_SMALL = (20, 200)
"""Value sizes (bytes) of one-message requests."""
_BATCHED_SIZES = (50, 500)
_DEADLINE_SECONDS = 60.0

# Each kind of librdkafka handle we drive: all three have poll() (serving callbacks).
_Handle = Producer | Consumer | AdminClient


@attrs.define(eq=False)
class _Client:
    """One librdkafka client: its settings and everything its ``stats_cb`` reported."""

    client_id: str
    role: str
    settings: dict[str, str]
    snapshots: list[dict[str, Any]] = attrs.field(factory=list)
    received: list[float] = attrs.field(factory=list)
    rtt_windows: list[dict[str, float | str]] = attrs.field(factory=list)
    delivery_ms: dict[str, list[float]] = attrs.field(factory=dict)
    errors: list[str] = attrs.field(factory=list)
    messages: int = 0
    value_bytes: int = 0
    handle: _Handle | None = None

    def config(self, bootstrap: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": bootstrap,
            "client.id": self.client_id,
            "statistics.interval.ms": STATS_INTERVAL_MS,
            "stats_cb": self._on_stats,
            **self.settings,
        }

    def _on_stats(self, raw: str) -> None:
        stats = json.loads(raw)
        brokers: dict[str, Any] = {}
        for name, broker in stats["brokers"].items():
            rtt = broker["rtt"]
            # librdkafka's rtt is a window: the requests answered since the last report.
            if rtt["cnt"]:
                self.rtt_windows.append(
                    {
                        "broker": name,
                        "cnt": rtt["cnt"],
                        **{k: rtt[k] / 1000.0 for k in ("min", "max", "p50", "p99")},
                    }
                )
            brokers[name] = {
                "nodeid": broker["nodeid"],
                "source": broker["source"],
                "req": {api: n for api, n in broker["req"].items() if n},
                **{k: broker[k] for k in ("tx", "txbytes", "rx", "rxbytes")},
                "busy": broker["waitresp_cnt"] + broker["outbuf_cnt"],
            }
        # librdkafka stamps a report with its monotonic clock (CLOCK_MONOTONIC, in µs), the
        # clock of time.monotonic(): so we know on the wall clock when it was taken.
        received = time.monotonic()
        taken_at = time.time() - (received - stats["ts"] / 1e6)
        self.snapshots.append({"taken_at": taken_at, "brokers": brokers})
        self.received.append(received)

    def quiet_since(self, mark: float) -> bool:
        """Two reports after ``mark`` with nothing in flight and no request in between."""
        after = [
            s for s, at in zip(self.snapshots, self.received, strict=True) if at > mark
        ]
        if len(after) < 2:
            return False
        last, before = after[-1]["brokers"], after[-2]["brokers"]

        def totals(brokers: dict[str, Any]) -> dict[str, tuple[int, int]]:
            return {name: (b["tx"], b["rx"]) for name, b in brokers.items()}

        return totals(last) == totals(before) and not any(
            b["busy"] for b in last.values()
        )

    def on_delivery(self, phase: str) -> Callable[[KafkaError | None, Message], None]:
        """A delivery callback timing one message from ``produce()`` (called right after)."""
        latencies = self.delivery_ms.setdefault(phase, [])
        sent = time.perf_counter()

        def delivered(error: KafkaError | None, _message: Message) -> None:
            if error is not None:
                self.errors.append(str(error))
            latencies.append(round((time.perf_counter() - sent) * 1000.0, 3))

        return delivered

    def truth(self) -> dict[str, object]:
        final = self.snapshots[-1]
        brokers = {
            name: {k: v for k, v in broker.items() if k != "busy"}
            for name, broker in final["brokers"].items()
        }
        facts: dict[str, object] = {
            "role": self.role,
            "settings": self.settings,
            "stats": {
                "taken_at": final["taken_at"],
                "reports": len(self.snapshots),
                "brokers": brokers,
            },
            "rtt_windows_ms": self.rtt_windows,
        }
        if self.role == "producer":
            facts |= {
                "messages": self.messages,
                "value_bytes": self.value_bytes,
                "delivery_errors": self.errors,
                "delivery_ms": self.delivery_ms,
            }
        elif self.role == "consumer":
            facts |= {"messages": self.messages, "value_bytes": self.value_bytes}
        return facts


def _producer(client_id: str, acks: str) -> _Client:
    settings = {
        "acks": acks,
        "linger.ms": "20",
        "compression.type": "none",
        "enable.idempotence": "false",
    }
    return _Client(client_id, "producer", settings)


def _consumer(client_id: str, wait_ms: int) -> _Client:
    settings = {
        # librdkafka wants a group.id, but these consumers never join: they assign().
        "group.id": client_id,
        "enable.auto.commit": "false",
        "fetch.wait.max.ms": str(wait_ms),
        "fetch.min.bytes": "1",
    }
    return _Client(client_id, "consumer", settings)


@attrs.define(eq=False)
class _Workload:
    bootstrap: str
    seed: int
    scale: float
    rng: random.Random = attrs.field(init=False)
    clients: dict[str, _Client] = attrs.field(factory=dict)
    phases: dict[str, dict[str, float]] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _add(self, client: _Client, handle: _Handle) -> None:
        client.handle = handle
        self.clients[client.client_id] = client

    def _count(self, messages: int) -> int:
        return max(1, round(messages * self.scale))

    def _value(self, sizes: tuple[int, int]) -> bytes:
        return self.rng.randbytes(self.rng.randint(*sizes))

    def _serve(self, seconds: float, clients: Iterable[_Client]) -> None:
        """Serve the clients' callbacks for ``seconds`` (a pause that keeps them polled)."""
        chosen = list(clients)
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            for client in chosen:
                assert client.handle is not None
                client.handle.poll(min(left, 0.02) / len(chosen))

    def _produce(self, client: _Client, phase: str, value: bytes) -> None:
        producer = client.handle
        assert isinstance(producer, Producer)
        producer.produce(
            TOPIC, value, partition=0, on_delivery=client.on_delivery(phase)
        )
        client.messages += 1
        client.value_bytes += len(value)

    def _flush(self, client: _Client) -> None:
        assert isinstance(client.handle, Producer)
        if client.handle.flush(_DEADLINE_SECONDS):
            raise RuntimeError(
                f"{client.client_id}: messages still unacknowledged after flush"
            )

    def _phase(self, name: str, start: float) -> None:
        self.phases[name] = {"start": start, "end": time.time()}

    def run(self) -> dict[str, object]:
        started = time.time()
        admin = _Client(ADMIN, "admin", {})
        self._add(admin, AdminClient(admin.config(self.bootstrap)))
        assert isinstance(admin.handle, AdminClient)
        for future in admin.handle.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            future.result(_DEADLINE_SECONDS)

        producers = [_producer(cid, acks) for cid, acks in PRODUCERS.items()]
        burst = _producer(BURST_PRODUCER, "1")
        for client in [*producers, burst]:
            producer = Producer(client.config(self.bootstrap))
            # connected, leader known
            producer.list_topics(TOPIC, timeout=_DEADLINE_SECONDS)
            self._add(client, producer)

        self._flush_phase(producers)
        self._serve(PHASE_GAP_SECONDS, producers)
        self._batched_phase(producers)
        self._serve(PHASE_GAP_SECONDS, producers)
        self._burst_phase(burst)
        self._serve(PHASE_GAP_SECONDS, [*producers, burst])
        for client in [*producers, burst]:
            if client.errors:
                raise RuntimeError(
                    f"{client.client_id}: delivery failed: {client.errors[0]}"
                )
        produced = sum(client.messages for client in [*producers, burst])
        self._consume_phase(produced)

        # The truth is librdkafka's last report, taken once nothing is in flight: after
        # it, no client sends another request (closing sends none: nobody joined a group).
        mark = time.monotonic()
        deadline = mark + _DEADLINE_SECONDS
        everyone = list(self.clients.values())
        while not all(client.quiet_since(mark) for client in everyone):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    "the clients did not settle (requests still in flight)"
                )
            self._serve(0.05, everyone)
        for client in everyone:
            if isinstance(client.handle, Producer | Consumer):
                client.handle.close()
            # the AdminClient goes now, while the broker is still up
            client.handle = None
        return {
            "seed": self.seed,
            "scale": self.scale,
            "topic": TOPIC,
            "bootstrap": self.bootstrap,
            "started": started,
            "finished": time.time(),
            "phases": self.phases,
            "burst_requests": burst.messages,
            "messages_produced": produced,
            "clients": {cid: client.truth() for cid, client in self.clients.items()},
        }

    def _flush_phase(self, producers: list[_Client]) -> None:
        start, begun = time.time(), time.monotonic()
        sent = 0
        for _ in range(self._count(FLUSH_MESSAGES)):
            for client in producers:
                # Paced: request number `sent` goes at begun + sent / FLUSH_RATE.
                self._serve(begun + sent / FLUSH_RATE - time.monotonic(), [client])
                self._produce(client, "flush", self._value(_SMALL))
                self._flush(client)
                sent += 1
        self._phase("flush", start)

    def _batched_phase(self, producers: list[_Client]) -> None:
        start = time.time()
        for _ in range(self._count(BATCHED)):
            for client in producers:
                self._produce(client, "batched", self._value(_BATCHED_SIZES))
        for client in producers:
            self._flush(client)
        self._phase("batched", start)

    def _burst_phase(self, burst: _Client) -> None:
        # Start on a whole second, so the burst fills one second of the wall clock.
        self._serve(math.ceil(time.time()) - time.time(), [burst])
        start = time.time()
        while time.time() < start + BURST_SECONDS:
            self._produce(burst, "burst", self._value(_SMALL))
            self._flush(burst)
        self._phase("burst", start)

    def _consume_phase(self, expected: int) -> None:
        consumers = [_consumer(cid, wait) for cid, wait in CONSUMERS.items()]
        for client in consumers:
            consumer = Consumer(client.config(self.bootstrap))
            consumer.assign([KafkaTopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
            self._add(client, consumer)
        start = time.time()
        deadline = time.monotonic() + _DEADLINE_SECONDS
        while any(client.messages < expected for client in consumers):
            if time.monotonic() > deadline:
                counts = {client.client_id: client.messages for client in consumers}
                raise RuntimeError(f"consumers read {counts} of {expected} messages")
            for client in consumers:
                assert isinstance(client.handle, Consumer)
                message = client.handle.poll(0.01)
                if message is None:
                    continue
                if message.error() is not None:
                    raise RuntimeError(f"{client.client_id}: {message.error()}")
                client.messages += 1
                client.value_bytes += len(message.value() or b"")
        self._phase("consume", start)
        start = time.time()
        # nothing to read: fetches wait in purgatory
        self._serve(IDLE_SECONDS, consumers)
        self._phase("idle", start)
        for client in consumers:
            assert isinstance(client.handle, Consumer)
            client.handle.unassign()


def run(out: Path, seed: int = 1, scale: float = 1.0) -> Path:
    """Run the scenario into ``out`` (``data/``, ``traces/``, ``truth.json``); return ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    broker = BrokerProcess(out / "data", trace_dir=out / "traces")
    broker.start()
    try:
        truth = _Workload(broker.bootstrap, seed, scale).run()
    finally:
        # SIGTERM: a clean shutdown, which flushes the trace.
        status = broker.stop()
    if status != 0:
        raise RuntimeError(f"the broker exited with status {status}")
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "out", type=Path, help="directory for data/, traces/ and truth.json"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    started = time.monotonic()
    out = run(args.out, args.seed, args.scale)
    print(f"scenario done in {time.monotonic() - started:.1f}s: {out / 'truth.json'}")


if __name__ == "__main__":
    main()
