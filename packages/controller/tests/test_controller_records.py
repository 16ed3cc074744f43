"""The metadata record codec: every record type round-trips, and bad bytes are refused.

A broker or a standby controller decodes whatever is in ``__cluster_metadata``; a record it
cannot read must stop it with MetadataRecordError (one exception type the shell can catch),
never with an IndexError or a half-built record. Hypothesis runs derandomized, so every
run tests the same examples.
"""

from __future__ import annotations

import uuid

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.controller import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    AccessControlEntryRecord,
    BrokerEndpoint,
    ConfigRecord,
    ConfigResourceType,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    MetadataRecordError,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)
from minikafka.controller._records import FRAME_VERSION, RECORD_TYPES

DETERMINISTIC = settings(derandomize=True, max_examples=150, deadline=None)

# --- strategies -------------------------------------------------------------------------

ints = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(
        [0, -1, 1, 63, 64, -64, -65, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]
    ),
)
# hypothesis' default alphabet: every code point but surrogates
texts = st.text(max_size=40)
nullable_texts = st.none() | texts
broker_lists = st.lists(ints, max_size=6).map(tuple)
nullable_broker_lists = st.none() | broker_lists

endpoints = st.builds(BrokerEndpoint, texts, texts, ints, ints)

RECORD_STRATEGIES: dict[type[MetadataRecord], st.SearchStrategy[MetadataRecord]] = {
    RegisterBrokerRecord: st.builds(
        RegisterBrokerRecord,
        broker_id=ints,
        incarnation_id=st.uuids(),
        broker_epoch=ints,
        endpoints=st.lists(endpoints, max_size=3).map(tuple),
        rack=nullable_texts,
        fenced=st.booleans(),
    ),
    UnregisterBrokerRecord: st.builds(UnregisterBrokerRecord, ints, ints),
    TopicRecord: st.builds(TopicRecord, texts, st.uuids()),
    PartitionRecord: st.builds(
        PartitionRecord,
        partition_id=ints,
        topic_id=st.uuids(),
        replicas=broker_lists,
        isr=broker_lists,
        removing_replicas=broker_lists,
        adding_replicas=broker_lists,
        leader=ints,
        leader_epoch=ints,
        partition_epoch=ints,
    ),
    ConfigRecord: st.builds(ConfigRecord, ints, texts, texts, nullable_texts),
    PartitionChangeRecord: st.builds(
        PartitionChangeRecord,
        partition_id=ints,
        topic_id=st.uuids(),
        isr=nullable_broker_lists,
        leader=ints,
        replicas=nullable_broker_lists,
        removing_replicas=nullable_broker_lists,
        adding_replicas=nullable_broker_lists,
    ),
    FenceBrokerRecord: st.builds(FenceBrokerRecord, ints, ints),
    UnfenceBrokerRecord: st.builds(UnfenceBrokerRecord, ints, ints),
    RemoveTopicRecord: st.builds(RemoveTopicRecord, st.uuids()),
    FeatureLevelRecord: st.builds(FeatureLevelRecord, texts, ints),
    ProducerIdsRecord: st.builds(ProducerIdsRecord, ints, ints, ints),
    UserScramCredentialRecord: st.builds(
        UserScramCredentialRecord,
        name=texts,
        mechanism=ints,
        salt=st.binary(max_size=40),
        stored_key=st.binary(max_size=64),
        server_key=st.binary(max_size=64),
        iterations=ints,
    ),
    RemoveUserScramCredentialRecord: st.builds(
        RemoveUserScramCredentialRecord, texts, ints
    ),
    AccessControlEntryRecord: st.builds(
        AccessControlEntryRecord,
        st.uuids(),
        ints,
        texts,
        ints,
        texts,
        texts,
        ints,
        ints,
    ),
    RemoveAccessControlEntryRecord: st.builds(
        RemoveAccessControlEntryRecord, st.uuids()
    ),
}

any_record = st.one_of(*RECORD_STRATEGIES.values())


def test_every_record_type_has_a_strategy_and_a_distinct_api_key() -> None:
    assert set(RECORD_STRATEGIES) == set(RECORD_TYPES.values())
    assert sorted(RECORD_TYPES) == [
        0,
        1,
        2,
        3,
        4,
        5,
        7,
        8,
        9,
        11,
        12,
        15,
        18,
        19,
        22,
    ]  # Kafka's api keys


# --- round trips ------------------------------------------------------------------------


RECORD_CLASSES: list[type[MetadataRecord]] = [
    RECORD_TYPES[key] for key in sorted(RECORD_TYPES)
]


@pytest.mark.parametrize(
    "record_type", RECORD_CLASSES, ids=[t.__name__ for t in RECORD_CLASSES]
)
@DETERMINISTIC
@given(data=st.data())
def test_round_trip(record_type: type[MetadataRecord], data: st.DataObject) -> None:
    record = data.draw(RECORD_STRATEGIES[record_type])
    encoded = encode_record(record)
    # The frame: frame version, api key, record version 0, as Kafka frames metadata records.
    assert encoded[:3] == bytes([FRAME_VERSION, record_type.API_KEY, 0])
    decoded = decode_record(encoded)
    assert type(decoded) is record_type
    assert decoded == record
    assert encode_record(decoded) == encoded


def test_known_encoding_of_a_fence_record() -> None:
    """Zig-zag varints, field by field: broker_id 3 -> 6, broker_epoch -1 -> 1."""
    assert encode_record(FenceBrokerRecord(3, -1)) == bytes([1, 7, 0, 6, 1])
    assert encode_record(FenceBrokerRecord(64, 0)) == bytes([1, 7, 0, 0x80, 0x01, 0])


def test_known_encoding_of_a_producer_ids_record() -> None:
    """Api key 15, as in Kafka; broker_id 1 -> 2, broker_epoch 5 -> 10, 1000 -> 2000."""
    encoded = encode_record(ProducerIdsRecord(1, 5, 1000))
    assert encoded == bytes([1, 15, 0, 2, 10, 0xD0, 0x0F])
    assert decode_record(encoded) == ProducerIdsRecord(1, 5, 1000)


def test_known_encoding_of_nullable_fields() -> None:
    topic_id = uuid.UUID(int=1)
    change = PartitionChangeRecord(0, topic_id, isr=(1, 2), leader=NO_LEADER)
    encoded = encode_record(change)
    assert encoded == (
        bytes([1, 5, 0, 0])
        + topic_id.bytes
        + bytes([1, 2, 2, 4])  # isr: present, two items, 1 and 2
        + bytes([1])  # leader -1
        + bytes([0, 0, 0])  # replicas, removing, adding: absent
    )
    assert decode_record(encoded) == change
    # A nullable string uses length -1 (zig-zag 1) for None, as Kafka does; "" is length 0.
    deleted = encode_record(ConfigRecord(ConfigResourceType.TOPIC, "t", "k", None))
    empty = encode_record(ConfigRecord(ConfigResourceType.TOPIC, "t", "k", ""))
    assert deleted[-1:] == b"\x01"
    assert empty[-1:] == b"\x00"
    assert decode_record(deleted) != decode_record(empty)


def test_defaults_survive_the_round_trip() -> None:
    record = PartitionChangeRecord(7, uuid.UUID(int=9))
    assert record.leader == NO_LEADER_CHANGE
    assert decode_record(encode_record(record)) == record


def test_unicode_strings_round_trip() -> None:
    record = TopicRecord("tëst-トピック-🙂", uuid.UUID(int=5))
    encoded = encode_record(record)
    assert "tëst-トピック-🙂".encode() in encoded
    assert decode_record(encoded) == record


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**70])
def test_ints_that_do_not_fit_64_bits_are_not_encoded(value: int) -> None:
    with pytest.raises(ValueError, match="64-bit"):
        encode_record(FenceBrokerRecord(value, 0))


# --- malformed bytes --------------------------------------------------------------------

VALID = encode_record(
    RegisterBrokerRecord(
        1,
        uuid.UUID(int=7),
        42,
        (BrokerEndpoint("PLAINTEXT", "h", 9092),),
        "rack-a",
        True,
    )
)


@pytest.mark.parametrize("cut", range(len(VALID)))
def test_every_truncation_is_refused(cut: int) -> None:
    with pytest.raises(MetadataRecordError):
        decode_record(VALID[:cut])


def test_trailing_bytes_are_refused() -> None:
    with pytest.raises(
        MetadataRecordError, match="1 bytes after a RegisterBrokerRecord"
    ):
        decode_record(VALID + b"\x00")


def test_unknown_api_key_is_refused() -> None:
    with pytest.raises(MetadataRecordError, match="unknown metadata record type 6"):
        decode_record(bytes([1, 6, 0]))  # 6 is Kafka's AccessControlRecord: not ours


def test_unknown_frame_version_is_refused() -> None:
    with pytest.raises(MetadataRecordError, match="unknown frame version 2"):
        decode_record(bytes([2]) + VALID[1:])


def test_unknown_record_version_is_refused() -> None:
    with pytest.raises(MetadataRecordError, match="version 1 is not supported"):
        decode_record(VALID[:2] + bytes([1]) + VALID[3:])


def test_bad_utf8_is_refused() -> None:
    # TopicRecord: name of length 2 (zig-zag 4) holding an invalid UTF-8 sequence.
    data = bytes([1, 2, 0, 4, 0xC3, 0x28]) + uuid.UUID(int=1).bytes
    with pytest.raises(MetadataRecordError, match="UTF-8"):
        decode_record(data)


def test_encoded_surrogates_are_refused() -> None:
    # CESU-8 surrogate
    data = bytes([1, 2, 0, 6]) + b"\xed\xa0\x80" + uuid.UUID(int=1).bytes
    with pytest.raises(MetadataRecordError):
        decode_record(data)


def test_null_in_a_required_string_is_refused() -> None:
    data = bytes([1, 2, 0, 1]) + uuid.UUID(int=1).bytes  # name length -1
    with pytest.raises(MetadataRecordError, match="null"):
        decode_record(data)


def test_negative_string_length_is_refused() -> None:
    data = bytes([1, 2, 0, 3]) + uuid.UUID(int=1).bytes  # name length -2
    with pytest.raises(MetadataRecordError):
        decode_record(data)


def test_overlong_varint_is_refused() -> None:
    with pytest.raises(MetadataRecordError, match="10 bytes"):
        decode_record(bytes([1, 7, 0]) + b"\xff" * 11)


def test_varint_wider_than_64_bits_is_refused() -> None:
    """Ten bytes can hold 70 bits; a value that needs more than 64 is not a varlong."""
    data = bytes([1, 7, 0]) + b"\xff" * 9 + b"\x7f" + b"\x00"
    with pytest.raises(MetadataRecordError, match="64 bits"):
        decode_record(data)
    # The widest legal values still decode.
    for value in (2**63 - 1, -(2**63)):
        assert decode_record(
            encode_record(FenceBrokerRecord(value, 0))
        ) == FenceBrokerRecord(value, 0)


def test_huge_sequence_count_is_refused_without_allocating() -> None:
    data = (
        bytes([1, PartitionRecord.API_KEY, 0, 0])
        + uuid.UUID(int=1).bytes
        + b"\xff\xff\xff\xff\x0f"
    )
    with pytest.raises(MetadataRecordError, match="sequence"):
        decode_record(data)


def test_empty_input_is_refused() -> None:
    with pytest.raises(MetadataRecordError):
        decode_record(b"")


def _decodes_or_refuses(data: bytes) -> None:
    try:
        record = decode_record(data)
    except MetadataRecordError:
        return
    # Whatever decodes is a real record: it encodes, and reads back as itself.
    assert decode_record(encode_record(record)) == record


@DETERMINISTIC
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_metadata_record_error(data: bytes) -> None:
    _decodes_or_refuses(data)


@DETERMINISTIC
@given(st.sampled_from(sorted(RECORD_TYPES)), st.binary(max_size=48))
def test_random_bodies_behind_a_valid_frame(api_key: int, body: bytes) -> None:
    _decodes_or_refuses(bytes([FRAME_VERSION, api_key, 0]) + body)


@st.composite
def mutated_encodings(draw: st.DrawFn) -> bytes:
    data = bytearray(encode_record(draw(any_record)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            data.insert(at, draw(st.integers(0, 255)))
        elif kind == "delete" and data:
            del data[at]
        else:
            del data[at:]
    return bytes(data)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(mutated_encodings())
def test_mutated_encodings_decode_or_raise_metadata_record_error(data: bytes) -> None:
    _decodes_or_refuses(data)


@DETERMINISTIC
@given(any_record, st.integers(1, 3))
def test_appending_a_valid_record_is_trailing_garbage(
    record: MetadataRecord, n: int
) -> None:
    encoded = encode_record(record)
    with pytest.raises(MetadataRecordError, match="after a"):
        decode_record(encoded + encoded[:n])


def test_records_are_values() -> None:
    record = FenceBrokerRecord(1, 2)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.broker_id = 3  # type: ignore[misc]
    assert record == FenceBrokerRecord(1, 2)
    assert hash(record) == hash(FenceBrokerRecord(1, 2))
