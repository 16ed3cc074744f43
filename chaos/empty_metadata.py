"""A Metadata answer naming no broker, staged by hand, and what two producers do next.

Seeds 107, 109 and 112's librdkafka producer (chaos/README.md) met a broker that knew no
live broker and answered Metadata with an empty broker list.

A KRaft cluster of one controller, its listener behind a TCP fault proxy, and two
brokers; topic ``t`` has a partition on each. librdkafka's idempotent producer and
minikafka's send to both partitions all along. Broker 2 is killed and broker 1's links
to the controller are reset and refused for longer than ``broker.session.timeout.ms``:
the controller fences both, and broker 1, not told, keeps leading. Healed, broker 1
replays the records it missed and, until its next heartbeat unfences it, its image has
every broker fenced: a Metadata request then gets no broker, as from Kafka's
``getAliveBrokerNodes``. What each producer does next is printed: librdkafka's debug log
counts the empty answers, the brokers it decommissioned and its re-bootstraps.

    PYTHONPATH=. .venv/bin/python -m chaos.empty_metadata [--out DIR]

Run on loopback ports only; each run takes about a minute.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as KafkaProducer

from minikafka.broker.testing import ProcessCluster
from minikafka.client import AdminClient, NewTopic
from minikafka.client import KafkaError as MinikafkaError
from minikafka.client import Message as MinikafkaMessage
from minikafka.client import Producer as MinikafkaProducer
from minikafka.common.testing import free_ports
from minikafka.net.testing import FaultProxies, FaultProxy

TOPIC = "t"
CUT = 9.0  # seconds: past broker.session.timeout.ms below
AFTER = 30.0  # seconds watched after the heal
SETTINGS = {
    # Kafka's default heartbeat: the fenced image lasts until the next one.
    "broker.heartbeat.interval.ms": "2000",
    "broker.session.timeout.ms": "5000",
}


def _send_until(
    stop: threading.Event,
    producer: KafkaProducer | MinikafkaProducer,
    acked: list[float],
) -> None:
    """One send every 20 ms, alternating partitions; ``acked`` gets the time of each
    acknowledged send to partition 0 (broker 1's)."""
    i = 0

    def delivered(
        error: KafkaError | MinikafkaError | None,
        message: Message | MinikafkaMessage,
    ) -> None:
        if error is None and message.partition() == 0:
            acked.append(time.time())

    while not stop.is_set():
        # A full queue (nothing acknowledged for a while) refuses a send: keep pacing.
        with contextlib.suppress(BufferError):
            producer.produce(
                TOPIC, str(i).encode(), partition=i % 2, on_delivery=delivered
            )
        i += 1
        producer.poll(0.02)
    producer.flush(5.0)


def stage(out: Path) -> dict[str, object]:
    """One staged run under ``out``; what each producer did after the heal."""
    ports = free_ports(5)
    into = FaultProxies({0: ports[2]})
    cluster = ProcessCluster.create(
        out / "cluster",
        2,
        controllers=1,
        controller_ports=[into.port(0)],
        broker_ports=[ports[1], ports[3]],
        controller_listen_ports={0: ports[2]},
        overrides=SETTINGS,
    )
    debug = logging.getLogger("chaos.empty_metadata.rdkafka")
    debug.propagate = False
    debug.addHandler(logging.FileHandler(out / "rdkafka.log"))
    debug.setLevel(logging.DEBUG)
    try:
        cluster.up()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for future in admin.create_topics(
            [NewTopic(TOPIC, replica_assignment=[[1], [2]])]
        ).values():
            future.result()
        common = {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "request.timeout.ms": 10_000,
        }
        producers: dict[str, KafkaProducer | MinikafkaProducer] = {
            "confluent-kafka": KafkaProducer(
                {
                    **common,
                    "message.timeout.ms": 60_000,
                    "debug": "metadata,broker",
                    "logger": debug,
                }
            ),
            "minikafka": MinikafkaProducer({**common, "delivery.timeout.ms": 60_000}),
        }
        acked: dict[str, list[float]] = {name: [] for name in producers}
        stop = threading.Event()
        threads = [
            threading.Thread(target=_send_until, args=(stop, p, acked[name]))
            for name, p in producers.items()
        ]
        for thread in threads:
            thread.start()
        time.sleep(4.0)  # both producers acknowledged, before the faults
        cluster.kill(2)
        into.call(0, lambda proxy: proxy.refuse(True))
        into.call(0, FaultProxy.cut)
        time.sleep(CUT)
        into.call(0, lambda proxy: proxy.refuse(False))
        into.call(0, FaultProxy.heal)
        healed = time.time()
        time.sleep(AFTER)
        stop.set()
        for thread in threads:
            thread.join(AFTER)
        log = (out / "rdkafka.log").read_text()
        return {
            "acked_after_heal": {
                name: sum(1 for t in times if t > healed)
                for name, times in acked.items()
            },
            "librdkafka": {
                "empty_answers": log.count(": 0 brokers,"),
                "decommissioned": log.count("Decommissioning this broker"),
                "rebootstraps": log.count("Starting re-bootstrap sequence"),
            },
        }
    finally:
        cluster.kill_all()
        into.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="empty-metadata-"))
    out.mkdir(parents=True, exist_ok=True)
    print(json.dumps({"out": str(out), **stage(out)}, indent=2))


if __name__ == "__main__":
    main()
