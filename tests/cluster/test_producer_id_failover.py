"""minikafka.client's idempotent producer needs a new producer id while a broker is
frozen (SIGSTOP: a machine that stopped answering), on a cluster of real processes.

The guarantee: InitProducerId, which any broker can answer, goes to a broker that is
answering (Kafka's ``NetworkClient.leastLoadedNode``), not to the one the producer
asked last, or first by id, so the producer is not held a request timeout on the
frozen broker before it can send again (chaos/README.md, seed 122). Checked by the
order of what the producer logs: the new id comes from another broker, and no request
for it failed on the frozen one.

Broker 1, the frozen one, is the lowest id and leads the topic (one replica), so the
Produce in flight on it when it stops is never answered; the batch expires
(``delivery.timeout.ms``) with its sequence unresolved, and the producer starts again
under a new producer id, as Kafka's does. The controller keeps broker 1 registered
(a long session timeout): the brokers it knows stay 1, 2 and 3.
"""

from __future__ import annotations

import logging
import signal

import pytest

from minikafka.client import KafkaError, Message, Producer
from tests.cluster._cluster import MakeCluster, create_on, wait_for

pytestmark = pytest.mark.timeout(300)

REQUEST_TIMEOUT_MS = 4000


def test_a_new_producer_id_comes_from_a_broker_that_answers(
    make_cluster: MakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = make_cluster(**{"broker.session.timeout.ms": "120000"})
    frozen = min(cluster.broker_ports)
    create_on(cluster, "pid", [frozen])
    outcomes: list[KafkaError | None] = []

    def report(error: KafkaError | None, _message: Message) -> None:
        outcomes.append(error)

    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "request.timeout.ms": REQUEST_TIMEOUT_MS,
            "delivery.timeout.ms": REQUEST_TIMEOUT_MS,
            "linger.ms": 0,
            # The metadata loop asks each broker in turn every half second: the
            # producer soon has a connection to every broker.
            "metadata.max.age.ms": 500,
        }
    )
    try:
        producer.produce("pid", b"before", partition=0, on_delivery=report)
        assert producer.flush(30) == 0
        assert outcomes == [None]
        shell = producer._shell
        assert shell is not None
        first_id = shell.sender.producer_id
        brokers = [shell.metadata.node(b) for b in sorted(cluster.broker_ports)]
        wait_for(
            lambda: all(b is not None and shell.client.load(b) == 0 for b in brokers),
            "a connection to every broker, idle",
        )
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="minikafka.client._shell"):
            cluster.signal(frozen, signal.SIGSTOP)
            try:
                producer.produce("pid", b"lost", partition=0, on_delivery=report)
                wait_for(
                    lambda: shell.sender.producer_id not in (-1, first_id),
                    "a new producer id while broker 1 is frozen",
                )
            finally:
                cluster.signal(frozen, signal.SIGCONT)
        said = [
            r.getMessage()
            for r in caplog.records
            if r.name == "minikafka.client._shell"
            and ("InitProducerId" in r.getMessage() or "ProducerId" in r.getMessage())
        ]
        # Seed 122's fault: the request for the new id went to the frozen broker, and
        # the producer waited a request timeout before asking another.
        assert not any(f"from node {frozen} failed" in m for m in said), said
        assert said[0].startswith("ProducerId set to"), said
        assert not said[0].endswith(f"(from node {frozen})"), said
    finally:
        producer.close(10)
