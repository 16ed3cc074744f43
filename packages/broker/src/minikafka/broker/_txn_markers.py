"""The transaction coordinator's marker channel (KIP-98; Kafka's
``TransactionMarkerChannelManager``).

Once a transaction's PrepareCommit or PrepareAbort is written, its coordinator must put
a commit or abort marker into every partition the transaction wrote to. It sends
WriteTxnMarkers to each partition's leader, over the inter-broker listener (to itself
too, when it leads the partition), one request per leader carrying every transaction's
markers waiting for it. A partition is done when its leader answers NONE; a transaction
when all its partitions are done, and the coordinator then writes CompleteCommit or
CompleteAbort.

What the leaders answer decides the rest, as in Kafka's completion handler:

- NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, a storage error, no
  answer at all: sent again, to the partition's leader of the moment, after
  ``retry.backoff.ms``; a partition with no leader waits for one;
- a partition whose topic is gone needs no marker: done;
- INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED: a newer producer or a newer
  coordinator has taken over; these markers are abandoned (the newer one completes the
  transaction), and so are they when this broker stops leading the transactional id's
  partition (``still_current``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId, TopicName
from kio.schema.write_txn_markers.v1 import request as wtm_v1
from kio.schema.write_txn_markers.v1.response import WriteTxnMarkersResponse
from kio.static.primitive import i16, i32

from minikafka.common import TopicPartition
from minikafka.coordination import TxnMarkers
from minikafka.net import ClientError, ClientSecurity, NetworkClient, Node

from ._metadata_cache import MetadataCache

__all__ = ["TxnMarkerChannelManager"]

_logger = logging.getLogger(__name__)

_ABANDON = frozenset(
    {ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced}
)
"""A newer producer or coordinator owns the transaction now."""
_NOT_NEEDED = frozenset(
    {ErrorCode.unsupported_for_message_format, ErrorCode.unsupported_version}
)
"""The partition cannot hold a marker (Kafka drops it from the markers to send)."""


@attrs.define(eq=False)
class _Pending:
    """One transaction's markers still to be written."""

    markers: TxnMarkers
    on_written: Callable[[], None]
    still_current: Callable[[], bool]
    remaining: set[TopicPartition]
    in_flight: set[TopicPartition] = attrs.field(factory=set)


@attrs.define(eq=False)
class TxnMarkerChannelManager:
    node_id: int
    cache: MetadataCache
    listener: str
    """The inter-broker listener: where the leaders are reached."""
    request_timeout_s: float = 30.0
    retry_backoff_s: float = 0.1
    security: ClientSecurity = attrs.field(factory=ClientSecurity, kw_only=True)
    """TLS and SASL towards the leaders (:mod:`._security_channels`)."""
    _pending: dict[str, _Pending] = attrs.field(init=False, factory=dict)
    _changed: trio.Event = attrs.field(init=False, factory=trio.Event)
    _senders: set[int] = attrs.field(init=False, factory=set)

    def send(
        self,
        markers: TxnMarkers,
        on_written: Callable[[], None],
        still_current: Callable[[], bool],
    ) -> None:
        """Write ``markers``; ``on_written()`` once every partition has its marker. A
        transactional id has one transaction ending at a time: newer markers for it
        replace older ones (a coordinator that reloaded the partition resends them)."""
        self._pending[markers.transactional_id] = _Pending(
            markers, on_written, still_current, set(markers.partitions)
        )
        self._changed.set()

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Route the waiting markers to their leaders until cancelled: one sender task
        per leader, started the first time a marker goes there."""
        async with (
            NetworkClient.open(
                client_id=f"broker-{self.node_id}-txn-marker-sender",
                request_timeout=self.request_timeout_s,
                security=self.security,
            ) as client,
            trio.open_nursery() as nursery,
        ):
            task_status.started()
            while True:
                self._changed = trio.Event()
                self._complete_done()
                for node in self._leaders_waited_for():
                    if node.node_id not in self._senders:
                        self._senders.add(node.node_id)
                        nursery.start_soon(self._sender, client, node.node_id)
                with trio.move_on_after(self.retry_backoff_s if self._pending else 60):
                    await self._changed.wait()

    # --- routing ----------------------------------------------------------------------

    def _complete_done(self) -> None:
        """Report the transactions whose every partition has its marker; forget those
        this broker no longer coordinates."""
        for transactional_id, pending in list(self._pending.items()):
            if not pending.still_current():
                del self._pending[transactional_id]
            elif not pending.remaining:
                del self._pending[transactional_id]
                pending.on_written()

    def _leader(self, tp: TopicPartition) -> Node | bool | None:
        """The partition's leader; None while it has none; False if the partition no
        longer exists (it needs no marker)."""
        topic = self.cache.topic(tp.topic)
        registration = None if topic is None else topic.partitions.get(tp.partition)
        if registration is None:
            return False
        for broker in self.cache.alive_brokers(self.listener):
            if broker.node_id == registration.leader:
                return Node(broker.node_id, broker.host, broker.port)
        return None

    def _leaders_waited_for(self) -> set[Node]:
        nodes: set[Node] = set()
        for pending in self._pending.values():
            for tp in list(pending.remaining):
                leader = self._leader(tp)
                if leader is False:
                    pending.remaining.discard(tp)  # deleted: no marker needed
                elif isinstance(leader, Node):
                    nodes.add(leader)
        return nodes

    def _due_for(self, node_id: int) -> list[tuple[_Pending, list[TopicPartition]]]:
        """The markers led by ``node_id`` now that are not already on their way."""
        due = []
        for pending in self._pending.values():
            if not pending.still_current():
                continue
            partitions = [
                tp
                for tp in pending.remaining - pending.in_flight
                if (leader := self._leader(tp)) not in (None, False)
                and isinstance(leader, Node)
                and leader.node_id == node_id
            ]
            if partitions:
                due.append((pending, sorted(partitions)))
        return due

    # --- sending ----------------------------------------------------------------------

    async def _sender(self, client: NetworkClient, node_id: int) -> None:
        """Send the markers broker ``node_id`` leads, one request at a time, until
        cancelled; its endpoint is looked up each time (a broker may come back on
        another address). No exception ends it: a failed round is logged and the
        markers are sent again after a backoff."""
        node: Node | None = None
        while True:
            due = self._due_for(node_id)
            current = self._endpoint(node_id)
            if not due or current is None:
                with trio.move_on_after(self.retry_backoff_s):
                    await self._changed.wait()
                continue
            if node is not None and node != current:
                client.disconnect(node)
            node = current
            for pending, partitions in due:
                pending.in_flight.update(partitions)
            try:
                response: object = await client.send(node, _request(due))
            except Exception as exc:
                log = _logger.info if isinstance(exc, ClientError) else _logger.warning
                log("WriteTxnMarkers to broker %d failed (%r); retrying", node_id, exc)
                client.disconnect(node)
                response = None
            retry = self._settle(due, response)
            self._changed.set()
            if retry:
                await trio.sleep(self.retry_backoff_s)

    def _endpoint(self, node_id: int) -> Node | None:
        for broker in self.cache.alive_brokers(self.listener):
            if broker.node_id == node_id:
                return Node(broker.node_id, broker.host, broker.port)
        return None

    def _settle(
        self,
        sent: list[tuple[_Pending, list[TopicPartition]]],
        response: object,
    ) -> bool:
        """Apply the leader's answers; True if some partition is to be sent again."""
        errors: dict[tuple[int, TopicPartition], ErrorCode] = {}
        if isinstance(response, WriteTxnMarkersResponse):
            for result in response.markers:
                for topic in result.topics:
                    for p in topic.partitions:
                        tp = TopicPartition(topic.name, int(p.partition_index))
                        errors[(int(result.producer_id), tp)] = p.error_code
        retry = False
        for pending, partitions in sent:
            pending.in_flight.difference_update(partitions)
            for tp in partitions:
                error = errors.get(
                    (pending.markers.producer_id, tp), ErrorCode.request_timed_out
                )
                if error is ErrorCode.none or error in _NOT_NEEDED:
                    pending.remaining.discard(tp)
                elif error in _ABANDON:
                    _logger.info(
                        "markers of %s abandoned: %s answered %s",
                        pending.markers.transactional_id,
                        tp,
                        error.name.upper(),
                    )
                    # Only this transaction's entry: a reloaded coordinator may have
                    # sent newer markers for the same id meanwhile.
                    transactional_id = pending.markers.transactional_id
                    if self._pending.get(transactional_id) is pending:
                        del self._pending[transactional_id]
                    break
                else:
                    retry = True
        return retry


def _request(
    due: Iterable[tuple[_Pending, list[TopicPartition]]],
) -> wtm_v1.WriteTxnMarkersRequest:
    """One WriteTxnMarkers (v1) for a leader: a marker entry per transaction."""
    entries = []
    for pending, partitions in due:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        markers = pending.markers
        entries.append(
            wtm_v1.WritableTxnMarker(
                producer_id=ProducerId(markers.producer_id),
                producer_epoch=i16(markers.producer_epoch),
                transaction_result=markers.commit,
                topics=tuple(
                    wtm_v1.WritableTxnMarkerTopic(
                        name=TopicName(topic),
                        partition_indexes=tuple(i32(p) for p in indexes),
                    )
                    for topic, indexes in by_topic.items()
                ),
                coordinator_epoch=i32(markers.coordinator_epoch),
            )
        )
    return wtm_v1.WriteTxnMarkersRequest(markers=tuple(entries))
