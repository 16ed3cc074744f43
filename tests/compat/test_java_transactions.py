"""Kafka's Java client's exactly-once program (kafka-clients 4.1.1) against minikafka.

``java/JavaExactlyOnce.java`` runs a consume-transform-produce copy with a transactional
KafkaProducer and a read_committed KafkaConsumer in a group, sending the consumer's
offsets with each transaction (``sendOffsetsToTransaction``, KIP-447), two of its
transactions aborted on purpose; then a zombie producer is fenced by a second producer
with its ``transactional.id``. ``_java_txn.exactly_once`` checks the outcome (each input
record copied exactly once as read_committed sees it, the aborted records seen only by
read_uncommitted, the group's offsets at the input's end, ProducerFencedException for the
zombie); tests/reference/test_java_transactions.py runs the same program and checks
against Apache Kafka 4.1.1. The client's request log shows which transaction APIs it
sent, at which versions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.testing import BrokerProcess
from reference.java import requests_sent
from tests.compat import _java_txn

pytestmark = pytest.mark.external

# What the transactional producer sends, at the versions it speaks with minikafka (the
# first transaction protocol: minikafka finalizes no transaction.version, so the client
# adds partitions and offsets explicitly): its producer id and epoch, each partition
# and the group's offsets added to the transaction, the offsets themselves, and the end
# of each transaction. Its coordinator is found with FindCoordinator (key type 1).
TRANSACTION_REQUESTS = {
    ("INIT_PRODUCER_ID", 5),
    ("ADD_PARTITIONS_TO_TXN", 3),
    ("ADD_OFFSETS_TO_TXN", 4),
    ("TXN_OFFSET_COMMIT", 4),
    ("END_TXN", 4),
}


@pytest.mark.compat("FindCoordinator", "java")
@pytest.mark.compat("InitProducerId", "java")
@pytest.mark.compat("AddPartitionsToTxn", "java")
@pytest.mark.compat("AddOffsetsToTxn", "java")
@pytest.mark.compat("TxnOffsetCommit", "java")
@pytest.mark.compat("EndTxn", "java")
@pytest.mark.compat("WriteTxnMarkers", "java")
@pytest.mark.compat("Produce", "java")
@pytest.mark.compat("Fetch", "java")
@pytest.mark.compat("OffsetFetch", "java")
def test_consume_transform_produce_copies_exactly_once_and_fences_a_zombie(
    group_broker: BrokerProcess, tmp_path: Path
) -> None:
    """Each input record is copied exactly once as read_committed sees the output, the
    aborted transactions' records only read_uncommitted sees, the group's offsets
    committed with the transactions end at the input's end, and a zombie producer is
    fenced (ProducerFencedException) by a successor with its transactional.id. The
    commit and abort markers the broker writes (WriteTxnMarkers) are what the two
    isolation levels read differently."""
    log = tmp_path / "requests.log"
    _java_txn.exactly_once(group_broker.bootstrap, "java-eos", request_log=log)
    sent = requests_sent(log)
    missing = TRANSACTION_REQUESTS - sent
    assert not missing, f"the Java client sent no {sorted(missing)}: {sorted(sent)}"
    assert "FIND_COORDINATOR" in {api for api, _ in sent}
