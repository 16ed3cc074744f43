"""Kafka's Java client's exactly-once program against Apache Kafka 4.1.1 itself.

The same program and checks as tests/compat/test_java_transactions.py
(``tests.compat._java_txn``): a consume-transform-produce copy with
``sendOffsetsToTransaction``, two transactions aborted on purpose, and a zombie producer
fenced by a successor with its ``transactional.id``. That they pass against the real
broker shows the checks are what Kafka does, not what minikafka happens to do.
"""

from __future__ import annotations

import pytest

from reference.kafka import KafkaNode
from tests.compat import _java_txn

pytestmark = pytest.mark.external


def test_the_exactly_once_program_passes_against_kafka(
    kafka_reference: KafkaNode,
) -> None:
    """Against Kafka: each input record copied exactly once under read_committed, the
    aborted records seen only by read_uncommitted, the group's offsets at the input's
    end, and ProducerFencedException for the zombie."""
    _java_txn.exactly_once(kafka_reference.bootstrap, "java-eos-reference")
