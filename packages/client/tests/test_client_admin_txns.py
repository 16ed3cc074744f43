"""The admin client's DescribeTransactions against a coordinator that answers oddly: each
id gets an answer of its own, an error where the broker's answer cannot be read, and the
call never raises (what a tool printing the answers relies on)."""

from __future__ import annotations

import datetime
from typing import Any

import trio
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId, TransactionalId
from kio.static.primitive import i16, i32Timedelta

from minikafka.client import KafkaError, TransactionDescription
from minikafka.client._admin_txns import TransactionsAdmin
from minikafka.net import DescribeTransactionsResponse, Node
from minikafka.net._describe_transactions_v0 import TransactionState


def _state(transactional_id: str) -> TransactionState:
    return TransactionState(
        error_code=ErrorCode.none,
        transactional_id=TransactionalId(transactional_id),
        transaction_state="Ongoing",
        transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
        transaction_start_time=None,
        producer_id=ProducerId(7),
        producer_epoch=i16(0),
        topics=(),
    )


class OddCoordinator:
    """An admin port whose coordinator answers each id with ``states[id]``."""

    def __init__(self, states: dict[str, tuple[TransactionState, ...]]) -> None:
        self.states = states

    async def find_coordinator(self, key: str, key_type: int = 0) -> Node:
        return Node(1, "127.0.0.1", 9092)

    async def request(self, node: Node, body: Any, response_type: type[Any]) -> Any:
        [asked] = body.transactional_ids
        return DescribeTransactionsResponse(
            throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
            transaction_states=self.states[str(asked)],
        )

    def _timeout(self) -> i32Timedelta:
        return i32Timedelta.parse(datetime.timedelta(seconds=5))


async def test_an_answer_without_exactly_one_state_is_an_error_of_that_id() -> None:
    port = OddCoordinator(
        {"none": (), "two": (_state("two"), _state("two")), "ok": (_state("ok"),)}
    )
    with trio.fail_after(10):
        answers = await TransactionsAdmin.describe_transactions(
            port,  # type: ignore[arg-type]
            ["none", "two", "ok"],
        )
    for odd in ("none", "two"):
        error = answers[odd]
        assert isinstance(error, KafkaError), answers
        assert error.code() == int(ErrorCode.unknown_server_error)
    described = answers["ok"]
    assert isinstance(described, TransactionDescription)
    assert (described.state, described.producer_id) == ("Ongoing", 7)
