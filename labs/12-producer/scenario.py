"""Lab 12's scenario: minikafka's producer under four settings of ``linger.ms`` and
``batch.size``, on a KRaft cluster of three brokers (seed 000's producer: the
RecordAccumulator and the Sender; ARCHITECTURE.md, "Traces and labs").

``run(out)`` (or ``python scenario.py OUT``) lays out a :class:`ProcessCluster` in
``OUT`` (a controller and three brokers, each a process of its own, every node tracing
into ``OUT/traces``) and creates one topic per setting, one partition with three
replicas, each led by the broker its replica list names first. Then, one setting after
the other, a ``minikafka.client.Producer`` of its own (``acks=all``, idempotent, the
setting's ``client.id``) sends records of seeded random sizes at a fixed rate:

- ``lab12-linger0``, ``lab12-linger5``, ``lab12-linger50``: ``linger.ms`` 0, 5 and 50
  at a moderate rate (:data:`MODERATE_RATE`), ``batch.size`` Kafka's 16 KiB, which
  none of them fills;
- ``lab12-batch1k``: ``batch.size`` 1,024 bytes at a high rate (:data:`HIGH_RATE`), so
  that batches fill long before their ``linger.ms`` (20) runs out.

The producers trace into ``OUT/traces`` too (node -1: a client has no node id), one
``producer.batch`` event per batch.

The ground truth, ``OUT/truth.json``, is recorded apart from every trace: the settings;
for every record, when ``produce()`` was called and returned and when its delivery
report was served (``time.monotonic()``, the clock the producer's own times come from),
with the offset the report gave; and, read from the partition's files once the cluster
has stopped, the batches as the leader stored them (base offset, last offset, records,
bytes): the real batch boundaries. ``scale`` stretches the seconds each setting sends
for (the tests, and the book under ``make test``, run 1.0).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.client import AdminClient, KafkaError, Message, NewTopic, Producer
from minikafka.log import iter_batches
from minikafka.trace import JsonLinesTracer

WAIT = 60.0
"""Seconds a step may take on a loaded two-core machine before the run fails."""

MODERATE_RATE = 400.0
"""Records a second for the ``linger.ms`` settings: a few per 5 ms, twenty per 50 ms."""
HIGH_RATE = 2000.0
"""Records a second for the small ``batch.size``: about eight records fill 1,024 bytes,
so a batch fills in some 4 ms."""
VALUE_BYTES = (50, 150)
"""Each record's value is this many random bytes (uniform, seeded); no key."""
CLIENT_NODE = -1
"""The node id in the producers' trace files: a client has none, and Kafka's clients
number the brokers they know only by address from -1 down."""


@attrs.frozen
class Setting:
    """One producer: its ``client.id`` (also its topic's name) and what it is set to."""

    client_id: str
    linger_ms: int
    batch_size: int
    rate: float
    """Records a second, sent on a fixed schedule."""
    seconds: float
    """How long it sends for, at scale 1."""
    leader: int
    """The broker that leads its topic's partition (first of the replica list)."""

    @property
    def topic(self) -> str:
        return self.client_id

    def producer_config(self, bootstrap: str) -> dict[str, object]:
        return {
            "bootstrap.servers": bootstrap,
            "client.id": self.client_id,
            "acks": "all",
            "linger.ms": self.linger_ms,
            "batch.size": self.batch_size,
        }


SETTINGS = (
    Setting("lab12-linger0", 0, 16_384, MODERATE_RATE, 3.0, leader=1),
    Setting("lab12-linger5", 5, 16_384, MODERATE_RATE, 3.0, leader=2),
    Setting("lab12-linger50", 50, 16_384, MODERATE_RATE, 3.0, leader=3),
    Setting("lab12-batch1k", 20, 1_024, HIGH_RATE, 2.0, leader=1),
)
BROKERS = (1, 2, 3)  # node 0 is the controller


@attrs.define(eq=False)
class Sent:
    """What the client saw of its records, in the order they were produced."""

    value_bytes: list[int] = attrs.field(factory=list)
    called: list[float] = attrs.field(factory=list)
    returned: list[float] = attrs.field(factory=list)
    reported: list[float | None] = attrs.field(factory=list)
    offsets: list[int] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)

    def produce(self, producer: Producer, topic: str, value: bytes) -> None:
        index = len(self.called)
        self.value_bytes.append(len(value))
        self.reported.append(None)
        self.offsets.append(-1)

        def delivered(error: KafkaError | None, message: Message) -> None:
            # Served by poll() or flush() on this thread: the moment the
            # application learns of it.
            self.reported[index] = time.monotonic()
            if error is not None:
                self.errors.append(error.name())
            self.offsets[index] = message.offset()

        self.called.append(time.monotonic())
        producer.produce(topic, value, partition=0, on_delivery=delivered)
        self.returned.append(time.monotonic())

    def truth(self) -> dict[str, object]:
        return {
            "value_bytes": self.value_bytes,
            "called": self.called,
            "returned": self.returned,
            "reported": self.reported,
            "offset": self.offsets,
        }


def drive(
    setting: Setting, bootstrap: str, tracer: JsonLinesTracer, seed: int, scale: float
) -> dict[str, object]:
    """Send ``setting``'s records on schedule, flush, close; what the client saw."""
    rng = random.Random(f"{seed}-{setting.client_id}")
    count = max(1, round(setting.rate * setting.seconds * scale))
    sent = Sent()
    producer = Producer(setting.producer_config(bootstrap), tracer=tracer)
    try:
        # The first produce() waits for the topic's metadata; the schedule starts after.
        sent.produce(producer, setting.topic, rng.randbytes(rng.randint(*VALUE_BYTES)))
        start, wall_start = time.monotonic(), time.time()
        for i in range(1, count):
            due = start + i / setting.rate
            # Serve delivery reports until the record is due: poll() waits for the
            # next report, or for what is left of the interval.
            while (left := due - time.monotonic()) > 0:
                producer.poll(left)
            sent.produce(
                producer, setting.topic, rng.randbytes(rng.randint(*VALUE_BYTES))
            )
            producer.poll(0)
        sending_ended = time.monotonic()
        if producer.flush(WAIT):
            raise RuntimeError(
                f"{setting.client_id}: records unacknowledged after flush"
            )
    finally:
        producer.close(WAIT)
    if sent.errors or None in sent.reported:
        raise RuntimeError(f"{setting.client_id}: delivery failed: {sent.errors[:3]}")
    return {
        **attrs.asdict(setting),
        "topic": setting.topic,
        "records": count,
        "start": start,
        "wall_start": wall_start,
        "sending_ended": sending_ended,
        "ended": time.monotonic(),
        "messages": sent.truth(),
    }


def create_topics(cluster: ProcessCluster) -> None:
    """Every setting's topic, once its partition has its leader and all three replicas
    in sync (the leader named first in the replica list)."""
    admin = AdminClient(
        {"bootstrap.servers": cluster.bootstrap, "client.id": "lab12-admin"}
    )
    topics = []
    for setting in SETTINGS:
        rest = [b for b in BROKERS if b != setting.leader]
        topics.append(
            NewTopic(setting.topic, replica_assignment=[[setting.leader, *rest]])
        )
    for future in admin.create_topics(topics).values():
        future.result(WAIT)
    deadline = time.monotonic() + WAIT
    pause = threading.Event()  # never set: paces the metadata polls
    while True:
        metadata = admin.list_topics(timeout=WAIT)
        ready = [
            s.topic
            for s in SETTINGS
            if (topic := metadata.topics.get(s.topic)) is not None
            and 0 in topic.partitions
            and topic.partitions[0].leader == s.leader
            and len(topic.partitions[0].isrs) == len(BROKERS)
        ]
        if len(ready) == len(SETTINGS):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topics not in sync within {WAIT}s: only {ready}")
        pause.wait(0.1)


def stored_batches(cluster: ProcessCluster, setting: Setting) -> list[dict[str, int]]:
    """The batches of ``setting``'s partition as its leader stored them (the cluster has
    stopped): read from the segment files, each batch's header checked with its CRC."""
    directory = cluster.node_dir(setting.leader) / f"{setting.topic}-0"
    batches = []
    for segment in sorted(directory.glob("*.log")):
        for _, header in iter_batches(segment.read_bytes()):
            batches.append(
                {
                    "base_offset": header.base_offset,
                    "last_offset": header.base_offset + header.last_offset_delta,
                    "records": header.record_count,
                    "size_bytes": header.size,
                }
            )
    return batches


def run(out: Path, seed: int = 11, scale: float = 1.0) -> Path:
    """Run the scenario into ``out`` (the cluster's files, ``traces/``, ``truth.json``);
    return ``out``."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ports = free_ports(1 + len(BROKERS))
    cluster = ProcessCluster.create(
        out, len(BROKERS), controller_ports=ports[:1], broker_ports=ports[1:]
    )
    began = time.monotonic()
    settings: dict[str, dict[str, object]] = {}
    tracer = JsonLinesTracer.open(out / "traces", CLIENT_NODE)
    try:
        cluster.up(timeout=WAIT)
        create_topics(cluster)
        for setting in SETTINGS:
            settings[setting.client_id] = drive(
                setting, cluster.bootstrap, tracer, seed, scale
            )
    finally:
        tracer.close()
        try:
            # SIGTERM: each node shuts down cleanly, writing out the last of its trace.
            cluster.down(timeout=WAIT)
        except BaseException:
            cluster.kill_all()  # no process outlives a failed run
            raise
    for setting in SETTINGS:
        settings[setting.client_id]["stored"] = stored_batches(cluster, setting)
    document = {
        "seed": seed,
        "scale": scale,
        "brokers": list(BROKERS),
        "client_node": CLIENT_NODE,
        "seconds": time.monotonic() - began,
        "settings": settings,
    }
    (out / "truth.json").write_text(json.dumps(document) + "\n")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the run's directory (created)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="stretches the sending"
    )
    args = parser.parse_args(argv)
    begun = time.monotonic()
    out = run(args.out, args.seed, args.scale)
    print(f"lab 12 scenario: {out} in {time.monotonic() - begun:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
