"""Kafka's Java client's exactly-once program against Apache Kafka 4.1.1 itself.

The same program and checks as tests/compat/test_java_transactions.py
(``tests.compat._java_txn``): a consume-transform-produce copy with
``sendOffsetsToTransaction``, two transactions aborted on purpose, and a zombie producer
fenced by a successor with its ``transactional.id``. That they pass against the real
broker shows the checks are what Kafka does, not what minikafka happens to do.

Against Kafka 4.1 the client runs the second transaction protocol (KIP-890 part 2, the
``transaction.version`` 2 a new Kafka 4.1 cluster finalizes): partitions and offsets join
a transaction implicitly (no AddPartitionsToTxn, no AddOffsetsToTxn) and EndTxn is v5.
minikafka finalizes no ``transaction.version``, so with it the same client runs the
first protocol; the outcome the checks read is the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.java import requests_sent
from reference.kafka import KafkaNode
from tests.compat import _java_txn

pytestmark = pytest.mark.external


def test_the_exactly_once_program_passes_against_kafka(
    kafka_reference: KafkaNode, tmp_path: Path
) -> None:
    """Against Kafka: each input record copied exactly once under read_committed, the
    aborted records seen only by read_uncommitted, the group's offsets at the input's
    end, and ProducerFencedException for the zombie; through the second transaction
    protocol (EndTxn v5, no AddPartitionsToTxn or AddOffsetsToTxn)."""
    log = tmp_path / "requests.log"
    _java_txn.exactly_once(
        kafka_reference.bootstrap, "java-eos-reference", request_log=log
    )
    sent = requests_sent(log)
    apis = {api for api, _ in sent}
    assert {"INIT_PRODUCER_ID", "TXN_OFFSET_COMMIT", "END_TXN"} <= apis
    assert not apis & {"ADD_PARTITIONS_TO_TXN", "ADD_OFFSETS_TO_TXN"}
    assert ("END_TXN", 5) in sent
