"""Kafka's own kafka-transactions.sh (``list``, ``describe --transactional-id``) against
minikafka and against Kafka itself, on the same live transaction: a confluent-kafka
transactional producer with records in two partitions, its transaction open, then
committed. The outputs are compared line by line, the columns that differ by nature
(producer ids, start times, durations) checked for their form.

Like ``test_tools.py``, each test carries ``@pytest.mark.kafka_tool(tool, action)`` for
the rows of COMPAT.md's tools table it proves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import Producer

from minikafka.broker._node_exits import tracebacks
from minikafka.broker.testing import BrokerProcess
from reference.kafka import KafkaNode, ToolRun, run_tool
from tests.cluster._cluster import WAIT
from tests.reference.test_tools import GROUP_OVERRIDES, new_topic

pytestmark = [pytest.mark.external, pytest.mark.timeout(180)]

TXN_ID = "tools-transactions"
TOPIC = "tools-transactions-topic"
TXN_NOTES = (
    "`TopicPartitions` in sorted order where Kafka's broker answers in its hash set's "
    "order"
)
PATTERN_NOTES = (
    "a pattern is Python's regular expression where Kafka's is RE2/J's; one that "
    "could backtrack exponentially (a repeat, counted or not, of a repeat or of "
    "alternatives) is "
    "refused, INVALID_REGULAR_EXPRESSION"
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(
        tmp_path_factory.mktemp("txn-tools-broker"), overrides=GROUP_OVERRIDES
    ) as process:
        yield process
        found = tracebacks("\n".join(process.output))
        assert not found, found


def transactions(where: str, *args: str, returncode: int = 0) -> ToolRun:
    run = run_tool("kafka-transactions", "--bootstrap-server", where, *args)
    return run.check(returncode)


def table(run: ToolRun) -> list[list[str]]:
    """prettyPrintTable's lines: cells padded and each followed by a tab."""
    return [
        [cell.rstrip() for cell in line.split("\t")[:-1]]
        for line in run.stdout.splitlines()
        if line
    ]


def ours_only(rows: list[list[str]]) -> list[list[str]]:
    """The headers and this test's transaction (the Kafka node is shared)."""
    return [rows[0], *(r for r in rows[1:] if r[0] == TXN_ID)]


def views(where: str) -> tuple[list[list[str]], list[list[str]]]:
    """``list`` and ``describe``, run at once (a JVM's start is most of each)."""
    with ThreadPoolExecutor(2) as pool:
        listed = pool.submit(transactions, where, "list")
        described = pool.submit(
            transactions, where, "describe", "--transactional-id", TXN_ID
        )
        return ours_only(table(listed.result())), table(described.result())


def same_form(ours: list[list[str]], theirs: list[list[str]]) -> None:
    """Equal but for the producer id, the start time and the duration, which are
    each broker's own; those must be numbers (or None in both)."""
    varying = {"ProducerId", "CurrentTransactionStartTimeMs", "TransactionDurationMs"}
    assert ours[0] == theirs[0]
    assert len(ours) == len(theirs)
    for our_row, their_row in zip(ours[1:], theirs[1:], strict=True):
        for header, mine, kafkas in zip(ours[0], our_row, their_row, strict=True):
            if header in varying:
                assert re.fullmatch(r"\d+|None", mine), (header, mine)
                assert (mine == "None") == (kafkas == "None"), (header, mine, kafkas)
            elif header == "TopicPartitions":
                assert set(mine.split(",")) == set(kafkas.split(","))
            else:
                assert mine == kafkas, (header, mine, kafkas)


@pytest.mark.kafka_tool("kafka-transactions", "list")
@pytest.mark.kafka_tool("kafka-transactions", "list --duration-filter")
@pytest.mark.kafka_tool(
    "kafka-transactions", "list --transactional-id-pattern", notes=PATTERN_NOTES
)
@pytest.mark.kafka_tool(
    "kafka-transactions", "describe --transactional-id", notes=TXN_NOTES
)
def test_transactions_list_and_describe_an_open_then_committed_transaction(
    broker: BrokerProcess, kafka_reference: KafkaNode
) -> None:
    # Guarantee: on minikafka as on Kafka, `list` shows the producer's transaction
    # Ongoing under its coordinator while it is open, and `describe` its producer,
    # epoch, timeout, start and both partitions; after the commit both show it
    # CompleteCommit with no partitions; `list --duration-filter` leaves out a
    # transaction younger than the filter, `--transactional-id-pattern` lists the ids
    # it matches whole; an unknown id fails with Kafka's line.
    def open_transaction(where: str) -> Producer:
        new_topic(where, TOPIC, 2)
        producer = Producer(
            {"bootstrap.servers": where, "transactional.id": TXN_ID, "log_level": 0}
        )
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        producer.produce(TOPIC, b"a", partition=0)
        producer.produce(TOPIC, b"b", partition=1)
        assert producer.flush(WAIT) == 0
        return producer

    with ThreadPoolExecutor(2) as pool:
        producers = list(
            pool.map(open_transaction, [broker.bootstrap, kafka_reference.bootstrap])
        )
        (our_list, our_describe), (their_list, their_describe) = pool.map(
            views, [broker.bootstrap, kafka_reference.bootstrap]
        )
    assert our_list[0] == [
        "TransactionalId",
        "Coordinator",
        "ProducerId",
        "TransactionState",
    ]
    [[_, coordinator, pid, state]] = our_list[1:]
    assert (coordinator, state) == ("1", "Ongoing")
    assert our_describe[1][:3] == ["1", TXN_ID, pid]
    assert our_describe[1][4] == "Ongoing"
    assert set(our_describe[1][8].split(",")) == {f"{TOPIC}-0", f"{TOPIC}-1"}
    same_form(our_list, their_list)
    same_form(our_describe, their_describe)

    young = transactions(broker.bootstrap, "list", "--duration-filter", "3600000")
    assert ours_only(table(young)) == [our_list[0]]
    with ThreadPoolExecutor(2) as pool:
        ours_matched, theirs_matched = pool.map(
            lambda where: table(
                transactions(
                    where, "list", "--transactional-id-pattern", "tools-trans.*"
                )
            ),
            [broker.bootstrap, kafka_reference.bootstrap],
        )
    assert ours_only(ours_matched) == ours_matched == our_list
    same_form(ours_matched, theirs_matched)

    for producer in producers:
        producer.commit_transaction(WAIT)
    with ThreadPoolExecutor(2) as pool:
        (our_list, our_describe), (their_list, their_describe) = pool.map(
            views, [broker.bootstrap, kafka_reference.bootstrap]
        )
    assert our_list[1][3] == our_describe[1][4] == "CompleteCommit"
    assert our_describe[1][8] == ""
    same_form(our_list, their_list)
    same_form(our_describe, their_describe)

    with ThreadPoolExecutor(2) as pool:
        ours, theirs = pool.map(
            lambda where: transactions(
                where, "describe", "--transactional-id", "nobody", returncode=1
            ),
            [broker.bootstrap, kafka_reference.bootstrap],
        )
    assert (
        ours.stderr.strip()
        == theirs.stderr.strip()
        == (
            "Failed to describe transaction state of transactional-id `nobody`: "
            "DescribeTransactions request for transactionalId `nobody` failed because the "
            "ID could not be found. Enable debug logging for additional detail."
        )
    )
