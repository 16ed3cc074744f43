"""The ``__consumer_offsets`` records: offset commit and group metadata keys and values.

Golden bytes are laid out field by field from Kafka's ``OffsetCommitKey.json``,
``OffsetCommitValue.json``, ``GroupMetadataKey.json`` and ``GroupMetadataValue.json``;
older value versions are built by hand since we only write the newest. Hypothesis runs
derandomized, so every run tests the same examples.
"""

from __future__ import annotations

import contextlib
import struct

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.coordination.group._offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    StoredMember,
    UnknownRecordTypeError,
    decode_group_value,
    decode_key,
    decode_offset_value,
    decode_record,
    encode_group_record,
    encode_offset_record,
)

DETERMINISTIC = settings(derandomize=True, max_examples=200, deadline=None)


def i16b(v: int) -> bytes:
    return struct.pack(">h", v)


def i32b(v: int) -> bytes:
    return struct.pack(">i", v)


def i64b(v: int) -> bytes:
    return struct.pack(">q", v)


def s(v: str | None) -> bytes:
    return i16b(-1) if v is None else i16b(len(v.encode())) + v.encode()


def b(v: bytes) -> bytes:
    return i32b(len(v)) + v


OFFSET_KEY = OffsetKey("billing", "orders", 3)
OFFSET_KEY_GOLDEN = i16b(1) + s("billing") + s("orders") + i32b(3)
GROUP_KEY = GroupMetadataKey("billing")
GROUP_KEY_GOLDEN = i16b(2) + s("billing")

# v3 puts the leader epoch between the offset and the metadata; v1 ends with the expiry.
OFFSET_V3 = OffsetValue(42, "ckpt", 1_700_000_000_000, leader_epoch=5)
OFFSET_V3_GOLDEN = i16b(3) + i64b(42) + i32b(5) + s("ckpt") + i64b(1_700_000_000_000)
OFFSET_V1 = OffsetValue(
    42, "ckpt", 1_700_000_000_000, expire_timestamp=1_700_086_400_000
)
OFFSET_V1_GOLDEN = (
    i16b(1) + i64b(42) + s("ckpt") + i64b(1_700_000_000_000) + i64b(1_700_086_400_000)
)

STATIC = StoredMember(
    "c1-uuid", "pod-0", "c1", "/10.0.0.1", 300_000, 45_000, b"sub", b"as"
)
DYNAMIC = StoredMember("c2-uuid", None, "c2", "/10.0.0.2", 60_000, 10_000, b"", b"\x00")
GROUP = GroupMetadataValue(
    "consumer", 7, "range", "c1-uuid", 1_700_000_000_123, (STATIC, DYNAMIC)
)
# A member v3: member_id, group_instance_id (nullable), client_id, client_host,
# rebalance_timeout, session_timeout, subscription, assignment.
STATIC_V3 = (
    s("c1-uuid") + s("pod-0") + s("c1") + s("/10.0.0.1")
    + i32b(300_000) + i32b(45_000) + b(b"sub") + b(b"as")
)  # fmt: skip
DYNAMIC_V3 = (
    s("c2-uuid") + s(None) + s("c2") + s("/10.0.0.2")
    + i32b(60_000) + i32b(10_000) + b(b"") + b(b"\x00")
)  # fmt: skip
GROUP_V3_GOLDEN = (
    i16b(3) + s("consumer") + i32b(7) + s("range") + s("c1-uuid") + i64b(1_700_000_000_123)
    + i32b(2) + STATIC_V3 + DYNAMIC_V3
)  # fmt: skip


# --- golden layouts ----------------------------------------------------------------------


def test_offset_key_is_written_as_v1() -> None:
    key, _ = encode_offset_record(OFFSET_KEY, None)
    assert key == OFFSET_KEY_GOLDEN
    assert decode_key(OFFSET_KEY_GOLDEN) == OFFSET_KEY


def test_offset_key_v0_has_the_same_layout() -> None:
    assert decode_key(i16b(0) + OFFSET_KEY_GOLDEN[2:]) == OFFSET_KEY


def test_offset_value_without_expiry_is_v3() -> None:
    assert encode_offset_record(OFFSET_KEY, OFFSET_V3) == (
        OFFSET_KEY_GOLDEN,
        OFFSET_V3_GOLDEN,
    )
    assert decode_offset_value(OFFSET_V3_GOLDEN) == OFFSET_V3


def test_offset_value_with_expiry_is_v1_and_drops_the_leader_epoch() -> None:
    assert encode_offset_record(OFFSET_KEY, OFFSET_V1)[1] == OFFSET_V1_GOLDEN
    assert decode_offset_value(OFFSET_V1_GOLDEN) == OFFSET_V1
    with_epoch = OffsetValue(42, "ckpt", 1_700_000_000_000, 5, 1_700_086_400_000)
    assert encode_offset_record(OFFSET_KEY, with_epoch)[1] == OFFSET_V1_GOLDEN


def test_group_key_is_v2() -> None:
    assert encode_group_record(GROUP_KEY, None)[0] == GROUP_KEY_GOLDEN
    assert decode_key(GROUP_KEY_GOLDEN) == GROUP_KEY


def test_group_value_is_v3_with_a_static_and_a_dynamic_member() -> None:
    assert encode_group_record(GROUP_KEY, GROUP) == (GROUP_KEY_GOLDEN, GROUP_V3_GOLDEN)
    assert decode_group_value(GROUP_V3_GOLDEN) == GROUP


def test_an_empty_group_has_null_protocol_and_leader() -> None:
    empty = GroupMetadataValue("consumer", 0, None, None)
    golden = i16b(3) + s("consumer") + i32b(0) + s(None) + s(None) + i64b(-1) + i32b(0)
    assert encode_group_record(GROUP_KEY, empty)[1] == golden
    assert decode_group_value(golden) == empty


def test_members_given_as_a_list_are_stored_as_a_tuple() -> None:
    value = GroupMetadataValue("consumer", 1, "range", "x", members=[STATIC])
    assert value.members == (STATIC,)


# --- older value versions ----------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 2])
def test_offset_values_v0_and_v2_have_no_epoch_or_expiry(version: int) -> None:
    data = i16b(version) + i64b(9) + s("m") + i64b(1234)
    assert decode_offset_value(data) == OffsetValue(9, "m", 1234, -1, None)


def test_offset_value_v1_with_expiry_minus_one_has_none() -> None:
    data = i16b(1) + i64b(9) + s("") + i64b(1234) + i64b(-1)
    assert decode_offset_value(data) == OffsetValue(9, "", 1234, -1, None)


MEMBER_V0 = s("m1") + s("cid") + s("/h") + i32b(30_000) + b(b"S") + b(b"A")
MEMBER_V1 = (
    s("m1") + s("cid") + s("/h") + i32b(90_000) + i32b(30_000) + b(b"S") + b(b"A")
)
OLD_MEMBER = StoredMember("m1", None, "cid", "/h", 90_000, 30_000, b"S", b"A")


def test_group_value_v0_uses_the_session_timeout_as_rebalance_timeout() -> None:
    data = (
        i16b(0) + s("consumer") + i32b(4) + s("range") + s("m1") + i32b(1) + MEMBER_V0
    )
    member = attrs.evolve(OLD_MEMBER, rebalance_timeout_ms=30_000)
    assert decode_group_value(data) == GroupMetadataValue(
        "consumer", 4, "range", "m1", -1, [member]
    )


def test_group_value_v1_adds_the_rebalance_timeout() -> None:
    data = i16b(1) + s("consumer") + i32b(4) + s(None) + s(None) + i32b(1) + MEMBER_V1
    assert decode_group_value(data) == GroupMetadataValue(
        "consumer", 4, None, None, -1, [OLD_MEMBER]
    )


def test_group_value_v2_adds_the_state_timestamp_before_the_members() -> None:
    data = (
        i16b(2) + s("") + i32b(4) + s("rr") + s("m1") + i64b(555) + i32b(1) + MEMBER_V1
    )
    assert decode_group_value(data) == GroupMetadataValue(
        "", 4, "rr", "m1", 555, [OLD_MEMBER]
    )


# --- tombstones and whole records --------------------------------------------------------


def test_tombstones_have_a_key_and_no_value() -> None:
    assert encode_offset_record(OFFSET_KEY, None) == (OFFSET_KEY_GOLDEN, None)
    assert encode_group_record(GROUP_KEY, None) == (GROUP_KEY_GOLDEN, None)
    assert decode_record(OFFSET_KEY_GOLDEN, None) == (OFFSET_KEY, None)
    assert decode_record(GROUP_KEY_GOLDEN, None) == (GROUP_KEY, None)


def test_decode_record_reads_the_value_the_key_calls_for() -> None:
    assert decode_record(OFFSET_KEY_GOLDEN, OFFSET_V3_GOLDEN) == (OFFSET_KEY, OFFSET_V3)
    assert decode_record(GROUP_KEY_GOLDEN, GROUP_V3_GOLDEN) == (GROUP_KEY, GROUP)
    # Read as a group, an offset's bytes claim a 42-byte protocol name that is not there.
    with pytest.raises(OffsetsRecordError, match="protocol"):
        decode_record(GROUP_KEY_GOLDEN, OFFSET_V1_GOLDEN)


def test_trailing_bytes_are_ignored_as_kafka_does() -> None:
    assert decode_key(OFFSET_KEY_GOLDEN + b"junk") == OFFSET_KEY
    assert decode_key(GROUP_KEY_GOLDEN + b"\x00") == GROUP_KEY
    assert decode_offset_value(OFFSET_V1_GOLDEN + b"\xff" * 3) == OFFSET_V1
    assert decode_group_value(GROUP_V3_GOLDEN + b"x") == GROUP


# --- malformed input ---------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 4, 8, 15, 16, 1000, -1])
def test_other_record_types_are_unknown_not_malformed(version: int) -> None:
    with pytest.raises(UnknownRecordTypeError) as raised:
        decode_key(i16b(version) + s("g"))
    assert raised.value.record_type == version
    assert isinstance(raised.value, OffsetsRecordError)
    with pytest.raises(UnknownRecordTypeError):
        decode_record(i16b(version), None)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        i16b(1) + s("g"),  # no topic
        i16b(1) + s("g") + s("t") + b"\x00\x00",  # half a partition
        i16b(1) + s(None) + s("t") + i32b(0),  # a null group
        i16b(2) + i16b(-2),  # a negative length
        i16b(2) + i16b(5) + b"abc",  # shorter than its length
        i16b(2) + i16b(2) + b"\xc3\x28",  # not UTF-8
    ],
)
def test_malformed_keys_fail_and_are_not_unknown(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError) as raised:
        decode_key(data)
    assert not isinstance(raised.value, UnknownRecordTypeError)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        i16b(3),
        i16b(4) + OFFSET_V3_GOLDEN[2:],  # the flexible version is not read
        i16b(-1) + OFFSET_V3_GOLDEN[2:],
        i16b(3) + i64b(1) + i32b(0) + s(None) + i64b(0),  # null metadata
        i16b(3) + i64b(1) + i32b(0) + i16b(-7) + i64b(0),
        i16b(0) + i64b(1) + i16b(2) + b"\xc3\x28" + i64b(0),  # not UTF-8
        OFFSET_V1_GOLDEN[:-1],  # v1 without all of its expiry
    ],
)
def test_malformed_offset_values_fail(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError):
        decode_offset_value(data)


_HEAD = i16b(3) + s("consumer") + i32b(1) + s("range") + s("m") + i64b(-1)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        i16b(5) + GROUP_V3_GOLDEN[2:],
        i16b(3)
        + s(None)
        + i32b(1)
        + s(None)
        + s(None)
        + i64b(-1)
        + i32b(0),  # null type
        _HEAD,  # no member array
        _HEAD + i32b(-1),  # a null member array
        _HEAD + i32b(1_000_000),  # a count far beyond the bytes
        _HEAD + i32b(2) + STATIC_V3,  # one member short
        _HEAD + i32b(1) + STATIC_V3[: -len(b(b"as"))] + i32b(-1),  # null assignment
        _HEAD + i32b(1) + STATIC_V3[: -len(b(b"sub") + b(b"as"))] + i32b(-3) + b(b"as"),
        _HEAD + i32b(1) + s(None) + STATIC_V3[len(s("c1-uuid")) :],  # null member id
    ],
)
def test_malformed_group_values_fail(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError):
        decode_group_value(data)


def test_values_that_do_not_fit_their_fields_are_not_encoded() -> None:
    with pytest.raises(OffsetsRecordError):
        encode_offset_record(OffsetKey("g", "t", 2**31), None)
    with pytest.raises(OffsetsRecordError):
        encode_offset_record(OFFSET_KEY, OffsetValue(2**63))
    with pytest.raises(OffsetsRecordError):
        encode_group_record(GroupMetadataKey("g" * 0x8000), None)
    with pytest.raises(OffsetsRecordError):
        encode_group_record(
            GROUP_KEY, GroupMetadataValue("consumer", -(2**31) - 1, None, None)
        )


# --- properties --------------------------------------------------------------------------

_names = st.text(st.characters(codec="utf-8"), max_size=8)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)
_offset_keys = st.builds(OffsetKey, _names, _names, _int32)
_offset_values = st.builds(
    OffsetValue,
    _int64,
    _names,
    _int64,
    _int32,
    st.none() | _int64.filter(lambda t: t != -1),
)
_members = st.builds(
    StoredMember,
    _names,
    st.none() | _names,
    _names,
    _names,
    _int32,
    _int32,
    st.binary(max_size=16),
    st.binary(max_size=16),
)
_group_values = st.builds(
    GroupMetadataValue,
    _names,
    _int32,
    st.none() | _names,
    st.none() | _names,
    _int64,
    st.lists(_members, max_size=4).map(tuple),
)


@DETERMINISTIC
@given(_offset_keys, _offset_values)
def test_offset_records_round_trip(key: OffsetKey, value: OffsetValue) -> None:
    encoded_key, encoded_value = encode_offset_record(key, value)
    assert encoded_value is not None
    # v1, the only version with an expiry, has no leader epoch.
    expected = (
        value
        if value.expire_timestamp is None
        else attrs.evolve(value, leader_epoch=-1)
    )
    assert decode_record(encoded_key, encoded_value) == (key, expected)


@DETERMINISTIC
@given(_names, _group_values)
def test_group_records_round_trip(group: str, value: GroupMetadataValue) -> None:
    encoded_key, encoded_value = encode_group_record(GroupMetadataKey(group), value)
    assert encoded_value is not None
    assert decode_record(encoded_key, encoded_value) == (GroupMetadataKey(group), value)


@DETERMINISTIC
@given(_offset_keys, _offset_values, _group_values, st.data())
def test_every_truncated_record_fails_cleanly(
    key: OffsetKey, offset: OffsetValue, group: GroupMetadataValue, data: st.DataObject
) -> None:
    encoded_key, offset_bytes = encode_offset_record(key, offset)
    _, group_bytes = encode_group_record(GroupMetadataKey(key.group), group)
    assert offset_bytes is not None
    assert group_bytes is not None
    for encoded, decode in [
        (encoded_key, decode_key),
        (offset_bytes, decode_offset_value),
        (group_bytes, decode_group_value),
    ]:
        cut = data.draw(st.integers(0, len(encoded) - 1))
        with pytest.raises(OffsetsRecordError):
            decode(encoded[:cut])


def _decode_any(key: bytes, value: bytes | None) -> None:
    """Decode every way; any exception but an OffsetsRecordError fails the test."""
    for decode in (decode_key, decode_offset_value, decode_group_value):
        with contextlib.suppress(OffsetsRecordError):
            decode(key)
    with contextlib.suppress(OffsetsRecordError):
        decode_record(key, value)


@DETERMINISTIC
@given(st.binary(max_size=64), st.none() | st.binary(max_size=64))
def test_random_bytes_raise_nothing_but_offsets_record_errors(
    key: bytes, value: bytes | None
) -> None:
    _decode_any(key, value)


@DETERMINISTIC
@given(
    st.sampled_from([i16b(0), i16b(1), i16b(2), i16b(3)]),
    st.binary(max_size=96),
    st.binary(max_size=96),
)
def test_random_bodies_behind_known_versions_raise_nothing_else(
    version: bytes, key_body: bytes, value_body: bytes
) -> None:
    _decode_any(version + key_body, version + value_body)


@DETERMINISTIC
@given(_group_values, st.data())
def test_corrupted_group_values_raise_nothing_else(
    value: GroupMetadataValue, data: st.DataObject
) -> None:
    _, encoded = encode_group_record(GROUP_KEY, value)
    assert encoded is not None
    position = data.draw(st.integers(0, len(encoded) - 1))
    corrupt = (
        encoded[:position]
        + bytes([data.draw(st.integers(0, 255))])
        + encoded[position + 1 :]
    )
    try:
        decoded = decode_group_value(corrupt)
    except OffsetsRecordError:
        return
    assert isinstance(decoded, GroupMetadataValue)
