"""DescribeTransactions v0's response (KIP-664) with a start time that may be -1.

Kafka's coordinator answers ``TransactionStartTimeMs`` -1 for an id with no transaction
begun (Empty after InitProducerId), but kio reads that field as a non-null timestamp and
refuses a negative one, so neither a client nor a broker built on kio could carry the
answer. This class is kio's own (the same fields, wire types and header) but for that
field, which is kio's nullable timestamp here: -1 on the wire is ``None``, and ``None``
is written as -1. ``_codec.py`` takes it in place of kio's for (65, 0). (No ``from
__future__ import annotations``: kio reads the field types themselves.)
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.describe_transactions.v0.response import TopicData
from kio.schema.errors import ErrorCode
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import ProducerId, TransactionalId
from kio.static.constants import EntityType
from kio.static.primitive import TZAware, i16, i32Timedelta

__all__ = ["DescribeTransactionsResponse", "TopicData", "TransactionState"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    transactional_id: TransactionalId = field(metadata={"kafka_type": "string"})
    transaction_state: str = field(metadata={"kafka_type": "string"})
    transaction_timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    transaction_start_time: TZAware | None = field(
        metadata={"kafka_type": "datetime_i64"}
    )
    """When the open transaction began; None (-1) when none has."""
    producer_id: ProducerId = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    topics: tuple[TopicData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    transaction_states: tuple[TransactionState, ...]
