"""Lab 10's scenario: the same broker failure in KRaft mode and in ZooKeeper mode
(seed 001, the ZooKeeper controller's failover; seed 004, KRaft's; KIP-500, KIP-631).

``run(out)`` runs two clusters of real processes one after the other, each of three
brokers with every node tracing into ``out/<mode>/traces``:

- ``kraft``: a controller node (id 0) and brokers 1, 2, 3; a broker is alive while it
  heartbeats the controller (``broker.heartbeat.interval.ms``), and fenced when no
  heartbeat came for ``broker.session.timeout.ms``;
- ``zookeeper``: a ZooKeeper server and brokers 0, 1, 2, one of which is the controller;
  a broker is alive while its ZooKeeper session is (``zookeeper.session.timeout.ms``).

Both timeouts are :data:`SESSION_TIMEOUT_MS`. In each, the topic ``lab10`` has six
partitions on all three brokers; the *victim* leads partitions 0, 1 and 2. In ZooKeeper
mode the victim is the controller itself; in KRaft mode no broker is a controller, so it
is the first broker. A confluent-kafka producer (``acks=all``) writes
:data:`RATE_PER_PARTITION` records a second to every partition, and then the victim is
killed with SIGKILL: its partitions have no leader until the controller notices and
elects new ones, and each surviving broker learns of it from the controller.

The ground truth, ``out/truth.json``, is what clients saw, recorded apart from the
brokers: per mode, the broker ids, the victim, when it was killed, every record's send
and delivery times and partition, and, for each surviving broker, each partition's
leader and leader epoch as that broker's Metadata answered it, polled every
:data:`POLL_INTERVAL` seconds on a connection of its own. ``python scenario.py OUT``
runs it too.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import KafkaError, Message, Producer

# confluent_kafka.admin re-exports NewTopic without listing it in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.metadata.v8.response import MetadataResponse

from minikafka.broker.testing import ProcessCluster, free_ports, request_body
from minikafka.net import (
    decode_response_body,
    parse_response_header,
    response_header_version,
)
from minikafka.net.testing import request_frame

TOPIC = "lab10"
PARTITIONS = 6
MODES = ("kraft", "zookeeper")
SESSION_TIMEOUT_MS = 4000
RATE_PER_PARTITION = 10.0
POLL_INTERVAL = 0.05
STEADY_SECONDS = 2.0
"""How long the producer writes before the kill, and after every partition has a
leader again."""
WAIT = 60.0  # seconds a condition may take on a loaded machine before the run fails

OVERRIDES = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": "10000",
}
_METADATA, _VERSION = 3, 8  # Metadata v8: leader epochs (v7+), no flexible fields
_ASK = request_body(
    _METADATA,
    _VERSION,
    topics=None,
    allow_auto_topic_creation=False,
    include_cluster_authorized_operations=False,
    include_topic_authorized_operations=False,
)

log = logging.getLogger("minikafka.labs.lab10")


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


@attrs.define(eq=False)
class MetadataWatch:
    """One surviving broker's view: its Metadata answer every ``POLL_INTERVAL`` seconds,
    on a connection of its own, kept whenever a partition's leader or epoch changed."""

    broker: int
    port: int
    seen: list[dict[str, Any]] = attrs.field(factory=list)
    controller: int = -1
    _current: dict[int, tuple[int, int]] = attrs.field(factory=dict)
    _stop: threading.Event = attrs.field(factory=threading.Event)
    _thread: threading.Thread | None = None
    _ready: threading.Event = attrs.field(factory=threading.Event)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"watch-{self.broker}", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(WAIT):
            raise RuntimeError(f"broker {self.broker} answered no Metadata")

    def leaders(self) -> dict[int, int]:
        return {p: leader for p, (leader, _) in self._current.items()}

    def _ask(self, sock: socket.socket, correlation_id: int) -> None:
        sock.sendall(request_frame(_ASK, correlation_id, "lab10-watch"))
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        frame = _read_exactly(sock, size)
        version = response_header_version(_METADATA, _VERSION)
        _, offset = parse_response_header(frame, version)
        body = decode_response_body(_METADATA, _VERSION, frame, offset)
        assert isinstance(body, MetadataResponse), body
        now = time.time()
        self.controller = int(body.controller_id)
        for topic in body.topics:
            if topic.name != TOPIC or len(topic.partitions) != PARTITIONS:
                continue
            for p in topic.partitions:
                state = (int(p.leader_id), int(p.leader_epoch))
                index = int(p.partition_index)
                if self._current.get(index) != state:
                    self._current[index] = state
                    self.seen.append(
                        {
                            "ts": now,
                            "partition": index,
                            "leader": state[0],
                            "leader_epoch": state[1],
                        }
                    )
        self._ready.set()

    def _run(self) -> None:
        correlation_id = 0
        while not self._stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), 5) as sock:
                    # Event.wait paces the polls; nothing waits for a condition here.
                    while not self._stop.wait(POLL_INTERVAL):
                        correlation_id += 1
                        self._ask(sock, correlation_id)
            except OSError:
                self._stop.wait(POLL_INTERVAL)  # the broker is busy: connect again

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WAIT)


@attrs.define(eq=False)
class Load:
    """The ``acks=all`` producer: ``RATE_PER_PARTITION`` records a second to every
    partition until stopped, each one's send and delivery times kept."""

    bootstrap: str
    records: list[dict[str, Any]] = attrs.field(factory=list)
    _stop: threading.Event = attrs.field(factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": "lab10-producer",
                "acks": "all",
                "linger.ms": 5,
                "log_level": 0,
            }
        )

        def delivered(error: KafkaError | None, message: Message) -> None:
            record = self.records[int(message.value() or b"0")]
            record["acked_ts"] = time.time()
            record["error"] = None if error is None else error.name()

        interval = 1 / (RATE_PER_PARTITION * PARTITIONS)
        # Event.wait paces the records; nothing waits for a condition here.
        while not self._stop.wait(interval):
            n = len(self.records)
            partition = n % PARTITIONS
            self.records.append(
                {"n": n, "partition": partition, "produced_ts": time.time()}
            )
            producer.produce(
                TOPIC, str(n).encode(), partition=partition, on_delivery=delivered
            )
            producer.poll(0)
        if producer.flush(WAIT):
            raise RuntimeError("records still undelivered at the end of the run")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WAIT)


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not within {WAIT}s: {what}")
        threading.Event().wait(
            POLL_INTERVAL
        )  # polling the watches, inside the deadline


def create_topic(cluster: ProcessCluster, victim: int) -> None:
    others = sorted(b for b in cluster.broker_ports if b != victim)
    # The victim leads partitions 0-2 (first in their lists); the others the rest. Its
    # partitions fail over to both survivors (the next in each list), so their outages
    # end in two brokers' calls, not all at one instant.
    assignment = [
        [victim, others[p % 2], others[1 - p % 2]]
        if p < 3
        else [others[p % 2], victim, others[1 - p % 2]]
        for p in range(PARTITIONS)
    ]
    admin = AdminClient(
        {"bootstrap.servers": cluster.bootstrap, "client.id": "lab10-admin"}
    )
    topic = NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=assignment)
    admin.create_topics([topic], operation_timeout=WAIT)[TOPIC].result(timeout=WAIT)


def run_mode(mode: str, out: Path) -> dict[str, Any]:
    """One cluster, one failure; that mode's part of the truth."""
    ports = free_ports(4)
    cluster = ProcessCluster.create(
        out,
        3,
        controller_port=ports[0],
        broker_ports=ports[1:],
        overrides=OVERRIDES,
        zookeeper=mode == "zookeeper",
        zookeeper_port=ports[0],
    )
    watches: dict[int, MetadataWatch] = {}
    load = Load(cluster.bootstrap)
    try:
        cluster.up()
        first = min(cluster.broker_ports)
        probe = MetadataWatch(first, cluster.broker_ports[first])
        probe.start()
        wait_until(lambda: probe.controller >= 0, "a controller")
        probe.stop()
        victim = probe.controller if mode == "zookeeper" else first
        create_topic(cluster, victim)
        for broker, port in cluster.broker_ports.items():
            if broker != victim:
                watches[broker] = MetadataWatch(broker, port)
                watches[broker].start()
        wait_until(
            lambda: all(len(w.leaders()) == PARTITIONS for w in watches.values()),
            "every partition known to every broker",
        )
        load.start()
        threading.Event().wait(STEADY_SECONDS)  # the load runs this long as it is
        killed = time.time()
        cluster.kill(victim)
        log.info("%s: killed broker %d", mode, victim)
        wait_until(
            lambda: all(
                victim not in w.leaders().values() and -1 not in w.leaders().values()
                for w in watches.values()
            ),
            "new leaders known to every surviving broker",
        )
        threading.Event().wait(STEADY_SECONDS)  # the load runs this long as it is
        load.stop()
    finally:
        for watch in watches.values():
            watch.stop()
        # Killed, not stopped: a controlled shutdown would add elections of its own.
        # The tracers wrote every event older than their flush interval out already.
        cluster.kill_all()
    return {
        "brokers": sorted(cluster.broker_ports),
        "victim": victim,
        "killed_ts": killed,
        "records": load.records,
        "metadata_seen": {str(b): w.seen for b, w in watches.items()},
    }


def run(out: Path) -> Path:
    """Run the scenario into ``out`` (each mode's cluster and traces, truth.json)."""
    out = Path(out).resolve()
    started = time.time()
    modes = {mode: run_mode(mode, out / mode) for mode in MODES}
    document = {
        "topic": TOPIC,
        "partitions": PARTITIONS,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": int(OVERRIDES["broker.heartbeat.interval.ms"]),
        "poll_interval_s": POLL_INTERVAL,
        "started": started,
        "modes": modes,
    }
    (out / "truth.json").write_text(json.dumps(document, indent=1))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the run's directory (created)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    begun = time.monotonic()
    out = run(args.out)
    print(f"lab 10 scenario: {out} in {time.monotonic() - begun:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
