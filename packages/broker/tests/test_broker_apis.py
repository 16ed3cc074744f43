"""KafkaApis through a running broker: every API the broker advertises, over the wire.

Each test runs a BrokerServer in its own trio loop (``running_broker``, on an OS-chosen
port; starting one takes milliseconds) and talks to it with the NetworkClient, building
request bodies from kio's classes as a Kafka client would. The broker does its fsyncs in
worker threads, so the tests keep real time and wait for conditions with deadlines.
"""

from __future__ import annotations

import datetime
import struct
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar, cast

import attrs
import pytest
import trio
import trio.lowlevel
from kio.schema.api_versions.v4.request import (
    ApiVersionsRequest as ApiVersionsRequestV4,
)
from kio.schema.api_versions.v4.response import (
    ApiVersionsResponse as ApiVersionsResponseV4,
)
from kio.schema.create_partitions.v1.request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.create_partitions.v1.response import (
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from kio.schema.create_topics.v4.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.create_topics.v4.response import (
    CreatableTopicResult,
    CreateTopicsResponse,
)
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest
from kio.schema.delete_topics.v3.response import DeleteTopicsResponse
from kio.schema.describe_configs.v3.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.schema.describe_configs.v3.response import (
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.fetch.v11.response import FetchResponse, PartitionData
from kio.schema.init_producer_id.v1.request import InitProducerIdRequest
from kio.schema.init_producer_id.v1.response import InitProducerIdResponse
from kio.schema.list_offsets.v5.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
)
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v1.request import (
    MetadataRequestTopic as MetadataRequestTopicV1,
)
from kio.schema.metadata.v1.response import MetadataResponse as MetadataResponseV1
from kio.schema.metadata.v8.response import MetadataResponse, MetadataResponseTopic
from kio.schema.produce.v8.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.schema.produce.v8.response import PartitionProduceResponse, ProduceResponse
from kio.schema.types import BrokerId, TopicName, TransactionalId
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.broker import BrokerServer, KafkaApis, ProducerIdManager
from minikafka.broker._producer_ids import ProducerIdsUnavailable
from minikafka.broker.testing import (
    BrokerFailed,
    BrokerProcess,
    element,
    request_class,
    running_broker,
    single_node_config,
)
from minikafka.client._async_admin import metadata_request
from minikafka.common import TopicPartition
from minikafka.controller import AllocateProducerIdsResponse
from minikafka.log import (
    CompressionType,
    Record,
    RecordBatchHeader,
    TimestampType,
    build_batch,
    decode_batch,
    make_records,
)
from minikafka.net import (
    ClientError,
    NetworkClient,
    Node,
    build,
    encode_entity,
    encode_request_header,
    has_field,
)
from minikafka.net.testing import RawConnection, request_frame, wait_until
from minikafka.raft._describe_wire import encode_describe_quorum_request
from minikafka.tools._connection import list_offsets_request

R = TypeVar("R", bound=ResponsePayload)

DEADLINE = 30.0  # seconds; generous for a shared 2-core machine
TS = 1_700_000_000_000
EARLIEST, LATEST = -2, -1
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def batch(
    values: Sequence[bytes],
    *,
    timestamp_ms: int = TS,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: CompressionType = CompressionType.NONE,
    is_transactional: bool = False,
) -> bytes:
    """A producer's batch of keyless records (offsets from 0, as a producer writes them)."""
    return build_batch(
        make_records([(None, v) for v in values], timestamp_ms=timestamp_ms),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        compression=compression,
        is_transactional=is_transactional,
    )


def decode_batches(data: bytes | None) -> list[tuple[RecordBatchHeader, list[Record]]]:
    """Every batch in a fetch response's records, CRC checked."""
    out: list[tuple[RecordBatchHeader, list[Record]]] = []
    position = 0
    while data and position < len(data):
        header, records = decode_batch(data, position)  # raises on a bad CRC
        out.append((header, records))
        position += header.size
    return out


def values_of(data: bytes | None) -> list[bytes | None]:
    return [r.value for _, records in decode_batches(data) for r in records]


def produce_request(
    topic: str,
    partitions: Mapping[int, bytes],
    *,
    acks: int = 1,
    timeout_ms: int = 10_000,
    transactional_id: str | None = None,
) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None
        if transactional_id is None
        else TransactionalId(transactional_id),
        acks=i16(acks),
        timeout=ms(timeout_ms),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=tuple(
                    PartitionProduceData(index=i32(p), records=Records(data))
                    for p, data in partitions.items()
                ),
            ),
        ),
    )


def fetch_request(
    topic: str,
    offsets: Mapping[int, int],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50 * 1024 * 1024,
    partition_max_bytes: int = 1024 * 1024,
    read_committed: bool = False,
    replica_id: int = -1,
    leader_epoch: int = -1,
) -> FetchRequest:
    return FetchRequest(
        replica_id=BrokerId(replica_id),
        max_wait=ms(max_wait_ms),
        min_bytes=i32(min_bytes),
        max_bytes=i32(max_bytes),
        isolation_level=i8(1 if read_committed else 0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName(topic),
                partitions=tuple(
                    FetchPartition(
                        partition=i32(p),
                        current_leader_epoch=i32(leader_epoch),
                        fetch_offset=i64(offset),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(partition_max_bytes),
                    )
                    for p, offset in offsets.items()
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


@attrs.define
class Kafka:
    """A running broker and a client connected to it."""

    _server: BrokerServer | None  # None: a broker in another process
    client: NetworkClient
    node: Node

    @property
    def server(self) -> BrokerServer:
        assert self._server is not None, "the broker runs in another process"
        return self._server

    async def call(self, body: RequestPayload, response_type: type[R]) -> R:
        with trio.fail_after(DEADLINE):
            response = await self.client.send(self.node, body)
        assert isinstance(response, response_type), response
        return response

    async def produce(
        self,
        topic: str,
        data: bytes,
        *,
        partition: int = 0,
        acks: int = 1,
        transactional_id: str | None = None,
    ) -> PartitionProduceResponse:
        body = produce_request(
            topic, {partition: data}, acks=acks, transactional_id=transactional_id
        )
        response = await self.call(body, ProduceResponse)
        [topic_response] = response.responses
        [result] = topic_response.partition_responses
        assert (topic_response.name, result.index) == (topic, partition)
        return result

    async def fetch(
        self,
        topic: str,
        offset: int = 0,
        *,
        max_wait_ms: int = 0,
        min_bytes: int = 1,
        partition_max_bytes: int = 1024 * 1024,
        read_committed: bool = False,
        replica_id: int = -1,
        leader_epoch: int = -1,
    ) -> PartitionData:
        """Partition 0 of ``topic`` from ``offset``."""
        body = fetch_request(
            topic,
            {0: offset},
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            partition_max_bytes=partition_max_bytes,
            read_committed=read_committed,
            replica_id=replica_id,
            leader_epoch=leader_epoch,
        )
        response = await self.call(body, FetchResponse)
        [[result]] = [t.partitions for t in response.responses]
        return result

    async def list_offset(
        self, topic: str, timestamp: int, partition: int = 0
    ) -> ListOffsetsPartitionResponse:
        body = list_offsets_request({topic: [partition]}, timestamp)
        response = await self.call(body, ListOffsetsResponse)
        [[result]] = [t.partitions for t in response.topics]
        return result

    async def metadata(
        self, names: Sequence[str] | None, *, allow: bool = True
    ) -> MetadataResponse:
        return await self.call(
            metadata_request(names, allow_auto_topic_creation=allow), MetadataResponse
        )

    async def topic(self, name: str) -> MetadataResponseTopic:
        [topic] = (await self.metadata([name], allow=False)).topics
        return topic

    async def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> CreatableTopicResult:
        body = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(partitions),
                    replication_factor=i16(replication_factor),
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k, value=v)
                        for k, v in (configs or {}).items()
                    ),
                ),
            ),
            timeout=ms(30_000),
            validate_only=validate_only,
        )
        [result] = (await self.call(body, CreateTopicsResponse)).topics
        assert result.name == name
        return result

    async def delete_topic(self, name: str) -> ErrorCode:
        body = DeleteTopicsRequest(topic_names=(TopicName(name),), timeout=ms(30_000))
        [result] = (await self.call(body, DeleteTopicsResponse)).responses
        return result.error_code

    async def create_partitions(
        self, name: str, count: int, *, validate_only: bool = False
    ) -> CreatePartitionsTopicResult:
        body = CreatePartitionsRequest(
            topics=(
                CreatePartitionsTopic(
                    name=TopicName(name), count=i32(count), assignments=None
                ),
            ),
            timeout=ms(30_000),
            validate_only=validate_only,
        )
        [result] = (await self.call(body, CreatePartitionsResponse)).results
        return result

    async def describe(
        self, kind: int, name: str, keys: Sequence[str] | None = None
    ) -> DescribeConfigsResult:
        body = DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(kind),
                    resource_name=name,
                    configuration_keys=None if keys is None else tuple(keys),
                ),
            ),
            include_synonyms=False,
            include_documentation=False,
        )
        [result] = (await self.call(body, DescribeConfigsResponse)).results
        return result

    async def init_producer_id(
        self, transactional_id: str | None = None
    ) -> InitProducerIdResponse:
        body = InitProducerIdRequest(
            transactional_id=None
            if transactional_id is None
            else TransactionalId(transactional_id),
            transaction_timeout=ms(60_000),
        )
        return await self.call(body, InitProducerIdResponse)

    def log_end_offset(self, topic: str, partition: int = 0) -> int:
        found = self.server.replica_manager.get_partition(
            TopicPartition(topic, partition)
        )
        assert found is not None
        return found.log.log_end_offset


@asynccontextmanager
async def kafka(
    data_dir: Path, overrides: Mapping[str, str] | None = None
) -> AsyncIterator[Kafka]:
    config = single_node_config(data_dir, overrides)
    async with (
        running_broker(config) as server,
        NetworkClient.open(client_id="tests") as client,
    ):
        host, port = server.bound_address()
        yield Kafka(server, client, Node(config.node_id, host, port))


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Kafka]:
    async with kafka(tmp_path / "data") as k:
        yield k


# --- ApiVersions and every advertised version ------------------------------------------


async def test_api_versions_lists_exactly_what_kafka_apis_supports(
    broker: Kafka,
) -> None:
    assert await broker.client.api_versions(broker.node) == dict(KafkaApis.SUPPORTED)


async def test_api_versions_v4_names_the_features_the_metadata_log_finalized(
    broker: Kafka,
) -> None:
    # Guarantee (KIP-584): ApiVersions v4 lists the feature levels this broker runs and
    # the metadata.version the controller's bootstrap record finalized, its epoch the
    # offset of the metadata image it was read from; kraft.version, off at level 0 (the
    # voters are static), is supported and not finalized.
    asked = ApiVersionsRequestV4(
        client_software_name="tests", client_software_version="1"
    )
    answer = await broker.call(asked, ApiVersionsResponseV4)
    supported = {
        f.name: (f.min_version, f.max_version) for f in answer.supported_features
    }
    assert supported == {"metadata.version": (1, 1), "kraft.version": (0, 0)}
    finalized = {
        f.name: (f.min_version_level, f.max_version_level)
        for f in answer.finalized_features
    }
    assert finalized == {"metadata.version": (1, 1)}
    image = broker.server.apis.metadata_cache.image
    assert 0 <= answer.finalized_features_epoch <= image.offset


def _version_body(
    api_key: int,
    version: int,
    topic: str,
    count: int,
    topic_id: uuid.UUID | None = None,
) -> RequestPayload:
    """A plain request of ``api_key`` v``version`` about ``topic``, built with ``build``
    (``topic_id``: where the version names topics by id, KIP-516)."""
    cls = request_class(api_key, version)
    acl_filter: dict[str, object] = {
        "resource_type_filter": 1,  # ANY
        "resource_name_filter": None,
        "pattern_type_filter": 1,  # ANY
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,  # ANY
        "permission_type": 1,  # ANY
    }

    def entry(key: str, **fields: object) -> tuple[object, ...]:
        # A topic entry names its topic "name" in most messages, "topic" in Fetch, and
        # by "topic_id" alone in the newest versions of some.
        entity = element(cls, key)
        if has_field(entity, "name"):
            fields["name"] = topic
        elif has_field(entity, "topic"):
            fields["topic"] = topic
        else:
            fields["topic_id"] = topic_id
        return (build(entity, **fields),)

    def part(key: str, **fields: object) -> object:
        return build(element(element(cls, key), "partitions"), **fields)

    seconds = datetime.timedelta(seconds=30)
    # Lazily: each API's nested classes exist only in its own schema.
    bodies: dict[int, Callable[[], dict[str, object]]] = {
        0: lambda: {
            "transactional_id": None,
            "acks": 1,
            "timeout": seconds,
            "topic_data": entry(
                "topic_data",
                partition_data=(
                    build(
                        element(element(cls, "topic_data"), "partition_data"),
                        index=0,
                        records=batch([b"v%d" % version]),
                    ),
                ),
            ),
        },
        1: lambda: {
            "replica_id": -1,
            "max_wait": datetime.timedelta(0),
            "min_bytes": 1,
            "topics": entry(
                "topics",
                partitions=(
                    part(
                        "topics",
                        partition=0,
                        fetch_offset=0,
                        partition_max_bytes=1 << 20,
                    ),
                ),
            ),
            "forgotten_topics_data": (),
        },
        2: lambda: {
            "replica_id": -1,
            "isolation_level": 0,
            "timeout": seconds,  # v10+ (KIP-1075)
            "topics": entry(
                "topics", partitions=(part("topics", partition_index=0, timestamp=-1),)
            ),
        },
        3: lambda: {
            "topics": entry("topics", topic_id=uuid.UUID(int=0)),  # v10+: by name
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
        10: lambda: {  # one key up to v3, a list of them from v4 (KIP-699)
            "key": "sweep-group",
            "coordinator_keys": ("sweep-group",),
            "key_type": 0,
        },
        18: lambda: {"client_software_name": "tests", "client_software_version": "1"},
        19: lambda: {
            "topics": entry(
                "topics",
                num_partitions=2,
                replication_factor=1,
                assignments=(),
                configs=(),
            ),
            "timeout": seconds,
            "validate_only": False,
        },
        20: lambda: {  # by name; from v6 (KIP-516) a name or an id per topic
            "topic_names": (topic,),
            "topics": entry("topics", topic_id=uuid.UUID(int=0))
            if has_field(cls, "topics")
            else (),
            "timeout": seconds,
        },
        22: lambda: {"transactional_id": None, "transaction_timeout": seconds},
        23: lambda: {
            "replica_id": -1,  # v3+: a consumer (KIP-320's validation) asks too
            "topics": entry(
                "topics", partitions=(part("topics", partition=0, leader_epoch=0),)
            ),
        },
        32: lambda: {
            "resources": (
                build(
                    element(cls, "resources"),
                    resource_type=TOPIC_RESOURCE,
                    resource_name=topic,
                    configuration_keys=None,
                ),
            ),
            "include_synonyms": False,
            "include_documentation": False,
        },
        43: lambda: {
            "election_type": 0,  # v1+: preferred
            "topic_partitions": entry("topic_partitions", partitions=(0,)),
            "timeout": seconds,
        },
        45: lambda: {"timeout": seconds, "topics": ()},
        # The configs sweep sets a key the topic takes and puts it back.
        33: lambda: {
            "resources": (
                build(
                    element(cls, "resources"),
                    resource_type=TOPIC_RESOURCE,
                    resource_name=topic,
                    configs=(
                        build(
                            element(element(cls, "resources"), "configs"),
                            name="retention.ms",
                            value=str(3_600_000 + version),
                        ),
                    ),
                ),
            ),
            "validate_only": False,
        },
        44: lambda: {
            "resources": (
                build(
                    element(cls, "resources"),
                    resource_type=TOPIC_RESOURCE,
                    resource_name=topic,
                    configs=(
                        build(
                            element(element(cls, "resources"), "configs"),
                            name="retention.ms",
                            config_operation=1,  # DELETE
                            value=None,
                        ),
                    ),
                ),
            ),
            "validate_only": False,
        },
        35: lambda: {"topics": None},
        61: lambda: {"topics": entry("topics", partition_indexes=(0,))},
        60: lambda: {
            "include_cluster_authorized_operations": False,
            "endpoint_type": 1,
            "include_fenced_brokers": False,
        },
        # DeleteRecords below the log start: nothing to delete, nothing to wait for.
        21: lambda: {
            "topics": entry(
                "topics", partitions=(part("topics", partition_index=0, offset=0),)
            ),
            "timeout": seconds,
        },
        # DescribeQuorum: the metadata quorum (one voter here, the leader, answering).
        55: lambda: {"topics": encode_describe_quorum_request().topics},
        # A SCRAM credential made (KIP-554), then every user's listed.
        51: lambda: {
            "deletions": (),
            "upsertions": (
                build(
                    element(cls, "upsertions"),
                    name=f"sweep-{version}",
                    mechanism=1,
                    iterations=4096,
                    salt=b"salt",
                    salted_password=b"\x01" * 32,
                ),
            ),
        },
        50: lambda: {"users": None},
        # An ACL made, listed and deleted (this broker has no authorizer: all three
        # answer SECURITY_DISABLED; tests/compat/test_acls.py has one).
        30: lambda: {
            "creations": (
                build(
                    element(cls, "creations"),
                    resource_type=2,
                    resource_name=topic,
                    resource_pattern_type=3,
                    principal="User:alice",
                    host="*",
                    operation=4,
                    permission_type=3,
                ),
            )
        },
        29: lambda: acl_filter,
        31: lambda: {"filters": (build(element(cls, "filters"), **acl_filter),)},
        46: lambda: {"timeout": seconds, "topics": None},
        # UnregisterBroker of an id never registered (this node is the only broker).
        64: lambda: {"broker_id": 99},
        37: lambda: {
            "topics": entry("topics", count=count, assignments=None),
            "timeout": seconds,
            "validate_only": False,
        },
    }
    return build(cls, **bodies[api_key]())


# Create the topics first, use them, grow them, delete them last.
_SWEEP_ORDER = (
    19,
    18,
    3,
    0,
    1,
    23,
    2,
    10,
    22,
    32,
    33,
    44,
    35,
    60,
    61,
    37,
    43,
    45,
    46,
    55,
    21,
    51,
    50,
    64,
    30,
    29,
    31,
    20,
)
# The group APIs need a group to ask about: test_group_apis.py sweeps their versions;
# the transaction APIs a transaction: test_txn_apis.py sweeps theirs, and
# test_txn_admin_apis.py DescribeTransactions' and ListTransactions'.
_GROUP_APIS = (8, 9, 11, 12, 13, 14, 15, 16, 42, 47, 24, 25, 26, 27, 28, 65, 66, 68, 69)
# SaslHandshake and SaslAuthenticate: a SASL listener's connection answers them (the
# net package's test_sasl_listener.py); on this PLAINTEXT listener they are refused with
# ILLEGAL_SASL_STATE, checked below.
_SASL_APIS = (17, 36)


async def test_every_advertised_version_of_every_api_is_answered(broker: Kafka) -> None:
    """ApiVersions promises exactly what the broker handles: each version once, no error."""
    assert sorted((*_SWEEP_ORDER, *_GROUP_APIS, *_SASL_APIS)) == sorted(
        KafkaApis.SUPPORTED
    )
    answered: dict[int, list[int]] = {}
    for api_key in _SWEEP_ORDER:
        low, high = KafkaApis.SUPPORTED[api_key]
        for i, version in enumerate(range(low, high + 1)):
            # CreateTopics and DeleteTopics use one topic per version; the rest topic 0.
            topic = f"sweep-{i}" if api_key in (19, 20) else "sweep-0"
            created = KafkaApis.SUPPORTED[19]
            if api_key == 20 and i > created[1] - created[0]:
                # More DeleteTopics versions than CreateTopics ones: its topic first.
                made = _version_body(19, created[1], topic, count=1)
                with trio.fail_after(DEADLINE):
                    await broker.client.send(broker.node, made)
            known = broker.server.metadata_cache.topic(topic)
            topic_id = None if known is None else known.topic_id
            body = _version_body(api_key, version, topic, 3 + i, topic_id)
            with trio.fail_after(DEADLINE):
                response = await broker.client.send(broker.node, body)
            assert response is not None
            assert (int(response.__api_key__), int(response.__version__)) == (
                api_key,
                version,
            )
            if api_key == 18:  # every ApiVersions version lists the same table
                listed = {
                    int(k.api_key): (int(k.min_version), int(k.max_version))
                    for k in getattr(response, "api_keys", ())
                }
                assert listed == dict(KafkaApis.SUPPORTED), version
            if api_key == 1:  # the produce sweep wrote one record per Produce version
                [[partition]] = [t.partitions for t in cast(Any, response).responses]
                produced = range(
                    KafkaApis.SUPPORTED[0][0], KafkaApis.SUPPORTED[0][1] + 1
                )
                assert values_of(partition.records) == [b"v%d" % v for v in produced]
            errors = _error_codes(response)
            assert errors, response
            # a single node's partition has its preferred leader already
            if api_key == 43:
                assert ErrorCode.election_not_needed in errors, response
                errors = [e for e in errors if e is not ErrorCode.election_not_needed]
            if api_key == 64:  # the controller's refusal, forwarded as it came
                assert errors == [ErrorCode.broker_id_not_registered], response
                errors = []
            if api_key in (29, 30, 31):  # no authorizer configured
                assert set(errors) == {ErrorCode.security_disabled}, response
                errors = []
            assert set(errors) <= {ErrorCode.none}, (api_key, version, response)
            answered.setdefault(api_key, []).append(version)
    assert answered == {
        k: list(range(lo, hi + 1))
        for k, (lo, hi) in KafkaApis.SUPPORTED.items()
        if k not in _GROUP_APIS + _SASL_APIS
    }
    # DeleteTopics of every version removed the topics again (FindCoordinator created
    # the internal __consumer_offsets, which stays); those of CreateTopics versions past
    # DeleteTopics' count go with one more DeleteTopics.
    topics_made, deleted = (len(answered[k]) for k in (19, 20))
    if topics_made > deleted:
        extra = tuple(TopicName(f"sweep-{i}") for i in range(deleted, topics_made))
        with trio.fail_after(DEADLINE):
            await broker.client.send(
                broker.node,
                DeleteTopicsRequest(topic_names=extra, timeout=ms(30_000)),
            )
    assert [t.name for t in (await broker.metadata(None)).topics] == [
        "__consumer_offsets"
    ]


def _error_codes(entity: object) -> list[ErrorCode]:
    """Every error code in a response, nested ones included."""
    found: list[ErrorCode] = []
    for name in getattr(entity, "__dataclass_fields__", {}):
        value = getattr(entity, name)
        if isinstance(value, ErrorCode):
            found.append(value)
        elif isinstance(value, tuple):
            for item in value:
                found.extend(_error_codes(item))
    return found


# --- Metadata ---------------------------------------------------------------------------


async def test_metadata_names_this_broker_as_the_controller(broker: Kafka) -> None:
    response = await broker.metadata(None)
    host, port = broker.server.bound_address()
    assert [(b.node_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (1, host, port, None)
    ]
    assert response.controller_id == 1
    assert response.cluster_id == broker.server.cluster_id
    assert response.topics == ()


async def test_metadata_creates_a_missing_topic_with_the_defaults(
    tmp_path: Path,
) -> None:
    async with kafka(tmp_path / "data", {"num.partitions": "3"}) as k:
        [topic] = (await k.metadata(["auto"])).topics
        assert (topic.name, topic.error_code, topic.is_internal) == (
            "auto",
            ErrorCode.none,
            False,
        )
        assert [
            (p.partition_index, p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes)
            for p in topic.partitions
        ] == [(i, ErrorCode.none, 1, (1,), (1,)) for i in range(3)]
        # It is a real topic now: produce goes straight to it.
        assert (
            await k.produce("auto", batch([b"a"]), partition=2)
        ).error_code is ErrorCode.none
        # A second ask finds it rather than creating it again.
        assert (await k.topic("auto")).partitions == topic.partitions


async def test_metadata_v1_has_no_allow_flag_and_creates(broker: Kafka) -> None:
    body = MetadataRequestV1(
        topics=(MetadataRequestTopicV1(name=TopicName("old-client")),)
    )
    response = await broker.call(body, MetadataResponseV1)
    [topic] = response.topics
    assert (topic.name, topic.error_code, len(topic.partitions)) == (
        "old-client",
        ErrorCode.none,
        1,
    )
    assert response.controller_id == 1


async def test_metadata_does_not_create_when_the_client_says_no(broker: Kafka) -> None:
    [topic] = (await broker.metadata(["nope"], allow=False)).topics
    assert (topic.name, topic.error_code, topic.partitions) == (
        "nope",
        ErrorCode.unknown_topic_or_partition,
        (),
    )
    assert (await broker.metadata(None)).topics == ()


async def test_metadata_does_not_create_when_the_broker_says_no(tmp_path: Path) -> None:
    async with kafka(tmp_path / "data", {"auto.create.topics.enable": "false"}) as k:
        [topic] = (await k.metadata(["nope"], allow=True)).topics
        assert topic.error_code is ErrorCode.unknown_topic_or_partition
        assert (await k.metadata(None)).topics == ()


async def test_metadata_of_an_invalid_name_is_an_error_not_a_topic(
    broker: Kafka,
) -> None:
    [topic] = (await broker.metadata(["bad name!"])).topics
    assert topic.error_code is ErrorCode.invalid_topic_exception
    # The same when the request may not create topics: Kafka says the name is
    # invalid, not unknown (the differential corpus compares it with Kafka 4.1).
    [topic] = (await broker.metadata(["bad name!"], allow=False)).topics
    assert topic.error_code is ErrorCode.invalid_topic_exception
    assert (await broker.metadata(None)).topics == ()


async def test_metadata_never_creates_an_internal_topic(broker: Kafka) -> None:
    # __consumer_offsets is created by the group coordinator with its own settings.
    [topic] = (await broker.metadata(["__consumer_offsets"], allow=True)).topics
    assert topic.error_code is ErrorCode.unknown_topic_or_partition
    assert (await broker.metadata(None)).topics == ()


async def test_metadata_of_no_topics_and_of_existing_and_missing_ones(
    broker: Kafka,
) -> None:
    await broker.create_topic("here")
    assert (
        await broker.metadata([])
    ).topics == ()  # an empty list: no topics, none created
    # A name listed twice is answered once, as Kafka answers it.
    response = await broker.metadata(["new-1", "here", "new-2", "new-1"])
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("new-1", ErrorCode.none),
        ("here", ErrorCode.none),
        ("new-2", ErrorCode.none),
    ]
    assert [t.name for t in (await broker.metadata(None)).topics] == [
        "here",
        "new-1",
        "new-2",
    ]


async def test_metadata_of_all_topics_lists_them_without_creating(
    broker: Kafka,
) -> None:
    for name in ("b-topic", "a-topic"):
        assert (await broker.create_topic(name, 2)).error_code is ErrorCode.none
    response = await broker.metadata(None)
    assert [(t.name, len(t.partitions)) for t in response.topics] == [
        ("a-topic", 2),
        ("b-topic", 2),
    ]


# --- Produce ------------------------------------------------------------------------------


async def test_produce_acks_1_answers_with_the_base_offsets(broker: Kafka) -> None:
    await broker.create_topic("t", 2)
    first = await broker.produce("t", batch([b"a", b"b", b"c"]))
    assert (first.error_code, first.base_offset, first.log_start_offset) == (
        ErrorCode.none,
        0,
        0,
    )
    assert first.log_append_time is None  # CreateTime topic
    second = await broker.produce("t", batch([b"d", b"e"]))
    assert second.base_offset == 3
    other = await broker.produce("t", batch([b"x"]), partition=1)
    assert other.base_offset == 0
    assert broker.log_end_offset("t") == 5
    assert values_of((await broker.fetch("t")).records) == [
        b"a",
        b"b",
        b"c",
        b"d",
        b"e",
    ]


async def test_produce_of_several_partitions_in_one_request(broker: Kafka) -> None:
    await broker.create_topic("t", 3)
    body = produce_request(
        "t", {2: batch([b"p2"]), 0: batch([b"p0", b"p0"]), 1: batch([b"p1"])}
    )
    response = await broker.call(body, ProduceResponse)
    [topic] = response.responses
    # In the order the request named them.
    assert [
        (p.index, p.error_code, p.base_offset) for p in topic.partition_responses
    ] == [
        (2, ErrorCode.none, 0),
        (0, ErrorCode.none, 0),
        (1, ErrorCode.none, 0),
    ]
    assert [broker.log_end_offset("t", p) for p in range(3)] == [2, 1, 1]


async def test_produce_acks_0_gets_no_response_and_the_connection_goes_on(
    broker: Kafka,
) -> None:
    await broker.create_topic("t")
    raw = await RawConnection.open(broker.server.socket_server)
    # Two acks=0 produces and a Metadata request, written in one go on one connection.
    produce = produce_request("t", {0: batch([b"a", b"b", b"c"])}, acks=0)
    await raw.send(
        request_frame(produce, 1)
        + request_frame(produce, 2)
        + request_frame(metadata_request(["t"]), 3)
    )
    with trio.fail_after(DEADLINE):
        answer = await raw.receive_response(3, 8)
    await raw.aclose()
    # The first response on the wire is the Metadata one: the produces got none.
    assert answer is not None
    correlation_id, body = answer
    assert correlation_id == 3
    assert isinstance(body, MetadataResponse)
    # Handled in order: both produces were appended before the Metadata was answered.
    assert broker.log_end_offset("t") == 6
    # The NetworkClient's way: send without waiting for an answer, then ask on.
    with trio.fail_after(DEADLINE):
        assert (
            await broker.client.send(broker.node, produce, expect_response=False)
            is None
        )
    latest = await broker.list_offset("t", LATEST)
    assert (latest.error_code, latest.offset) == (ErrorCode.none, 9)


async def test_produce_acks_0_with_an_error_closes_the_connection(
    broker: Kafka,
) -> None:
    raw = await RawConnection.open(broker.server.socket_server)
    await raw.send(
        request_frame(produce_request("missing", {0: batch([b"a"])}, acks=0), 1)
    )
    with trio.fail_after(DEADLINE):
        assert await raw.wait_closed()
    await raw.aclose()
    assert (await broker.metadata(None)).topics == ()


async def test_produce_acks_all_is_answered_once_the_high_watermark_passes(
    broker: Kafka,
) -> None:
    await broker.create_topic("t")
    result = await broker.produce("t", batch([b"a", b"b"]), acks=-1)
    assert (result.error_code, result.base_offset) == (ErrorCode.none, 0)
    assert (await broker.fetch("t")).high_watermark == 2


async def test_produce_with_invalid_acks_is_refused(broker: Kafka) -> None:
    await broker.create_topic("t")
    result = await broker.produce("t", batch([b"a"]), acks=2)
    assert result.error_code is ErrorCode.invalid_required_acks
    assert broker.log_end_offset("t") == 0


async def test_produce_to_an_unknown_topic_or_partition(broker: Kafka) -> None:
    await broker.create_topic("t")
    missing = await broker.produce("missing", batch([b"a"]))
    assert missing.error_code is ErrorCode.unknown_topic_or_partition
    no_partition = await broker.produce("t", batch([b"a"]), partition=5)
    assert no_partition.error_code is ErrorCode.unknown_topic_or_partition
    # Produce never creates topics.
    assert [t.name for t in (await broker.metadata(None)).topics] == ["t"]


async def test_min_insync_replicas_refuses_acks_all_but_not_acks_1(
    broker: Kafka,
) -> None:
    result = await broker.create_topic("safe", configs={"min.insync.replicas": "2"})
    assert result.error_code is ErrorCode.none
    refused = await broker.produce("safe", batch([b"a"]), acks=-1)
    assert refused.error_code is ErrorCode.not_enough_replicas
    assert broker.log_end_offset("safe") == 0  # refused before the append
    accepted = await broker.produce("safe", batch([b"a"]), acks=1)
    assert (accepted.error_code, accepted.base_offset) == (ErrorCode.none, 0)


async def test_a_corrupt_batch_is_refused_and_nothing_is_appended(
    broker: Kafka,
) -> None:
    await broker.create_topic("t", 2)
    corrupt = bytearray(batch([b"hello", b"world"]))
    corrupt[-3] ^= 0xFF  # inside the last record: covered by the CRC
    body = produce_request("t", {0: bytes(corrupt), 1: batch([b"fine"])})
    [topic] = (await broker.call(body, ProduceResponse)).responses
    by_partition = {int(p.index): p for p in topic.partition_responses}
    assert by_partition[0].error_code is ErrorCode.corrupt_message
    assert by_partition[0].log_start_offset == -1  # as Kafka answers a corrupt batch
    assert by_partition[1].error_code is ErrorCode.none  # each partition on its own
    assert broker.log_end_offset("t", 0) == 0
    assert broker.log_end_offset("t", 1) == 1


def _magic_1() -> bytes:
    data = bytearray(batch([b"a"]))
    data[16] = 1  # the magic byte: an old message format
    return bytes(data)


@pytest.mark.parametrize(
    "records",
    [
        b"\x00" * 5,
        b"\x00" * 70,
        b"garbage that is not a record batch at all" * 3,
        _magic_1(),
    ],
    ids=["5-zeros", "70-zeros", "text", "magic-1"],
)
async def test_records_that_are_no_batch_are_refused(
    broker: Kafka, records: bytes
) -> None:
    await broker.create_topic("t")
    result = await broker.produce("t", records)
    assert result.error_code in (ErrorCode.corrupt_message, ErrorCode.invalid_record)
    assert broker.log_end_offset("t") == 0
    # The broker still serves the partition.
    assert (await broker.produce("t", batch([b"ok"]))).base_offset == 0


@pytest.mark.parametrize("count", [0, 2], ids=["no-batch", "two-batches"])
async def test_a_produce_partition_must_hold_exactly_one_batch(
    broker: Kafka, count: int
) -> None:
    await broker.create_topic("t")
    result = await broker.produce(
        "t", b"".join(batch([b"%d" % i]) for i in range(count))
    )
    assert result.error_code is ErrorCode.invalid_record
    assert broker.log_end_offset("t") == 0


@pytest.mark.parametrize(
    "compression", [CompressionType.NONE, CompressionType.GZIP], ids=["plain", "gzip"]
)
async def test_keyless_records_on_a_compacted_topic_are_each_named(
    broker: Kafka, compression: CompressionType
) -> None:
    # Guarantee: Produce v8 names every record a per-record rule refuses (KIP-467's
    # record_errors), as Kafka 4.1 does, with the partition's log start offset; the
    # differential corpus compares the two.
    await broker.create_topic("compacted", configs={"cleanup.policy": "compact"})
    records = make_records([(None, b"a"), (b"k", b"b"), (None, b"c")], timestamp_ms=TS)
    result = await broker.produce(
        "compacted", build_batch(records, compression=compression)
    )
    assert result.error_code is ErrorCode.invalid_record
    assert [int(e.batch_index) for e in result.record_errors] == [0, 2]
    assert all(
        "without key" in (e.batch_index_error_message or "")
        for e in result.record_errors
    )
    assert result.log_start_offset == 0
    assert broker.log_end_offset("compacted") == 0
    # A structural error names no record.
    result = await broker.produce("compacted", b"\x00" * 70)
    assert result.record_errors == ()


async def test_a_batch_over_max_message_bytes_is_refused(broker: Kafka) -> None:
    await broker.create_topic("small", configs={"max.message.bytes": "200"})
    result = await broker.produce("small", batch([b"x" * 500]))
    assert result.error_code is ErrorCode.message_too_large
    assert broker.log_end_offset("small") == 0
    assert (await broker.produce("small", batch([b"x"]))).error_code is ErrorCode.none


async def test_log_append_time_topics_stamp_batches_and_keep_the_crc_valid(
    broker: Kafka,
) -> None:
    await broker.create_topic(
        "stamped", configs={"message.timestamp.type": "LogAppendTime"}
    )
    before = datetime.datetime.now(datetime.UTC)
    result = await broker.produce("stamped", batch([b"a", b"b"], timestamp_ms=1_000))
    after = datetime.datetime.now(datetime.UTC)
    assert result.error_code is ErrorCode.none
    assert result.log_append_time is not None
    slack = datetime.timedelta(seconds=1)
    assert before - slack <= result.log_append_time <= after + slack
    fetched = await broker.fetch("stamped")
    [(header, records)] = decode_batches(fetched.records)  # the CRC is checked here
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    append_ms = int(result.log_append_time.timestamp() * 1000)
    assert header.max_timestamp == append_ms
    assert [r.timestamp for r in records] == [append_ms, append_ms]


async def test_a_compressed_batch_is_stored_as_sent(broker: Kafka) -> None:
    await broker.create_topic("t")
    data = batch([b"v%d" % i for i in range(50)], compression=CompressionType.GZIP)
    assert (await broker.produce("t", data)).base_offset == 0
    [(header, records)] = decode_batches((await broker.fetch("t")).records)
    assert header.compression is CompressionType.GZIP
    assert [r.value for r in records] == [b"v%d" % i for i in range(50)]
    assert [r.offset for r in records] == list(range(50))


async def test_a_produce_naming_a_transactional_id_appends_its_batch(
    broker: Kafka,
) -> None:
    # Kafka, without an authorizer, appends whatever batch the request carries: the
    # transactional id matters only for the authorization of a transactional write.
    await broker.create_topic("t")
    result = await broker.produce("t", batch([b"a"]), transactional_id="tx")
    assert result.error_code is ErrorCode.none
    assert broker.log_end_offset("t") == 1


async def test_a_transactional_batch_is_appended_and_holds_the_last_stable_offset(
    tmp_path: Path,
) -> None:
    # Its transaction is open until its marker: read_committed readers stop before it.
    # (Written without a coordinator, so with KIP-890's verification off: on, it would
    # be refused, test_txn_verification.py.)
    off = {"transaction.partition.verification.enable": "false"}
    async with kafka(tmp_path / "data", off) as broker:
        await _holds_the_lso(broker)


async def _holds_the_lso(broker: Kafka) -> None:
    await broker.create_topic("t")
    await broker.produce("t", batch([b"before"]))
    data = batch(
        [b"open"],
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    result = await broker.produce("t", data, transactional_id="tx")
    assert result.error_code is ErrorCode.none
    partition = broker.server.replica_manager.get_partition(TopicPartition("t", 0))
    assert partition is not None
    assert (partition.log.high_watermark, partition.log.last_stable_offset) == (2, 1)


async def test_a_control_batch_from_a_client_is_refused(broker: Kafka) -> None:
    # Markers are the transaction coordinator's to write (WriteTxnMarkers).
    await broker.create_topic("t")
    data = bytearray(batch([b"a"], producer_id=5, producer_epoch=0, base_sequence=0))
    data[22] |= 0x20  # attributes' low byte; the CRC is not checked before this refusal
    result = await broker.produce("t", bytes(data))
    assert result.error_code is ErrorCode.invalid_record
    assert broker.log_end_offset("t") == 0


# --- the idempotent producer ------------------------------------------------------------


async def test_init_producer_id_gives_distinct_ids(broker: Kafka) -> None:
    answers = [await broker.init_producer_id() for _ in range(3)]
    assert {a.error_code for a in answers} == {ErrorCode.none}
    assert {a.producer_epoch for a in answers} == {0}
    ids = [a.producer_id for a in answers]
    assert len(set(ids)) == 3
    assert all(i >= 0 for i in ids)
    transactional = await broker.init_producer_id("tx")
    assert transactional.error_code is ErrorCode.not_coordinator


async def test_producer_ids_stay_distinct_across_a_restart(tmp_path: Path) -> None:
    async with kafka(tmp_path / "data") as k:
        before = {(await k.init_producer_id()).producer_id for _ in range(2)}
    async with kafka(tmp_path / "data") as k:
        after = {(await k.init_producer_id()).producer_id for _ in range(2)}
    assert not before & after


async def test_a_retried_batch_is_appended_once(broker: Kafka) -> None:
    await broker.create_topic("t")
    pid = int((await broker.init_producer_id()).producer_id)
    first = batch(
        [b"a", b"b", b"c"], producer_id=pid, producer_epoch=0, base_sequence=0
    )
    second = batch([b"d", b"e"], producer_id=pid, producer_epoch=0, base_sequence=3)
    assert (await broker.produce("t", first)).base_offset == 0
    assert (await broker.produce("t", second)).base_offset == 3
    for retry in (second, first):  # either of the last five batches
        again = await broker.produce("t", retry)
        assert again.error_code is ErrorCode.none
    assert (await broker.produce("t", first)).base_offset == 0
    assert (await broker.produce("t", second)).base_offset == 3
    assert broker.log_end_offset("t") == 5
    assert values_of((await broker.fetch("t")).records) == [
        b"a",
        b"b",
        b"c",
        b"d",
        b"e",
    ]


async def test_an_out_of_order_sequence_is_refused(broker: Kafka) -> None:
    await broker.create_topic("t")
    pid = int((await broker.init_producer_id()).producer_id)
    first = batch([b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)
    assert (await broker.produce("t", first)).error_code is ErrorCode.none
    gap = batch([b"z"], producer_id=pid, producer_epoch=0, base_sequence=10)
    result = await broker.produce("t", gap)
    assert result.error_code is ErrorCode.out_of_order_sequence_number
    assert int(result.error_code) == 45
    # Kafka answers a sequence error with the partition's log start offset.
    assert result.log_start_offset == 0
    assert broker.log_end_offset("t") == 2
    # The producer's next batch in sequence is still accepted.
    follow = batch([b"c"], producer_id=pid, producer_epoch=0, base_sequence=2)
    assert (await broker.produce("t", follow)).base_offset == 2


async def test_a_retry_after_a_restart_is_still_recognised(tmp_path: Path) -> None:
    first = b""
    async with kafka(tmp_path / "data") as k:
        await k.create_topic("t")
        pid = int((await k.init_producer_id()).producer_id)
        first = batch(
            [b"a", b"b", b"c"], producer_id=pid, producer_epoch=0, base_sequence=0
        )
        assert (await k.produce("t", first)).base_offset == 0
    async with kafka(tmp_path / "data") as k:
        retry = await k.produce("t", first)
        assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
        assert k.log_end_offset("t") == 3
        follow = batch([b"d"], producer_id=pid, producer_epoch=0, base_sequence=3)
        assert (await k.produce("t", follow)).base_offset == 3


# --- Fetch --------------------------------------------------------------------------------


async def test_fetch_returns_the_batches_with_their_offsets(broker: Kafka) -> None:
    await broker.create_topic("t")
    await broker.produce("t", batch([b"a", b"b"]))
    await broker.produce("t", batch([b"c"]))
    result = await broker.fetch("t")
    assert (result.error_code, result.high_watermark, result.log_start_offset) == (
        ErrorCode.none,
        3,
        0,
    )
    assert result.last_stable_offset == 3
    assert result.aborted_transactions is None  # read_uncommitted
    assert result.preferred_read_replica == -1
    batches = decode_batches(result.records)
    assert [(h.base_offset, h.last_offset) for h, _ in batches] == [(0, 1), (2, 2)]
    assert [(r.offset, r.value) for _, rs in batches for r in rs] == [
        (0, b"a"),
        (1, b"b"),
        (2, b"c"),
    ]
    # From the middle of the log: the batch holding offset 2 on.
    assert values_of((await broker.fetch("t", 2)).records) == [b"c"]
    # At the end: nothing, and no error.
    at_end = await broker.fetch("t", 3)
    assert (at_end.error_code, at_end.records) == (ErrorCode.none, b"")


async def test_read_committed_gets_an_empty_aborted_transactions_list(
    broker: Kafka,
) -> None:
    await broker.create_topic("t")
    await broker.produce("t", batch([b"a"]))
    result = await broker.fetch("t", read_committed=True)
    assert result.aborted_transactions == ()
    assert values_of(result.records) == [b"a"]


async def test_a_parked_fetch_is_completed_by_a_produce_on_another_connection(
    broker: Kafka,
) -> None:
    await broker.create_topic("t")
    tp = TopicPartition("t", 0)
    purgatory = broker.server.replica_manager.core.fetch_purgatory
    max_wait = 10.0
    answers: list[tuple[float, PartitionData]] = []

    async def consume() -> None:
        start = time.monotonic()
        result = await broker.fetch("t", max_wait_ms=int(max_wait * 1000), min_bytes=1)
        answers.append((time.monotonic() - start, result))

    async with (
        NetworkClient.open(client_id="producer") as producer,
        trio.open_nursery() as n,
    ):
        n.start_soon(consume)
        await wait_until(lambda: purgatory.watched(tp) == 1, DEADLINE)
        with trio.fail_after(DEADLINE):
            await producer.send(
                broker.node, produce_request("t", {0: batch([b"late"])})
            )
    [(elapsed, result)] = answers
    assert elapsed < max_wait / 2  # answered by the produce, not by the deadline
    assert result.error_code is ErrorCode.none
    assert values_of(result.records) == [b"late"]
    assert purgatory.watched(tp) == 0


async def test_a_parked_fetch_is_answered_when_its_topic_is_deleted(
    broker: Kafka,
) -> None:
    await broker.create_topic("t")
    tp = TopicPartition("t", 0)
    purgatory = broker.server.replica_manager.core.fetch_purgatory
    answers: list[tuple[float, PartitionData]] = []

    async def consume() -> None:
        start = time.monotonic()
        result = await broker.fetch("t", max_wait_ms=20_000, min_bytes=1)
        answers.append((time.monotonic() - start, result))

    async with NetworkClient.open(client_id="admin") as admin, trio.open_nursery() as n:
        n.start_soon(consume)
        await wait_until(lambda: purgatory.watched(tp) == 1, DEADLINE)
        delete = DeleteTopicsRequest(topic_names=(TopicName("t"),), timeout=ms(30_000))
        with trio.fail_after(DEADLINE):
            await admin.send(broker.node, delete)
    [(elapsed, result)] = answers
    assert elapsed < 10
    assert result.error_code in (
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_leader_or_follower,
    )


async def test_shutdown_does_not_wait_for_a_parked_fetch(tmp_path: Path) -> None:
    grace_ms = 3000
    config = single_node_config(
        tmp_path / "data", {"controlled.shutdown.timeout.ms": str(grace_ms)}
    )
    shutdown_took = 0.0
    async with NetworkClient.open() as client, trio.open_nursery() as nursery:
        async with running_broker(config) as server:
            host, port = server.bound_address()
            k = Kafka(server, client, Node(1, host, port))
            await k.create_topic("t")

            async def consume() -> None:
                with suppress(ClientError):
                    await k.fetch("t", max_wait_ms=60_000, min_bytes=1)

            nursery.start_soon(consume)
            purgatory = server.replica_manager.core.fetch_purgatory
            await wait_until(
                lambda: purgatory.watched(TopicPartition("t", 0)) == 1, DEADLINE
            )
            start = time.monotonic()
        shutdown_took = time.monotonic() - start
    assert shutdown_took < grace_ms / 1000 / 2


async def test_a_parked_fetch_expires_empty_after_max_wait(broker: Kafka) -> None:
    await broker.create_topic("t")
    start = time.monotonic()
    result = await broker.fetch("t", max_wait_ms=300, min_bytes=1)
    elapsed = time.monotonic() - start
    assert 0.25 <= elapsed < 10
    assert (result.error_code, result.records, result.high_watermark) == (
        ErrorCode.none,
        b"",
        0,
    )


async def test_a_fetch_below_min_bytes_waits_then_answers_what_there_is(
    broker: Kafka,
) -> None:
    await broker.create_topic("t")
    await broker.produce("t", batch([b"a"]))
    start = time.monotonic()
    result = await broker.fetch("t", max_wait_ms=300, min_bytes=1_000_000)
    assert time.monotonic() - start >= 0.25
    assert values_of(result.records) == [b"a"]
    # With max_wait 0 it answers at once whatever min_bytes says.
    start = time.monotonic()
    assert values_of((await broker.fetch("t", min_bytes=1_000_000)).records) == [b"a"]
    assert time.monotonic() - start < 5


async def test_partition_max_bytes_is_honoured_but_one_batch_always_comes(
    broker: Kafka,
) -> None:
    await broker.create_topic("t")
    sizes = []
    for i in range(3):
        data = batch([b"%d" % i * 100])
        sizes.append(len(data))
        await broker.produce("t", data)
    two = await broker.fetch("t", partition_max_bytes=sizes[0] + sizes[1])
    assert values_of(two.records) == [b"0" * 100, b"1" * 100]
    assert len(two.records or b"") <= sizes[0] + sizes[1]
    # Smaller than the first batch: that batch all the same, whole (KIP-74).
    one = await broker.fetch("t", partition_max_bytes=1)
    assert values_of(one.records) == [b"0" * 100]
    assert len(one.records or b"") == sizes[0]


async def test_max_bytes_is_honoured_across_partitions_but_one_batch_comes(
    broker: Kafka,
) -> None:
    await broker.create_topic("t", 2)
    size = len(batch([b"x" * 100]))
    for partition in (0, 1):
        for _ in range(2):
            await broker.produce("t", batch([b"x" * 100]), partition=partition)
    body = fetch_request("t", {0: 0, 1: 0}, max_bytes=1)
    [topic] = (await broker.call(body, FetchResponse)).responses
    first, second = topic.partitions
    assert (first.partition_index, second.partition_index) == (0, 1)
    assert len(decode_batches(first.records)) == 1
    # the response is full after the first partition's batch
    assert second.records == b""
    body = fetch_request("t", {0: 0, 1: 0}, max_bytes=3 * size)
    [topic] = (await broker.call(body, FetchResponse)).responses
    assert [len(decode_batches(p.records)) for p in topic.partitions] == [2, 1]


async def test_fetch_offset_out_of_range(broker: Kafka) -> None:
    await broker.create_topic("t")
    await broker.produce("t", batch([b"a", b"b"]))
    for offset in (3, 100, -5):
        result = await broker.fetch("t", offset)
        assert result.error_code is ErrorCode.offset_out_of_range, offset
        # A consumer's failed partition carries no offsets, as Kafka 4.1 answers it
        # (the differential corpus compares the two).
        assert (result.high_watermark, result.last_stable_offset) == (-1, -1)
        assert result.log_start_offset == -1
        assert result.aborted_transactions is None
        assert result.records == b""


async def test_fetch_errors_per_partition(broker: Kafka) -> None:
    await broker.create_topic("t")
    missing = await broker.fetch("missing")
    assert missing.error_code is ErrorCode.unknown_topic_or_partition
    # Refused before any read: Kafka's answer has an empty aborted list, not null.
    assert missing.aborted_transactions == ()
    leader_epoch = (await broker.topic("t")).partitions[0].leader_epoch
    newer = await broker.fetch("t", leader_epoch=leader_epoch + 1)
    assert newer.error_code is ErrorCode.unknown_leader_epoch
    current = await broker.fetch("t", leader_epoch=leader_epoch)
    assert current.error_code is ErrorCode.none
    # A follower's fetch (replica id >= 0): a single node has no followers.
    follower = await broker.fetch("t", replica_id=2)
    assert follower.error_code is ErrorCode.not_leader_or_follower


# --- ListOffsets --------------------------------------------------------------------------


async def test_list_offsets_earliest_latest_and_by_timestamp(broker: Kafka) -> None:
    await broker.create_topic("t")
    empty = await broker.list_offset("t", LATEST)
    assert (empty.error_code, empty.offset) == (ErrorCode.none, 0)
    for i, ts in enumerate((1_000, 2_000, 3_000)):
        await broker.produce("t", batch([b"%d" % i, b"%d" % i], timestamp_ms=ts))
    earliest = await broker.list_offset("t", EARLIEST)
    assert (earliest.error_code, earliest.offset) == (ErrorCode.none, 0)
    latest = await broker.list_offset("t", LATEST)
    assert (latest.error_code, latest.offset) == (ErrorCode.none, 6)
    exact = await broker.list_offset("t", 2_000)
    assert (exact.offset, exact.timestamp) == (2, 2_000)
    between = await broker.list_offset("t", 1_500)
    assert (between.offset, between.timestamp) == (2, 2_000)
    first = await broker.list_offset("t", 0)
    assert (first.offset, first.timestamp) == (0, 1_000)
    after = await broker.list_offset("t", 9_999)
    assert (after.error_code, after.offset, after.timestamp) == (ErrorCode.none, -1, -1)
    # KIP-734's max timestamp (-3): the first record with the largest timestamp; with no
    # tiered storage (KIP-405, KIP-1005) the local log starts at the log start (-4) and
    # no offset was ever tiered (-5), as Kafka answers for a topic without it.
    newest = await broker.list_offset("t", -3)
    assert (newest.offset, newest.timestamp) == (4, 3_000)
    local = await broker.list_offset("t", -4)
    assert (local.error_code, local.offset) == (ErrorCode.none, 0)
    tiered = await broker.list_offset("t", -5)
    assert (tiered.error_code, tiered.offset, tiered.leader_epoch) == (
        ErrorCode.none,
        -1,
        -1,
    )
    assert latest.leader_epoch == (await broker.topic("t")).partitions[0].leader_epoch
    missing = await broker.list_offset("missing", LATEST)
    assert missing.error_code is ErrorCode.unknown_topic_or_partition
    no_partition = await broker.list_offset("t", LATEST, partition=9)
    assert no_partition.error_code is ErrorCode.unknown_topic_or_partition


async def test_list_offsets_for_a_partition_the_metadata_has_but_this_broker_does_not(
    broker: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guarantee: Kafka's answer (ReplicaManager.getPartitionOrError). A partition the
    metadata names but the broker does not host (its replica not made yet, or moved
    away) is NOT_LEADER_OR_FOLLOWER, which sends the client to refresh its metadata and
    ask again; only a partition the metadata lacks is UNKNOWN_TOPIC_OR_PARTITION."""
    await broker.create_topic("t", 2)
    # Partition 1 as a broker has it before its replica is made: in the metadata only.
    monkeypatch.delitem(
        broker.server.replica_manager.core.partitions, TopicPartition("t", 1)
    )
    elsewhere = await broker.list_offset("t", LATEST, partition=1)
    assert elsewhere.error_code is ErrorCode.not_leader_or_follower
    here = await broker.list_offset("t", LATEST, partition=0)
    assert (here.error_code, here.offset) == (ErrorCode.none, 0)
    beyond = await broker.list_offset("t", LATEST, partition=2)
    assert beyond.error_code is ErrorCode.unknown_topic_or_partition


async def test_produce_to_a_partition_the_metadata_has_but_this_broker_does_not(
    broker: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guarantee: Kafka's answer (ReplicaManager.getPartitionOrError), as ListOffsets
    above. A Produce to a partition the metadata names but this broker does not host is
    NOT_LEADER_OR_FOLLOWER, with nothing written; a partition the metadata lacks stays
    UNKNOWN_TOPIC_OR_PARTITION."""
    await broker.create_topic("t", 2)
    monkeypatch.delitem(
        broker.server.replica_manager.core.partitions, TopicPartition("t", 1)
    )
    elsewhere = await broker.produce("t", batch([b"a"]), partition=1)
    assert (elsewhere.error_code, elsewhere.base_offset) == (
        ErrorCode.not_leader_or_follower,
        -1,
    )
    here = await broker.produce("t", batch([b"b"]), partition=0)
    assert (here.error_code, here.base_offset) == (ErrorCode.none, 0)
    beyond = await broker.produce("t", batch([b"c"]), partition=2)
    assert beyond.error_code is ErrorCode.unknown_topic_or_partition


# --- CreateTopics, DeleteTopics, CreatePartitions -----------------------------------------


async def test_create_topics(broker: Kafka) -> None:
    result = await broker.create_topic("orders", 3, configs={"retention.ms": "1000"})
    assert (result.error_code, result.error_message) == (ErrorCode.none, None)
    topic = await broker.topic("orders")
    assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
    assert {p.leader_id for p in topic.partitions} == {1}
    partition = broker.server.replica_manager.get_partition(TopicPartition("orders", 2))
    assert partition is not None
    assert partition.log.config.retention_ms == 1000
    # num_partitions -1: the broker's num.partitions.
    assert (
        await broker.create_topic("defaults", -1, replication_factor=-1)
    ).error_code is (ErrorCode.none)
    assert len((await broker.topic("defaults")).partitions) == 1


async def test_create_topics_validate_only_creates_nothing(broker: Kafka) -> None:
    result = await broker.create_topic("dry", 2, validate_only=True)
    assert result.error_code is ErrorCode.none
    assert (await broker.metadata(None)).topics == ()
    invalid = await broker.create_topic("dry", 0, validate_only=True)
    assert invalid.error_code is ErrorCode.invalid_partitions


@pytest.mark.parametrize(
    ("name", "partitions", "replication_factor", "configs", "error"),
    [
        ("bad name!", 1, 1, {}, ErrorCode.invalid_topic_exception),
        ("x" * 250, 1, 1, {}, ErrorCode.invalid_topic_exception),
        ("t", 0, 1, {}, ErrorCode.invalid_partitions),
        ("t", 1, 3, {}, ErrorCode.invalid_replication_factor),
        ("t", 1, 0, {}, ErrorCode.invalid_replication_factor),
        ("t", 1, 1, {"no.such.config": "1"}, ErrorCode.invalid_config),
        ("t", 1, 1, {"retention.ms": "soon"}, ErrorCode.invalid_config),
        ("t", 1, 1, {"min.insync.replicas": "0"}, ErrorCode.invalid_config),
    ],
)
async def test_create_topics_errors(
    broker: Kafka,
    name: str,
    partitions: int,
    replication_factor: int,
    configs: dict[str, str],
    error: ErrorCode,
) -> None:
    result = await broker.create_topic(
        name, partitions, replication_factor=replication_factor, configs=configs
    )
    assert result.error_code is error, result
    assert (await broker.metadata(None)).topics == ()


async def test_creating_an_existing_topic_is_refused(broker: Kafka) -> None:
    assert (await broker.create_topic("t", 2)).error_code is ErrorCode.none
    again = await broker.create_topic("t", 5)
    assert again.error_code is ErrorCode.topic_already_exists
    assert len((await broker.topic("t")).partitions) == 2


async def test_delete_topics(broker: Kafka) -> None:
    await broker.create_topic("doomed", 2)
    await broker.produce("doomed", batch([b"a"]))
    assert await broker.delete_topic("doomed") is ErrorCode.none
    assert (
        await broker.topic("doomed")
    ).error_code is ErrorCode.unknown_topic_or_partition
    assert (
        broker.server.replica_manager.get_partition(TopicPartition("doomed", 0)) is None
    )
    assert await broker.delete_topic("doomed") is ErrorCode.unknown_topic_or_partition
    assert (await broker.produce("doomed", batch([b"b"]))).error_code is (
        ErrorCode.unknown_topic_or_partition
    )
    # The same name again is a new, empty topic.
    await broker.create_topic("doomed")
    assert (await broker.list_offset("doomed", LATEST)).offset == 0
    assert (await broker.fetch("doomed")).records == b""


async def test_delete_topics_by_id(broker: Kafka) -> None:
    # DeleteTopics v6 (KIP-516): a topic named by its id alone goes, and the answer
    # names it; an id no topic has is UNKNOWN_TOPIC_ID and touches nothing; a name
    # is answered with its topic's id.
    await broker.create_topic("by-id")
    await broker.create_topic("by-name")
    by_id = broker.server.metadata_cache.topic("by-id")
    by_name = broker.server.metadata_cache.topic("by-name")
    assert by_id is not None
    assert by_name is not None
    missing = uuid.UUID(int=12345)
    cls = request_class(20, 6)
    state = element(cls, "topics")
    body = build(
        cls,
        topics=(
            build(state, name=None, topic_id=by_id.topic_id),
            build(state, name=None, topic_id=missing),
            build(state, name="by-name", topic_id=uuid.UUID(int=0)),
        ),
        timeout=datetime.timedelta(seconds=30),
    )
    answer = await broker.client.send(broker.node, body)
    assert {
        (r.name, r.topic_id, r.error_code) for r in cast(Any, answer).responses
    } == {
        ("by-id", by_id.topic_id, ErrorCode.none),
        (None, missing, ErrorCode.unknown_topic_id),
        ("by-name", by_name.topic_id, ErrorCode.none),
    }
    for name in ("by-id", "by-name"):
        assert (await broker.topic(name)).error_code is (
            ErrorCode.unknown_topic_or_partition
        )


async def test_create_partitions(broker: Kafka) -> None:
    await broker.create_topic("t", 1)
    assert (await broker.create_partitions("t", 3, validate_only=True)).error_code is (
        ErrorCode.none
    )
    assert len((await broker.topic("t")).partitions) == 1
    grown = await broker.create_partitions("t", 3)
    assert grown.error_code is ErrorCode.none
    assert [p.partition_index for p in (await broker.topic("t")).partitions] == [
        0,
        1,
        2,
    ]
    assert (await broker.produce("t", batch([b"new"]), partition=2)).base_offset == 0


@pytest.mark.parametrize(
    ("name", "count", "error"),
    [
        ("t", 1, ErrorCode.invalid_partitions),  # not more than it has
        ("t", 0, ErrorCode.invalid_partitions),
        ("missing", 3, ErrorCode.unknown_topic_or_partition),
    ],
)
async def test_create_partitions_errors(
    broker: Kafka, name: str, count: int, error: ErrorCode
) -> None:
    await broker.create_topic("t", 2)
    assert (await broker.create_partitions(name, count)).error_code is error
    assert len((await broker.topic("t")).partitions) == 2


# --- DescribeConfigs ----------------------------------------------------------------------


async def test_describe_configs_of_a_topic(broker: Kafka) -> None:
    await broker.create_topic(
        "t", configs={"retention.ms": "1000", "min.insync.replicas": "1"}
    )
    result = await broker.describe(TOPIC_RESOURCE, "t")
    assert (result.error_code, result.resource_name) == (ErrorCode.none, "t")
    entries = {c.name: c for c in result.configs}
    retention = entries["retention.ms"]
    assert (retention.value, retention.config_source) == ("1000", DYNAMIC_TOPIC_CONFIG)
    assert entries["min.insync.replicas"].config_source == DYNAMIC_TOPIC_CONFIG
    # Kafka's defaults, under the topic-level names.
    defaults = {
        "cleanup.policy": "delete",
        "segment.bytes": "1073741824",
        "max.message.bytes": "1048588",
        "message.timestamp.type": "CreateTime",
        "retention.bytes": "-1",
        "unclean.leader.election.enable": "false",
    }
    for key, value in defaults.items():
        assert (entries[key].value, entries[key].config_source) == (
            value,
            DEFAULT_CONFIG,
        ), key
    only = await broker.describe(TOPIC_RESOURCE, "t", keys=["segment.bytes"])
    assert [c.name for c in only.configs] == ["segment.bytes"]
    # The request did not ask for documentation: none, even for a key stored without
    # effect (Kafka leaves it null; the differential corpus compares them).
    assert entries["preallocate"].documentation is None
    # KIP-569's types, as Kafka gives them: LIST, LONG, INT, BOOLEAN, DOUBLE, STRING.
    types = {
        k: entries[k].config_type
        for k in (
            "cleanup.policy",
            "retention.ms",
            "segment.bytes",
            "preallocate",
            "min.cleanable.dirty.ratio",
            "compression.type",
        )
    }
    assert types == {
        "cleanup.policy": 7,
        "retention.ms": 5,
        "segment.bytes": 3,
        "preallocate": 1,
        "min.cleanable.dirty.ratio": 6,
        "compression.type": 2,
    }
    # Every topic key has its type (a key added without one would say UNKNOWN).
    assert {c.name for c in result.configs if c.config_type == 0} == set()


async def test_describe_configs_shows_static_broker_settings(tmp_path: Path) -> None:
    overrides = {"log.retention.ms": "5000", "min.insync.replicas": "1"}
    async with kafka(tmp_path / "data", overrides) as k:
        await k.create_topic("t")
        entries = {c.name: c for c in (await k.describe(TOPIC_RESOURCE, "t")).configs}
        assert (
            entries["retention.ms"].value,
            entries["retention.ms"].config_source,
        ) == (
            "5000",
            STATIC_BROKER_CONFIG,
        )
        assert entries["min.insync.replicas"].config_source == STATIC_BROKER_CONFIG
        broker_entries = (await k.describe(BROKER_RESOURCE, "1")).configs
        assert {c.name: c.value for c in broker_entries}["log.retention.ms"] == "5000"


async def test_describe_configs_reports_retention_given_in_hours(
    tmp_path: Path,
) -> None:
    async with kafka(tmp_path / "data", {"log.retention.hours": "24"}) as k:
        await k.create_topic("t")
        partition = k.server.replica_manager.get_partition(TopicPartition("t", 0))
        assert partition is not None
        assert partition.log.config.retention_ms == 24 * 3600 * 1000
        entries = {c.name: c for c in (await k.describe(TOPIC_RESOURCE, "t")).configs}
        assert entries["retention.ms"].value == str(24 * 3600 * 1000)
        assert entries["retention.ms"].config_source == STATIC_BROKER_CONFIG


@pytest.mark.parametrize(
    ("kind", "name", "error"),
    [
        (TOPIC_RESOURCE, "missing", ErrorCode.unknown_topic_or_partition),
        (BROKER_RESOURCE, "2", ErrorCode.invalid_request),
        (99, "x", ErrorCode.invalid_request),
    ],
)
async def test_describe_configs_errors(
    broker: Kafka, kind: int, name: str, error: ErrorCode
) -> None:
    result = await broker.describe(kind, name)
    assert (result.error_code, result.configs) == (error, ())
    assert result.error_message


# --- restarts -----------------------------------------------------------------------------


async def test_topics_and_data_survive_a_clean_restart(tmp_path: Path) -> None:
    async with kafka(tmp_path / "data") as k:
        cluster_id = k.server.cluster_id
        await k.create_topic("kept", 2, configs={"retention.ms": "123456"})
        await k.produce("kept", batch([b"a", b"b"]))
        await k.produce("kept", batch([b"c"]), partition=1)
        await k.create_topic("gone")
        await k.produce("gone", batch([b"x"]))
        assert await k.delete_topic("gone") is ErrorCode.none
        before = await k.topic("kept")
    async with kafka(tmp_path / "data") as k:
        assert k.server.cluster_id == cluster_id
        assert [t.name for t in (await k.metadata(None, allow=False)).topics] == [
            "kept"
        ]
        after = await k.topic("kept")
        assert [(p.partition_index, p.leader_id) for p in after.partitions] == [
            (p.partition_index, p.leader_id) for p in before.partitions
        ]
        assert values_of((await k.fetch("kept")).records) == [b"a", b"b"]
        assert (await k.list_offset("kept", LATEST, partition=1)).offset == 1
        entries = {
            c.name: c.value for c in (await k.describe(TOPIC_RESOURCE, "kept")).configs
        }
        assert entries["retention.ms"] == "123456"
        # Appends go on where they stopped.
        assert (await k.produce("kept", batch([b"d"]))).base_offset == 2
        # The deleted topic's log did not come back.
        assert k.server.replica_manager.get_partition(TopicPartition("gone", 0)) is None
        assert TopicPartition("gone", 0) not in k.server.log_manager.logs
    async with kafka(tmp_path / "data") as k:
        assert values_of((await k.fetch("kept")).records) == [b"a", b"b", b"d"]


async def test_the_broker_command_serves_and_stops_cleanly_on_sigterm(
    tmp_path: Path,
) -> None:
    """``BrokerProcess``: the command as a user runs it; SIGTERM is a clean shutdown."""
    process = BrokerProcess(tmp_path / "data", overrides={"num.partitions": "2"})
    await trio.to_thread.run_sync(process.start)
    try:
        async with NetworkClient.open(client_id="tests") as client:
            k = Kafka(None, client, Node(1, process.host, process.port))
            [topic] = (await k.metadata(["via-process"])).topics
            assert len(topic.partitions) == 2
            assert (await k.produce("via-process", batch([b"a"]))).base_offset == 0
        port = process.port
        assert await trio.to_thread.run_sync(process.stop) == 0
        await trio.to_thread.run_sync(process.start)
        assert process.port == port  # a restart keeps the port
        async with NetworkClient.open(client_id="tests") as client:
            k = Kafka(None, client, Node(1, process.host, process.port))
            assert values_of((await k.fetch("via-process")).records) == [b"a"]
    finally:
        await trio.to_thread.run_sync(process.kill)
    assert any("minikafka broker ready on" in line for line in process.output)


async def test_a_port_in_use_stops_start_up_with_one_line(tmp_path: Path) -> None:
    first = BrokerProcess(tmp_path / "first")
    await trio.to_thread.run_sync(first.start)
    try:
        second = BrokerProcess(tmp_path / "second", port=first.port)
        with pytest.raises(BrokerFailed) as failed:
            await trio.to_thread.run_sync(second.start)
        assert "cannot listen" in str(failed.value)
        assert "Address already in use" in str(failed.value)
        assert "Traceback" not in str(failed.value)
    finally:
        await trio.to_thread.run_sync(first.kill)


# --- bad input ----------------------------------------------------------------------------


def _produce_frame_with_body(body: bytes, correlation_id: int = 7) -> bytes:
    """A Produce v8 frame: a well-formed header followed by ``body``."""
    payload = encode_request_header(0, 8, correlation_id, "raw") + body
    return struct.pack(">i", len(payload)) + payload


async def _still_serving(k: Kafka) -> None:
    """Another connection is answered, and nothing reached the log."""
    async with NetworkClient.open(client_id="second") as other:
        with trio.fail_after(DEADLINE):
            response = await other.send(k.node, metadata_request(["t"]))
    assert isinstance(response, MetadataResponse)
    assert response.topics[0].error_code is ErrorCode.none
    assert k.log_end_offset("t") == 0


@pytest.mark.parametrize(
    "cut",
    [0, 3, 10, -20, -1],
    ids=["empty", "3-bytes", "10-bytes", "short-20", "short-1"],
)
async def test_an_undecodable_produce_closes_only_that_connection(
    broker: Kafka, cut: int
) -> None:
    await broker.create_topic("t")
    body = encode_entity(produce_request("t", {0: batch([b"a"])}))
    raw = await RawConnection.open(broker.server.socket_server)
    await raw.send(_produce_frame_with_body(body[:cut]))
    with trio.fail_after(DEADLINE):
        assert await raw.wait_closed()
    await raw.aclose()
    await _still_serving(broker)


async def test_a_truncated_frame_closes_only_that_connection(broker: Kafka) -> None:
    await broker.create_topic("t")
    frame = request_frame(produce_request("t", {0: batch([b"a"])}), 7)
    raw = await RawConnection.open(broker.server.socket_server)
    await raw.send(frame[: len(frame) // 2])
    await raw.send_eof()  # the client goes away mid-frame
    with trio.fail_after(DEADLINE):
        assert await raw.wait_closed()
    await raw.aclose()
    await _still_serving(broker)


async def test_garbage_bytes_close_only_that_connection(broker: Kafka) -> None:
    await broker.create_topic("t")
    raw = await RawConnection.open(broker.server.socket_server)
    await raw.send(struct.pack(">i", 12) + b"\xff" * 12)
    with trio.fail_after(DEADLINE):
        assert await raw.wait_closed()
    await raw.aclose()
    await _still_serving(broker)


# --- ProducerIdManager ---------------------------------------------------------------------


async def test_producer_ids_come_from_blocks_one_block_request_at_a_time() -> None:
    blocks = iter([(100, 3), (500, 2)])
    asked = 0

    async def allocate() -> AllocateProducerIdsResponse:
        nonlocal asked
        asked += 1
        await trio.lowlevel.checkpoint()  # let the other callers queue behind the lock
        start, length = next(blocks)
        return AllocateProducerIdsResponse(ErrorCode.none, start, length)

    manager = ProducerIdManager(allocate)
    ids: list[int] = []

    async def one() -> None:
        ids.append(await manager.generate_producer_id())

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(one)
    assert sorted(ids) == [100, 101, 102, 500]
    assert asked == 2
    assert await manager.generate_producer_id() == 501


async def test_a_refused_block_is_an_error_and_the_next_call_asks_again() -> None:
    answers = iter(
        [
            AllocateProducerIdsResponse(ErrorCode.stale_broker_epoch),
            AllocateProducerIdsResponse(ErrorCode.none, 7, 1),
        ]
    )

    async def allocate() -> AllocateProducerIdsResponse:
        return next(answers)

    manager = ProducerIdManager(allocate)
    with pytest.raises(ProducerIdsUnavailable) as caught:
        await manager.generate_producer_id()
    assert caught.value.error_code is ErrorCode.stale_broker_epoch
    assert await manager.generate_producer_id() == 7


async def test_sasl_requests_outside_an_exchange_are_illegal_sasl_state(
    broker: Kafka,
) -> None:
    """Every advertised SaslHandshake and SaslAuthenticate version, on a PLAINTEXT
    listener: ILLEGAL_SASL_STATE, as Kafka's KafkaApis answers them."""
    for api_key, fields in (
        (17, {"mechanism": "PLAIN"}),
        (36, {"auth_bytes": b"\x00alice\x00secret"}),
    ):
        low, high = KafkaApis.SUPPORTED[api_key]
        for version in range(low, high + 1):
            body = build(request_class(api_key, version), **fields)
            with trio.fail_after(DEADLINE):
                response = await broker.client.send(broker.node, body)
            assert getattr(response, "error_code") == ErrorCode.illegal_sasl_state  # noqa: B009
