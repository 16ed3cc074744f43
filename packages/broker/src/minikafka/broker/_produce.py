"""Produce: seed 000's produce path from the request to the log and back.

The handler does no per-record work: each partition's ``records`` is handed to the
ReplicaManager as the bytes the producer sent (one copy, into a bytearray, so the log
can write offsets into the batch headers in place). ``acks=0`` gets no response at all,
as the protocol says; ``acks=1`` is answered once the leader has appended; ``acks=all``
when the high watermark passes the batches (a DelayedProduce).

The per-request cost of small produces: the handler checks that each
partition's records are one batch from two header fields read with one ``struct`` call
(the log decodes the whole header again when it validates the batch, which it must),
and the response, a few fixed-width fields per partition in every version served (v3-v8,
none flexible), is written by :func:`encode_produce_response` with ``struct`` instead of
being built as kio objects and encoded field by field; a test holds it to kio's
encoding byte for byte.
"""

from __future__ import annotations

import struct

from kio.schema.errors import ErrorCode

from minikafka.common import Acks, TopicPartition
from minikafka.log import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_MASK,
)
from minikafka.net import Request
from minikafka.replication import ProducePartitionResult, ReplicaManagerService

from ._body import PRODUCE
from ._metadata_cache import INTERNAL_TOPICS, MetadataCache

ADMIN_CLIENT_ID = "__admin_client"  # Kafka's AdminUtils.ADMIN_CLIENT_ID

# The record batch v2 header's batchLength (the int32 that ends the log overhead, at
# offset 8) and attributes (offset 21), in one unpack: what the one-batch check reads.
# batchLength counts the bytes after itself, so the batch occupies batchLength +
# LOG_OVERHEAD bytes. The offsets are minikafka.log's, which owns the header.
_LENGTH_AND_ATTRIBUTES = struct.Struct(
    f">{LOG_OVERHEAD - 4}xi{ATTRIBUTES_OFFSET - LOG_OVERHEAD}xh"
)
_TRANSACTIONAL_OR_CONTROL = TRANSACTIONAL_MASK | CONTROL_MASK  # KIP-98

# ProduceResponse v3-v8, per partition: index, error_code, base_offset and
# log_append_time_ms (-1 unless LogAppendTime), then log_start_offset from v5, then
# record_errors and error_message from v8. throttle_time_ms closes the response.
_PARTITION = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_NO_RECORD_ERRORS = _I32.pack(0)  # an empty record_errors array
_NULL_STRING = _I16.pack(-1)
_NO_THROTTLE = _I32.pack(0)


def handle_produce(
    request: Request, replica_manager: ReplicaManagerService, cache: MetadataCache
) -> None:
    body = request.body_as(PRODUCE)
    acks = Acks.parse(int(body.acks))  # None: INVALID_REQUIRED_ACKS for every partition
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    order: list[TopicPartition] = []
    entries: dict[TopicPartition, bytearray] = {}
    refused: dict[TopicPartition, ProducePartitionResult] = {}
    # Kafka lets its own admin tools' client id write internal topics, and no one else.
    internal_allowed = request.header.client_id == ADMIN_CLIENT_ID
    for topic in body.topic_data:
        for data in topic.partition_data:
            tp = TopicPartition(topic.name, int(data.index))
            order.append(tp)
            if acks is None:
                refused[tp] = ProducePartitionResult(ErrorCode.invalid_required_acks)
            # aside: an internal topic, which only its coordinator writes
            elif topic.name in INTERNAL_TOPICS and not internal_allowed:
                # Only their coordinators write internal topics (ReplicaManager's
                # internalTopicsAllowed): a client's records in __consumer_offsets would
                # be replayed as group metadata and offsets.
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_topic_exception,
                    error_message=f"Cannot append to internal topic {topic.name}",
                )
            # aside: a topic the broker does not know
            elif cache.topic(topic.name) is None:
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
            # aside: a transactional batch
            elif attributes & _TRANSACTIONAL_OR_CONTROL:
                # Without transaction markers a read_committed consumer would see these
                # batches as committed: refuse them rather than store a lie.
                refused[tp] = ProducePartitionResult(
                    ErrorCode.invalid_record,
                    error_message=(
                        "transactional batches are not supported by this broker"
                    ),
                )
            else:
                entries[tp] = bytearray(data.records or b"")
    # aside: a transactional producer
    if body.transactional_id is not None:  # v3+
        # Transactions are not implemented: refuse rather than write what no one
        # commits.
        refused = dict.fromkeys(
            order,
            ProducePartitionResult(ErrorCode.transactional_id_authorization_failed),
        )
        entries = {}

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
        request.respond_parts(
            (encode_produce_response(request.api_version, order, results),)
        )

    if not entries or acks is None:
        respond(refused)
        return
    replica_manager.append_records(
        timeout_ms,
        acks,
        entries,
        lambda results: respond({**refused, **results}),
    )


def encode_produce_response(
    version: int,
    order: list[TopicPartition],
    results: dict[TopicPartition, ProducePartitionResult],
) -> bytes:
    """The ProduceResponse body of ``version`` (3-8): partitions in request order,
    grouped by topic in the order each topic first appears, as kio would encode them."""
    by_topic: dict[str, list[bytes]] = {}
    for tp in order:
        result = results[tp]
        append_time = result.log_append_time if result.log_append_time >= 0 else -1
        if version >= 5:
            fields = _PARTITION_V5.pack(
                tp.partition,
                result.error_code,
                result.base_offset,
                append_time,
                result.log_start_offset,
            )
        else:
            fields = _PARTITION.pack(
                tp.partition, result.error_code, result.base_offset, append_time
            )
        if version >= 8:
            fields += _record_errors(result.record_errors)
            fields += _nullable_string(result.error_message)
        by_topic.setdefault(tp.topic, []).append(fields)
    out = [_I32.pack(len(by_topic))]
    for name, partitions in by_topic.items():
        out.append(_nullable_string(name))
        out.append(_I32.pack(len(partitions)))
        out.extend(partitions)
    out.append(_NO_THROTTLE)
    return b"".join(out)


def _record_errors(errors: tuple[tuple[int, str], ...]) -> bytes:
    """KIP-467's record_errors: each refused record's index in its batch, and why."""
    if not errors:
        return _NO_RECORD_ERRORS
    out = [_I32.pack(len(errors))]
    for index, message in errors:
        out.append(_I32.pack(index) + _nullable_string(message))
    return b"".join(out)


def _nullable_string(value: str | None) -> bytes:
    if value is None:
        return _NULL_STRING
    encoded = value.encode()
    return _I16.pack(len(encoded)) + encoded


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
