"""DescribeQuorum v1 through Kafka's byte layout (kio's codecs) and back: the quorum a
leader describes reaches the client whole, its times as the leader's wall clock; errors
arrive where Kafka puts them and come out as DescribeQuorumError; a request for any other
partition is refused."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.describe_quorum.v1 import request as dq_req
from kio.schema.describe_quorum.v1 import response as dq_res
from kio.schema.describe_quorum.v2 import response as dq_res_v2
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32
from kio.static.protocol import Entity

from minikafka.raft._describe import QuorumInfo, ReplicaInfo, format_replication
from minikafka.raft._describe_wire import (
    DescribeQuorumError,
    QuorumNode,
    check_describe_quorum_request,
    decode_describe_quorum_response,
    encode_describe_quorum_error,
    encode_describe_quorum_request,
    encode_describe_quorum_response,
    encode_describe_quorum_response_v2,
)

WALL = 1_700_000_000.0  # the wall clock when the leader's own clock read 0


def through_bytes(entity: Entity) -> Entity:
    """What the other end of a connection decodes."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, size = entity_reader(type(entity))(buffer.getvalue(), 0)
    assert size == len(buffer.getvalue())
    return decoded


def answer(info: QuorumInfo, offset: float = WALL) -> QuorumInfo:
    wire = through_bytes(
        encode_describe_quorum_response(info, wall_clock_offset=offset)
    )
    assert isinstance(wire, dq_res.DescribeQuorumResponse)
    return decode_describe_quorum_response(wire)


QUORUM = QuorumInfo(
    leader_id=2,
    leader_epoch=7,
    high_watermark=120,
    voters=(
        ReplicaInfo(1, 100, last_fetch=3.25, last_caught_up=2.5),
        ReplicaInfo(2, 130, last_fetch=None, last_caught_up=4.0),
        ReplicaInfo(3, 130, last_fetch=3.999, last_caught_up=3.999),
    ),
    observers=(ReplicaInfo(4, 90, last_fetch=1.0, last_caught_up=None),),
)


def test_the_request_names_the_metadata_partition_and_survives_the_wire() -> None:
    wire = through_bytes(encode_describe_quorum_request())
    assert isinstance(wire, dq_req.DescribeQuorumRequest)
    assert [
        (t.topic_name, [p.partition_index for p in t.partitions]) for t in wire.topics
    ] == [("__cluster_metadata", [0])]
    check_describe_quorum_request(wire)  # no error


def request_for(*topics: tuple[str, tuple[int, ...]]) -> dq_req.DescribeQuorumRequest:
    return dq_req.DescribeQuorumRequest(
        topics=tuple(
            dq_req.TopicData(
                topic_name=TopicName(name),
                partitions=tuple(
                    dq_req.PartitionData(partition_index=i32(p)) for p in parts
                ),
            )
            for name, parts in topics
        )
    )


@pytest.mark.parametrize(
    "topics",
    [
        (("orders", (0,)),),
        (("__cluster_metadata", (1,)),),
        (("__cluster_metadata", (0, 1)),),
        (("__cluster_metadata", (0,)), ("orders", (0,))),
        (),
    ],
)
def test_a_request_for_anything_but_the_metadata_partition_is_refused(
    topics: tuple[tuple[str, tuple[int, ...]], ...],
) -> None:
    with pytest.raises(ValueError, match="__cluster_metadata"):
        check_describe_quorum_request(request_for(*topics))


def test_the_answer_survives_the_wire_with_its_times_on_the_wall_clock() -> None:
    decoded = answer(QUORUM)
    assert (decoded.leader_id, decoded.leader_epoch, decoded.high_watermark) == (
        2,
        7,
        120,
    )
    assert [(v.replica_id, v.log_end_offset) for v in decoded.voters] == [
        (1, 100),
        (2, 130),
        (3, 130),
    ]
    assert [(o.replica_id, o.log_end_offset) for o in decoded.observers] == [(4, 90)]
    follower, leader, _ = decoded.voters
    assert follower.last_fetch == pytest.approx(WALL + 3.25)
    assert follower.last_caught_up == pytest.approx(WALL + 2.5)
    assert leader.last_fetch is None  # never: -1 on the wire
    assert decoded.observers[0].last_caught_up is None
    assert decoded.max_follower_lag == 30


def test_the_wire_carries_epoch_milliseconds_and_minus_one_for_never() -> None:
    wire = encode_describe_quorum_response(QUORUM, wall_clock_offset=WALL)
    (partition,) = wire.topics[0].partitions
    first, leader, third = partition.current_voters
    assert first.last_fetch_timestamp == 1_700_000_003_250
    assert first.last_caught_up_timestamp == 1_700_000_002_500
    assert leader.last_fetch_timestamp == -1
    assert third.last_fetch_timestamp == 1_700_000_003_999
    assert partition.observers[0].last_caught_up_timestamp == -1


def test_replication_prints_the_leaders_wall_clock_milliseconds() -> None:
    rows = [
        line.split() for line in format_replication(answer(QUORUM)).splitlines()[1:]
    ]
    zero = "AAAAAAAAAAAAAAAAAAAAAA"
    assert rows[0] == ["2", zero, "130", "0", "-1", "1700000004000", "Leader"]
    assert rows[1] == [
        "1", zero, "100", "30", "1700000003250", "1700000002500", "Follower"
    ]  # fmt: skip
    assert rows[3] == ["4", zero, "90", "40", "1700000001000", "-1", "Observer"]


replica_ids = st.integers(0, 2**31 - 1)
offsets = st.integers(-1, 2**62)
times_ms = st.none() | st.integers(0, 2**45)  # epoch ms until the year 3084


@given(
    st.lists(
        st.tuples(replica_ids, offsets, times_ms, times_ms), min_size=1, max_size=5
    ),
    st.lists(st.tuples(replica_ids, offsets, times_ms, times_ms), max_size=3),
    st.integers(0, 2**31 - 1),
    offsets,
    st.data(),
)
def test_every_quorum_round_trips_to_the_millisecond(
    voters: list[tuple[int, int, int | None, int | None]],
    observers: list[tuple[int, int, int | None, int | None]],
    epoch: int,
    high_watermark: int,
    data: st.DataObject,
) -> None:
    def replica(row: tuple[int, int, int | None, int | None]) -> ReplicaInfo:
        rid, leo, fetch, caught_up = row
        seconds = [None if t is None else t / 1000 for t in (fetch, caught_up)]
        return ReplicaInfo(rid, leo, seconds[0], seconds[1])

    leader = data.draw(st.sampled_from([v[0] for v in voters]))
    info = QuorumInfo(
        leader,
        epoch,
        high_watermark,
        tuple(map(replica, voters)),
        tuple(map(replica, observers)),
    )
    decoded = answer(info, offset=0.0)
    assert (decoded.leader_id, decoded.leader_epoch, decoded.high_watermark) == (
        leader,
        epoch,
        high_watermark,
    )

    def to_ms(seconds: float | None) -> int | None:
        return None if seconds is None else round(seconds * 1000)

    def ms(
        replicas: tuple[ReplicaInfo, ...],
    ) -> list[tuple[int, int, int | None, int | None]]:
        return [
            (
                r.replica_id,
                r.log_end_offset,
                to_ms(r.last_fetch),
                to_ms(r.last_caught_up),
            )
            for r in replicas
        ]

    assert ms(decoded.voters) == voters
    assert ms(decoded.observers) == observers
    assert format_replication(decoded) == format_replication(info)


def test_a_node_that_is_not_the_leader_answers_on_the_partition() -> None:
    wire = through_bytes(encode_describe_quorum_error(ErrorCode.not_leader_or_follower))
    assert isinstance(wire, dq_res.DescribeQuorumResponse)
    assert wire.error_code == ErrorCode.none
    (topic,) = wire.topics
    (partition,) = topic.partitions
    assert (topic.topic_name, partition.partition_index) == ("__cluster_metadata", 0)
    assert partition.error_code == ErrorCode.not_leader_or_follower
    # The schema's zeros, as Kafka 4.1 answers (the differential corpus compares them).
    assert (partition.leader_id, partition.leader_epoch) == (0, 0)
    with pytest.raises(DescribeQuorumError, match="NOT_LEADER_OR_FOLLOWER") as caught:
        decode_describe_quorum_response(wire)
    assert caught.value.error_code == ErrorCode.not_leader_or_follower
    assert caught.value.partition_level


def test_a_request_for_another_topic_hears_unknown_topic_about_that_topic() -> None:
    request = request_for(("orders", (3,)))
    wire = encode_describe_quorum_error(ErrorCode.unknown_topic_or_partition, request)
    (topic,) = wire.topics
    assert topic.topic_name == "orders"
    assert [
        (p.partition_index, p.error_code, p.leader_id) for p in topic.partitions
    ] == [(3, ErrorCode.unknown_topic_or_partition, 0)]


def test_a_failure_of_the_whole_request_answers_at_the_top_level() -> None:
    wire = through_bytes(
        encode_describe_quorum_error(ErrorCode.cluster_authorization_failed)
    )
    assert isinstance(wire, dq_res.DescribeQuorumResponse)
    assert wire.error_code == ErrorCode.cluster_authorization_failed
    assert wire.topics == ()
    with pytest.raises(
        DescribeQuorumError, match="CLUSTER_AUTHORIZATION_FAILED"
    ) as caught:
        decode_describe_quorum_response(wire)
    assert caught.value.error_code == ErrorCode.cluster_authorization_failed
    assert not caught.value.partition_level


def test_no_error_is_not_an_error_answer() -> None:
    with pytest.raises(ValueError, match="error code"):
        encode_describe_quorum_error(ErrorCode.none)


def test_an_answer_about_another_partition_or_without_its_leader_is_refused() -> None:
    good = encode_describe_quorum_response(QUORUM, wall_clock_offset=WALL)
    (partition,) = good.topics[0].partitions
    other = dq_res.DescribeQuorumResponse(
        error_code=ErrorCode.none,
        topics=(
            dq_res.TopicData(topic_name=TopicName("orders"), partitions=(partition,)),
        ),
    )
    with pytest.raises(ValueError, match="__cluster_metadata-0"):
        decode_describe_quorum_response(other)
    leaderless = encode_describe_quorum_response(
        QuorumInfo(9, 1, 0, QUORUM.voters, ()), wall_clock_offset=0.0
    )
    with pytest.raises(ValueError, match="leader 9 is not among the voters"):
        decode_describe_quorum_response(leaderless)


def test_v2_lists_the_voters_endpoints_and_no_directory_ids() -> None:
    # Guarantee (KIP-853, as Kafka 4.1.1 answers with static voters): v2 carries v1's
    # quorum, each replica's directory id as the zero uuid, empty error messages, and a
    # node per voter (not per observer) with its controller listener's endpoint.
    info = QuorumInfo(
        leader_id=1,
        leader_epoch=3,
        high_watermark=10,
        voters=(ReplicaInfo(1, 10, 5.0, 5.0), ReplicaInfo(2, 9, 4.0, 3.0)),
        observers=(ReplicaInfo(7, 10, 5.0, 5.0),),
    )
    nodes = [
        QuorumNode(2, "CONTROLLER", "h2", 9094),
        QuorumNode(1, "CONTROLLER", "h1", 9093),
        QuorumNode(9, "CONTROLLER", "h9", 9099),  # not a voter of this quorum
    ]
    decoded = through_bytes(
        encode_describe_quorum_response_v2(info, wall_clock_offset=0.0, nodes=nodes)
    )
    assert isinstance(decoded, dq_res_v2.DescribeQuorumResponse)
    assert decoded.error_message == ""
    (partition,) = decoded.topics[0].partitions
    assert partition.error_message == ""
    assert [r.replica_id for r in partition.current_voters] == [1, 2]
    assert [r.replica_id for r in partition.observers] == [7]
    assert {r.replica_directory_id for r in partition.current_voters} == {None}
    assert [
        (n.node_id, [(lst.name, lst.host, lst.port) for lst in n.listeners])
        for n in decoded.nodes
    ] == [(1, [("CONTROLLER", "h1", 9093)]), (2, [("CONTROLLER", "h2", 9094)])]
    assert partition.current_voters[1].last_fetch_timestamp == 4000
