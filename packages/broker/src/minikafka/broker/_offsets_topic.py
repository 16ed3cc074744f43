"""The coordinators' internal topics, and FindCoordinator (seed 000, KIP-98).

A consumer's first request about its group is FindCoordinator: the broker hashes the
group id onto a partition of ``__consumer_offsets`` (creating the topic on first use,
compacted, with ``offsets.topic.num.partitions`` partitions) and names that partition's
leader, which is the group's coordinator. A transactional producer's is the same with
key type 1: its transactional id hashed onto ``__transaction_state``
(``transaction.state.log.num.partitions``).

``ReplicaInternalTopic`` is the coordination package's port to either topic made real
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
from minikafka.coordination import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    StoredRecord,
    TxnMarkerRecord,
    TxnStoredRecord,
    partition_for,
)
from minikafka.log import (
    AppendOrigin,
    build_batch,
    iter_decoded_batches,
    make_records,
    read_end_txn_marker,
)
from minikafka.net import ApiKey, Request, build, is_body, nested, response_schema
from minikafka.replication import ReplicaManagerShell, ReplicationError
from minikafka.security import AclOperation, ResourceType

from ._authorization import BrokerAuthorizer
from ._config import KafkaConfig
from ._controller_channel import ControllerChannel, submit_once
from ._group_body import FIND_COORDINATOR, FIND_COORDINATOR_BATCHED
from ._metadata_cache import AliveBroker, MetadataCache
from ._txn_verify import AddPartitionsToTxnManager

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
NO_THROTTLE = datetime.timedelta(0)
# Read a whole segment per step when replaying: a slice that ends mid-batch would need
# stitching, and the offsets topic's segments are bounded by offsets.topic.segment.bytes.
_WHOLE_SEGMENT = 2**31 - 1


@attrs.define(eq=False)
class ReplicaInternalTopic:
    """A coordinator's internal topic (``__consumer_offsets``, ``__transaction_state``)
    through the ReplicaManager: the coordination package's port made real."""

    replica_manager: ReplicaManagerShell
    commit_timeout_ms: int
    topic: str = OFFSETS_TOPIC
    verifier: AddPartitionsToTxnManager | None = None
    """Holds the guards of verified TxnOffsetCommits (KIP-890): a transactional
    batch presents its guard when transaction verification is on."""

    def append(
        self,
        partition: int,
        records: Iterable[StoredRecord],
        on_committed: Callable[[ErrorCode], None],
        producer: tuple[int, int] | None = None,
    ) -> None:
        """``producer``: the records are offsets a transaction commits (TxnOffsetCommit),
        appended as a transactional batch of that producer id and epoch, as Kafka's
        ``storeOffsets`` does, so the transaction's marker commits or aborts them."""
        tp = TopicPartition(self.topic, partition)
        made = make_records(records, timestamp_ms=int(time.time() * 1000))
        batch = (
            build_batch(made)
            if producer is None
            else build_batch(
                made,
                producer_id=producer[0],
                producer_epoch=producer[1],
                base_sequence=0,
                is_transactional=True,
            )
        )
        verifier = self.verifier
        guards = (
            None
            if producer is None or verifier is None or not verifier.enabled
            else {tp: verifier.take_guard(tp, producer[0])}
        )
        self.replica_manager.append_records(
            self.commit_timeout_ms,
            Acks.ALL,
            {tp: bytearray(batch)},
            lambda results: on_committed(results[tp].error_code),
            origin=AppendOrigin.COORDINATOR,
            verification_guards=guards,
        )

    def read(
        self, partition: int
    ) -> Iterator[StoredRecord | TxnStoredRecord | TxnMarkerRecord]:
        """Every record of the partition's log; a transactional batch's records come
        with their producer, and a transaction marker as itself (the group coordinator
        keeps a transaction's offsets pending until its marker). Raises if this broker
        has no log to read (creating it failed) or the log is offline, rather than load
        no groups: Kafka's CoordinatorLoaderImpl fails the load ("the log does not
        exist"), and the coordinator answers NOT_COORDINATOR instead of forgetting every
        offset."""
        tp = TopicPartition(self.topic, partition)
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
                    for record in batch:
                        marker = read_end_txn_marker(record)
                        yield TxnMarkerRecord(header.producer_id, marker.commit)
                    continue
                for record in batch:
                    if record.key is None:
                        continue
                    if header.is_transactional:
                        yield TxnStoredRecord(
                            header.producer_id, record.key, record.value
                        )
                    else:
                        yield record.key, record.value


async def ensure_offsets_topic(
    controller: ControllerChannel, cache: MetadataCache, config: KafkaConfig
) -> ErrorCode:
    """Create ``__consumer_offsets`` unless it exists; COORDINATOR_NOT_AVAILABLE when it
    cannot be (too few brokers for ``offsets.topic.replication.factor``), as Kafka says."""
    return await ensure_internal_topic(
        controller,
        cache,
        CreatableTopic(
            OFFSETS_TOPIC,
            config.group.offsets_topic_num_partitions,
            config.broker.offsets_topic_replication_factor,
            configs=(
                ("cleanup.policy", "compact"),
                ("compression.type", "producer"),
                ("segment.bytes", str(config.broker.offsets_topic_segment_bytes)),
            ),
        ),
    )


async def ensure_transaction_state_topic(
    controller: ControllerChannel, cache: MetadataCache, config: KafkaConfig
) -> ErrorCode:
    """Create ``__transaction_state`` unless it exists, with Kafka's settings for it
    (``TransactionLog``'s: compacted, uncompressed, its own ``min.insync.replicas``,
    never an unclean leader)."""
    txn = config.transaction
    return await ensure_internal_topic(
        controller,
        cache,
        CreatableTopic(
            TRANSACTION_STATE_TOPIC,
            txn.transaction_state_log_num_partitions,
            txn.transaction_state_log_replication_factor,
            configs=(
                ("cleanup.policy", "compact"),
                ("compression.type", "uncompressed"),
                ("min.insync.replicas", str(txn.transaction_state_log_min_isr)),
                ("segment.bytes", str(txn.transaction_state_log_segment_bytes)),
                ("unclean.leader.election.enable", "false"),
            ),
        ),
    )


async def ensure_internal_topic(
    controller: ControllerChannel, cache: MetadataCache, topic: CreatableTopic
) -> ErrorCode:
    """Create a coordinator's topic on first use; COORDINATOR_NOT_AVAILABLE when it
    cannot be created (too few brokers for its replication factor)."""
    if cache.topic(topic.name) is not None:
        return ErrorCode.none
    try:
        response = await submit_once(controller, CreateTopicsRequest((topic,)))
    except ControllerError:
        return ErrorCode.coordinator_not_available
    assert isinstance(response, CreateTopicsResponse)
    error = response.topics[0].error_code
    if error in (ErrorCode.none, ErrorCode.topic_already_exists):
        return ErrorCode.none
    return ErrorCode.coordinator_not_available


@attrs.frozen
class Found:
    """One key's answer: its coordinator, or why there is none."""

    error: ErrorCode
    message: str | None
    node: AliveBroker | None


async def find_coordinator(
    key: str,
    key_type: int,
    listener: str,
    controller: ControllerChannel,
    cache: MetadataCache,
    config: KafkaConfig,
) -> Found:
    """The coordinator of a group (the leader of its ``__consumer_offsets`` partition)
    or of a transactional id (of its ``__transaction_state`` partition), on the
    listener the request came in on; any other key type is no coordinator Kafka knows,
    INVALID_REQUEST (its CoordinatorType)."""
    # aside: a key type that is neither a group's nor a transactional id's
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return Found(
            ErrorCode.invalid_request, f"Unknown coordinator type: {key_type}", None
        )
    if key_type == TRANSACTION_KEY_TYPE:
        topic_name = TRANSACTION_STATE_TOPIC
        partitions = config.transaction.transaction_state_log_num_partitions
        error = await ensure_transaction_state_topic(controller, cache, config)
    else:
        topic_name = OFFSETS_TOPIC
        partitions = config.group.offsets_topic_num_partitions
        error = await ensure_offsets_topic(controller, cache, config)
    # aside: the topic cannot be created (too few brokers)
    if error is not ErrorCode.none:
        return Found(error, None, None)
    partition = partition_for(key, partitions)
    topic = cache.topic(topic_name)
    registration = None if topic is None else topic.partitions.get(partition)
    leader = -1 if registration is None else registration.leader
    node = next(
        (b for b in cache.alive_brokers(listener) if b.node_id == leader),
        None,
    )
    # aside: the partition has no leader alive yet
    if node is None:
        return Found(ErrorCode.coordinator_not_available, None, None)
    return Found(ErrorCode.none, None, node)


async def handle_find_coordinator(
    request: Request,
    controller: ControllerChannel,
    cache: MetadataCache,
    config: KafkaConfig,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """FindCoordinator v0-6: one key's coordinator up to v3; from v4 (KIP-699) a list of
    keys, each answered on its own (a consumer of v4 sends one, an admin client that
    describes several groups sends them all)."""
    body = request.body_as(FIND_COORDINATOR)
    # v0 knows only groups; the key type arrives in v1 (KIP-98).
    key_type = (
        GROUP_KEY_TYPE
        if isinstance(body, FindCoordinatorRequestV0)
        else int(body.key_type)
    )
    batched = isinstance(body, FIND_COORDINATOR_BATCHED)
    keys = (
        body.coordinator_keys
        if is_body(body, FIND_COORDINATOR_BATCHED)
        else (body.key,)
    )
    refused = _refused(request, authorizer, key_type, keys)
    found = [
        refused.get(k)
        or await find_coordinator(
            k, key_type, request.listener, controller, cache, config
        )
        for k in keys
    ]
    cls = response_schema(ApiKey.FIND_COORDINATOR, request.api_version)
    assert cls is not None
    if not batched:
        [one] = found
        body_fields = {"error_message": one.message, **_where(one)}
    else:  # Kafka sets no message per key here (the error code says it all)
        entry = nested(cls, "coordinators")
        body_fields = {
            "coordinators": tuple(
                build(entry, key=k, error_message=None, **_where(f))
                for k, f in zip(keys, found, strict=True)
            )
        }
    request.respond(build(cls, throttle_time=NO_THROTTLE, **body_fields))


def _refused(
    request: Request,
    authorizer: BrokerAuthorizer | None,
    key_type: int,
    keys: Iterable[str],
) -> dict[str, Found]:
    """Kafka's ``handleFindCoordinatorRequest``: with an authorizer a key needs
    DESCRIBE on its group or transactional id, or no coordinator is named (nothing is
    created for it). The refused keys' answers."""
    if authorizer is None:
        return {}
    if key_type == GROUP_KEY_TYPE:
        resource, error = ResourceType.GROUP, ErrorCode.group_authorization_failed
    else:
        resource = ResourceType.TRANSACTIONAL_ID
        error = ErrorCode.transactional_id_authorization_failed
    return {
        key: Found(error, None, None)
        for key in keys
        if not authorizer.allowed(request, AclOperation.DESCRIBE, resource, key)
    }


def _where(found: Found) -> dict[str, object]:
    """The node's fields of an answer (-1 and an empty host when there is none)."""
    node = found.node
    return {
        "error_code": found.error,
        "node_id": -1 if node is None else node.node_id,
        "host": "" if node is None else node.host,
        "port": -1 if node is None else node.port,
    }
