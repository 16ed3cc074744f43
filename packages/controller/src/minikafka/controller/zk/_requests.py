"""The requests a ZooKeeper-mode controller sends, gathered per broker (Kafka 2.8's
``ControllerBrokerRequestBatch``; seed 001 section 4).

While it processes one event the controller only *adds* to the batch: "broker 2 must
hear LeaderAndIsr for t-0", "every broker must hear UpdateMetadata for t-0", "broker 3
must stop t-1 and delete it". When the event is done, :meth:`RequestBatch.requests`
turns what was added into at most one request of each API per broker, read from the
context as the event left it, in Kafka's order: LeaderAndIsr, then UpdateMetadata, then
StopReplica. Every request carries the controller's id and epoch (a broker refuses a
request from an older epoch: STALE_CONTROLLER_EPOCH) and the receiving broker's epoch
(a request meant for an earlier incarnation of the broker is refused: STALE_BROKER_EPOCH).

As in Kafka, telling a broker to lead or follow a partition also tells every broker the
partition's new state (LeaderAndIsr implies UpdateMetadata), and a topic being deleted is
shown to brokers with leader -2 (``LeaderDuringDelete``), so clients stop using it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import attrs

from .._states import TopicPartition
from ._context import ControllerContext

LEADER_DURING_DELETE = -2
"""The leader UpdateMetadata names for a partition of a topic being deleted."""
EPOCH_DURING_DELETE = -2
"""The leader epoch StopReplica names for a replica to delete (any epoch will do)."""
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
"""Kafka's ``SecurityProtocol`` ids, as UpdateMetadata carries them."""


# --- the three requests, as values (the broker package puts them on the wire) ------------------


@attrs.frozen
class LeaderAndIsrPartition:
    """What a replica's broker must do with one partition: lead it or follow ``leader``."""

    topic: str
    topic_id: uuid.UUID | None
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False


@attrs.frozen
class LiveLeader:
    broker_id: int
    host: str
    port: int


@attrs.frozen
class LeaderAndIsr:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[LeaderAndIsrPartition, ...]
    live_leaders: tuple[LiveLeader, ...]
    """Where each leader named above is, on the inter-broker listener."""


@attrs.frozen
class UpdateMetadataPartition:
    topic: str
    topic_id: uuid.UUID | None
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@attrs.frozen
class MetadataEndpoint:
    listener: str
    host: str
    port: int
    security_protocol: int


@attrs.frozen
class MetadataBroker:
    broker_id: int
    endpoints: tuple[MetadataEndpoint, ...]
    rack: str | None


@attrs.frozen
class UpdateMetadata:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[UpdateMetadataPartition, ...]
    live_brokers: tuple[MetadataBroker, ...]


@attrs.frozen
class StopReplicaPartition:
    topic: str
    partition: int
    leader_epoch: int
    delete: bool


@attrs.frozen
class StopReplica:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[StopReplicaPartition, ...]


ControllerToBroker = LeaderAndIsr | UpdateMetadata | StopReplica


@attrs.frozen
class BrokerRequest:
    """One request for one broker."""

    broker_id: int
    payload: ControllerToBroker

    @property
    def api(self) -> str:
        return type(self.payload).__name__


@attrs.define(eq=False)
class RequestBatch:
    controller_id: int
    _leader_and_isr: dict[int, dict[TopicPartition, bool]] = attrs.Factory(dict)
    """broker -> partition -> is_new (the replica is being created)."""
    _update_metadata: dict[int, set[TopicPartition]] = attrs.Factory(dict)
    _stop_replica: dict[int, dict[TopicPartition, bool]] = attrs.Factory(dict)
    """broker -> partition -> delete the log too."""

    def add_leader_and_isr(
        self,
        context: ControllerContext,
        brokers: Iterable[int],
        tp: TopicPartition,
        *,
        is_new: bool = False,
    ) -> None:
        for broker in brokers:
            partitions = self._leader_and_isr.setdefault(broker, {})
            partitions[tp] = partitions.get(tp, False) or is_new
        self.add_update_metadata(context.live_or_shutting_down(), [tp])

    def add_update_metadata(
        self, brokers: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        """UpdateMetadata for ``partitions`` to ``brokers`` (no partitions: the broker list
        alone, after a broker came or went)."""
        partitions = list(partitions)
        for broker in brokers:
            self._update_metadata.setdefault(broker, set()).update(partitions)

    def add_stop_replica(
        self, broker: int, tp: TopicPartition, *, delete: bool
    ) -> None:
        partitions = self._stop_replica.setdefault(broker, {})
        partitions[tp] = partitions.get(tp, False) or delete

    def requests(
        self, context: ControllerContext, listener: str
    ) -> list[BrokerRequest]:
        """What was added, as requests to the live brokers (a request for a broker that is
        gone is dropped: Kafka's channel manager has no queue for it)."""
        out: list[BrokerRequest] = []
        for broker, partitions in sorted(self._leader_and_isr.items()):
            if broker in context.brokers:
                request = self._leader_and_isr_request(
                    context, broker, partitions, listener
                )
                out.append(BrokerRequest(broker, request))
        for broker, tps in sorted(self._update_metadata.items()):
            if broker in context.brokers:
                out.append(
                    BrokerRequest(
                        broker,
                        _update_metadata(self.controller_id, context, broker, tps),
                    )
                )
        for broker, stops in sorted(self._stop_replica.items()):
            if broker in context.brokers:
                out.append(
                    BrokerRequest(
                        broker, self._stop_replica_request(context, broker, stops)
                    )
                )
        return out

    # --- building each request ------------------------------------------------------------

    def _leader_and_isr_request(
        self,
        context: ControllerContext,
        broker: int,
        partitions: dict[TopicPartition, bool],
        listener: str,
    ) -> LeaderAndIsr:
        states = []
        for tp, is_new in sorted(partitions.items()):
            current = context.leadership.get(tp)
            if current is None:
                continue
            state = current.state
            assignment = context.topics[tp[0]]
            states.append(
                LeaderAndIsrPartition(
                    tp[0],
                    assignment.topic_id,
                    tp[1],
                    state.controller_epoch,
                    state.leader,
                    state.leader_epoch,
                    state.isr,
                    current.version,
                    context.replicas(tp),
                    assignment.adding.get(tp[1], ()),
                    assignment.removing.get(tp[1], ()),
                    is_new,
                )
            )
        live_leaders = []
        for leader in sorted({s.leader for s in states}):
            live = context.brokers.get(leader)
            address = (
                None if live is None else live.registration.addresses().get(listener)
            )
            if address is not None:
                live_leaders.append(LiveLeader(leader, *address))
        return LeaderAndIsr(
            self.controller_id,
            context.epoch,
            context.brokers[broker].epoch,
            tuple(states),
            tuple(live_leaders),
        )

    def _stop_replica_request(
        self, context: ControllerContext, broker: int, stops: dict[TopicPartition, bool]
    ) -> StopReplica:
        partitions = []
        for tp, delete in sorted(stops.items()):
            current = context.leadership.get(tp)
            epoch = (
                EPOCH_DURING_DELETE
                if delete or current is None
                else current.state.leader_epoch
            )
            partitions.append(StopReplicaPartition(tp[0], tp[1], epoch, delete))
        return StopReplica(
            self.controller_id,
            context.epoch,
            context.brokers[broker].epoch,
            tuple(partitions),
        )


def _update_metadata(
    controller_id: int,
    context: ControllerContext,
    broker: int,
    tps: set[TopicPartition],
) -> UpdateMetadata:
    partitions = []
    for tp in sorted(tps):
        current = context.leadership.get(tp)
        if current is None:
            continue
        state = current.state
        replicas = context.replicas(tp)
        leader = LEADER_DURING_DELETE if tp[0] in context.deleting else state.leader
        partitions.append(
            UpdateMetadataPartition(
                tp[0],
                context.topic_id(tp[0]),
                tp[1],
                state.controller_epoch,
                leader,
                state.leader_epoch,
                state.isr,
                current.version,
                replicas,
                tuple(b for b in replicas if b not in context.brokers),
            )
        )
    return UpdateMetadata(
        controller_id,
        context.epoch,
        context.brokers[broker].epoch,
        tuple(partitions),
        tuple(_metadata_broker(context, b) for b in context.live_or_shutting_down()),
    )


def _metadata_broker(context: ControllerContext, broker_id: int) -> MetadataBroker:
    registration = context.brokers[broker_id].registration
    return MetadataBroker(
        broker_id,
        tuple(
            MetadataEndpoint(
                name,
                host,
                port,
                SECURITY_PROTOCOLS.get(
                    registration.security_protocols.get(name, name), 0
                ),
            )
            for name, (host, port) in registration.addresses().items()
        ),
        registration.rack,
    )
