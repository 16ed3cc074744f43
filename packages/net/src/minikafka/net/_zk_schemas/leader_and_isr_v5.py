"""LeaderAndIsr v5 (api key 4): the controller tells a broker which replicas it leads or follows.

Follows Kafka 2.8's ``LeaderAndIsrRequest.json`` and ``LeaderAndIsrResponse.json``
(valid versions 0-5, flexible from v4). The history of the fields kept here: v2 added
the broker epoch (KIP-380) and grouped partitions by topic; v3 added the adding and
removing replicas of a reassignment (KIP-455); v4 is the first flexible version
(KIP-482); v5 added the topic id and the request ``Type`` (KIP-516), and its response
reports errors per topic id instead of per topic name.

Kafka 2.8's controller leaves ``type_`` at 0. In both directions every struct ends with
an empty tagged-field section: neither schema declares a tagged field. Written in kio's
form (see ``kio/schema/*/v*/request.py``), without ``from __future__ import
annotations``: kio's readers and writers introspect the annotations as real types.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition's number within its topic."""
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The epoch of the controller that last changed this partition's leader or ISR."""
    leader: BrokerId = field(metadata={"kafka_type": "int32"})
    """The leader's broker id."""
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The leader epoch."""
    isr: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The broker ids of the in-sync replicas."""
    zk_version: i32 = field(metadata={"kafka_type": "int32"})
    """The ZooKeeper version of the partition's state znode."""
    replicas: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The broker ids of all the replicas."""
    adding_replicas: tuple[i32, ...] = field(
        metadata={"kafka_type": "int32"}, default=()
    )
    """The replicas a reassignment is adding (empty when none)."""
    removing_replicas: tuple[i32, ...] = field(
        metadata={"kafka_type": "int32"}, default=()
    )
    """The replicas a reassignment is removing (empty when none)."""
    is_new: bool = field(metadata={"kafka_type": "bool"}, default=False)
    """Whether the replica is new, i.e. the broker should not expect to have it already."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrTopicState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic's name."""
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic's id (``None`` is the all-zero id)."""
    partition_states: tuple[LeaderAndIsrPartitionState, ...]
    """The state of each of the topic's partitions on this broker."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrLiveLeader:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    """The broker id of a leader named in the request."""
    host_name: str = field(metadata={"kafka_type": "string"})
    """That leader's host."""
    port: i32 = field(metadata={"kafka_type": "int32"})
    """That leader's port."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: BrokerId = field(metadata={"kafka_type": "int32"})
    """The sending controller's broker id."""
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The sending controller's epoch."""
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The receiving broker's epoch as the controller knows it (-1: unknown)."""
    type_: i8 = field(metadata={"kafka_type": "int8"})
    """Whether the request carries every topic or only some (Kafka 2.8 sends 0)."""
    topic_states: tuple[LeaderAndIsrTopicState, ...]
    """The topics, each with the states of its partitions."""
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]
    """The live brokers that lead a partition of the request."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionError:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition's number within its topic."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The partition's error, ``none`` if it succeeded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrTopicError:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic's id (``None`` is the all-zero id)."""
    partition_errors: tuple[LeaderAndIsrPartitionError, ...]
    """The result of each of the topic's partitions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The request's error, ``none`` if there was none."""
    topics: tuple[LeaderAndIsrTopicError, ...]
    """The results, by topic."""
