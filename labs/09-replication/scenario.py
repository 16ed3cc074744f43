"""Lab 9's scenario: one partition replicated three ways, one follower on a slow link
(seed 000's replication sections: the ISR, the high watermark, acks=all; KIP-497).

``run(out)`` starts a KRaft cluster of real processes (a controller and brokers 1, 2
and 3, every node tracing into ``out/traces``) and creates ``lab09`` with one
partition on replicas 1, 2, 3 (broker 1 leads) and ``min.insync.replicas=2``. Broker 2
fetches from broker 1 straight over the brokers' PLAINTEXT listener; broker 3 over a
REPLICATION listener whose advertised port is a :class:`FaultProxy`: only follower 3's
link to its leader goes through the proxy. A confluent-kafka producer (``acks=all``,
``linger.ms=0``, one request in flight) sends its first record alone and, once it is
acknowledged (both followers are fetching), :data:`RATE` records a second throughout
four phases:

1. ``healthy``: nothing is wrong;
2. ``delayed``: the proxy holds every chunk :data:`DELAY` seconds in each direction,
   so follower 3 is slow but keeps up (it stays in the ISR);
3. ``stalled``: the proxy forwards nothing: follower 3 stops fetching, and after
   ``replica.lag.time.max.ms`` (:data:`LAG_MAX_MS`) its leader shrinks the ISR;
4. ``healed``: the link is whole again; follower 3 catches up and is put back in the
   ISR, and the phase ends a moment after a client sees the full ISR again.

Then, the ISR whole, a transactional producer runs :data:`TXN_COUNT` transactions on
``lab09-txn`` (replicas 1, 2, 3 too), :data:`TXN_GAP` seconds apart: each writes
:data:`TXN_RECORDS` records, waits for them to be acknowledged, stays open a while and
commits; the later half run with follower 3's link delayed again. After each commit a
read_committed ListOffsets (the last stable offset) is polled until it passes the
transaction.

The ground truth, ``out/truth.json``, is what clients saw, recorded apart from the
brokers: each phase's wall-clock window; every record's ``produce()`` and delivery
times and its offset (the latency ``acks=all`` costs, end to end); and the ISR as an
AdminClient saw it in Metadata every :data:`WATCH_INTERVAL` seconds; and each
transaction's first and last offsets, when its first record was sent and acknowledged,
when ``commit_transaction`` was called and returned, and when the last stable offset
was first seen past it.
``python scenario.py OUT`` runs it too.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
from confluent_kafka import KafkaError, Message, Producer

# confluent_kafka.admin re-exports NewTopic without listing it in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.client import AsyncAdminClient, ListOffsetsResultInfo, OffsetSpec
from minikafka.common import TopicPartition
from minikafka.net.testing import FaultProxies

TOPIC = "lab09"
LEADER, FAST_FOLLOWER, SLOW_FOLLOWER = 1, 2, 3
RATE = 40.0
"""Records a second the producer sends, one ``produce()`` each."""
DELAY = 0.25
"""Seconds the proxy holds each chunk, each way, in the ``delayed`` phase."""
LAG_MAX_MS = 2000
"""``replica.lag.time.max.ms``: 2 s, not Kafka's 30 s, to keep the run short."""
PHASE_SECONDS = {"healthy": 4.0, "delayed": 5.0, "stalled": 6.0, "healed": 3.0}
"""How long each phase lasts (``healed``: after the ISR is whole again)."""
WATCH_INTERVAL = 0.1
TXN_TOPIC = "lab09-txn"
TXN_COUNT = 6
"""Transactions the transactional producer commits, one after the other."""
TXN_RECORDS = 5
TXN_OPEN = (0.2, 0.5, 0.8)
"""Seconds each transaction stays open after its records are acknowledged (in turn)."""
TXN_GAP = 1.0
"""Seconds between one transaction's release of the LSO and the next one's start."""
WAIT = 60.0  # seconds a condition may take on a loaded machine before the run fails

OVERRIDES = {
    "replica.lag.time.max.ms": str(LAG_MAX_MS),
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "5000",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    # One partition of __transaction_state (Kafka's default is 50): enough for one id.
    "transaction.state.log.num.partitions": "1",
    # The leader asks a producer's transaction coordinator on its inter-broker listener
    # (KIP-890's verification), REPLICATION here, which the fast follower lacks (Kafka
    # wants one inter-broker listener on every broker; this layout bends that to slow
    # one link): were __transaction_state placed on it, no coordinator would be found.
    "transaction.partition.verification.enable": "false",
}

log = logging.getLogger("minikafka.labs.lab09")


@attrs.define(eq=False)
class IsrWatch:
    """An AdminClient asking for the topic's metadata every ``WATCH_INTERVAL`` seconds;
    it keeps each ISR it saw change, with the time it saw it."""

    bootstrap: str
    seen: list[dict[str, Any]] = attrs.field(factory=list)
    changed: threading.Condition = attrs.field(factory=threading.Condition)
    _stop: threading.Event = attrs.field(factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="isr-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # It watches the topic and must not create it: a metadata request for a topic
        # that does not exist yet would, from librdkafka's admin client, before
        # create_topic's own request with its replica assignment.
        admin = AdminClient(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": "lab09-watch",
                "allow.auto.create.topics": False,
            }
        )
        # Event.wait paces the polls; nothing waits for a condition here.
        while not self._stop.wait(WATCH_INTERVAL):
            try:
                metadata = admin.list_topics(TOPIC, timeout=5)
            except Exception:  # a broker busy for a moment: ask again
                continue
            topic = metadata.topics.get(TOPIC)
            if topic is None or topic.error is not None or 0 not in topic.partitions:
                continue
            isr = sorted(topic.partitions[0].isrs)
            with self.changed:
                if not self.seen or self.seen[-1]["isr"] != isr:
                    self.seen.append({"ts": time.time(), "isr": isr})
                    self.changed.notify_all()

    def wait_for(self, wanted: Callable[[list[int]], bool], what: str) -> None:
        with self.changed:
            if not self.changed.wait_for(
                lambda: bool(self.seen) and wanted(self.seen[-1]["isr"]), WAIT
            ):
                raise RuntimeError(f"not within {WAIT}s: {what} (seen {self.seen})")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WAIT)


@attrs.define(eq=False)
class Load:
    """The ``acks=all`` producer: ``RATE`` records a second until stopped, each one's
    send and delivery times kept by its sequence number (its value)."""

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
                "client.id": "lab09-producer",
                "acks": "all",
                "linger.ms": 0,
                # One Produce at a time: what waits for the followers gathers into the
                # next request. With more in flight they would queue anyway, one record
                # each, behind the broker's muting of the connection (one request at a
                # time per connection) while each waits in the purgatory.
                "max.in.flight.requests.per.connection": 1,
                "log_level": 0,
            }
        )

        def delivered(error: KafkaError | None, message: Message) -> None:
            record = self.records[int(message.value() or b"0")]
            record["acked_ts"] = time.time()
            record["offset"] = message.offset() if error is None else None
            record["error"] = None if error is None else error.name()

        def send() -> None:
            n = len(self.records)
            self.records.append({"n": n, "produced_ts": time.time()})
            producer.produce(TOPIC, str(n).encode(), partition=0, on_delivery=delivered)
            producer.poll(0)

        # The first record goes alone: acks=all acknowledges it only once both
        # followers have fetched it, so both are fetching before the others are
        # appended, and every later append shows in their fetches. (A follower that
        # starts fetching late, on a loaded machine, would first see a log end that
        # many records had passed at once, and the trace could not say when each
        # was appended.)
        send()
        if producer.flush(WAIT):
            raise RuntimeError("the first record was not acknowledged")
        # Event.wait paces the records; nothing waits for a condition here.
        while not self._stop.wait(1 / RATE):
            send()
        if producer.flush(WAIT):
            raise RuntimeError("records still undelivered at the end of the run")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WAIT)


def run_transactions(
    bootstrap: str, slow_link: Callable[[bool], None]
) -> list[dict[str, Any]]:
    """The transactional part: ``TXN_COUNT`` committed transactions on ``TXN_TOPIC``,
    the later half with follower 3's link delayed (``slow_link(True)``); what the
    clients saw of each."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "lab09-admin"})
    topic = NewTopic(
        TXN_TOPIC,
        num_partitions=1,
        replica_assignment=[[LEADER, FAST_FOLLOWER, SLOW_FOLLOWER]],
        config={"min.insync.replicas": "2"},
    )
    admin.create_topics([topic], operation_timeout=WAIT)[TXN_TOPIC].result(timeout=WAIT)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "lab09-txn-producer",
            "transactional.id": "lab09-txn",
            "linger.ms": 0,
            "log_level": 0,
        }
    )
    producer.init_transactions(WAIT)
    done: list[dict[str, Any]] = []
    for n in range(TXN_COUNT):
        delayed = n >= TXN_COUNT // 2
        slow_link(delayed)
        acked: list[tuple[float, int]] = []

        def delivered(
            error: KafkaError | None,
            message: Message,
            acked: list[tuple[float, int]] = acked,  # this transaction's
        ) -> None:
            if error is None:
                acked.append((time.time(), message.offset() or 0))

        producer.begin_transaction()
        produced_ts = time.time()
        for i in range(TXN_RECORDS):
            value = f"{n}-{i}".encode()
            producer.produce(TXN_TOPIC, value, partition=0, on_delivery=delivered)
        if producer.flush(WAIT) or len(acked) != TXN_RECORDS:
            raise RuntimeError(f"transaction {n}: records not acknowledged")
        # Event.wait: the transaction stays open this long whatever happens.
        threading.Event().wait(TXN_OPEN[n % len(TXN_OPEN)])
        commit_called_ts = time.time()
        producer.commit_transaction(WAIT)
        commit_returned_ts = time.time()
        last_offset = max(offset for _, offset in acked)
        released_seen_ts = trio.run(_lso_past, bootstrap, last_offset)
        done.append(
            {
                "n": n,
                "delayed": delayed,
                "first_offset": min(offset for _, offset in acked),
                "last_offset": last_offset,
                "produced_ts": produced_ts,
                "acked_ts": min(ts for ts, _ in acked),
                "commit_called_ts": commit_called_ts,
                "commit_returned_ts": commit_returned_ts,
                "released_seen_ts": released_seen_ts,
            }
        )
        log.info(
            "transaction %d: offsets %d-%d", n, done[-1]["first_offset"], last_offset
        )
        threading.Event().wait(TXN_GAP)
    slow_link(False)
    return done


async def _lso_past(bootstrap: str, offset: int) -> float:
    """When a read_committed ListOffsets (the last stable offset) first answered an
    offset past ``offset``."""
    tp = TopicPartition(TXN_TOPIC, 0)
    with trio.fail_after(WAIT):
        async with AsyncAdminClient.open({"bootstrap.servers": bootstrap}) as admin:
            while True:
                found = await admin.list_offsets(
                    {tp: OffsetSpec.latest()}, isolation_level=1
                )
                [answer] = found.values()
                if isinstance(answer, ListOffsetsResultInfo) and answer.offset > offset:
                    return time.time()
                await trio.sleep(0.01)


def create_topic(bootstrap: str, watch: IsrWatch) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "lab09-admin"})
    topic = NewTopic(
        TOPIC,
        num_partitions=1,
        replica_assignment=[[LEADER, FAST_FOLLOWER, SLOW_FOLLOWER]],
        config={"min.insync.replicas": "2"},
    )
    admin.create_topics([topic], operation_timeout=WAIT)[TOPIC].result(timeout=WAIT)
    watch.wait_for(lambda isr: len(isr) == 3, "the three replicas in sync")


def run(out: Path, scale: float = 1.0) -> Path:
    """Run the scenario into ``out`` (traces, the cluster, truth.json); ``out``.
    ``scale`` stretches the phases."""
    out = Path(out).resolve()
    ports = free_ports(6)
    controller, brokers, replication = ports[0], ports[1:4], ports[4:6]
    proxies = FaultProxies({LEADER: replication[0]})
    cluster = ProcessCluster.create(
        out,
        3,
        controller_port=controller,
        broker_ports=brokers,
        # The leader's REPLICATION listener is reached through the proxy; only the slow
        # follower fetches over REPLICATION (the other uses PLAINTEXT, direct).
        replication_ports={
            LEADER: (replication[0], proxies.port(LEADER)),
            SLOW_FOLLOWER: (replication[1], replication[1]),
        },
        overrides=OVERRIDES,
    )
    phases: list[dict[str, Any]] = []
    watch, load = IsrWatch(cluster.bootstrap), Load(cluster.bootstrap)
    started = time.time()
    try:
        cluster.up()
        watch.start()
        create_topic(cluster.bootstrap, watch)
        load.start()
        faults: dict[str, Callable[[], None]] = {
            "healthy": lambda: None,
            "delayed": lambda: proxies.call(LEADER, lambda p: p.delay(DELAY)),
            "stalled": lambda: proxies.call(LEADER, lambda p: p.stall()),
            "healed": lambda: proxies.call(LEADER, lambda p: p.heal()),
        }
        for name, fault in faults.items():
            begun = time.time()
            fault()
            if name == "healed":
                watch.wait_for(lambda isr: len(isr) == 3, "follower 3 back in the ISR")
            # Event.wait: the phase lasts this long whatever happens in it.
            threading.Event().wait(PHASE_SECONDS[name] * scale)
            phases.append({"name": name, "start": begun, "end": time.time()})
            log.info("phase %s: %.1fs", name, phases[-1]["end"] - begun)
        load.stop()
        watch.stop()

        def slow_link(delayed: bool) -> None:
            proxies.call(LEADER, lambda p: p.delay(DELAY) if delayed else p.heal())

        transactions = run_transactions(cluster.bootstrap, slow_link)
    finally:
        # Stopped, not killed: every node writes its last trace events out.
        try:
            cluster.down()
        finally:
            cluster.kill_all()
            proxies.close()
    document = {
        "topic": TOPIC,
        "leader": LEADER,
        "fast_follower": FAST_FOLLOWER,
        "slow_follower": SLOW_FOLLOWER,
        "rate": RATE,
        "delay_s": DELAY,
        "replica_lag_time_max_ms": LAG_MAX_MS,
        "started": started,
        "phases": phases,
        "records": load.records,
        "isr_seen": watch.seen,
        "txn_topic": TXN_TOPIC,
        "transactions": transactions,
    }
    (out / "truth.json").write_text(json.dumps(document, indent=1))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the run's directory (created)")
    parser.add_argument("--scale", type=float, default=1.0, help="stretches the phases")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    begun = time.monotonic()
    out = run(args.out, args.scale)
    print(f"lab 9 scenario: {out} in {time.monotonic() - begun:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
