"""DescribeQuorum in Kafka's wire schema, v1: KIP-595's request and answer, with the two
per-replica times KIP-836 added (``last_fetch_timestamp``, ``last_caught_up_timestamp``);
and v2's answer, which adds the voters' endpoints and each replica's directory id
(KIP-853; :func:`encode_describe_quorum_response_v2`).

The leader builds a :class:`~._describe.QuorumInfo` on its own clock (virtual time in
the simulator, a monotonic clock in a shell); the wire carries epoch milliseconds, read
off the leader's wall clock, so a node encodes with the offset between its clock and the
wall clock, and a client decodes to seconds since the epoch. That is what
``kafka-metadata-quorum.sh describe --replication`` prints, and what
:func:`~._describe.format_replication` prints of a decoded answer.

As with :mod:`._wire`, the request must name exactly ``__cluster_metadata-0``. Errors
sit where Kafka puts them: NOT_LEADER_OR_FOLLOWER (a node that is not the leader) and
UNKNOWN_TOPIC_OR_PARTITION (a request for another partition) on the partition, anything
else (a broker that could not reach the controller, an authorization failure) at the top
level with no topics. A client gets either as :class:`DescribeQuorumError`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

import attrs
from kio.schema.describe_quorum.v1 import request as dq_req
from kio.schema.describe_quorum.v1 import response as dq_res
from kio.schema.describe_quorum.v2 import request as dq_req_v2
from kio.schema.describe_quorum.v2 import response as dq_res_v2
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i64, u16

from ._describe import QuorumInfo, ReplicaInfo, endpoint
from ._wire import METADATA_TOPIC, _only_partition

UNKNOWN_TIME = -1
"""The schema's value of a timestamp the leader does not know (never fetched)."""

PARTITION_ERRORS = frozenset(
    {ErrorCode.not_leader_or_follower, ErrorCode.unknown_topic_or_partition}
)
"""The codes Kafka answers on the partition rather than at the top level."""


class DescribeQuorumError(Exception):
    """The answer carried an error code instead of the quorum (top level or partition)."""

    def __init__(self, error_code: int, *, partition_level: bool) -> None:
        self.error_code = int(error_code)
        self.partition_level = partition_level
        self.name = error_name(error_code)
        where = f"{METADATA_TOPIC}-0" if partition_level else "top level"
        super().__init__(f"DescribeQuorum failed with {self.name} ({where})")


def error_name(code: int) -> str:
    """Kafka's name of an error code (``NOT_LEADER_OR_FOLLOWER``)."""
    try:
        return ErrorCode(int(code)).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE({int(code)})"


# -- the request -------------------------------------------------------------------------


def encode_describe_quorum_request() -> dq_req.DescribeQuorumRequest:
    """What a client asks: the one partition of the metadata quorum."""
    partition = dq_req.PartitionData(partition_index=i32(0))
    topic = dq_req.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return dq_req.DescribeQuorumRequest(topics=(topic,))


def encode_describe_quorum_request_v2() -> dq_req_v2.DescribeQuorumRequest:
    """The same question at v2, whose answer names the voters' endpoints (KIP-853)."""
    partition = dq_req_v2.PartitionData(partition_index=i32(0))
    topic = dq_req_v2.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return dq_req_v2.DescribeQuorumRequest(topics=(topic,))


def check_describe_quorum_request(request: dq_req.DescribeQuorumRequest) -> None:
    """``ValueError`` unless ``request`` asks for ``__cluster_metadata-0`` and nothing else;
    the node then answers UNKNOWN_TOPIC_OR_PARTITION (:func:`encode_describe_quorum_error`
    with the request), as Kafka does."""
    _only_partition(request.topics, "DescribeQuorum")


# -- the answer ---------------------------------------------------------------------------


def _epoch_ms(seconds: float | None, wall_clock_offset: float) -> i64:
    return i64(
        UNKNOWN_TIME if seconds is None else round((seconds + wall_clock_offset) * 1000)
    )


def _seconds(epoch_ms: int) -> float | None:
    return None if epoch_ms == UNKNOWN_TIME else epoch_ms / 1000


def _replica_states(
    replicas: Iterable[ReplicaInfo], wall_clock_offset: float
) -> tuple[dq_res.ReplicaState, ...]:
    return tuple(
        dq_res.ReplicaState(
            replica_id=BrokerId(r.replica_id),
            log_end_offset=i64(r.log_end_offset),
            last_fetch_timestamp=_epoch_ms(r.last_fetch, wall_clock_offset),
            last_caught_up_timestamp=_epoch_ms(r.last_caught_up, wall_clock_offset),
        )
        for r in replicas
    )


def _answer(
    partitions: tuple[dq_res.PartitionData, ...],
) -> dq_res.DescribeQuorumResponse:
    topic = dq_res.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=partitions
    )
    return dq_res.DescribeQuorumResponse(error_code=ErrorCode.none, topics=(topic,))


def encode_describe_quorum_response(
    info: QuorumInfo, *, wall_clock_offset: float
) -> dq_res.DescribeQuorumResponse:
    """The leader's answer. ``wall_clock_offset`` is the wall clock minus the clock
    ``info``'s times were read on (seconds), so the times go out as epoch milliseconds,
    the leader's wall clock the schema names; an unknown time goes out as -1."""
    partition = dq_res.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode.none,
        leader_id=BrokerId(info.leader_id),
        leader_epoch=i32(info.leader_epoch),
        high_watermark=i64(info.high_watermark),
        current_voters=_replica_states(info.voters, wall_clock_offset),
        observers=_replica_states(info.observers, wall_clock_offset),
    )
    return _answer((partition,))


@attrs.frozen
class QuorumNode:
    """A voter as DescribeQuorum v2 lists it (KIP-853): its id, and the controller
    listener it is reached on (a static voter's, from ``controller.quorum.voters``)."""

    node_id: int
    listener: str
    host: str
    port: int


def encode_describe_quorum_response_v2(
    info: QuorumInfo, *, wall_clock_offset: float, nodes: Sequence[QuorumNode]
) -> dq_res_v2.DescribeQuorumResponse:
    """The leader's answer at v2: v1's, each replica's directory id (the zero uuid of
    a static voter, and of an observer that gave none) and the voters' endpoints. Kafka
    4.1.1 with static voters answers so, its error messages empty strings."""

    def states(
        replicas: Iterable[ReplicaInfo],
    ) -> tuple[dq_res_v2.ReplicaState, ...]:
        return tuple(
            dq_res_v2.ReplicaState(
                replica_id=BrokerId(r.replica_id),
                replica_directory_id=None,  # the zero uuid on the wire
                log_end_offset=i64(r.log_end_offset),
                last_fetch_timestamp=_epoch_ms(r.last_fetch, wall_clock_offset),
                last_caught_up_timestamp=_epoch_ms(r.last_caught_up, wall_clock_offset),
            )
            for r in replicas
        )

    partition = dq_res_v2.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode.none,
        error_message="",
        leader_id=BrokerId(info.leader_id),
        leader_epoch=i32(info.leader_epoch),
        high_watermark=i64(info.high_watermark),
        current_voters=states(info.voters),
        observers=states(info.observers),
    )
    topic = dq_res_v2.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return dq_res_v2.DescribeQuorumResponse(
        error_code=ErrorCode.none,
        error_message="",
        topics=(topic,),
        nodes=tuple(
            dq_res_v2.Node(
                node_id=BrokerId(n.node_id),
                listeners=(
                    dq_res_v2.Listener(name=n.listener, host=n.host, port=u16(n.port)),
                ),
            )
            for n in sorted(nodes, key=lambda n: n.node_id)
            if any(v.replica_id == n.node_id for v in info.voters)
        ),
    )


def _error_partition(index: int, code: ErrorCode) -> dq_res.PartitionData:
    # An error answer carries only its code: Kafka leaves the leader id, epoch and high
    # watermark at the schema's zeros and so do we (a leader id of 0 here names no
    # node); a reader must look at the error code first (decode does).
    return dq_res.PartitionData(
        partition_index=i32(index),
        error_code=code,
        leader_id=BrokerId(0),
        leader_epoch=i32(0),
        high_watermark=i64(0),
        current_voters=(),
        observers=(),
    )


def encode_describe_quorum_error(
    error_code: int, request: dq_req.DescribeQuorumRequest | None = None
) -> dq_res.DescribeQuorumResponse:
    """An answer carrying ``error_code`` instead of the quorum.

    NOT_LEADER_OR_FOLLOWER and UNKNOWN_TOPIC_OR_PARTITION go on the partition, as in
    Kafka's KafkaRaftClient: on each partition ``request`` named (so a request for
    another topic hears about that topic), on ``__cluster_metadata-0`` without one. Any
    other code goes at the top level with no topics, which is Kafka's answer to a request
    that failed as a whole.
    """
    code = ErrorCode(int(error_code))
    if code == ErrorCode.none:
        raise ValueError("an error answer needs an error code")
    if code not in PARTITION_ERRORS:
        return dq_res.DescribeQuorumResponse(error_code=code, topics=())
    if request is None:
        return _answer((_error_partition(0, code),))
    return dq_res.DescribeQuorumResponse(
        error_code=ErrorCode.none,
        topics=tuple(
            dq_res.TopicData(
                topic_name=t.topic_name,
                partitions=tuple(
                    _error_partition(p.partition_index, code) for p in t.partitions
                ),
            )
            for t in request.topics
        ),
    )


def describe_quorum_error_v2(
    answer: dq_res.DescribeQuorumResponse,
) -> dq_res_v2.DescribeQuorumResponse:
    """An error answer of :func:`encode_describe_quorum_error`, at v2 (no nodes)."""
    return dq_res_v2.DescribeQuorumResponse(
        error_code=answer.error_code,
        error_message=None,
        topics=tuple(
            dq_res_v2.TopicData(
                topic_name=t.topic_name,
                partitions=tuple(
                    dq_res_v2.PartitionData(
                        partition_index=p.partition_index,
                        error_code=p.error_code,
                        error_message=None,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        high_watermark=p.high_watermark,
                        current_voters=(),
                        observers=(),
                    )
                    for p in t.partitions
                ),
            )
            for t in answer.topics
        ),
        nodes=(),
    )


def decode_describe_quorum_response(
    response: dq_res.DescribeQuorumResponse | dq_res_v2.DescribeQuorumResponse,
) -> QuorumInfo:
    """The quorum as the leader described it, times in seconds since the epoch (None:
    unknown); from a v2 answer also each replica's directory id and the voters'
    endpoints. :class:`DescribeQuorumError` on an error code, top level first (such an
    answer has no topics); ``ValueError`` if it is not about ``__cluster_metadata-0`` or
    names a leader that is not a voter."""
    if response.error_code != ErrorCode.none:
        raise DescribeQuorumError(response.error_code, partition_level=False)
    p = _only_partition(response.topics, "DescribeQuorumResponse")
    assert isinstance(p, dq_res.PartitionData | dq_res_v2.PartitionData)
    if p.error_code != ErrorCode.none:
        raise DescribeQuorumError(p.error_code, partition_level=True)
    voters = _replicas(p.current_voters)
    if all(v.replica_id != p.leader_id for v in voters):
        # Both views start from the leader's own row; an answer without one is broken.
        raise ValueError(
            f"DescribeQuorumResponse: leader {p.leader_id} is not among the voters"
        )
    endpoints: dict[int, tuple[str, ...]] = {}
    if isinstance(response, dq_res_v2.DescribeQuorumResponse):
        endpoints = {
            int(n.node_id): tuple(
                endpoint(ln.name, ln.host, int(ln.port)) for ln in n.listeners
            )
            for n in response.nodes
        }
    return QuorumInfo(
        leader_id=int(p.leader_id),
        leader_epoch=int(p.leader_epoch),
        high_watermark=int(p.high_watermark),
        voters=voters,
        observers=_replicas(p.observers),
        endpoints=endpoints,
    )


def _replicas(
    states: Iterable[dq_res.ReplicaState | dq_res_v2.ReplicaState],
) -> tuple[ReplicaInfo, ...]:
    return tuple(
        ReplicaInfo(
            replica_id=int(s.replica_id),
            log_end_offset=int(s.log_end_offset),
            last_fetch=_seconds(s.last_fetch_timestamp),
            last_caught_up=_seconds(s.last_caught_up_timestamp),
            directory_id=_directory_id(s),
        )
        for s in states
    )


def _directory_id(
    state: dq_res.ReplicaState | dq_res_v2.ReplicaState,
) -> uuid.UUID | None:
    """A v2 replica's directory id; None for the zero id (none) and at v1."""
    if not isinstance(state, dq_res_v2.ReplicaState):
        return None
    found = state.replica_directory_id
    return None if found is None or found.int == 0 else found
