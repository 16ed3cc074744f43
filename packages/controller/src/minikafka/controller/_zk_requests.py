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

from collections.abc import Iterable

import attrs
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i64
from kio.static.protocol import RequestPayload

from minikafka.net import leader_and_isr_v5 as lai
from minikafka.net import stop_replica_v3 as sr
from minikafka.net import update_metadata_v7 as umr

from ._states import TopicPartition
from ._zk_context import ControllerContext

LEADER_DURING_DELETE = -2
"""The leader UpdateMetadata names for a partition of a topic being deleted."""
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
"""Kafka's ``SecurityProtocol`` ids, as UpdateMetadata carries them."""


@attrs.frozen
class BrokerRequest:
    """One request for one broker: LeaderAndIsr v5, UpdateMetadata v7 or StopReplica v3."""

    broker_id: int
    payload: RequestPayload

    @property
    def api(self) -> str:
        return type(self.payload).__name__.removesuffix("Request")

    @property
    def partitions(self) -> int:
        topics = getattr(self.payload, "topic_states", ())
        return sum(len(t.partition_states) for t in topics)


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

    def add_stop_replica(self, broker: int, tp: TopicPartition, *, delete: bool) -> None:
        partitions = self._stop_replica.setdefault(broker, {})
        partitions[tp] = partitions.get(tp, False) or delete

    def requests(self, context: ControllerContext, listener: str) -> list[BrokerRequest]:
        """What was added, as requests to the live brokers (a request for a broker that is
        gone is dropped: Kafka's channel manager has no queue for it)."""
        out: list[BrokerRequest] = []
        for broker, partitions in sorted(self._leader_and_isr.items()):
            if broker in context.brokers:
                out.append(
                    BrokerRequest(
                        broker, self._leader_and_isr_request(context, broker, partitions, listener)
                    )
                )
        for broker, tps in sorted(self._update_metadata.items()):
            if broker in context.brokers:
                out.append(
                    BrokerRequest(broker, self._update_metadata_request(context, broker, tps))
                )
        for broker, stops in sorted(self._stop_replica.items()):
            if broker in context.brokers:
                out.append(
                    BrokerRequest(broker, self._stop_replica_request(context, broker, stops))
                )
        return out

    # --- building each request --------------------------------------------------------------

    def _leader_and_isr_request(
        self,
        context: ControllerContext,
        broker: int,
        partitions: dict[TopicPartition, bool],
        listener: str,
    ) -> lai.LeaderAndIsrRequest:
        by_topic: dict[str, list[lai.LeaderAndIsrPartitionState]] = {}
        leaders: set[int] = set()
        for tp, is_new in sorted(partitions.items()):
            current = context.leadership.get(tp)
            if current is None:
                continue
            state = current.state
            leaders.add(state.leader)
            assignment = context.topics[tp[0]]
            by_topic.setdefault(tp[0], []).append(
                lai.LeaderAndIsrPartitionState(
                    partition_index=i32(tp[1]),
                    controller_epoch=i32(state.controller_epoch),
                    leader=BrokerId(state.leader),
                    leader_epoch=i32(state.leader_epoch),
                    isr=tuple(i32(b) for b in state.isr),
                    zk_version=i32(current.version),
                    replicas=tuple(i32(b) for b in context.replicas(tp)),
                    adding_replicas=tuple(i32(b) for b in assignment.adding.get(tp[1], ())),
                    removing_replicas=tuple(i32(b) for b in assignment.removing.get(tp[1], ())),
                    is_new=is_new,
                )
            )
        live_leaders = []
        for leader in sorted(leaders):
            live = context.brokers.get(leader)
            address = None if live is None else live.registration.addresses().get(listener)
            if address is not None:
                live_leaders.append(
                    lai.LeaderAndIsrLiveLeader(
                        broker_id=BrokerId(leader), host_name=address[0], port=i32(address[1])
                    )
                )
        return lai.LeaderAndIsrRequest(
            controller_id=BrokerId(self.controller_id),
            controller_epoch=i32(context.epoch),
            broker_epoch=i64(context.brokers[broker].epoch),
            type_=i8(0),
            topic_states=tuple(
                lai.LeaderAndIsrTopicState(
                    topic_name=TopicName(topic),
                    topic_id=context.topic_id(topic),
                    partition_states=tuple(states),
                )
                for topic, states in by_topic.items()
            ),
            live_leaders=tuple(live_leaders),
        )

    def _update_metadata_request(
        self, context: ControllerContext, broker: int, tps: set[TopicPartition]
    ) -> umr.UpdateMetadataRequest:
        by_topic: dict[str, list[umr.UpdateMetadataPartitionState]] = {}
        for tp in sorted(tps):
            current = context.leadership.get(tp)
            if current is None:
                continue
            state = current.state
            replicas = context.replicas(tp)
            leader = LEADER_DURING_DELETE if tp[0] in context.deleting else state.leader
            by_topic.setdefault(tp[0], []).append(
                umr.UpdateMetadataPartitionState(
                    partition_index=i32(tp[1]),
                    controller_epoch=i32(state.controller_epoch),
                    leader=BrokerId(leader),
                    leader_epoch=i32(state.leader_epoch),
                    isr=tuple(BrokerId(b) for b in state.isr),
                    zk_version=i32(current.version),
                    replicas=tuple(BrokerId(b) for b in replicas),
                    offline_replicas=tuple(
                        BrokerId(b) for b in replicas if b not in context.brokers
                    ),
                )
            )
        return umr.UpdateMetadataRequest(
            controller_id=BrokerId(self.controller_id),
            controller_epoch=i32(context.epoch),
            broker_epoch=i64(context.brokers[broker].epoch),
            topic_states=tuple(
                umr.UpdateMetadataTopicState(
                    topic_name=TopicName(topic),
                    topic_id=context.topic_id(topic),
                    partition_states=tuple(states),
                )
                for topic, states in by_topic.items()
            ),
            live_brokers=tuple(_live_broker(context, b) for b in context.live_or_shutting_down()),
        )

    def _stop_replica_request(
        self, context: ControllerContext, broker: int, stops: dict[TopicPartition, bool]
    ) -> sr.StopReplicaRequest:
        by_topic: dict[str, list[sr.StopReplicaPartitionState]] = {}
        for tp, delete in sorted(stops.items()):
            current = context.leadership.get(tp)
            # A deleted partition's replicas stop whatever epoch they are at (-2, as Kafka).
            epoch = -2 if delete or current is None else current.state.leader_epoch
            by_topic.setdefault(tp[0], []).append(
                sr.StopReplicaPartitionState(
                    partition_index=i32(tp[1]), leader_epoch=i32(epoch), delete_partition=delete
                )
            )
        return sr.StopReplicaRequest(
            controller_id=BrokerId(self.controller_id),
            controller_epoch=i32(context.epoch),
            broker_epoch=i64(context.brokers[broker].epoch),
            topic_states=tuple(
                sr.StopReplicaTopicState(topic_name=TopicName(t), partition_states=tuple(states))
                for t, states in by_topic.items()
            ),
        )


def _live_broker(context: ControllerContext, broker_id: int) -> umr.UpdateMetadataBroker:
    registration = context.brokers[broker_id].registration
    return umr.UpdateMetadataBroker(
        id_=BrokerId(broker_id),
        endpoints=tuple(
            umr.UpdateMetadataEndpoint(
                port=i32(port),
                host=host,
                listener=name,
                security_protocol=i16(
                    SECURITY_PROTOCOLS.get(registration.security_protocols.get(name, name), 0)
                ),
            )
            for name, (host, port) in registration.addresses().items()
        ),
        rack=registration.rack,
    )
