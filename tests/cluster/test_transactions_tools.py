"""``minikafka transactions list`` and ``describe`` (kafka-transactions.sh, KIP-664) on
three ``minikafka broker`` processes, in both controller modes, against live
transactions of confluent-kafka's transactional producer.

What the test proves, in each mode:

- ``list`` asks every broker and shows each open transaction once, Ongoing, under the
  broker that coordinates it: the leader of its ``__transaction_state`` partition;
- ``describe --transactional-id`` finds that coordinator and shows the transaction's
  producer id (the one ``list`` shows), epoch, the producer's timeout, a start time and
  duration, and every partition the transaction wrote to;
- after the commit both show CompleteCommit and no partitions; ``list
  --duration-filter`` leaves out transactions younger than the filter,
  ``--transactional-id-pattern`` keeps the ids it matches whole; an id no
  coordinator knows fails with Kafka's line and exit status 1;
- minikafka's synchronous AdminClient gives the same: ``list_transactions`` by broker,
  filtered by state, and ``describe_transactions`` per id (TRANSACTIONAL_ID_NOT_FOUND
  for the unknown one).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster
from minikafka.client import AdminClient as MiniAdminClient
from minikafka.client import KafkaException, TransactionListing
from minikafka.coordination import TRANSACTION_STATE_TOPIC, partition_for
from tests.cluster._cluster import MODES, WAIT, shared_cluster, state, wait_for

TXN_PARTITIONS = 5
TXN_SETTINGS = {
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
}
TOPIC = "txn-tools"
IDS = ("txn-tools-a", "txn-tools-b")
TOOL = (sys.executable, "-m", "minikafka.tools", "transactions")


@pytest.fixture(scope="module", params=MODES)
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    with shared_cluster(
        tmp_path_factory.mktemp(f"txn-tools-{request.param}"),
        mode=request.param,
        overrides=TXN_SETTINGS,
    ) as made:
        yield made


def transactions(
    cluster: ProcessCluster, *args: str, returncode: int = 0
) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [*TOOL, "--bootstrap-server", cluster.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert run.returncode == returncode, run.stdout + run.stderr
    return run


def rows(run: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    """The table's rows by header (cells padded, each followed by a tab)."""
    [header, *lines] = [
        [cell.rstrip() for cell in line.split("\t")[:-1]]
        for line in run.stdout.splitlines()
        if line
    ]
    return [dict(zip(header, line, strict=True)) for line in lines]


def listed(cluster: ProcessCluster, *args: str) -> dict[str, dict[str, str]]:
    return {
        r["TransactionalId"]: r
        for r in rows(transactions(cluster, "list", *args))
        if r["TransactionalId"] in IDS
    }


def described(cluster: ProcessCluster, transactional_id: str) -> dict[str, str]:
    [row] = rows(
        transactions(cluster, "describe", "--transactional-id", transactional_id)
    )
    return row


def test_list_and_describe_follow_live_transactions_to_their_coordinators(
    cluster: ProcessCluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(TOPIC, 2, 3)])[TOPIC].result(timeout=WAIT)
    producers = []
    for transactional_id in IDS:
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "transactional.id": transactional_id,
                "log_level": 0,
            }
        )
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        producer.produce(TOPIC, b"a", partition=0)
        producer.produce(TOPIC, b"b", partition=1)
        assert producer.flush(WAIT) == 0
        producers.append(producer)

    coordinators = {
        t: state(cluster, TRANSACTION_STATE_TOPIC, partition_for(t, TXN_PARTITIONS))
        for t in IDS
    }
    found = listed(cluster)
    for transactional_id in IDS:
        row = found[transactional_id]
        assert row["TransactionState"] == "Ongoing"
        assert int(row["Coordinator"]) == coordinators[transactional_id].leader
        one = described(cluster, transactional_id)
        assert one["CoordinatorId"] == row["Coordinator"]
        assert one["ProducerId"] == row["ProducerId"]
        assert (one["ProducerEpoch"], one["TransactionState"]) == ("0", "Ongoing")
        assert one["TransactionTimeoutMs"] == "60000"  # confluent-kafka's default
        start = int(one["CurrentTransactionStartTimeMs"])
        assert 0 < time.time() * 1000 - start < 10 * 60_000
        assert int(one["TransactionDurationMs"]) >= 0
        assert one["TopicPartitions"] == f"{TOPIC}-0,{TOPIC}-1"
    assert listed(cluster, "--duration-filter", "3600000") == {}
    assert set(listed(cluster, "--transactional-id-pattern", ".*-b")) == {IDS[1]}

    for producer in producers:
        producer.commit_transaction(WAIT)

    def all_committed() -> bool:
        return all(
            r["TransactionState"] == "CompleteCommit" for r in listed(cluster).values()
        )

    wait_for(all_committed, "both transactions CompleteCommit")
    for transactional_id in IDS:
        one = described(cluster, transactional_id)
        assert (one["TransactionState"], one["TopicPartitions"]) == (
            "CompleteCommit",
            "",
        )

    missing = transactions(
        cluster, "describe", "--transactional-id", "nobody", returncode=1
    )
    assert missing.stderr.strip() == (
        "Failed to describe transaction state of transactional-id `nobody`: "
        "DescribeTransactions request for transactionalId `nobody` failed because the "
        "ID could not be found. Enable debug logging for additional detail."
    )

    ours = MiniAdminClient({"bootstrap.servers": cluster.bootstrap})
    by_broker = ours.list_transactions(states=["CompleteCommit"]).result(WAIT)
    for transactional_id in IDS:
        leader = coordinators[transactional_id].leader
        assert (
            TransactionListing(
                transactional_id,
                int(found[transactional_id]["ProducerId"]),
                "CompleteCommit",
            )
            in by_broker[leader]
        )
    assert set(by_broker) == set(cluster.broker_ports)  # every broker answered
    ongoing = ours.list_transactions(states=["Ongoing"]).result(WAIT)
    assert not [t for ts in ongoing.values() for t in ts if t.transactional_id in IDS]
    futures = ours.describe_transactions([IDS[0], "nobody"])
    assert futures[IDS[0]].result(WAIT).state == "CompleteCommit"
    with pytest.raises(KafkaException) as refused:
        futures["nobody"].result(WAIT)
    assert refused.value.args[0].name() == "TRANSACTIONAL_ID_NOT_FOUND"
