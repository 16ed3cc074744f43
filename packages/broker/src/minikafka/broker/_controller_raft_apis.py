"""The Raft half of a controller's listener when the quorum has several voters (KIP-595,
KIP-630): Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot.

Each request is decoded into the Raft core's value (:mod:`minikafka.raft.wire`), handed
to the controller's :class:`~minikafka.controller.RaftNodeShell`, and its answer encoded
back. Fetch and FetchSnapshot come from the other voters and from the brokers alike: a
broker is an observer, fetching the same log from the same leader, never counted in the
high watermark. A node that is not the leader answers NOT_LEADER_OR_FOLLOWER and names
the leader it knows, so the fetcher moves there.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import cast

from kio.schema.describe_quorum.v1 import request as dq_v1
from kio.schema.describe_quorum.v1 import response as dq_res_v1
from kio.schema.describe_quorum.v1.request import DescribeQuorumRequest
from kio.schema.describe_quorum.v1.response import DescribeQuorumResponse
from kio.schema.describe_quorum.v2 import request as dq_v2
from kio.schema.describe_quorum.v2.request import (
    DescribeQuorumRequest as DescribeQuorumRequestV2,
)
from kio.schema.describe_quorum.v2.response import (
    DescribeQuorumResponse as DescribeQuorumResponseV2,
)
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta
from kio.static.protocol import ResponsePayload

from minikafka.controller import (
    ControllerError,
    QuorumControllerShell,
    QuorumUnavailableError,
    RaftNodeShell,
)
from minikafka.net import ApiKey, Request, build
from minikafka.raft import (
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    VoteResponse,
    wire,
)
from minikafka.raft import Request as RaftRequest
from minikafka.raft.wire import (
    QuorumNode,
    check_describe_quorum_request,
    describe_quorum_error_v2,
    encode_describe_quorum_error,
    encode_describe_quorum_response,
    encode_describe_quorum_response_v2,
)

from ._controller_channel import ControllerChannel, RemoteController
from ._roles import Roles

# v1: KIP-836's last fetch and caught-up times; v2: KIP-853's voter endpoints
DESCRIBE_QUORUM_VERSIONS = (1, 2)
RAFT_APIS: Mapping[int, tuple[int, int]] = {
    # KIP-853's versions, the ones minikafka.raft.wire encodes (Vote v2 carries KIP-996's
    # PreVote flag).
    ApiKey.VOTE: (2, 2),
    ApiKey.BEGIN_QUORUM_EPOCH: (1, 1),
    ApiKey.END_QUORUM_EPOCH: (1, 1),
}
_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def _error(request: Request, code: ErrorCode) -> ResponsePayload:
    """The request's response with only a top-level ``code``."""
    cls = request.response_class()
    if request.api_key == ApiKey.FETCH:
        return build(
            cls,
            throttle_time=_NO_THROTTLE,
            error_code=code,
            session_id=i32(0),
            responses=(),
        )
    if request.api_key == ApiKey.FETCH_SNAPSHOT:
        return build(cls, throttle_time=_NO_THROTTLE, error_code=code, topics=())
    return build(cls, error_code=code, topics=())


async def handle_raft_request(
    request: Request, quorum: RaftNodeShell, cluster_id: str
) -> None:
    body = request.body
    if getattr(body, "cluster_id", None) not in (None, cluster_id):
        request.respond(_error(request, ErrorCode.inconsistent_cluster_id))
        return
    try:
        source, message = wire.decode_request(body)  # type: ignore[arg-type]
    except ValueError:
        # Only __cluster_metadata-0 is replicated by the quorum.
        request.respond(_error(request, ErrorCode.invalid_request))
        return
    try:
        answer = await quorum.handle(source, message)
    except QuorumUnavailableError:
        # Starting, or too busy to answer in time: the sender retries.
        request.respond(_error(request, ErrorCode.request_timed_out))
        return
    request.respond(_encode(message, answer, quorum))


def _encode(
    request: RaftRequest, answer: Message, quorum: RaftNodeShell
) -> ResponsePayload:
    match answer:
        case VoteResponse():
            return wire.encode_vote_response(answer)
        case BeginQuorumEpochResponse():
            return wire.encode_begin_quorum_epoch_response(answer)
        case EndQuorumEpochResponse():
            return wire.encode_end_quorum_epoch_response(answer)
        case FetchResponse():
            return wire.encode_fetch_response(answer, quorum.raft_log.start_offset)
        case FetchSnapshotResponse():
            assert isinstance(request, FetchSnapshotRequest)
            return wire.encode_fetch_snapshot_response(answer, request.snapshot_id)
    raise AssertionError(f"the Raft node answered {request} with {answer}")


def quorum_nodes(roles: Roles) -> tuple[QuorumNode, ...]:
    """The voters of ``controller.quorum.voters`` on the first controller listener, as
    DescribeQuorum v2 lists them (none without a controller listener)."""
    if not roles.controller_listener_names:
        return ()
    listener = roles.controller_listener_names[0]
    return tuple(QuorumNode(v.node_id, listener, v.host, v.port) for v in roles.voters)


def describe_quorum(
    request: Request, server: QuorumControllerShell, nodes: tuple[QuorumNode, ...]
) -> None:
    """DescribeQuorum (KIP-595, KIP-836, KIP-853): the leader describes the quorum (from
    v2 with ``nodes``, the voters' endpoints); any other node answers
    NOT_LEADER_OR_FOLLOWER, and the asker tries another controller."""
    # v2's request is v1's in the flexible encoding: the same topics and partitions.
    body = cast(
        dq_v1.DescribeQuorumRequest,
        request.body_as((dq_v1.DescribeQuorumRequest, dq_v2.DescribeQuorumRequest)),
    )
    v2 = request.api_version >= 2
    response: ResponsePayload
    try:
        check_describe_quorum_request(body)
    except ValueError:
        response = encode_describe_quorum_error(
            ErrorCode.unknown_topic_or_partition, body
        )
    else:
        described = server.describe_quorum()
        if described is None:
            response = encode_describe_quorum_error(ErrorCode.not_leader_or_follower)
        elif v2:
            info, offset = described
            request.respond(
                encode_describe_quorum_response_v2(
                    info, wall_clock_offset=offset, nodes=nodes
                )
            )
            return
        else:
            info, offset = described
            response = encode_describe_quorum_response(info, wall_clock_offset=offset)
    if v2:
        assert isinstance(response, dq_res_v1.DescribeQuorumResponse)
        response = describe_quorum_error_v2(response)
    request.respond(response)


async def handle_describe_quorum(
    request: Request, controller: ControllerChannel, roles: Roles
) -> None:
    """A broker's DescribeQuorum (KIP-595): any broker answers for the quorum, from
    the controller in its process or by asking the active one."""
    if isinstance(controller, QuorumControllerShell):
        describe_quorum(request, controller, quorum_nodes(roles))
        return
    assert isinstance(controller, RemoteController)
    body = request.body_as((DescribeQuorumRequest, DescribeQuorumRequestV2))
    try:
        answer = await controller.forward(body)  # at the client's version
    except ControllerError as exc:
        error = encode_describe_quorum_error(exc.error_code)
        v2 = request.api_version >= 2
        request.respond(describe_quorum_error_v2(error) if v2 else error)
        return
    assert isinstance(answer, DescribeQuorumResponse | DescribeQuorumResponseV2)
    request.respond(answer)
