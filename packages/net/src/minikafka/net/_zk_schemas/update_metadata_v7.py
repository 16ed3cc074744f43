"""UpdateMetadata v7 (api key 6): the controller gives a broker the cluster's metadata.

Follows Kafka 2.8's ``UpdateMetadataRequest.json`` and ``UpdateMetadataResponse.json``
(valid versions 0-7, flexible from v6). The history of the fields kept here: v1 gave a
broker several endpoints, v2 its rack, v3 a listener name per endpoint; v4 added the
offline replicas (KIP-112); v5 added the broker epoch (KIP-380) and grouped partitions
by topic; v6 is the first flexible version (KIP-482); v7 added the topic id (KIP-516).
The response is an error code alone in every version.

A broker's rack is a nullable string, the only nullable field of the four APIs. Every
struct ends with an empty tagged-field section: neither schema declares a tagged field.
Written in kio's form, without ``from __future__ import annotations`` (kio introspects
the annotations as real types).
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition's number within its topic."""
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The epoch of the controller that last changed this partition's leader or ISR."""
    leader: BrokerId = field(metadata={"kafka_type": "int32"})
    """The leader's broker id."""
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The leader epoch."""
    isr: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The broker ids of the in-sync replicas."""
    zk_version: i32 = field(metadata={"kafka_type": "int32"})
    """The ZooKeeper version of the partition's state znode."""
    replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The broker ids of all the replicas."""
    offline_replicas: tuple[BrokerId, ...] = field(
        metadata={"kafka_type": "int32"}, default=()
    )
    """The replicas whose log directory is offline."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataTopicState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic's name."""
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic's id (``None`` is the all-zero id)."""
    partition_states: tuple[UpdateMetadataPartitionState, ...]
    """The state of each of the topic's partitions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    port: i32 = field(metadata={"kafka_type": "int32"})
    """The endpoint's port."""
    host: str = field(metadata={"kafka_type": "string"})
    """The endpoint's host."""
    listener: str = field(metadata={"kafka_type": "string"})
    """The name of the listener the endpoint belongs to."""
    security_protocol: i16 = field(metadata={"kafka_type": "int16"})
    """The listener's security protocol, by Kafka's id (0 is PLAINTEXT)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataBroker:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    id_: BrokerId = field(metadata={"kafka_type": "int32"})
    """The broker's id."""
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    """The broker's endpoints, one per listener."""
    rack: str | None = field(metadata={"kafka_type": "string"})
    """The broker's rack, ``None`` if it has none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: BrokerId = field(metadata={"kafka_type": "int32"})
    """The sending controller's broker id."""
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The sending controller's epoch."""
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The receiving broker's epoch as the controller knows it (-1: unknown)."""
    topic_states: tuple[UpdateMetadataTopicState, ...]
    """The topics to update, each with the states of its partitions."""
    live_brokers: tuple[UpdateMetadataBroker, ...]
    """The brokers alive in the cluster."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(7)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The request's error, ``none`` if there was none."""
