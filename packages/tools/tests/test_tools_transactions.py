"""``minikafka transactions``' own parts: Kafka's ``prettyPrintTable`` layout, and
``describe``'s row for an open transaction and for an id with none open."""

from __future__ import annotations

from minikafka.client import TransactionDescription
from minikafka.common import TopicPartition
from minikafka.tools._transactions import DESCRIBE_HEADERS, describe_row, pretty_table


def test_the_table_pads_each_column_to_its_widest_and_ends_cells_with_tabs() -> None:
    assert pretty_table(
        ("Id", "State"), [("a-long-id", "Ongoing"), ("b", "Empty")]
    ) == ("Id       \tState  \t\na-long-id\tOngoing\t\nb        \tEmpty  \t")
    # No rows: the headers alone, as Kafka prints an empty list.
    assert pretty_table(("Id", "State"), []) == "Id\tState\t"


def test_describe_gives_the_duration_by_this_clock_and_none_when_nothing_is_open() -> (
    None
):
    open_ = TransactionDescription(
        2,
        "Ongoing",
        1000,
        3,
        60_000,
        1_700_000_000_000,
        frozenset({TopicPartition("t", 1), TopicPartition("t", 0)}),
    )
    row = describe_row("tx", open_, now=lambda: 1_700_000_004.5)
    assert dict(zip(DESCRIBE_HEADERS, row, strict=True)) == {
        "CoordinatorId": "2",
        "TransactionalId": "tx",
        "ProducerId": "1000",
        "ProducerEpoch": "3",
        "TransactionState": "Ongoing",
        "TransactionTimeoutMs": "60000",
        "CurrentTransactionStartTimeMs": "1700000000000",
        "TransactionDurationMs": "4500",
        "TopicPartitions": "t-0,t-1",
    }
    idle = TransactionDescription(2, "Empty", 1000, 3, 60_000, None, frozenset())
    assert describe_row("tx", idle)[6:] == ("None", "None", "")
