"""The transaction manager's requests and answers, as values (KIP-98, KIP-447).

What :class:`~._transactions.TransactionManager` asks its shell to send (one class per
request, named after Kafka's request, with the node it goes to) and what the shell
hands back: an answer's error and the fields that matter, and the outcome of an API
call. Plain frozen values: no I/O, no kio (``_txn_wire`` turns them into Kafka's
schemas).
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from minikafka.common import TopicPartition

from ._message import KafkaError

TRANSACTION_KEY_TYPE = 1  # FindCoordinator: a transactional id
GROUP_KEY_TYPE = 0  # FindCoordinator: a consumer group


@attrs.frozen
class FindCoordinatorPlan:
    key: str
    key_type: int  # TRANSACTION_KEY_TYPE or GROUP_KEY_TYPE


@attrs.frozen
class InitProducerIdPlan:
    node: int
    transactional_id: str
    transaction_timeout_ms: int
    # the current id and epoch when bumping the epoch (KIP-360), else -1
    producer_id: int = -1
    producer_epoch: int = -1


@attrs.frozen
class AddPartitionsToTxnPlan:
    node: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]


@attrs.frozen
class AddOffsetsToTxnPlan:
    node: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@attrs.frozen
class ConsumerGroupMetadata:
    """What a consumer tells a transactional producer of its membership (KIP-447): the
    group coordinator refuses a TxnOffsetCommit of an older generation or another
    member, so a zombie cannot commit offsets."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@attrs.frozen
class TxnOffsetCommitPlan:
    node: int  # the group's coordinator
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group: ConsumerGroupMetadata
    offsets: tuple[tuple[TopicPartition, int], ...]


@attrs.frozen
class EndTxnPlan:
    node: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


TxnPlan: TypeAlias = (
    FindCoordinatorPlan
    | InitProducerIdPlan
    | AddPartitionsToTxnPlan
    | AddOffsetsToTxnPlan
    | TxnOffsetCommitPlan
    | EndTxnPlan
)


@attrs.frozen
class TxnCompleted:
    """The outcome of the API call that returned ``operation``: None is success."""

    operation: int
    error: KafkaError | None


@attrs.frozen
class TxnAnswer:
    """A transactional request's answer, decoded by the shell: the error (one per
    partition where the response has several, the first not NONE), and for
    FindCoordinator and InitProducerId the fields that matter."""

    error: int
    node_id: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    message: str | None = None
