"""StopReplica v3 (api key 5): the controller tells a broker to stop replicas, maybe to delete them.

Follows Kafka 2.8's ``StopReplicaRequest.json`` and ``StopReplicaResponse.json`` (valid
versions 0-3, flexible from v2). v1 added the broker epoch (KIP-380) and grouped the
partitions by topic; v2 is the first flexible version (KIP-482); v3 (KIP-570) replaced
the request-wide ``DeletePartitions`` flag and the plain partition index list with a
state per partition: its leader epoch, which lets the broker refuse a stale request
(``FENCED_LEADER_EPOCH`` in the response), and its own delete flag. The response is the
same in every version: per-partition errors, by topic name.

Every struct ends with an empty tagged-field section: neither schema declares a tagged
field. Written in kio's form, without ``from __future__ import annotations`` (kio
introspects the annotations as real types).
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition's number within its topic."""
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """The partition's leader epoch as the controller knows it (-1: none to check)."""
    delete_partition: bool = field(metadata={"kafka_type": "bool"})
    """Whether the broker should also delete the replica's log."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaTopicState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic's name."""
    partition_states: tuple[StopReplicaPartitionState, ...]
    """The partitions of the topic to stop."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: BrokerId = field(metadata={"kafka_type": "int32"})
    """The sending controller's broker id."""
    controller_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The sending controller's epoch."""
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The receiving broker's epoch as the controller knows it (-1: unknown)."""
    topic_states: tuple[StopReplicaTopicState, ...]
    """The topics, each with the partitions to stop."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionError:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic's name."""
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition's number within its topic."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The partition's error, ``none`` if it stopped."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The request's error, ``none`` if there was none."""
    partition_errors: tuple[StopReplicaPartitionError, ...]
    """The result of each partition."""
