"""The consumer protocol's subscription and assignment bytes (v0-v3), and assignor user data.

Golden bytes are laid out field by field from Kafka's ``ConsumerProtocolSubscription.json``
and ``ConsumerProtocolAssignment.json``; kio's classes generated from the same schemas
and kafka-python (a real client) read what we write and write what we read. Hypothesis
runs derandomized, so every run tests the same examples.
"""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment as KafkaPythonAssignment,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolSubscription as KafkaPythonSubscription,
)
from kio.schema.consumer_protocol_assignment.v0 import data as kio_assignment_v0
from kio.schema.consumer_protocol_assignment.v3 import data as kio_assignment_v3
from kio.schema.consumer_protocol_subscription.v0 import data as kio_subscription_v0
from kio.schema.consumer_protocol_subscription.v1 import data as kio_subscription_v1
from kio.schema.consumer_protocol_subscription.v2 import data as kio_subscription_v2
from kio.schema.consumer_protocol_subscription.v3 import data as kio_subscription_v3
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32
from kio.static.protocol import Entity

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import Assignment, Subscription
from minikafka.coordination.assignors._consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from minikafka.coordination.assignors._cooperative_sticky import (
    cooperative_member_data,
    encode_cooperative_user_data,
)
from minikafka.coordination.assignors._sticky import (
    MemberData,
    decode_sticky_user_data,
    encode_sticky_user_data,
    sticky_member_data,
)

DETERMINISTIC = settings(derandomize=True, max_examples=200, deadline=None)

TP = TopicPartition


def i16b(v: int) -> bytes:
    return struct.pack(">h", v)


def i32b(v: int) -> bytes:
    return struct.pack(">i", v)


def s(v: str) -> bytes:
    return i16b(len(v.encode())) + v.encode()


SUBSCRIPTION = Subscription(
    ["orders", "audit"],
    user_data=b"\x01\x02",
    owned_partitions=[TP("orders", 2), TP("audit", 0), TP("orders", 0)],
    generation_id=7,
    rack_id="rack-a",
)

# topics, then nullable user data, then (v1+) owned partitions grouped by topic (sorted),
# then (v2+) the generation, then (v3+) the rack.
_TOPICS = i32b(2) + s("orders") + s("audit")
_USER_DATA = i32b(2) + b"\x01\x02"
_OWNED = (
    i32b(2) + s("audit") + i32b(1) + i32b(0) + s("orders") + i32b(2) + i32b(0) + i32b(2)
)
SUBSCRIPTION_GOLDEN = {
    0: i16b(0) + _TOPICS + _USER_DATA,
    1: i16b(1) + _TOPICS + _USER_DATA + _OWNED,
    2: i16b(2) + _TOPICS + _USER_DATA + _OWNED + i32b(7),
    3: i16b(3) + _TOPICS + _USER_DATA + _OWNED + i32b(7) + s("rack-a"),
}


def test_the_protocol_type_is_consumer() -> None:
    assert CONSUMER_PROTOCOL_TYPE == "consumer"


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_matches_kafkas_layout(version: int) -> None:
    assert encode_subscription(SUBSCRIPTION, version) == SUBSCRIPTION_GOLDEN[version]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_decodes_with_the_fields_of_its_version(version: int) -> None:
    decoded = decode_subscription(SUBSCRIPTION_GOLDEN[version])
    assert decoded.topics == ("orders", "audit")
    assert decoded.user_data == b"\x01\x02"
    expected_owned = (
        (TP("audit", 0), TP("orders", 0), TP("orders", 2)) if version >= 1 else ()
    )
    assert decoded.owned_partitions == expected_owned
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("rack-a" if version >= 3 else None)


def test_null_user_data_and_rack_are_minus_one_lengths() -> None:
    bare = Subscription(["t"])
    assert encode_subscription(bare, 3) == (
        i16b(3) + i32b(1) + s("t") + i32b(-1) + i32b(0) + i32b(-1) + i16b(-1)
    )
    assert decode_subscription(encode_subscription(bare, 3)) == bare


def test_an_empty_rack_reads_as_no_rack() -> None:
    data = i16b(3) + i32b(0) + i32b(-1) + i32b(0) + i32b(-1) + s("")
    assert decode_subscription(data).rack_id is None


def test_a_newer_subscription_version_is_read_as_v3_and_its_new_fields_skipped() -> (
    None
):
    future = i16b(9) + SUBSCRIPTION_GOLDEN[3][2:] + b"fields of v9"
    assert decode_subscription(future) == decode_subscription(SUBSCRIPTION_GOLDEN[3])


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_matches_kafkas_layout(version: int) -> None:
    assignment = Assignment([TP("b", 1), TP("a", 3), TP("b", 0)], user_data=b"u")
    golden = (
        i16b(version)
        + i32b(2)
        + s("a")
        + i32b(1)
        + i32b(3)
        + s("b")
        + i32b(2)
        + i32b(0)
        + i32b(1)
        + i32b(1)
        + b"u"
    )
    assert encode_assignment(assignment, version) == golden
    assert decode_assignment(golden) == Assignment(
        [TP("a", 3), TP("b", 0), TP("b", 1)], b"u"
    )


def test_an_empty_assignment_still_has_its_version_and_array() -> None:
    assert encode_assignment(Assignment(())) == i16b(3) + i32b(0) + i32b(-1)
    assert decode_assignment(i16b(3) + i32b(0) + i32b(-1)) == Assignment(())


@pytest.mark.parametrize(
    "data",
    [
        b"",  # Kafka fails on a missing header too: the leader left the member out
        b"\x00",
        i16b(-1) + i32b(0) + i32b(-1),
        i16b(0) + i32b(1) + s("t") + i32b(1),  # a partition array with no partitions
        i16b(0) + i32b(1_000_000),  # a count far beyond the bytes
    ],
)
def test_malformed_assignments_fail_with_a_protocol_error(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        i16b(-2) + i32b(0) + i32b(-1),
        i16b(0) + i32b(1) + i16b(-1) + i32b(-1),  # a null topic name
        i16b(0) + i32b(1) + i16b(2) + b"\xff\xfe" + i32b(-1),  # not UTF-8
        i16b(0) + i32b(0) + i32b(-5),
        i16b(1) + i32b(0) + i32b(-1),  # v1 without its owned partitions
    ],
)
def test_malformed_subscriptions_fail_with_a_protocol_error(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)


def test_versions_outside_0_to_3_are_not_encoded() -> None:
    with pytest.raises(ConsumerProtocolError):
        encode_subscription(SUBSCRIPTION, 4)
    with pytest.raises(ConsumerProtocolError):
        encode_assignment(Assignment(()), -1)


# --- properties --------------------------------------------------------------------------

_names = st.text(st.characters(codec="utf-8"), max_size=8)
_partitions = st.lists(
    st.builds(TP, _names, st.integers(0, 2**31 - 1)), max_size=8, unique=True
).map(lambda tps: tuple(sorted(tps)))
_subscriptions = st.builds(
    Subscription,
    st.lists(_names, max_size=5),
    user_data=st.none() | st.binary(max_size=16),
    owned_partitions=_partitions,
    generation_id=st.integers(-1, 2**31 - 1),
    rack_id=st.none() | _names.filter(bool),
)
_assignments = st.builds(Assignment, _partitions, st.none() | st.binary(max_size=16))


def _as_of(subscription: Subscription, version: int) -> Subscription:
    """What survives an encoding at ``version``."""
    return Subscription(
        subscription.topics,
        user_data=subscription.user_data,
        owned_partitions=subscription.owned_partitions if version >= 1 else (),
        generation_id=subscription.generation_id if version >= 2 else -1,
        rack_id=subscription.rack_id if version >= 3 else None,
    )


@DETERMINISTIC
@given(_subscriptions, st.integers(0, 3))
def test_subscriptions_round_trip(subscription: Subscription, version: int) -> None:
    decoded = decode_subscription(encode_subscription(subscription, version))
    assert decoded == _as_of(subscription, version)


@DETERMINISTIC
@given(_assignments, st.integers(0, 3))
def test_assignments_round_trip(assignment: Assignment, version: int) -> None:
    assert decode_assignment(encode_assignment(assignment, version)) == assignment


@DETERMINISTIC
@given(_subscriptions, st.integers(0, 3), st.data())
def test_every_truncated_subscription_fails_cleanly(
    subscription: Subscription, version: int, data: st.DataObject
) -> None:
    encoded = encode_subscription(subscription, version)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(encoded[:cut])


# --- cross-checks: kio (generated from Kafka's schemas) and kafka-python ------------------


def _kio_write(entity: Entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def test_kio_reads_our_subscriptions_at_every_version() -> None:
    v0, _ = entity_reader(kio_subscription_v0.ConsumerProtocolSubscription)(
        encode_subscription(SUBSCRIPTION, 0), 2
    )
    assert v0.topics == ("orders", "audit")
    assert v0.user_data == b"\x01\x02"
    for version, module in [
        (1, kio_subscription_v1),
        (2, kio_subscription_v2),
        (3, kio_subscription_v3),
    ]:
        body, size = entity_reader(module.ConsumerProtocolSubscription)(
            encode_subscription(SUBSCRIPTION, version), 2
        )
        assert size == len(SUBSCRIPTION_GOLDEN[version]) - 2
        assert [(t.topic, list(t.partitions)) for t in body.owned_partitions] == [
            ("audit", [0]),
            ("orders", [0, 2]),
        ]
    v3, _ = entity_reader(kio_subscription_v3.ConsumerProtocolSubscription)(
        encode_subscription(SUBSCRIPTION, 3), 2
    )
    assert (v3.generation_id, v3.rack_id) == (7, "rack-a")


def test_we_read_kios_subscription_and_assignment() -> None:
    subscription = kio_subscription_v3.ConsumerProtocolSubscription(
        topics=("x", "y"),
        user_data=None,
        owned_partitions=(
            kio_subscription_v3.TopicPartition(
                topic=TopicName("x"), partitions=(i32(4),)
            ),
        ),
        generation_id=i32(12),
        rack_id="r",
    )
    decoded = decode_subscription(i16b(3) + _kio_write(subscription))
    assert decoded == Subscription(
        ["x", "y"], owned_partitions=[TP("x", 4)], generation_id=12, rack_id="r"
    )
    for module, version in [(kio_assignment_v0, 0), (kio_assignment_v3, 3)]:
        assignment = module.ConsumerProtocolAssignment(
            assigned_partitions=(
                module.TopicPartition(
                    topic=TopicName("x"), partitions=(i32(0), i32(5))
                ),
            ),
            user_data=b"ud",
        )
        raw = i16b(version) + _kio_write(assignment)
        assert decode_assignment(raw) == Assignment([TP("x", 0), TP("x", 5)], b"ud")
        assert encode_assignment(decode_assignment(raw), version) == raw


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_kafka_python_and_we_read_each_others_subscriptions(version: int) -> None:
    theirs = KafkaPythonSubscription.decode(encode_subscription(SUBSCRIPTION, version))
    assert list(theirs.topics) == ["orders", "audit"]
    assert theirs.user_data == b"\x01\x02"
    fields: dict[str, object] = {"topics": ["a"], "user_data": None}
    if version >= 1:
        tp = KafkaPythonSubscription.TopicPartition(topic="a", partitions=[1, 0])
        fields["owned_partitions"] = [tp]
    if version >= 2:
        fields["generation_id"] = 3
    if version >= 3:
        fields["rack_id"] = "r2"
    written = KafkaPythonSubscription(version=version, **fields).encode()
    ours = decode_subscription(written)
    assert ours.topics == ("a",)
    assert ours.owned_partitions == ((TP("a", 1), TP("a", 0)) if version >= 1 else ())
    assert ours.generation_id == (3 if version >= 2 else -1)
    assert ours.rack_id == ("r2" if version >= 3 else None)


@pytest.mark.parametrize("version", [0, 3])
def test_kafka_python_and_we_read_each_others_assignments(version: int) -> None:
    ours = Assignment([TP("a", 0), TP("b", 2)], user_data=None)
    theirs = KafkaPythonAssignment.decode(encode_assignment(ours, version))
    assert sorted(theirs.partitions()) == [("a", 0), ("b", 2)]
    back = KafkaPythonAssignment(
        version=version,
        assigned_partitions=[
            KafkaPythonAssignment.TopicPartition(topic="a", partitions=[0])
        ],
        user_data=b"x",
    ).encode()
    assert decode_assignment(back) == Assignment([TP("a", 0)], b"x")


# --- the assignors' user data -------------------------------------------------------------


def test_sticky_user_data_is_kafkas_v1_and_reads_v0() -> None:
    ours = encode_sticky_user_data([TP("t", 1), TP("t", 0), TP("u", 5)], 4)
    theirs = StickyAssignorUserData(
        previous_assignment=[
            StickyAssignorUserData.TopicPartition(topic="t", partitions=[0, 1]),
            StickyAssignorUserData.TopicPartition(topic="u", partitions=[5]),
        ],
        generation=4,
    ).encode(header=False)
    assert ours == theirs
    assert decode_sticky_user_data(ours) == MemberData(
        (TP("t", 0), TP("t", 1), TP("u", 5)), 4
    )
    v0 = ours[:-4]
    assert decode_sticky_user_data(v0) == MemberData(
        (TP("t", 0), TP("t", 1), TP("u", 5)), None
    )


def test_sticky_member_data_prefers_user_data_then_the_subscription() -> None:
    user_data = encode_sticky_user_data([TP("t", 0)], 3)
    with_user_data = Subscription(
        ["t"], user_data=user_data, owned_partitions=[TP("t", 9)]
    )
    assert sticky_member_data(with_user_data) == MemberData((TP("t", 0),), 3)
    plain = Subscription(["t"], owned_partitions=[TP("t", 9)], generation_id=2)
    assert sticky_member_data(plain) == MemberData((TP("t", 9),), 2)
    garbage = Subscription(
        ["t"], user_data=b"\x00\x00\x00\x09", owned_partitions=[TP("t", 9)]
    )
    assert sticky_member_data(garbage) == MemberData((), None)


def test_cooperative_generation_comes_from_the_subscription_else_user_data() -> None:
    assert encode_cooperative_user_data(6) == i32b(6)
    v1 = Subscription(["t"], user_data=i32b(6), owned_partitions=[TP("t", 0)])
    assert cooperative_member_data(v1) == MemberData((TP("t", 0),), 6)
    v2 = Subscription(["t"], user_data=i32b(6), generation_id=8)
    assert cooperative_member_data(v2).generation == 8
    assert cooperative_member_data(Subscription(["t"])).generation is None
