"""Moving replicas and leaders on request: AlterPartitionReassignments and
ListPartitionReassignments (KIP-455, seed 000's reassignment) and ElectLeaders (KIP-460,
preferred leader election).

The QuorumController decides all three (:mod:`minikafka.controller`); these handlers
translate between the wire and the controller's request types. The same handlers serve
a client on a broker (which submits to its controller channel: in process, or forwarded
over the controller listener) and a broker on the controller's listener, so there is one
translation each way. :class:`RemoteController` uses the ``to_wire`` functions below to
forward them.

AlterPartitionReassignments v1 can forbid a move that changes a partition's number of
replicas (KIP-860: ``allow_replication_factor_change``); forwarded to the controller, it
goes as v1, so the controller sees what the client asked.

ElectLeaders' ``election_type`` 1 (unclean, KIP-460) gives a leader to a partition that
has none, from outside the ISR if need be, whatever ``unclean.leader.election.enable``
says: an operator's choice to lose what only the dead ISR had.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.alter_partition_reassignments.v1 import request as alter_v1
from kio.schema.alter_partition_reassignments.v1 import response as alter_v1_response
from kio.schema.elect_leaders.v1 import request as elect_v1
from kio.schema.elect_leaders.v1 import response as elect_v1_response
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.list_partition_reassignments.v0 import response as list_v0_response
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta
from kio.static.protocol import Entity

from minikafka.controller import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ControllerError,
    ControllerRequest,
    ElectionResult,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingReassignment,
    ReassignablePartition,
    ReassignmentResult,
)
from minikafka.net import Request, build, nested

from ._body import ALTER_PARTITION_REASSIGNMENTS, ELECT_LEADERS

if TYPE_CHECKING:  # the channel forwards with this module's functions: no import cycle
    from ._controller_channel import ControllerChannel

NO_THROTTLE = datetime.timedelta(0)
TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))
PREFERRED, UNCLEAN = 0, 1  # ElectLeaders' election_type (v1+)


async def _submit(
    channel: ControllerChannel, internal: ControllerRequest
) -> object | ErrorCode:
    try:
        return await channel.submit(internal)
    except ControllerError as exc:
        return exc.error_code


def _by_topic(
    topic_cls: type[Entity],
    name: str,
    partitions: str,
    rows: Iterable[tuple[str, Entity]],
) -> tuple[Entity, ...]:
    """Per-partition entities grouped under their topics, in first-seen order: the
    ``topic_cls`` entities a response lists (its topic field ``name``, its list of
    partitions ``partitions``)."""
    grouped: dict[str, list[Entity]] = {}
    for topic, entity in rows:
        grouped.setdefault(topic, []).append(entity)
    return tuple(
        build(topic_cls, **{name: t, partitions: tuple(ps)})
        for t, ps in grouped.items()
    )


# --- AlterPartitionReassignments -------------------------------------------------------


async def handle_alter_partition_reassignments(
    request: Request, channel: ControllerChannel
) -> None:
    body = request.body_as(ALTER_PARTITION_REASSIGNMENTS)
    internal = AlterPartitionReassignmentsRequest(
        tuple(
            ReassignablePartition(
                str(t.name),
                int(p.partition_index),
                None if p.replicas is None else tuple(int(b) for b in p.replicas),
            )
            for t in body.topics
            for p in t.partitions
        ),
        bool(getattr(body, "allow_replication_factor_change", True)),  # v1+, KIP-860
    )
    answer = await _submit(channel, internal)
    cls = request.response_class()
    # v1's answer says whether the move could change the replication factor (KIP-860).
    echo = {"allow_replication_factor_change": internal.allow_replication_factor_change}
    topic_cls = nested(cls, "responses")
    partition_cls = nested(topic_cls, "partitions")
    if not isinstance(answer, AlterPartitionReassignmentsResponse):
        error = (
            answer if isinstance(answer, ErrorCode) else ErrorCode.unknown_server_error
        )
        request.respond(
            build(
                cls,
                throttle_time=NO_THROTTLE,
                error_code=error,
                error_message=None,
                responses=(),
                **echo,
            )
        )
        return
    rows = (
        (
            r.topic,
            build(
                partition_cls,
                partition_index=r.partition,
                error_code=r.error_code,
                error_message=r.error_message,
            ),
        )
        for r in answer.partitions
    )
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            responses=_by_topic(topic_cls, "name", "partitions", rows),
            **echo,
        )
    )


def alter_reassignments_to_wire(
    request: AlterPartitionReassignmentsRequest,
) -> alter_v1.AlterPartitionReassignmentsRequest:
    topics: dict[str, list[alter_v1.ReassignablePartition]] = {}
    for p in request.partitions:
        topics.setdefault(p.topic, []).append(
            alter_v1.ReassignablePartition(
                partition_index=i32(p.partition),
                replicas=None
                if p.replicas is None
                else tuple(BrokerId(b) for b in p.replicas),
            )
        )
    return alter_v1.AlterPartitionReassignmentsRequest(
        timeout=TIMEOUT,
        allow_replication_factor_change=request.allow_replication_factor_change,
        topics=tuple(
            alter_v1.ReassignableTopic(name=TopicName(t), partitions=tuple(ps))
            for t, ps in topics.items()
        ),
    )


def alter_reassignments_from_wire(
    response: alter_v1_response.AlterPartitionReassignmentsResponse,
) -> AlterPartitionReassignmentsResponse:
    if response.error_code is not ErrorCode.none:
        raise ControllerError(response.error_code)
    return AlterPartitionReassignmentsResponse(
        tuple(
            ReassignmentResult(
                str(t.name), int(p.partition_index), p.error_code, p.error_message
            )
            for t in response.responses
            for p in t.partitions
        )
    )


# --- ListPartitionReassignments --------------------------------------------------------


async def handle_list_partition_reassignments(
    request: Request, channel: ControllerChannel
) -> None:
    body = request.body_as((list_v0.ListPartitionReassignmentsRequest,))
    answer = await _submit(channel, ListPartitionReassignmentsRequest())
    cls = request.response_class()
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    if not isinstance(answer, ListPartitionReassignmentsResponse):
        error = (
            answer if isinstance(answer, ErrorCode) else ErrorCode.unknown_server_error
        )
        request.respond(
            build(
                cls,
                throttle_time=NO_THROTTLE,
                error_code=error,
                error_message=None,
                topics=(),
            )
        )
        return
    asked = (
        None
        if body.topics is None
        else {(str(t.name), int(i)) for t in body.topics for i in t.partition_indexes}
    )
    rows = (
        (
            r.topic,
            build(
                partition_cls,
                partition_index=r.partition,
                replicas=r.replicas,
                adding_replicas=r.adding_replicas,
                removing_replicas=r.removing_replicas,
            ),
        )
        for r in answer.reassignments
        if asked is None or (r.topic, r.partition) in asked
    )
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            topics=_by_topic(topic_cls, "name", "partitions", rows),
        )
    )


def list_reassignments_to_wire() -> list_v0.ListPartitionReassignmentsRequest:
    return list_v0.ListPartitionReassignmentsRequest(timeout=TIMEOUT, topics=None)


def list_reassignments_from_wire(
    response: list_v0_response.ListPartitionReassignmentsResponse,
) -> ListPartitionReassignmentsResponse:
    if response.error_code is not ErrorCode.none:
        raise ControllerError(response.error_code)
    return ListPartitionReassignmentsResponse(
        tuple(
            OngoingReassignment(
                str(t.name),
                int(p.partition_index),
                tuple(int(b) for b in p.replicas),
                tuple(int(b) for b in p.adding_replicas),
                tuple(int(b) for b in p.removing_replicas),
            )
            for t in response.topics
            for p in t.partitions
        )
    )


# --- ElectLeaders ------------------------------------------------------------------------


async def handle_elect_leaders(request: Request, channel: ControllerChannel) -> None:
    body = request.body_as(ELECT_LEADERS)
    election_type = int(getattr(body, "election_type", PREFERRED))  # v1+
    asked = (
        None
        if body.topic_partitions is None
        else tuple(
            (str(t.topic), int(p)) for t in body.topic_partitions for p in t.partitions
        )
    )
    cls = request.response_class()
    results: list[ElectionResult] = []
    error = ErrorCode.none
    if election_type not in (PREFERRED, UNCLEAN):
        # Kafka's ElectionType.valueOf refuses any other byte: the request is invalid.
        error = ErrorCode.invalid_request
    else:
        answer = await _submit(channel, ElectLeadersRequest(asked, election_type))
        if isinstance(answer, ElectLeadersResponse):
            error, results = answer.error_code, list(answer.partitions)
        else:
            error = (
                answer
                if isinstance(answer, ErrorCode)
                else ErrorCode.unknown_server_error
            )
    topic_cls = nested(cls, "replica_election_results")
    partition_cls = nested(topic_cls, "partition_result")
    rows = (
        (
            r.topic,
            build(
                partition_cls,
                partition_id=r.partition,
                error_code=r.error_code,
                error_message=r.error_message,
            ),
        )
        for r in results
    )
    fields: dict[str, object] = {
        "throttle_time": NO_THROTTLE,
        "replica_election_results": _by_topic(
            topic_cls, "topic", "partition_result", rows
        ),
    }
    if request.api_version >= 1:
        fields["error_code"] = error
    request.respond(build(cls, **fields))


def elect_leaders_to_wire(request: ElectLeadersRequest) -> elect_v1.ElectLeadersRequest:
    topics: dict[str, list[i32]] = {}
    for topic, partition in request.partitions or ():
        topics.setdefault(topic, []).append(i32(partition))
    return elect_v1.ElectLeadersRequest(
        election_type=i8(request.election_type),
        topic_partitions=None
        if request.partitions is None
        else tuple(
            elect_v1.TopicPartitions(topic=TopicName(t), partitions=tuple(ps))
            for t, ps in topics.items()
        ),
        timeout=TIMEOUT,
    )


def elect_leaders_from_wire(
    response: elect_v1_response.ElectLeadersResponse,
) -> ElectLeadersResponse:
    return ElectLeadersResponse(
        response.error_code,
        tuple(
            ElectionResult(
                str(t.topic), int(p.partition_id), p.error_code, p.error_message
            )
            for t in response.replica_election_results
            for p in t.partition_result
        ),
    )
