"""The admin clients' transaction calls (KIP-664, KIP-994, KIP-1152): Kafka's
``Admin.listTransactions`` and ``Admin.describeTransactions``, which
``kafka-transactions.sh list`` and ``describe`` print.

Where each goes, as Kafka's Admin sends them: ListTransactions to every broker (each
transaction coordinator knows only the ids of the ``__transaction_state`` partitions it
leads), so the answer is per broker; DescribeTransactions to the id's coordinator, found
with FindCoordinator key type 1. Both ask again, within ``request.timeout.ms``, while a
coordinator is loading (COORDINATOR_LOAD_IN_PROGRESS) and, for an id, after its
coordinator moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: found again), as Kafka's
handlers do; any other error is the broker's or the id's answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import attrs
import trio
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_transactions.v2.request import ListTransactionsRequest
from kio.schema.list_transactions.v2.response import ListTransactionsResponse
from kio.schema.types import ProducerId, TransactionalId
from kio.static.primitive import i64

from minikafka.common import TopicPartition as TopicPartitionKey
from minikafka.net import DescribeTransactionsResponse, Node

from ._admin_port import AdminPort
from ._message import KafkaError, KafkaException

T = TypeVar("T")
TRANSACTION_KEY_TYPE = 1  # FindCoordinator: a transactional id
RETRY_BACKOFF_S = 0.1  # retry.backoff.ms
_RETRIED = {
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
}


@attrs.frozen
class TransactionListing:
    """One transactional id as its coordinator lists it (Kafka's
    ``TransactionListing``)."""

    transactional_id: str
    producer_id: int
    state: str
    """Kafka's name of the state: Empty, Ongoing, PrepareCommit, CompleteCommit..."""


@attrs.frozen
class TransactionDescription:
    """One transactional id as its coordinator describes it (Kafka's
    ``TransactionDescription``)."""

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    """When the open transaction began (ms since the epoch); None if none has."""
    topic_partitions: frozenset[TopicPartitionKey]


class TransactionsAdmin:
    """Mixed into :class:`AsyncAdminClient`: its transaction calls."""

    async def list_transactions(
        self: AdminPort,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int = -1,
        transactional_id_pattern: str | None = None,
    ) -> dict[int, list[TransactionListing]]:
        """Every broker's transactions, by broker id (ListTransactions v2 to each):
        those in ``states`` and of ``producer_ids`` when given, (``duration_ms`` >= 0,
        KIP-994) open for longer than that, and (KIP-1152) whose whole id matches
        ``transactional_id_pattern``. KafkaException with a broker's error
        (INVALID_REGULAR_EXPRESSION for a pattern that does not compile)."""
        await self.metadata([])
        body = ListTransactionsRequest(
            state_filters=tuple(states),
            producer_id_filters=tuple(ProducerId(p) for p in producer_ids),
            duration_filter=i64(duration_ms),
            transactional_id_pattern=transactional_id_pattern,
        )
        found: dict[int, list[TransactionListing]] = {}
        for node_id, node in sorted(self.brokers.items()):

            async def ask(node: Node = node) -> ListTransactionsResponse:
                return await self.request(node, body, ListTransactionsResponse)

            response = await _retried(self, ask, lambda r: r.error_code)
            if response.error_code != ErrorCode.none:
                message = f"ListTransactions of broker {node_id}"
                raise KafkaException(KafkaError(int(response.error_code), message))
            found[node_id] = [
                TransactionListing(
                    str(t.transactional_id), int(t.producer_id), t.transaction_state
                )
                for t in response.transaction_states
            ]
        return found

    async def describe_transactions(
        self: AdminPort, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription | KafkaError]:
        """Each id's state from its coordinator (DescribeTransactions v0), or its error
        (TRANSACTIONAL_ID_NOT_FOUND for an id no coordinator knows)."""
        out: dict[str, TransactionDescription | KafkaError] = {}
        for transactional_id in dict.fromkeys(transactional_ids):
            body = DescribeTransactionsRequest(
                transactional_ids=(TransactionalId(transactional_id),)
            )

            async def ask(
                body: DescribeTransactionsRequest = body, tid: str = transactional_id
            ) -> tuple[Node, DescribeTransactionsResponse]:
                node = await self.find_coordinator(tid, TRANSACTION_KEY_TYPE)
                answer = await self.request(node, body, DescribeTransactionsResponse)
                return node, answer

            try:
                node, response = await _retried(self, ask, lambda a: _error_of(a[1]))
            except KafkaException as e:
                out[transactional_id] = e.args[0]
                continue
            if len(response.transaction_states) != 1:  # a broker that answers oddly
                out[transactional_id] = KafkaError(
                    int(ErrorCode.unknown_server_error),
                    f"DescribeTransactions of transactional id '{transactional_id}': "
                    f"{len(response.transaction_states)} states in the answer",
                )
                continue
            [state] = response.transaction_states
            if state.error_code != ErrorCode.none:
                out[transactional_id] = KafkaError(
                    int(state.error_code),
                    f"DescribeTransactions of transactional id '{transactional_id}'",
                )
                continue
            start = state.transaction_start_time
            out[transactional_id] = TransactionDescription(
                node.node_id,
                state.transaction_state,
                int(state.producer_id),
                int(state.producer_epoch),
                round(state.transaction_timeout.total_seconds() * 1000),
                None if start is None else round(start.timestamp() * 1000),
                frozenset(
                    TopicPartitionKey(str(t.topic), int(p))
                    for t in state.topics
                    for p in t.partitions
                ),
            )
        return out


def _error_of(response: DescribeTransactionsResponse) -> ErrorCode:
    """The one id's error; an answer of no state or several is not retried."""
    states = response.transaction_states
    return states[0].error_code if len(states) == 1 else ErrorCode.unknown_server_error


async def _retried(
    admin: AdminPort,
    ask: Callable[[], Awaitable[T]],
    error_of: Callable[[T], ErrorCode],
) -> T:
    """``ask()`` again while its answer is an error Kafka's Admin retries, within the
    request timeout; the last answer then. A coordinator that cannot be found is
    retried too (it is being elected)."""
    with trio.move_on_after(admin._timeout().total_seconds()):
        while True:
            try:
                answer = await ask()
            except KafkaException as e:
                if e.args[0].code() not in _RETRIED:
                    raise
            else:
                if error_of(answer) not in _RETRIED:
                    return answer
            await trio.sleep(RETRY_BACKOFF_S)
    return await ask()
