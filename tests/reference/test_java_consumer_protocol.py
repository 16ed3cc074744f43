"""Kafka's Java consumer with ``group.protocol=consumer`` (KIP-848) against Apache Kafka
4.1.1 itself.

The same scenario and checks as tests/compat/test_java_consumer_protocol.py
(``tests.compat._java_consumer_group``): three Java members, each a JVM of its own, one
SIGKILLed and one added while a producer writes; every record read at least once, twice
only after a failed or missing commit; no partition owned by two members at once; the
group described through ConsumerGroupDescribe with three, two, then three members; and
no complaint from the clients but the commits refused STALE_MEMBER_EPOCH when a
heartbeat answer in flight has just moved the member's epoch. That they pass against
the real broker shows the checks, that refusal included, are what Kafka does.

Kafka's node here is the test's own, not the session's ``kafka_reference``: its group
sessions and heartbeats are short (Kafka's minimums lowered), so that the killed
member is fenced within seconds, as on minikafka's test broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.kafka import KafkaNode
from tests.compat._java_consumer_group import check, killed_and_added
from tests.compat.test_consumer_protocol_confluent import OVERRIDES

pytestmark = [pytest.mark.external, pytest.mark.serial, pytest.mark.timeout(400)]

SHORT_SESSIONS = {
    **OVERRIDES,
    "group.consumer.min.heartbeat.interval.ms": OVERRIDES[
        "group.consumer.heartbeat.interval.ms"
    ],
    "group.consumer.min.session.timeout.ms": OVERRIDES[
        "group.consumer.session.timeout.ms"
    ],
}


def test_a_member_killed_and_one_added_pass_the_same_checks_on_kafka(
    tmp_path: Path,
) -> None:
    """Against Kafka: every record read, twice only after a failed commit, no partition
    owned twice, the group described with ConsumerGroupDescribe at each stage."""
    with KafkaNode(tmp_path / "kafka", overrides=SHORT_SESSIONS) as node:
        outcome = killed_and_added(node.bootstrap, "java848-reference", tmp_path)
    check(outcome)
