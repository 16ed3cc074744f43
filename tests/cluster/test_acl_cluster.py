"""Replication under an authorizer (KIP-801): the followers' Fetch needs CLUSTER_ACTION
on the cluster. The brokers talk over PLAINTEXT, so their principal is
``User:ANONYMOUS``, which a cluster with an authorizer lists in ``super.users`` (as a
Kafka operator must). Guarantee tested: with the authorizer on, a three-broker KRaft
cluster replicates, an acks=all write is acknowledged and every replica stays in sync.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer

from tests.cluster._cluster import WAIT, create_topic, in_sync, shared_cluster, wait_for

pytestmark = [pytest.mark.timeout(300), pytest.mark.external]

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def test_brokers_replicate_with_the_authorizer_on(tmp_path: Path) -> None:
    overrides = {
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:ANONYMOUS",
    }
    with shared_cluster(tmp_path, overrides=overrides) as cluster:
        topic = f"replicated-{uuid.uuid4().hex[:8]}"
        create_topic(cluster, topic)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        outcome: list[KafkaError | None] = []

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            outcome.append(err)

        for i in range(10):
            producer.produce(topic, b"v%d" % i, on_delivery=delivered)
        producer.flush(WAIT)
        assert outcome == [None] * 10
        wait_for(in_sync(cluster, topic, 0), "all three replicas in sync")
