"""DescribeProducers (KIP-664): the idempotent producers a partition's leader knows.

An operator looking for a stuck or stray producer asks each partition's leader
(``kafka-transactions describe-producers``, ``Admin.describeProducers``); a replica
answers from the producer state its log keeps to deduplicate retries (the produce
chapter): each producer's id, epoch, last sequence and the timestamp of its last batch.
As in Kafka, any replica answers from its own log (a follower's state is rebuilt from
the batches it copied), a partition this broker does not host is
UNKNOWN_TOPIC_OR_PARTITION, or NOT_LEADER_OR_FOLLOWER if the topic exists, and the
errors carry no message. A transactional producer (KIP-98) also shows the coordinator
epoch of its last marker here and the first offset of the transaction it has open here
(-1: none), what ``kafka-transactions find-hanging`` looks for: a transaction open far
longer than its timeout allows was never ended by its coordinator.
"""

from __future__ import annotations

import datetime

from kio.schema.describe_producers.v0.request import DescribeProducersRequest
from kio.schema.describe_producers.v0.response import (
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from minikafka.common import TopicPartition
from minikafka.log import ProducerStateEntry
from minikafka.net import Request
from minikafka.replication import ReplicaManagerShell
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer
from ._group_offsets import partition_exists
from ._metadata_cache import MetadataCache

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def handle_describe_producers(
    request: Request,
    replica_manager: ReplicaManagerShell,
    cache: MetadataCache,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DescribeProducers v0; with an authorizer a topic the principal may not READ is
    TOPIC_AUTHORIZATION_FAILED (Kafka's ``handleDescribeProducersRequest``)."""
    body = request.body_as((DescribeProducersRequest,))
    denied = (
        frozenset()
        if authorizer is None
        else authorizer.denied_topics(
            request, AclOperation.READ, (str(t.name) for t in body.topics)
        )
    )
    topics = tuple(
        TopicResponse(
            name=TopicName(str(topic.name)),
            partitions=tuple(
                PartitionResponse(
                    partition_index=i32(int(p)),
                    error_code=ErrorCode.topic_authorization_failed,
                    active_producers=(),
                )
                if topic.name in denied
                else _describe(
                    replica_manager, cache, TopicPartition(str(topic.name), int(p))
                )
                for p in topic.partition_indexes
            ),
        )
        for topic in body.topics
    )
    request.respond(DescribeProducersResponse(throttle_time=NO_THROTTLE, topics=topics))


def _describe(
    replica_manager: ReplicaManagerShell, cache: MetadataCache, tp: TopicPartition
) -> PartitionResponse:
    def refused(error: ErrorCode) -> PartitionResponse:
        return PartitionResponse(
            partition_index=i32(tp.partition), error_code=error, active_producers=()
        )

    partition = replica_manager.get_partition(tp)
    if replica_manager.is_offline(tp):
        return refused(ErrorCode.kafka_storage_error)
    if partition is None:
        exists = partition_exists(cache, tp)
        return refused(
            ErrorCode.not_leader_or_follower
            if exists
            else ErrorCode.unknown_topic_or_partition
        )
    log = partition.log
    producers = log.producer_state.producers
    return PartitionResponse(
        partition_index=i32(tp.partition),
        error_code=ErrorCode.none,
        active_producers=tuple(
            _state(entry, *log.ongoing_txns.snapshot_fields(entry.producer_id))
            for _, entry in sorted(producers.items())
        ),
    )


def _state(
    entry: ProducerStateEntry, coordinator_epoch: int, txn_first_offset: int
) -> ProducerState:
    return ProducerState(
        producer_id=ProducerId(entry.producer_id),
        producer_epoch=i32(entry.producer_epoch),
        last_sequence=i32(entry.last_seq),
        last_timestamp=i64(entry.last_timestamp),
        coordinator_epoch=i32(coordinator_epoch),
        current_txn_start_offset=i64(txn_first_offset),
    )
