"""The ZooKeeper-era inter-broker APIs kio lacks, written in kio's form.

LeaderAndIsr v5, StopReplica v3, UpdateMetadata v7 and ControlledShutdown v3, as Kafka
2.8's schemas define them. Three kinds of check:

- every class, nested ones included, survives a round trip through bytes for values
  anywhere in its types' ranges (hypothesis), and the bounds check ends where kio ends;
- one representative request and response of each API against bytes built here field
  by field from the schema (``struct.pack`` in schema order, unsigned varints, compact
  strings and arrays, the tagged-field section): an independent reading of the schema,
  not kio's, so a wrong ``kafka_type``, a field out of order or a missing field fails;
- ``_codec`` serves the classes: ``request_schema(4, 5)``, ``api_name(4)``, the header
  versions derived from them.
"""

from __future__ import annotations

import dataclasses
import inspect
import struct
import types
import typing
import uuid
from collections.abc import Iterator
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_reader
from kio.static.primitive import Interval, i8, i16, i32, i64
from kio.static.protocol import Entity, Payload

from minikafka.net import (
    api_name,
    decode_request_body,
    decode_response_body,
    encode_entity,
    request_header_version,
    request_schema,
    response_header_version,
    response_schema,
)
from minikafka.net._bounds import check_bounds
from minikafka.net._zk_schemas import (
    REQUESTS,
    RESPONSES,
    controlled_shutdown_v3,
    leader_and_isr_v5,
    stop_replica_v3,
    update_metadata_v7,
)

E = TypeVar("E", bound=Entity)

MODULES = (
    leader_and_isr_v5,
    stop_replica_v3,
    update_metadata_v7,
    controlled_shutdown_v3,
)


def _classes() -> Iterator[type[Entity]]:
    for module in MODULES:
        for _name, value in inspect.getmembers(module, inspect.isclass):
            if dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                yield typing.cast(type[Entity], value)


CLASSES = sorted(_classes(), key=lambda cls: (cls.__module__, cls.__name__))


# --- (a) round trips -------------------------------------------------------------------


def _strategy(annotation: object) -> st.SearchStrategy[object]:
    """Values anywhere in the range of a kio annotation, walked from the type hints."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        (inner,) = (a for a in args if a is not type(None))
        return st.none() | _strategy(inner)
    if origin is tuple:
        return st.lists(_strategy(args[0]), max_size=3).map(tuple)
    assert isinstance(annotation, type), annotation
    if dataclasses.is_dataclass(annotation):
        return _entities(typing.cast(type[Entity], annotation))
    if issubclass(annotation, ErrorCode):
        return st.sampled_from(ErrorCode)
    if issubclass(annotation, Interval):  # i8 ... i64, BrokerId: their own bounds
        return st.integers(annotation.__low__, annotation.__high__).map(annotation)
    if annotation is bool:
        return st.booleans()
    if issubclass(annotation, str):  # str, TopicName
        return st.text(max_size=12)
    if annotation is uuid.UUID:
        # The all-zero id is the wire's null: kio reads it back as None.
        return st.uuids().filter(lambda u: u.int != 0)
    raise AssertionError(f"no strategy for {annotation!r}")


def _entities(cls: type[E]) -> st.SearchStrategy[E]:
    hints = typing.get_type_hints(cls)
    return st.builds(
        cls, **{f.name: _strategy(hints[f.name]) for f in dataclasses.fields(cls)}
    )


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__name__}v{c.__version__}")
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_every_class_round_trips_through_bytes(
    cls: type[Entity], data: st.DataObject
) -> None:
    entity = data.draw(_entities(cls))
    raw = encode_entity(entity)
    assert entity_reader(cls)(raw, 0) == (entity, len(raw))
    assert check_bounds(cls, raw, 0) == len(raw)
    # Read from inside a larger frame, as the broker reads a body after its header.
    assert entity_reader(cls)(b"\xff" * 5 + raw + b"\xee", 5) == (entity, len(raw))


@pytest.mark.parametrize("key", sorted(REQUESTS), ids=str)
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_requests_and_responses_round_trip_through_the_codec(
    key: tuple[int, int], data: st.DataObject
) -> None:
    api_key, version = key
    request = data.draw(_entities(REQUESTS[key]))
    response = data.draw(_entities(RESPONSES[key]))
    frame = b"header" + encode_entity(request)
    assert decode_request_body(api_key, version, frame, 6) == request
    frame = b"header" + encode_entity(response)
    assert decode_response_body(api_key, version, frame, 6) == response


def test_the_classes_are_kio_shaped() -> None:
    for cls in CLASSES:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen, cls
        assert cls.__flexible__ is True, cls
        assert hasattr(cls, "__slots__"), cls
        # Nested structs carry their message's api key, version and header, as in kio.
        shaped = typing.cast(type[Payload], cls)
        assert (shaped.__api_key__, shaped.__version__) in REQUESTS, cls
        assert vars(cls)["__header_schema__"] in (RequestHeader, ResponseHeader), cls
        for f in dataclasses.fields(cls):
            assert f.kw_only, (cls, f.name)
            hint = typing.get_type_hints(cls)[f.name]
            # Primitives (and primitive arrays) say their wire type; structs do not.
            nested = (
                typing.get_args(hint)[0] if typing.get_origin(hint) is tuple else hint
            )
            if not dataclasses.is_dataclass(nested):
                assert isinstance(f.metadata["kafka_type"], str), (cls, f.name)
            assert "tag" not in f.metadata  # no tagged field in these schemas
    for key, request in REQUESTS.items():
        response = RESPONSES[key]
        assert (request.__api_key__, request.__version__) == key
        assert (response.__api_key__, response.__version__) == key
        assert request.__type__.name == "request"
        assert response.__type__.name == "response"


# --- (b) golden bytes, built from the schemas field by field -----------------------------


def int8(v: int) -> bytes:
    return struct.pack(">b", v)


def int16(v: int) -> bytes:
    return struct.pack(">h", v)


def int32(v: int) -> bytes:
    return struct.pack(">i", v)


def int64(v: int) -> bytes:
    return struct.pack(">q", v)


def boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def uvarint(v: int) -> bytes:
    """Unsigned varint: seven bits a byte, low bits first, the top bit set on all but the last."""
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def compact_string(s: str | None) -> bytes:
    """A flexible version's string: uvarint(length + 1), 0 for null, then UTF-8."""
    if s is None:
        return uvarint(0)
    data = s.encode()
    return uvarint(len(data) + 1) + data


def compact_array(*items: bytes) -> bytes:
    """A flexible version's array: uvarint(count + 1), then the elements."""
    return uvarint(len(items) + 1) + b"".join(items)


def int32s(*values: int) -> bytes:
    return compact_array(*(int32(v) for v in values))


NO_TAGS = uvarint(0)
"""The tagged-field section that ends every struct of a flexible version: none here."""


def test_the_helpers_encode_varints_as_kafka_does() -> None:
    # ByteUtils.writeUnsignedVarint's examples: 0, 127, 128, 300.
    assert [uvarint(v) for v in (0, 1, 127, 128, 300)] == [
        b"\x00",
        b"\x01",
        b"\x7f",
        b"\x80\x01",
        b"\xac\x02",
    ]
    assert compact_string("") == b"\x01"
    assert compact_array() == b"\x01"


TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
OTHER_ID = uuid.UUID(int=(1 << 128) - 1)
LONG_HOST = "broker-" + "h" * 193  # 200 bytes: a two-byte length varint


def _leader_and_isr_request() -> tuple[leader_and_isr_v5.LeaderAndIsrRequest, bytes]:
    m = leader_and_isr_v5
    p0 = m.LeaderAndIsrPartitionState(
        partition_index=i32(0),
        controller_epoch=i32(7),
        leader=BrokerId(1),
        leader_epoch=i32(12),
        isr=(i32(1), i32(2)),
        zk_version=i32(3),
        replicas=(i32(1), i32(2), i32(3)),
        adding_replicas=(i32(3),),
        removing_replicas=(),
        is_new=True,
    )
    p1 = m.LeaderAndIsrPartitionState(
        partition_index=i32(1),
        controller_epoch=i32(6),
        leader=BrokerId(-1),  # no leader
        leader_epoch=i32(2_147_483_647),
        zk_version=i32(-1),
    )
    request = m.LeaderAndIsrRequest(
        controller_id=BrokerId(3),
        controller_epoch=i32(7),
        broker_epoch=i64(4_294_967_338),
        type_=i8(0),
        topic_states=(
            m.LeaderAndIsrTopicState(
                topic_name=TopicName("orders"),
                topic_id=TOPIC_ID,
                partition_states=(p0, p1),
            ),
        ),
        live_leaders=(
            m.LeaderAndIsrLiveLeader(
                broker_id=BrokerId(1), host_name=LONG_HOST, port=i32(9092)
            ),
        ),
    )
    partition_0 = (
        int32(0)  # PartitionIndex
        + int32(7)  # ControllerEpoch
        + int32(1)  # Leader
        + int32(12)  # LeaderEpoch
        + int32s(1, 2)  # Isr
        + int32(3)  # ZkVersion
        + int32s(1, 2, 3)  # Replicas
        + int32s(3)  # AddingReplicas
        + int32s()  # RemovingReplicas
        + boolean(True)  # IsNew
        + NO_TAGS
    )
    partition_1 = (
        int32(1)
        + int32(6)
        + int32(-1)
        + int32(2_147_483_647)
        + int32s()
        + int32(-1)
        + int32s()
        + int32s()
        + int32s()
        + boolean(False)
        + NO_TAGS
    )
    expected = (
        int32(3)  # ControllerId
        + int32(7)  # ControllerEpoch
        + int64(4_294_967_338)  # BrokerEpoch
        + int8(0)  # Type
        + compact_array(  # TopicStates
            compact_string("orders")  # TopicName
            + TOPIC_ID.bytes  # TopicId
            + compact_array(partition_0, partition_1)  # PartitionStates
            + NO_TAGS
        )
        + compact_array(  # LiveLeaders
            int32(1) + compact_string(LONG_HOST) + int32(9092) + NO_TAGS
        )
        + NO_TAGS
    )
    assert compact_string(LONG_HOST)[:2] == b"\xc9\x01"  # 201 = 0x49 | 0x80, then 1
    return request, expected


def _leader_and_isr_response() -> tuple[leader_and_isr_v5.LeaderAndIsrResponse, bytes]:
    m = leader_and_isr_v5
    response = m.LeaderAndIsrResponse(
        error_code=ErrorCode.none,
        topics=(
            m.LeaderAndIsrTopicError(
                topic_id=TOPIC_ID,
                partition_errors=(
                    m.LeaderAndIsrPartitionError(
                        partition_index=i32(0), error_code=ErrorCode.none
                    ),
                    m.LeaderAndIsrPartitionError(
                        partition_index=i32(1), error_code=ErrorCode.kafka_storage_error
                    ),
                ),
            ),
            m.LeaderAndIsrTopicError(topic_id=None, partition_errors=()),
        ),
    )
    expected = (
        int16(0)  # ErrorCode
        + compact_array(  # Topics
            TOPIC_ID.bytes  # TopicId
            + compact_array(  # PartitionErrors
                int32(0) + int16(0) + NO_TAGS,
                int32(1) + int16(56) + NO_TAGS,  # KAFKA_STORAGE_ERROR
            )
            + NO_TAGS,
            bytes(16) + compact_array() + NO_TAGS,  # the null (all-zero) topic id
        )
        + NO_TAGS
    )
    return response, expected


def _stop_replica_request() -> tuple[stop_replica_v3.StopReplicaRequest, bytes]:
    m = stop_replica_v3
    request = m.StopReplicaRequest(
        controller_id=BrokerId(0),
        controller_epoch=i32(2),
        broker_epoch=i64(-1),
        topic_states=(
            m.StopReplicaTopicState(
                topic_name=TopicName("gone"),
                partition_states=(
                    m.StopReplicaPartitionState(
                        partition_index=i32(0),
                        leader_epoch=i32(5),
                        delete_partition=True,
                    ),
                    m.StopReplicaPartitionState(
                        partition_index=i32(3), delete_partition=False
                    ),
                ),
            ),
            m.StopReplicaTopicState(topic_name=TopicName(""), partition_states=()),
        ),
    )
    expected = (
        int32(0)  # ControllerId
        + int32(2)  # ControllerEpoch
        + int64(-1)  # BrokerEpoch
        + compact_array(  # TopicStates
            compact_string("gone")  # TopicName
            + compact_array(  # PartitionStates: PartitionIndex, LeaderEpoch, DeletePartition
                int32(0) + int32(5) + boolean(True) + NO_TAGS,
                int32(3)
                + int32(-1)
                + boolean(False)
                + NO_TAGS,  # LeaderEpoch's default -1
            )
            + NO_TAGS,
            compact_string("") + compact_array() + NO_TAGS,
        )
        + NO_TAGS
    )
    return request, expected


def _stop_replica_response() -> tuple[stop_replica_v3.StopReplicaResponse, bytes]:
    m = stop_replica_v3
    response = m.StopReplicaResponse(
        error_code=ErrorCode.none,
        partition_errors=(
            m.StopReplicaPartitionError(
                topic_name=TopicName("gone"),
                partition_index=i32(0),
                error_code=ErrorCode.fenced_leader_epoch,
            ),
            m.StopReplicaPartitionError(
                topic_name=TopicName("gone"),
                partition_index=i32(3),
                error_code=ErrorCode.none,
            ),
        ),
    )
    expected = (
        int16(0)  # ErrorCode
        + compact_array(  # PartitionErrors: TopicName, PartitionIndex, ErrorCode
            compact_string("gone")
            + int32(0)
            + int16(74)
            + NO_TAGS,  # FENCED_LEADER_EPOCH
            compact_string("gone") + int32(3) + int16(0) + NO_TAGS,
        )
        + NO_TAGS
    )
    return response, expected


def _update_metadata_request() -> tuple[
    update_metadata_v7.UpdateMetadataRequest, bytes
]:
    m = update_metadata_v7
    request = m.UpdateMetadataRequest(
        controller_id=BrokerId(2),
        controller_epoch=i32(9),
        broker_epoch=i64(81),
        topic_states=(
            m.UpdateMetadataTopicState(
                topic_name=TopicName("metrics"),
                topic_id=OTHER_ID,
                partition_states=(
                    m.UpdateMetadataPartitionState(
                        partition_index=i32(4),
                        controller_epoch=i32(9),
                        leader=BrokerId(2),
                        leader_epoch=i32(0),
                        isr=(BrokerId(2),),
                        zk_version=i32(0),
                        replicas=(BrokerId(2), BrokerId(1)),
                        offline_replicas=(BrokerId(1),),
                    ),
                ),
            ),
        ),
        live_brokers=(
            m.UpdateMetadataBroker(
                id_=BrokerId(2),
                endpoints=(
                    m.UpdateMetadataEndpoint(
                        port=i32(9092),
                        host="localhost",
                        listener="PLAINTEXT",
                        security_protocol=i16(0),
                    ),
                    m.UpdateMetadataEndpoint(
                        port=i32(9093),
                        host="localhost",
                        listener="SSL",
                        security_protocol=i16(1),
                    ),
                ),
                rack="rack-é",  # UTF-8: the length counts bytes, not characters
            ),
            m.UpdateMetadataBroker(id_=BrokerId(1), endpoints=(), rack=None),
        ),
    )
    expected = (
        int32(2)  # ControllerId
        + int32(9)  # ControllerEpoch
        + int64(81)  # BrokerEpoch
        + compact_array(  # TopicStates
            compact_string("metrics")  # TopicName
            + b"\xff" * 16  # TopicId
            + compact_array(  # PartitionStates
                int32(4)  # PartitionIndex
                + int32(9)  # ControllerEpoch
                + int32(2)  # Leader
                + int32(0)  # LeaderEpoch
                + int32s(2)  # Isr
                + int32(0)  # ZkVersion
                + int32s(2, 1)  # Replicas
                + int32s(1)  # OfflineReplicas
                + NO_TAGS
            )
            + NO_TAGS
        )
        + compact_array(  # LiveBrokers
            int32(2)  # Id
            + compact_array(  # Endpoints: Port, Host, Listener, SecurityProtocol
                int32(9092)
                + compact_string("localhost")
                + compact_string("PLAINTEXT")
                + int16(0)
                + NO_TAGS,
                int32(9093)
                + compact_string("localhost")
                + compact_string("SSL")
                + int16(1)
                + NO_TAGS,
            )
            + b"\x08rack-\xc3\xa9"  # Rack: 7 bytes, length + 1 = 8
            + NO_TAGS,
            int32(1) + compact_array() + b"\x00" + NO_TAGS,  # Rack null: length 0
        )
        + NO_TAGS
    )
    return request, expected


def _update_metadata_response() -> tuple[
    update_metadata_v7.UpdateMetadataResponse, bytes
]:
    m = update_metadata_v7
    response = m.UpdateMetadataResponse(error_code=ErrorCode.stale_controller_epoch)
    return response, int16(11) + NO_TAGS  # STALE_CONTROLLER_EPOCH


def _controlled_shutdown_request() -> tuple[
    controlled_shutdown_v3.ControlledShutdownRequest, bytes
]:
    m = controlled_shutdown_v3
    request = m.ControlledShutdownRequest(broker_id=BrokerId(1), broker_epoch=i64(25))
    return request, int32(1) + int64(25) + NO_TAGS  # BrokerId, BrokerEpoch


def _controlled_shutdown_response() -> tuple[
    controlled_shutdown_v3.ControlledShutdownResponse, bytes
]:
    m = controlled_shutdown_v3
    response = m.ControlledShutdownResponse(
        error_code=ErrorCode.none,
        remaining_partitions=(
            m.RemainingPartition(
                topic_name=TopicName("orders"), partition_index=i32(1)
            ),
            m.RemainingPartition(
                topic_name=TopicName("metrics"), partition_index=i32(4)
            ),
        ),
    )
    expected = (
        int16(0)  # ErrorCode
        + compact_array(  # RemainingPartitions: TopicName, PartitionIndex
            compact_string("orders") + int32(1) + NO_TAGS,
            compact_string("metrics") + int32(4) + NO_TAGS,
        )
        + NO_TAGS
    )
    return response, expected


GOLDEN_REQUESTS = {
    (4, 5): _leader_and_isr_request,
    (5, 3): _stop_replica_request,
    (6, 7): _update_metadata_request,
    (7, 3): _controlled_shutdown_request,
}
GOLDEN_RESPONSES = {
    (4, 5): _leader_and_isr_response,
    (5, 3): _stop_replica_response,
    (6, 7): _update_metadata_response,
    (7, 3): _controlled_shutdown_response,
}


@pytest.mark.parametrize("key", sorted(GOLDEN_REQUESTS), ids=lambda k: api_name(k[0]))
def test_request_matches_bytes_built_from_the_schema(key: tuple[int, int]) -> None:
    request, expected = GOLDEN_REQUESTS[key]()
    assert type(request) is request_schema(*key)
    assert encode_entity(request) == expected
    assert decode_request_body(*key, expected, 0) == request
    assert check_bounds(type(request), expected, 0) == len(expected)


@pytest.mark.parametrize("key", sorted(GOLDEN_RESPONSES), ids=lambda k: api_name(k[0]))
def test_response_matches_bytes_built_from_the_schema(key: tuple[int, int]) -> None:
    response, expected = GOLDEN_RESPONSES[key]()
    assert type(response) is response_schema(*key)
    assert encode_entity(response) == expected
    assert decode_response_body(*key, expected, 0) == response
    assert check_bounds(type(response), expected, 0) == len(expected)


def test_golden_error_codes_are_kafkas_numbers() -> None:
    # The numbers the golden bytes spell out, from Kafka's Errors enum.
    assert ErrorCode.kafka_storage_error.value == 56
    assert ErrorCode.fenced_leader_epoch.value == 74
    assert ErrorCode.stale_controller_epoch.value == 11


# --- (c) the codec serves them -----------------------------------------------------------


def test_request_and_response_schema_fall_back_to_these_classes() -> None:
    assert request_schema(4, 5) is leader_and_isr_v5.LeaderAndIsrRequest
    assert response_schema(4, 5) is leader_and_isr_v5.LeaderAndIsrResponse
    assert request_schema(5, 3) is stop_replica_v3.StopReplicaRequest
    assert response_schema(5, 3) is stop_replica_v3.StopReplicaResponse
    assert request_schema(6, 7) is update_metadata_v7.UpdateMetadataRequest
    assert response_schema(6, 7) is update_metadata_v7.UpdateMetadataResponse
    assert request_schema(7, 3) is controlled_shutdown_v3.ControlledShutdownRequest
    assert response_schema(7, 3) is controlled_shutdown_v3.ControlledShutdownResponse
    # Only the versions modelled: the others stay unknown, as before.
    assert request_schema(4, 4) is None
    assert response_schema(6, 6) is None
    assert request_schema(7, 0) is None
    # kio's own classes are untouched.
    assert request_schema(3, 1).__module__ == "kio.schema.metadata.v1.request"


def test_api_names() -> None:
    assert [api_name(k) for k in (4, 5, 6, 7)] == [
        "LeaderAndIsr",
        "StopReplica",
        "UpdateMetadata",
        "ControlledShutdown",
    ]
    assert api_name(3) == "Metadata"
    assert api_name(999) == "Unknown(999)"


def test_header_versions_follow_the_flexible_classes() -> None:
    for api_key, version in REQUESTS:
        assert request_header_version(api_key, version) == 2  # tagged fields, KIP-482
        assert response_header_version(api_key, version) == 1
    # ControlledShutdown v0's header, unchanged
    assert request_header_version(7, 0) == 0
