"""The fuzz suite's seed corpus: a valid request for every API and version the broker advertises.

A fuzzer that starts from random bytes never gets past the request header; one that
starts from valid requests reaches the handlers (the approach of AFL's seed corpora and
of Kafka's own ``RequestResponseTest``, which builds a request of every API and
version). Each request is built from kio's classes for that exact version by walking
the class's fields: a field this module knows by name gets a value that makes sense to
the broker (the topic ``fuzz`` the harness creates, partition 0, the group
``fuzz-group``, a real record batch), any other field a neutral value of its type.
Variants add what one request per version would miss: Produce with each compression
codec and each ``acks``, CreateTopics and DeleteTopics of a throwaway topic.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from collections.abc import Iterator, Mapping
from functools import cache

import attrs
from kio.static.primitive import (
    Records,
    i8,
    i16,
    i32,
    i32Timedelta,
    i64,
    i64Timedelta,
)
from kio.static.protocol import Entity, RequestPayload

from minikafka.broker import KafkaApis
from minikafka.log import CompressionType, build_batch, make_records
from minikafka.net import ApiKey, encode_entity, encode_request_header, request_schema

TOPIC = "fuzz"
"""The topic the harness creates before the first case (PARTITIONS partitions)."""
PARTITIONS = 3
DOOMED_TOPIC = "fuzz-doomed"
"""What the corpus's CreateTopics creates and its DeleteTopics deletes, again and again."""
GROUP = "fuzz-group"
TS = 1_700_000_000_000

SUPPORTED: Mapping[int, tuple[int, int]] = KafkaApis.SUPPORTED

# A consumer's JoinGroup metadata (ConsumerProtocolSubscription v0): version 0, topics
# ["fuzz"], null user data. The broker stores it opaquely, but a real one is what
# assignors and DescribeGroups will later read back.
SUBSCRIPTION = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x04fuzz" + b"\xff\xff\xff\xff"
# ConsumerProtocolAssignment v0: version 0, fuzz-0, null user data.
ASSIGNMENT = b"\x00\x00\x00\x00\x00\x01\x00\x04fuzz\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"


def record_batch(
    compression: CompressionType = CompressionType.NONE,
    count: int = 3,
    value_size: int = 16,
) -> bytes:
    """A producer's v2 batch of ``count`` keyed records (offsets from 0, CRC included)."""
    pairs = [
        (f"k{i}".encode(), bytes([65 + i % 26]) * value_size) for i in range(count)
    ]
    return build_batch(make_records(pairs, timestamp_ms=TS), compression=compression)


def transactional_batch() -> bytes:
    """A transactional producer's batch (producer 0, epoch 0): the leader asks the
    coordinator of ``fuzz-txn`` whether the partition is in its transaction (KIP-890)."""
    pairs = [(b"k", b"v")]
    return build_batch(
        make_records(pairs, timestamp_ms=TS),
        producer_id=0,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


Overrides = Mapping[str, object]
"""``"Class.field"`` or ``"field"`` -> the value to use (a class-qualified key wins)."""

# What each field means to this broker. Keys are kio's field names; the same name in
# every version, which is what lets one table build all 120-odd versions.
BASE: Overrides = {
    # Topics and partitions: the harness's topic, partition 0.
    "TopicProduceData.name": TOPIC,
    "FetchTopic.topic": TOPIC,
    "ForgottenTopic.topic": TOPIC,
    "ListOffsetsTopic.name": TOPIC,
    "MetadataRequestTopic.name": TOPIC,
    "OffsetCommitRequestTopic.name": TOPIC,
    "OffsetFetchRequestTopic.name": TOPIC,
    "CreatePartitionsTopic.name": TOPIC,
    "CreatableTopic.name": DOOMED_TOPIC,
    "DeleteTopicsRequest.topic_names": (DOOMED_TOPIC,),
    # DeleteRecords: the harness's partition below offset 0 (nothing; mutations try more).
    "DeleteRecordsTopic.name": TOPIC,
    "DeleteRecordsPartition.offset": 0,
    "index": 0,
    "partition": 0,
    "partition_index": 0,
    "partition_indexes": (0,),
    "ForgottenTopic.partitions": (),
    "FetchRequest.forgotten_topics_data": (),
    # Produce: a real batch, leader acks, a short timeout.
    "records": record_batch(),
    "acks": 1,
    "ProduceRequest.timeout": ms(1000),
    "transactional_id": None,
    # Fetch: as a consumer asks (no replica id, a short wait so cases stay quick).
    "replica_id": -1,
    "max_wait": ms(10),
    "min_bytes": 1,
    "max_bytes": 1 << 20,
    "partition_max_bytes": 1 << 20,
    "fetch_offset": 0,
    "log_start_offset": -1,
    "current_leader_epoch": -1,
    "session_id": 0,
    "session_epoch": -1,
    "isolation_level": 0,
    "rack_id": "",
    "ListOffsetsPartition.timestamp": -1,
    # UnregisterBroker: an id never registered (the harness's broker is node 1; a
    # mutation may still name it, which leaves it serving, its partitions leaderless).
    "UnregisterBrokerRequest.broker_id": 99,
    # Metadata: ask for the topic, never create one by asking.
    "allow_auto_topic_creation": False,
    # Groups: a consumer group with one (unknown) member.
    "group_id": GROUP,
    "key": GROUP,
    "key_type": 0,
    "groups": (GROUP,),
    "OffsetFetchRequest.groups": ({"group_id": GROUP},),  # v8+ (KIP-709): entities
    "groups_names": (GROUP + "-doomed",),
    "member_id": "",
    "group_instance_id": None,
    "generation_id": -1,
    "generation_id_or_member_epoch": -1,
    "session_timeout": ms(500),
    "rebalance_timeout": ms(500),
    "protocol_type": "consumer",
    "JoinGroupRequestProtocol.name": "range",
    "JoinGroupRequestProtocol.metadata": SUBSCRIPTION,
    "SyncGroupRequestAssignment.assignment": ASSIGNMENT,
    "SyncGroupRequest.assignments": (),
    "MemberIdentity.member_id": "fuzz-member",
    "committed_offset": 0,
    "committed_leader_epoch": -1,
    "committed_metadata": "",
    "retention_time": ms(-1),
    # Admin: a throwaway topic; CreatePartitions to the size the topic has.
    "num_partitions": 1,
    "replication_factor": 1,
    "assignments": (),
    "CreatePartitionsTopic.assignments": None,
    "CreatePartitionsTopic.count": PARTITIONS,
    "CreatableTopicConfig.name": "cleanup.policy",
    "CreatableTopicConfig.value": "delete",
    "timeout": ms(5000),
    "validate_only": False,
    "transaction_timeout": ms(60_000),
    "resource_type": 2,  # TOPIC
    "resource_name": TOPIC,
    "configuration_keys": None,
    # Transactions: an id of the corpus's own (its coordinator is found, if ever, by a
    # mutated FindCoordinator), the harness's partition; a marker for producer 0.
    "AddPartitionsToTxnRequest.v3_and_below_transactional_id": "fuzz-txn",
    "AddPartitionsToTxnTransaction.transactional_id": "fuzz-txn",  # v4+: a broker's
    "EndTxnRequest.transactional_id": "fuzz-txn",
    "AddOffsetsToTxnRequest.transactional_id": "fuzz-txn",
    "TxnOffsetCommitRequest.transactional_id": "fuzz-txn",
    "AddPartitionsToTxnTopic.name": TOPIC,
    "AddPartitionsToTxnTopic.partitions": (0,),
    "TxnOffsetCommitRequestTopic.name": TOPIC,
    "WritableTxnMarkerTopic.name": TOPIC,
    # DescribeTransactions and ListTransactions (KIP-664): the corpus's id, no filters.
    "DescribeTransactionsRequest.transactional_ids": ("fuzz-txn",),
    "ListTransactionsRequest.state_filters": (),
    "ListTransactionsRequest.producer_id_filters": (),
    "ListTransactionsRequest.duration_filter": -1,
    "ListTransactionsRequest.transactional_id_pattern": None,
    "client_software_name": "minikafka-fuzz",
    "client_software_version": "1.0",
}

# Extra valid requests per API besides the base one: overrides on top of BASE.
VARIANTS: Mapping[int, tuple[Overrides, ...]] = {
    ApiKey.PRODUCE: (
        *(
            {"records": record_batch(codec), "acks": acks}
            for codec in CompressionType
            for acks in ((-1,) if codec is CompressionType.NONE else (1,))
        ),
        {"acks": 0},
        {"records": transactional_batch(), "transactional_id": "fuzz-txn"},
    ),
    # The brokers' question (KIP-890): is the partition in the transaction?
    ApiKey.ADD_PARTITIONS_TO_TXN: ({"verify_only": True},),
    ApiKey.METADATA: ({"MetadataRequest.topics": None},),
    ApiKey.CREATE_TOPICS: (
        {"validate_only": True, "CreatableTopic.name": "fuzz-validated"},
    ),
    # The broker's own configs (ConfigResource type 4, BROKER).
    ApiKey.DESCRIBE_CONFIGS: ({"resource_type": 4, "resource_name": "1"},),
    # Every filter at once, one state name Kafka does not know.
    ApiKey.LIST_TRANSACTIONS: (
        {
            "ListTransactionsRequest.state_filters": ("Ongoing", "Hanging"),
            "ListTransactionsRequest.producer_id_filters": (0, 1),
            "ListTransactionsRequest.duration_filter": 0,
            "ListTransactionsRequest.transactional_id_pattern": "fuzz-.*",
        },
    ),
}


@attrs.frozen
class Seed:
    """One valid request of the corpus."""

    api_key: int
    api_version: int
    variant: int
    body: RequestPayload

    @property
    def name(self) -> str:
        return f"{type(self.body).__name__}v{self.api_version}#{self.variant}"

    def payload(self, correlation_id: int, client_id: str | None = "fuzz") -> bytes:
        """Header and body, without the size prefix."""
        header = encode_request_header(
            self.api_key, self.api_version, correlation_id, client_id
        )
        return header + encode_entity(self.body)


def build_request(cls: type[RequestPayload], overrides: Overrides) -> RequestPayload:
    """A valid ``cls`` with the corpus's values (BASE updated by ``overrides``)."""
    values: dict[str, object] = {**BASE, **overrides}
    return typing.cast(RequestPayload, _entity(cls, values))


def _entity(cls: type[Entity], values: Mapping[str, object]) -> Entity:
    hints = _hints(cls)
    fields: dict[str, object] = {}
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        for key in (f"{cls.__name__}.{field.name}", field.name):
            if key in values:
                fields[field.name] = _fit(hint, values[key], values)
                break
        else:
            fields[field.name] = _neutral(hint, values)
    return cls(**fields)


def _fit(hint: object, value: object, values: Mapping[str, object]) -> object:
    """``value`` converted to the field's type (kio's int and timedelta subclasses)."""
    if value is None:
        return None
    inner = _strip_optional(hint)
    if typing.get_origin(inner) is tuple:
        (element, _ellipsis) = typing.get_args(inner)
        assert isinstance(value, tuple)
        if dataclasses.is_dataclass(element):
            # Elements given as overrides of their own fields: {"name": ...} each.
            entity = typing.cast(type[Entity], element)
            return tuple(
                _entity(entity, {**values, **_qualified(entity, v)}) for v in value
            )
        return tuple(_fit(element, v, values) for v in value)
    if isinstance(inner, type):
        if issubclass(inner, i64Timedelta | i32Timedelta):
            assert isinstance(value, datetime.timedelta)
            return inner.parse(value)
        if issubclass(inner, int) and not issubclass(inner, bool):
            assert isinstance(value, int)
            return inner(value) if hasattr(inner, "__low__") else value
        if issubclass(inner, Records):
            assert isinstance(value, bytes)
            return Records(value)
    return value


def _qualified(cls: type[Entity], element: object) -> dict[str, object]:
    assert isinstance(element, dict)
    return {f"{cls.__name__}.{k}": v for k, v in element.items()}


def _neutral(hint: object, values: Mapping[str, object]) -> object:
    """A value of type ``hint`` when the table names none: zero, empty, one element."""
    inner = _strip_optional(hint)
    if typing.get_origin(inner) is tuple:
        (element, _ellipsis) = typing.get_args(inner)
        return (_neutral(element, values),)
    assert isinstance(inner, type), hint
    if dataclasses.is_dataclass(inner):
        return _entity(typing.cast(type[Entity], inner), values)
    if issubclass(inner, bool):
        return False
    if issubclass(inner, i8 | i16 | i32 | i64):
        return inner(0)
    if issubclass(inner, int):
        return 0
    if issubclass(inner, i64Timedelta | i32Timedelta):
        return inner.parse(datetime.timedelta(0))
    if issubclass(inner, Records):
        return Records(record_batch())
    if issubclass(inner, bytes):
        return b""
    if issubclass(inner, str):
        return TOPIC
    if issubclass(inner, uuid.UUID):
        return uuid.UUID(int=0)
    if issubclass(inner, float):
        return 0.0
    raise TypeError(f"no neutral value for {hint!r}")


def _strip_optional(hint: object) -> object:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0]
    return hint


@cache
def _hints(cls: type[Entity]) -> Mapping[str, object]:
    return typing.get_type_hints(cls)


@cache
def corpus() -> tuple[Seed, ...]:
    """Every advertised (API, version), each with its variants, in a fixed order."""
    seeds: list[Seed] = []
    for api_key, (low, high) in sorted(SUPPORTED.items()):
        for version in range(low, high + 1):
            cls = request_schema(api_key, version)
            assert cls is not None, (api_key, version)
            for variant, overrides in enumerate(({}, *VARIANTS.get(api_key, ()))):
                seeds.append(
                    Seed(api_key, version, variant, build_request(cls, overrides))
                )
    return tuple(seeds)


def seeds_by_api() -> Mapping[int, tuple[Seed, ...]]:
    by_api: dict[int, list[Seed]] = {}
    for seed in corpus():
        by_api.setdefault(seed.api_key, []).append(seed)
    return {k: tuple(v) for k, v in by_api.items()}


def iter_payloads(correlation_id: int = 1) -> Iterator[tuple[Seed, bytes]]:
    for seed in corpus():
        yield seed, seed.payload(correlation_id)
