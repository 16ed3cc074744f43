"""ControlledShutdown v3 (api key 7): a broker asks the controller to move its leaderships away.

Follows Kafka 2.8's ``ControlledShutdownRequest.json`` and
``ControlledShutdownResponse.json`` (valid versions 0-3, flexible from v3). v2 added the
broker epoch (KIP-380); v3 is the first flexible version (KIP-482). The response lists
the partitions the broker still leads; the shutting-down broker retries until the list
is empty. (v0, not modelled here, is the one request of any API read with request
header v0, which has no client id: see ``_headers.py``.)

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
class ControlledShutdownRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(7)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    """The id of the broker that is shutting down."""
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """That broker's epoch: the czxid of its registration znode (-1: unknown)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemainingPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(7)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic's name."""
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition's number within its topic."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(7)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The request's error, ``none`` if there was none."""
    remaining_partitions: tuple[RemainingPartition, ...]
    """The partitions the broker still leads."""
