"""``__consumer_offsets`` for the group coordinator, and FindCoordinator (seed 000).

A consumer's first request about its group is FindCoordinator: the broker hashes the
group id onto a partition of ``__consumer_offsets`` (creating the topic on first use,
compacted, with ``offsets.topic.num.partitions`` partitions) and names that partition's
leader, which is the group's coordinator.

``ReplicaOffsetsTopic`` is the coordination package's ``OffsetsTopic`` port made real
with the ReplicaManager: the coordinator's records are appended as one uncompressed
batch with acks=all (answered when the high watermark passes them, within
``offsets.commit.timeout.ms``), and replayed by reading the partition's log from its
start when this broker becomes its leader.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable, Iterator

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v0.request import (
    FindCoordinatorRequest as FindCoordinatorRequestV0,
)

from minikafka.common import Acks, TopicPartition
from minikafka.controller import (
    ControllerError,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from minikafka.coordination import OFFSETS_TOPIC, StoredRecord, partition_for
from minikafka.log import build_batch, iter_decoded_batches, make_records
from minikafka.net import ApiKey, Request, build, response_schema
from minikafka.replication import ReplicaManagerService, ReplicationError

from ._body import FIND_COORDINATOR
from ._config import KafkaConfig
from ._controller_channel import ControllerChannel
from ._metadata_cache import MetadataCache

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
NO_THROTTLE = datetime.timedelta(0)
# Read a whole segment per step when replaying: a slice that ends mid-batch would need
# stitching, and the offsets topic's segments are bounded by offsets.topic.segment.bytes.
_WHOLE_SEGMENT = 2**31 - 1


@attrs.define(eq=False)
class ReplicaOffsetsTopic:
    replica_manager: ReplicaManagerService
    commit_timeout_ms: int

    def append(
        self,
        partition: int,
        records: Iterable[StoredRecord],
        on_committed: Callable[[ErrorCode], None],
    ) -> None:
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        batch = build_batch(make_records(records, timestamp_ms=int(time.time() * 1000)))
        self.replica_manager.append_records(
            self.commit_timeout_ms,
            Acks.ALL,
            {tp: bytearray(batch)},
            lambda results: on_committed(results[tp].error_code),
        )

    def read(self, partition: int) -> Iterator[StoredRecord]:
        """Every record of the partition's log; raises if this broker has no log to
        read (creating it failed) or the log is offline, rather than load no groups:
        Kafka's CoordinatorLoaderImpl fails the load ("the log does not exist"), and
        the coordinator answers NOT_COORDINATOR instead of forgetting every offset."""
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        hosted = self.replica_manager.get_partition(tp)
        if hosted is None or self.replica_manager.is_offline(tp):
            raise ReplicationError(
                ErrorCode.not_leader_or_follower
                if hosted is None
                else ErrorCode.kafka_storage_error,
                f"cannot load {tp}: its log is "
                + ("not on this broker" if hosted is None else "offline"),
            )
        log = hosted.log
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            info = log.read(offset, _WHOLE_SEGMENT)
            if info.records is None:
                break
            for _, header, batch in iter_decoded_batches(info.records.read_bytes()):
                offset = header.next_offset
                if header.is_control:
                    continue
                for record in batch:
                    if record.key is not None:
                        yield record.key, record.value


async def ensure_offsets_topic(
    controller: ControllerChannel, cache: MetadataCache, config: KafkaConfig
) -> ErrorCode:
    """Create ``__consumer_offsets`` unless it exists; COORDINATOR_NOT_AVAILABLE when it
    cannot be (too few brokers for ``offsets.topic.replication.factor``), as Kafka says."""
    if cache.topic(OFFSETS_TOPIC) is not None:
        return ErrorCode.none
    topic = CreatableTopic(
        OFFSETS_TOPIC,
        config.group.offsets_topic_num_partitions,
        config.broker.offsets_topic_replication_factor,
        configs=(
            ("cleanup.policy", "compact"),
            ("compression.type", "producer"),
            ("segment.bytes", str(config.broker.offsets_topic_segment_bytes)),
        ),
    )
    try:
        response = await controller.submit(CreateTopicsRequest((topic,)))
    except ControllerError:
        return ErrorCode.coordinator_not_available
    assert isinstance(response, CreateTopicsResponse)
    error = response.topics[0].error_code
    if error in (ErrorCode.none, ErrorCode.topic_already_exists):
        return ErrorCode.none
    return ErrorCode.coordinator_not_available


async def handle_find_coordinator(
    request: Request,
    controller: ControllerChannel,
    cache: MetadataCache,
    config: KafkaConfig,
) -> None:
    """FindCoordinator v0-2: the leader of the group's ``__consumer_offsets`` partition.
    Transactions have no coordinator here: key type 1 is COORDINATOR_NOT_AVAILABLE; any
    other key type is no coordinator Kafka knows, INVALID_REQUEST (its
    CoordinatorType)."""
    body = request.body_as(FIND_COORDINATOR)
    # v0 knows only groups; the key type arrives in v1 (KIP-98).
    key_type = (
        GROUP_KEY_TYPE
        if isinstance(body, FindCoordinatorRequestV0)
        else int(body.key_type)
    )
    error, message, node = ErrorCode.none, None, None
    # aside: a key type that is not a group's
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        error, message = (
            ErrorCode.invalid_request,
            f"Unknown coordinator type: {key_type}",
        )
    # aside: a transactional id: no coordinator here
    elif key_type == TRANSACTION_KEY_TYPE:
        error, message = (
            ErrorCode.coordinator_not_available,
            "transactions are not supported",
        )
    else:
        error = await ensure_offsets_topic(controller, cache, config)
    if error is ErrorCode.none:
        partition = partition_for(body.key, config.group.offsets_topic_num_partitions)
        topic = cache.topic(OFFSETS_TOPIC)
        registration = None if topic is None else topic.partitions.get(partition)
        leader = -1 if registration is None else registration.leader
        node = next(
            (b for b in cache.alive_brokers(request.listener) if b.node_id == leader),
            None,
        )
        if node is None:
            error = ErrorCode.coordinator_not_available
    cls = response_schema(ApiKey.FIND_COORDINATOR, request.api_version)
    assert cls is not None
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            node_id=-1 if node is None else node.node_id,
            host="" if node is None else node.host,
            port=-1 if node is None else node.port,
        )
    )
