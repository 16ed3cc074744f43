"""Produce: seed 000's produce path from the request to the log and back.

The handler does no per-record work: each partition's ``records`` is handed to the
ReplicaManager as the bytes the producer sent (one copy, into a bytearray, so the log
can write offsets into the batch headers in place). ``acks=0`` gets no response at all,
as the protocol says; ``acks=1`` is answered once the leader has appended; ``acks=all``
when the high watermark passes the batches (a DelayedProduce).

The per-request cost of small produces: the handler checks that each
partition's records are one batch from two header fields read with one ``struct`` call
(the log decodes the whole header again when it validates the batch, which it must),
and the response, a few fixed-width fields per partition, is written by
:func:`encode_produce_response` with ``struct`` instead of being built as kio objects
and encoded field by field; a test holds it to kio's encoding byte for byte in every
version served (v3-v13).

Newer versions change little on this path. v9 is flexible (compact lengths, tagged
fields); from v10 a partition refused with NOT_LEADER_OR_FOLLOWER carries the leader
this broker knows of and the response that leader's endpoint (KIP-951), so the producer
need not ask Metadata before it retries; v11 and v12 only add transaction errors; v13
names topics by id instead of name (KIP-516), answering UNKNOWN_TOPIC_ID for an id no
topic has.
"""

from __future__ import annotations

import struct
import uuid

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
)
from minikafka.net import Request, is_body
from minikafka.replication import ProducePartitionResult, ReplicaManagerShell
from minikafka.security import AclOperation, ResourceType

from ._authorization import BrokerAuthorizer
from ._body import PRODUCE, PRODUCE_TOPIC_BY_ID, ProduceRequest
from ._metadata_cache import INTERNAL_TOPICS, ZERO_UUID, AliveBroker, MetadataCache
from ._txn_verify_apis import append_produce
from ._wire import (
    EMPTY_COMPACT,
    I32,
    NO_TAGS,
    ONE_TAG_ZERO,
    UNKNOWN_TOPIC_ID,
    array_length,
    current_leaders,
    node_endpoints,
    string,
    topic_name_by_id,
)

ADMIN_CLIENT_ID = "__admin_client"  # Kafka's AdminUtils.ADMIN_CLIENT_ID

# The record batch v2 header's batchLength (the int32 that ends the log overhead, at
# offset 8) and attributes (offset 21), in one unpack: what the one-batch check reads.
# batchLength counts the bytes after itself, so the batch occupies batchLength +
# LOG_OVERHEAD bytes. The offsets are minikafka.log's, which owns the header.
_LENGTH_AND_ATTRIBUTES = struct.Struct(
    f">{LOG_OVERHEAD - 4}xi{ATTRIBUTES_OFFSET - LOG_OVERHEAD}xh"
)

# ProduceResponse v3-v8, per partition: index, error_code, base_offset and
# log_append_time_ms (-1 unless LogAppendTime), then log_start_offset from v5, then
# record_errors and error_message from v8. throttle_time_ms closes the response.
_PARTITION = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
_NO_RECORD_ERRORS = I32.pack(0)  # an empty record_errors array
_NO_THROTTLE = I32.pack(0)
# v9+ (flexible, see _wire): KIP-951's LeaderIdAndEpoch is two int32 and its own empty
# tagged fields, 9 bytes, written as tagged field 0 of the partition.
_LEADER_TAG = struct.Struct(">Bii")
_NO_LEADER = (-1, -1)


def handle_produce(
    request: Request,
    replica_manager: ReplicaManagerShell,
    cache: MetadataCache,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    body = request.body_as(PRODUCE)
    acks = Acks.parse(int(body.acks))  # None: INVALID_REQUIRED_ACKS for every partition
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    order: list[TopicPartition] = []
    entries: dict[TopicPartition, bytearray] = {}
    refused: dict[TopicPartition, ProducePartitionResult] = {}
    ids: dict[str, uuid.UUID] = {}  # v13 names topics by id, and so does the answer
    names = iter(_topic_names(body, cache, ids))
    for topic in body.topic_data:
        name = next(names)
        # aside: may the principal WRITE the topic (asked only with an authorizer)
        denied = authorizer is not None and not authorizer.allowed(
            request, AclOperation.WRITE, ResourceType.TOPIC, name
        )
        for data in topic.partition_data:
            tp = TopicPartition(name, int(data.index))
            order.append(tp)
            if acks is None:
                refused[tp] = ProducePartitionResult(ErrorCode.invalid_required_acks)
            # aside: a topic the principal may not write
            elif denied:
                refused[tp] = ProducePartitionResult(
                    ErrorCode.topic_authorization_failed
                )
            # aside: a topic id no topic has
            elif name.startswith(UNKNOWN_TOPIC_ID):
                refused[tp] = ProducePartitionResult(ErrorCode.unknown_topic_id)
            # aside: an internal topic, which only its coordinator writes
            elif (
                name in INTERNAL_TOPICS and request.header.client_id != ADMIN_CLIENT_ID
            ):
                # Only their coordinators and Kafka's admin tools write internal topics
                # (ReplicaManager's internalTopicsAllowed): a client's records in
                # __consumer_offsets would be replayed as group metadata and offsets.
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_topic_exception,
                    error_message=f"Cannot append to internal topic {name}",
                )
            # aside: a topic the broker does not know
            elif cache.topic(name) is None:
                refused[tp] = ProducePartitionResult(
                    ErrorCode.unknown_topic_or_partition
                )
            # aside: anything but one record batch
            elif (attributes := _one_batch(data.records)) is None:
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_record,
                    error_message=(
                        "a partition's records must be exactly one record batch"
                    ),
                )
            # aside: a control batch
            elif attributes & CONTROL_MASK:
                # Markers are written by transaction coordinators (WriteTxnMarkers),
                # never by a producer, as Kafka's LogValidator insists.
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_record,
                    error_message="Clients are not allowed to write control records "
                    f"in topic partition {tp}.",
                )
            else:
                entries[tp] = bytearray(data.records or b"")

    def respond(results: dict[TopicPartition, ProducePartitionResult]) -> None:
        # aside: acks=0: no response, or a closed connection
        if acks is Acks.NONE:
            # No response on the wire. Kafka closes the connection on an error instead,
            # so the producer notices something went wrong at its next send.
            if any(r.error_code is not ErrorCode.none for r in results.values()):
                request.close_connection()
            else:
                request.respond_nothing()
            return
        request.respond_parts((_response(request, cache, order, results, ids),))

    # aside: nothing to append (every partition refused, or acks invalid)
    if not entries or acks is None:
        respond(refused)
        return
    # Most requests have nothing refused here: their results are answered as they come.
    on_results = respond if not refused else lambda got: respond({**refused, **got})
    # aside: transaction verification (KIP-890, ._txn_verify_apis)
    if replica_manager.txn_verifier is not None and body.transactional_id:
        # A transactional producer's first write to a partition is checked with its
        # transaction coordinator first.
        append_produce(
            replica_manager,
            replica_manager.txn_verifier,
            api_version=request.api_version,
            transactional_id=body.transactional_id,
            timeout_ms=timeout_ms,
            acks=acks,
            entries=entries,
            on_results=on_results,
        )
        return
    replica_manager.append_records(timeout_ms, acks, entries, on_results)


def encode_produce_response(
    version: int,
    order: list[TopicPartition],
    results: dict[TopicPartition, ProducePartitionResult],
    ids: dict[str, uuid.UUID] | None = None,
    current_leaders: dict[TopicPartition, tuple[int, int]] | None = None,
    endpoints: list[AliveBroker] | None = None,
) -> bytes:
    """The ProduceResponse body of ``version`` (3-13): partitions in request order,
    grouped by topic in the order each topic first appears, as kio would encode them.

    ``ids``: each topic's id, for v13's answer; ``current_leaders`` and ``endpoints``:
    KIP-951's hints for the partitions refused NOT_LEADER_OR_FOLLOWER (v10+).
    """
    flexible = version >= 9
    leaders = current_leaders or {}
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in order:
        by_topic.setdefault(tp.topic, []).append(tp)
    # Written into one buffer: no bytes object per field or partition to join after.
    out = bytearray(array_length(len(by_topic), flexible))
    for name, partitions in by_topic.items():
        if version >= 13:
            out += (ids or {})[name].bytes
        else:
            out += string(name, flexible)
        out += array_length(len(partitions), flexible)
        for tp in partitions:
            _partition(out, version, tp.partition, results[tp], leaders.get(tp))
        if flexible:
            out += NO_TAGS
    out += _NO_THROTTLE
    if flexible:
        out += node_endpoints(endpoints) if version >= 10 else NO_TAGS
    return bytes(out)


def _partition(
    out: bytearray,
    version: int,
    index: int,
    result: ProducePartitionResult,
    leader: tuple[int, int] | None,
) -> None:
    """One PartitionProduceResponse, onto ``out``: the fixed-width fields, KIP-467's
    errors (v8+), and from v9 its tagged fields: from v10 the leader, when there is one
    to name."""
    append_time = result.log_append_time if result.log_append_time >= 0 else -1
    if version >= 5:
        out += _PARTITION_V5.pack(
            index,
            result.error_code,
            result.base_offset,
            append_time,
            result.log_start_offset,
        )
    else:
        out += _PARTITION.pack(
            index, result.error_code, result.base_offset, append_time
        )
    flexible = version >= 9
    if version >= 8:
        out += _record_errors(result.record_errors, flexible)
        out += string(result.error_message, flexible)
    if not flexible:
        return
    if leader is None or leader == _NO_LEADER or version < 10:
        out += NO_TAGS
        return
    # tag 0: LeaderIdAndEpoch, written only when it is not its default (-1, -1)
    out += ONE_TAG_ZERO + _LEADER_TAG.pack(9, *leader) + NO_TAGS


def _record_errors(errors: tuple[tuple[int, str], ...], flexible: bool) -> bytes:
    """KIP-467's record_errors: each refused record's index in its batch, and why."""
    if not errors:
        return EMPTY_COMPACT if flexible else _NO_RECORD_ERRORS
    out = [array_length(len(errors), flexible)]
    for index, message in errors:
        out.append(I32.pack(index) + string(message, flexible))
        if flexible:
            out.append(NO_TAGS)
    return b"".join(out)


def _response(
    request: Request,
    cache: MetadataCache,
    order: list[TopicPartition],
    results: dict[TopicPartition, ProducePartitionResult],
    ids: dict[str, uuid.UUID],
) -> bytes:
    unknown = ErrorCode.unknown_topic_or_partition
    if any(result.error_code is unknown for result in results.values()):
        results = _not_hosted_is_not_leader(cache, results)
    leaders, endpoints = leader_hints(
        request.api_version, request.listener, cache, results
    )
    return encode_produce_response(
        request.api_version, order, results, ids, leaders, endpoints
    )


def _not_hosted_is_not_leader(
    cache: MetadataCache, results: dict[TopicPartition, ProducePartitionResult]
) -> dict[TopicPartition, ProducePartitionResult]:
    """The replica manager refuses a partition it has no replica of as unknown; Kafka's
    ``ReplicaManager.getPartitionOrError`` tells the two cases apart with the metadata:
    a partition the metadata names (this broker does not host it, not yet or no longer)
    is NOT_LEADER_OR_FOLLOWER, so that the client refreshes its metadata and finds the
    leader, and only one the metadata lacks stays UNKNOWN_TOPIC_OR_PARTITION."""
    answers = dict(results)
    for tp, result in results.items():
        topic = cache.topic(tp.topic)
        if (
            result.error_code is ErrorCode.unknown_topic_or_partition
            and topic is not None
            and tp.partition in topic.partitions
        ):
            answers[tp] = attrs.evolve(
                result, error_code=ErrorCode.not_leader_or_follower
            )
    return answers


def _topic_names(
    body: ProduceRequest, cache: MetadataCache, ids: dict[str, uuid.UUID]
) -> list[str]:
    """Each topic's name, in the request's order. v13 names a topic by its id instead
    (KIP-516): its name is looked up, and ``ids`` keeps the id for the answer. An id no
    topic has gets a key no topic name can be (``:`` is not allowed in one) that marks
    it unknown."""
    names: list[str] = []
    for topic in body.topic_data:
        if not is_body(topic, PRODUCE_TOPIC_BY_ID):
            names.append(topic.name)
            continue
        name = topic_name_by_id(cache, topic.topic_id)
        ids[name] = topic.topic_id or ZERO_UUID
        names.append(name)
    return names


def leader_hints(
    version: int,
    listener: str,
    cache: MetadataCache,
    results: dict[TopicPartition, ProducePartitionResult],
) -> tuple[dict[TopicPartition, tuple[int, int]], list[AliveBroker]]:
    """KIP-951 (v10+): for each partition refused NOT_LEADER_OR_FOLLOWER, its leader and
    leader epoch as this broker's metadata has them, and the endpoints of those leaders
    alive on the request's listener (Kafka's getCurrentLeader)."""
    if version < 10:
        return {}, []
    refused = [
        tp
        for tp, result in results.items()
        if result.error_code is ErrorCode.not_leader_or_follower
    ]
    if not refused:  # most answers: no leader to name, no broker list to filter
        return {}, []
    return current_leaders(listener, cache, refused)


def _one_batch(records: bytes | None) -> int | None:
    """The attributes of the one batch Produce v3+ carries per partition (Kafka's
    validateRecords); None if ``records`` is not exactly one batch.

    Checked from the first batch's header alone: the log validates the rest.
    """
    if not records or len(records) < RECORD_BATCH_OVERHEAD:
        return None
    batch_length, attributes = _LENGTH_AND_ATTRIBUTES.unpack_from(records)
    if batch_length + LOG_OVERHEAD != len(records):
        return None
    return int(attributes)
