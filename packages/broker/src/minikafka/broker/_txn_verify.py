"""The leader's questions to transaction coordinators (KIP-890 part 1; Kafka's
``AddPartitionsToTxnManager``).

Before a partition leader appends the first transactional batch of a producer that has
no transaction open in the partition, it asks the producer's transaction coordinator
whether the partition is in the transaction: AddPartitionsToTxn v5 with ``verify_only``,
over the inter-broker listener (to itself too, when it is the coordinator). Questions
for the same coordinator are batched: one request per coordinator broker at a time,
carrying every transaction waiting, as Kafka's sender thread does; those that arrive
while it is in flight go in the next.

One question per transactional id waits at a time: a newer one from the same producer
epoch replaces it (the older is answered NETWORK_EXCEPTION, which the producer
retries), one from a newer epoch fences it (INVALID_PRODUCER_EPOCH), and one from an
older epoch is fenced at once. What the answer means is the replication package's
(:func:`~minikafka.replication.verification_error`); a coordinator that cannot be
reached answers NETWORK_EXCEPTION, and a transactional id whose coordinator partition
has no leader COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import attrs
import trio
from kio.schema.add_partitions_to_txn.v5 import request as apt_v5
from kio.schema.add_partitions_to_txn.v5.response import AddPartitionsToTxnResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32

from minikafka.common import FatalFaultError, TopicPartition
from minikafka.coordination import TRANSACTION_STATE_TOPIC
from minikafka.log import NO_VERIFICATION_NEEDED, VerificationGuard
from minikafka.net import ClientError, ClientSecurity, NetworkClient, Node
from minikafka.replication import verification_error

from ._metadata_cache import MetadataCache

__all__ = ["AddPartitionsToTxnManager", "VerifyCallback"]

_logger = logging.getLogger(__name__)

VerifyCallback = Callable[[dict[TopicPartition, ErrorCode]], None]
"""Called once with the partitions that could not be verified (empty: all were)."""


@attrs.define(eq=False)
class _Question:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]
    abortable_understood: bool
    """The producer's request knows TRANSACTION_ABORTABLE (Produce v11+)."""
    callback: VerifyCallback

    def answer_all(self, error: ErrorCode) -> None:
        self.answer(dict.fromkeys(self.partitions, error))

    def answer(self, unverified: dict[TopicPartition, ErrorCode]) -> None:
        """Call back; a callback that raises is logged, as Kafka's request handler
        logs a failed callback: it must not cost the other questions their answers,
        nor stop the sender. A fatal fault still ends the process."""
        try:
            self.callback(unverified)
        except FatalFaultError:
            raise
        except Exception:
            _logger.exception(
                "the answer to a verification of %r failed", self.transactional_id
            )


@attrs.define(eq=False)
class AddPartitionsToTxnManager:
    node_id: int
    cache: MetadataCache
    listener: str
    """The inter-broker listener: where coordinators are reached."""
    partition_for: Callable[[str], int]
    """The ``__transaction_state`` partition of a transactional id."""
    enabled: bool = True
    """``transaction.partition.verification.enable``: False, nothing is asked and no
    guard is checked (transactional batches are appended as before KIP-890)."""
    request_timeout_s: float = 30.0
    security: ClientSecurity = attrs.field(factory=ClientSecurity, kw_only=True)
    """TLS and SASL towards the coordinators (:mod:`._security_channels`)."""
    _guards: dict[tuple[TopicPartition, int], VerificationGuard] = attrs.field(
        init=False, factory=dict
    )
    """(partition, producer id) -> the guard of a verified coordinator write
    (TxnOffsetCommit's offsets), until the write presents it."""
    _waiting: dict[int, dict[str, _Question]] = attrs.field(init=False, factory=dict)
    """Coordinator broker -> the questions for its next request, by transactional id."""
    _in_flight: set[int] = attrs.field(init=False, factory=set)
    _changed: trio.Event = attrs.field(init=False, factory=trio.Event)

    def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        abortable_understood: bool,
        callback: VerifyCallback,
    ) -> None:
        """Ask the id's coordinator about ``partitions``; ``callback`` with the
        partitions not verified and why."""
        question = _Question(
            transactional_id,
            producer_id,
            producer_epoch,
            tuple(partitions),
            abortable_understood,
            callback,
        )
        coordinator = self._coordinator(transactional_id)
        if coordinator is None:
            question.answer_all(ErrorCode.coordinator_not_available)
            return
        batch = self._waiting.setdefault(coordinator.node_id, {})
        existing = batch.get(transactional_id)
        if existing is not None:
            if existing.producer_epoch > producer_epoch:
                question.answer_all(ErrorCode.invalid_producer_epoch)
                return
            existing.answer_all(
                ErrorCode.invalid_producer_epoch
                if existing.producer_epoch < producer_epoch
                else ErrorCode.network_exception
            )
        batch[transactional_id] = question
        self._changed.set()

    def keep_guard(
        self, tp: TopicPartition, producer_id: int, guard: VerificationGuard
    ) -> None:
        """A coordinator's write of the producer to ``tp`` was verified: its append
        presents ``guard`` (:meth:`take_guard`)."""
        self._guards[(tp, producer_id)] = guard

    def take_guard(self, tp: TopicPartition, producer_id: int) -> VerificationGuard:
        """The guard kept for the write (:data:`NO_VERIFICATION_NEEDED` if none: the
        producer's transaction must then be open in ``tp``)."""
        return self._guards.pop((tp, producer_id), NO_VERIFICATION_NEEDED)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Send each coordinator's waiting questions, one request in flight per
        coordinator, until cancelled."""
        async with (
            NetworkClient.open(
                client_id=f"broker-{self.node_id}-add-partitions-to-txn-sender",
                request_timeout=self.request_timeout_s,
                security=self.security,
            ) as client,
            trio.open_nursery() as nursery,
        ):
            task_status.started()
            while True:
                self._changed = trio.Event()
                for node_id in list(self._waiting):
                    if node_id in self._in_flight or not self._waiting[node_id]:
                        continue
                    batch = self._waiting.pop(node_id)
                    self._in_flight.add(node_id)
                    nursery.start_soon(self._send, client, node_id, batch)
                await self._changed.wait()

    def _coordinator(self, transactional_id: str) -> Node | None:
        """The leader of the id's ``__transaction_state`` partition, alive on the
        inter-broker listener (Kafka's ``getTransactionCoordinator``)."""
        topic = self.cache.topic(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return None
        registration = topic.partitions.get(self.partition_for(transactional_id))
        if registration is None:
            return None
        for broker in self.cache.alive_brokers(self.listener):
            if broker.node_id == registration.leader:
                return Node(broker.node_id, broker.host, broker.port)
        return None

    async def _send(
        self, client: NetworkClient, node_id: int, batch: dict[str, _Question]
    ) -> None:
        """One request for ``batch``; every question is answered whatever happens."""
        try:
            node = next(
                (
                    Node(b.node_id, b.host, b.port)
                    for b in self.cache.alive_brokers(self.listener)
                    if b.node_id == node_id
                ),
                None,
            )
            response: object = None
            if node is not None:
                try:
                    response = await client.send(node, _request(batch.values()))
                except Exception as exc:
                    log = (
                        _logger.info
                        if isinstance(exc, ClientError)
                        else _logger.warning
                    )
                    log("AddPartitionsToTxn to broker %d failed (%r)", node_id, exc)
                    client.disconnect(node)
            _settle(batch, response)
        finally:
            self._in_flight.discard(node_id)
            self._changed.set()


def _settle(batch: dict[str, _Question], response: object) -> None:
    """Answer each question from the coordinator's response (Kafka's
    ``AddPartitionsToTxnHandler.onComplete``)."""
    if not isinstance(response, AddPartitionsToTxnResponse):
        for question in batch.values():
            question.answer_all(ErrorCode.network_exception)
        return
    if response.error_code is not ErrorCode.none:
        # The leader's producer must not see an authorization failure between brokers.
        error = (
            ErrorCode.invalid_txn_state
            if response.error_code is ErrorCode.cluster_authorization_failed
            else response.error_code
        )
        for question in batch.values():
            question.answer_all(error)
        return
    answered: set[str] = set()
    for result in response.results_by_transaction:
        found = batch.get(result.transactional_id)
        if found is None or result.transactional_id in answered:
            continue
        answered.add(result.transactional_id)
        question = found
        unverified = {
            TopicPartition(topic.name, int(p.partition_index)): verification_error(
                p.partition_error_code, question.abortable_understood
            )
            for topic in result.topic_results
            for p in topic.results_by_partition
            if p.partition_error_code is not ErrorCode.none
        }
        question.answer(unverified)
    for transactional_id, question in batch.items():
        if transactional_id not in answered:  # a coordinator that left it out
            question.answer_all(ErrorCode.network_exception)


def _request(questions: Iterable[_Question]) -> apt_v5.AddPartitionsToTxnRequest:
    transactions = []
    for question in questions:
        by_topic: dict[str, list[int]] = {}
        for tp in question.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        transactions.append(
            apt_v5.AddPartitionsToTxnTransaction(
                transactional_id=TransactionalId(question.transactional_id),
                producer_id=ProducerId(question.producer_id),
                producer_epoch=i16(question.producer_epoch),
                verify_only=True,
                topics=tuple(
                    apt_v5.AddPartitionsToTxnTopic(
                        name=TopicName(topic), partitions=tuple(i32(p) for p in ps)
                    )
                    for topic, ps in by_topic.items()
                ),
            )
        )
    return apt_v5.AddPartitionsToTxnRequest(transactions=tuple(transactions))
