"""The ZooKeeper-mode controller's requests on the wire, both ways.

The controller decides in its own values (:class:`~minikafka.controller.LeaderAndIsr`,
``UpdateMetadata``, ``StopReplica``); the network layer has the wire classes, written
from Kafka 2.8's schemas (LeaderAndIsr v5, UpdateMetadata v7, StopReplica v3,
ControlledShutdown v3). This module converts between the two: ``to_wire`` for the
controller's channel manager, ``from_wire`` for the broker that receives them. The wire
groups partitions by topic; the values list them flat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i64
from kio.static.protocol import Entity

from minikafka.common import TopicPartition
from minikafka.controller.zk import (
    ControllerToBroker,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    LiveLeader,
    MetadataBroker,
    MetadataEndpoint,
    StopReplica,
    StopReplicaPartition,
    UpdateMetadata,
    UpdateMetadataPartition,
)
from minikafka.net import controlled_shutdown_v3 as cs
from minikafka.net import leader_and_isr_v5 as lai
from minikafka.net import stop_replica_v3 as sr
from minikafka.net import update_metadata_v7 as umr

WireRequest = (
    lai.LeaderAndIsrRequest | umr.UpdateMetadataRequest | sr.StopReplicaRequest
)


def _by_topic(items: Iterable[tuple[str, Entity]]) -> dict[str, list[Entity]]:
    grouped: dict[str, list[Entity]] = {}
    for topic, entity in items:
        grouped.setdefault(topic, []).append(entity)
    return grouped


def _ids(brokers: Iterable[int]) -> tuple[i32, ...]:
    return tuple(i32(b) for b in brokers)


def to_wire(request: ControllerToBroker) -> WireRequest:
    match request:
        case LeaderAndIsr():
            return _leader_and_isr(request)
        case UpdateMetadata():
            return _update_metadata(request)
        case StopReplica():
            return _stop_replica(request)


def _leader_and_isr(request: LeaderAndIsr) -> lai.LeaderAndIsrRequest:
    ids = {p.topic: p.topic_id for p in request.partitions}
    grouped = _by_topic(
        (
            p.topic,
            lai.LeaderAndIsrPartitionState(
                partition_index=i32(p.partition),
                controller_epoch=i32(p.controller_epoch),
                leader=BrokerId(p.leader),
                leader_epoch=i32(p.leader_epoch),
                isr=_ids(p.isr),
                zk_version=i32(p.zk_version),
                replicas=_ids(p.replicas),
                adding_replicas=_ids(p.adding_replicas),
                removing_replicas=_ids(p.removing_replicas),
                is_new=p.is_new,
            ),
        )
        for p in request.partitions
    )
    return lai.LeaderAndIsrRequest(
        controller_id=BrokerId(request.controller_id),
        controller_epoch=i32(request.controller_epoch),
        broker_epoch=i64(request.broker_epoch),
        type_=i8(0),
        topic_states=tuple(
            lai.LeaderAndIsrTopicState(
                topic_name=TopicName(topic),
                topic_id=ids[topic],
                partition_states=tuple(states),  # type: ignore[arg-type]
            )
            for topic, states in grouped.items()
        ),
        live_leaders=tuple(
            lai.LeaderAndIsrLiveLeader(
                broker_id=BrokerId(leader.broker_id),
                host_name=leader.host,
                port=i32(leader.port),
            )
            for leader in request.live_leaders
        ),
    )


def _update_metadata(request: UpdateMetadata) -> umr.UpdateMetadataRequest:
    ids = {p.topic: p.topic_id for p in request.partitions}
    grouped = _by_topic(
        (
            p.topic,
            umr.UpdateMetadataPartitionState(
                partition_index=i32(p.partition),
                controller_epoch=i32(p.controller_epoch),
                leader=BrokerId(p.leader),
                leader_epoch=i32(p.leader_epoch),
                isr=tuple(BrokerId(b) for b in p.isr),
                zk_version=i32(p.zk_version),
                replicas=tuple(BrokerId(b) for b in p.replicas),
                offline_replicas=tuple(BrokerId(b) for b in p.offline_replicas),
            ),
        )
        for p in request.partitions
    )
    return umr.UpdateMetadataRequest(
        controller_id=BrokerId(request.controller_id),
        controller_epoch=i32(request.controller_epoch),
        broker_epoch=i64(request.broker_epoch),
        topic_states=tuple(
            umr.UpdateMetadataTopicState(
                topic_name=TopicName(topic),
                topic_id=ids[topic],
                partition_states=tuple(states),  # type: ignore[arg-type]
            )
            for topic, states in grouped.items()
        ),
        live_brokers=tuple(
            umr.UpdateMetadataBroker(
                id_=BrokerId(b.broker_id),
                endpoints=tuple(
                    umr.UpdateMetadataEndpoint(
                        port=i32(e.port),
                        host=e.host,
                        listener=e.listener,
                        security_protocol=i16(e.security_protocol),
                    )
                    for e in b.endpoints
                ),
                rack=b.rack,
            )
            for b in request.live_brokers
        ),
    )


def _stop_replica(request: StopReplica) -> sr.StopReplicaRequest:
    grouped = _by_topic(
        (
            p.topic,
            sr.StopReplicaPartitionState(
                partition_index=i32(p.partition),
                leader_epoch=i32(p.leader_epoch),
                delete_partition=p.delete,
            ),
        )
        for p in request.partitions
    )
    return sr.StopReplicaRequest(
        controller_id=BrokerId(request.controller_id),
        controller_epoch=i32(request.controller_epoch),
        broker_epoch=i64(request.broker_epoch),
        topic_states=tuple(
            sr.StopReplicaTopicState(
                topic_name=TopicName(topic),
                partition_states=tuple(states),  # type: ignore[arg-type]
            )
            for topic, states in grouped.items()
        ),
    )


# --- what a broker receives -------------------------------------------------------------------


def from_wire(request: WireRequest) -> ControllerToBroker:
    match request:
        case lai.LeaderAndIsrRequest():
            return LeaderAndIsr(
                int(request.controller_id),
                int(request.controller_epoch),
                int(request.broker_epoch),
                tuple(
                    LeaderAndIsrPartition(
                        str(t.topic_name),
                        t.topic_id,
                        int(p.partition_index),
                        int(p.controller_epoch),
                        int(p.leader),
                        int(p.leader_epoch),
                        tuple(map(int, p.isr)),
                        int(p.zk_version),
                        tuple(map(int, p.replicas)),
                        tuple(map(int, p.adding_replicas)),
                        tuple(map(int, p.removing_replicas)),
                        p.is_new,
                    )
                    for t in request.topic_states
                    for p in t.partition_states
                ),
                tuple(
                    LiveLeader(
                        int(leader.broker_id), leader.host_name, int(leader.port)
                    )
                    for leader in request.live_leaders
                ),
            )
        case umr.UpdateMetadataRequest():
            return UpdateMetadata(
                int(request.controller_id),
                int(request.controller_epoch),
                int(request.broker_epoch),
                tuple(
                    UpdateMetadataPartition(
                        str(t.topic_name),
                        t.topic_id,
                        int(p.partition_index),
                        int(p.controller_epoch),
                        int(p.leader),
                        int(p.leader_epoch),
                        tuple(map(int, p.isr)),
                        int(p.zk_version),
                        tuple(map(int, p.replicas)),
                        tuple(map(int, p.offline_replicas)),
                    )
                    for t in request.topic_states
                    for p in t.partition_states
                ),
                tuple(
                    MetadataBroker(
                        int(b.id_),
                        tuple(
                            MetadataEndpoint(
                                e.listener,
                                e.host,
                                int(e.port),
                                int(e.security_protocol),
                            )
                            for e in b.endpoints
                        ),
                        b.rack,
                    )
                    for b in request.live_brokers
                ),
            )
        case sr.StopReplicaRequest():
            return StopReplica(
                int(request.controller_id),
                int(request.controller_epoch),
                int(request.broker_epoch),
                tuple(
                    StopReplicaPartition(
                        str(t.topic_name),
                        int(p.partition_index),
                        int(p.leader_epoch),
                        p.delete_partition,
                    )
                    for t in request.topic_states
                    for p in t.partition_states
                ),
            )


# --- the answers ----------------------------------------------------------------------------------


def leader_and_isr_response(
    error: ErrorCode,
    errors: Mapping[TopicPartition, ErrorCode],
    topic_ids: Mapping[str, object],
) -> lai.LeaderAndIsrResponse:
    """v5 reports each topic by id; a whole-request error lists no partitions."""
    grouped = _by_topic(
        (
            tp.topic,
            lai.LeaderAndIsrPartitionError(
                partition_index=i32(tp.partition), error_code=code
            ),
        )
        for tp, code in sorted(errors.items())
    )
    return lai.LeaderAndIsrResponse(
        error_code=error,
        topics=tuple(
            lai.LeaderAndIsrTopicError(
                topic_id=topic_ids.get(topic),  # type: ignore[arg-type]
                partition_errors=tuple(states),  # type: ignore[arg-type]
            )
            for topic, states in grouped.items()
        ),
    )


def stop_replica_response(
    error: ErrorCode, errors: Mapping[TopicPartition, ErrorCode]
) -> sr.StopReplicaResponse:
    return sr.StopReplicaResponse(
        error_code=error,
        partition_errors=tuple(
            sr.StopReplicaPartitionError(
                topic_name=TopicName(tp.topic),
                partition_index=i32(tp.partition),
                error_code=code,
            )
            for tp, code in sorted(errors.items())
        ),
    )


def stop_replica_errors(
    response: sr.StopReplicaResponse,
) -> dict[tuple[str, int], ErrorCode]:
    """What the controller reads back from a StopReplica answer, per partition (a request
    error applies to every partition of the request)."""
    return {
        (str(p.topic_name), int(p.partition_index)): p.error_code
        for p in response.partition_errors
    }


def controlled_shutdown_response(
    error: ErrorCode, remaining: Iterable[tuple[str, int]]
) -> cs.ControlledShutdownResponse:
    return cs.ControlledShutdownResponse(
        error_code=error,
        remaining_partitions=tuple(
            cs.RemainingPartition(topic_name=TopicName(t), partition_index=i32(p))
            for t, p in remaining
        ),
    )
