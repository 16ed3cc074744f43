"""The quorum's messages on a Kafka connection: every codec of :mod:`._wire` (elections),
:mod:`._fetch_wire` (Fetch, FetchSnapshot) and :mod:`._describe_wire` (DescribeQuorum,
which brokers and tools ask too), and the two dispatches a shell needs, kio request to
the core's request and kio response back to the core's response."""

from __future__ import annotations

from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_res
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_res
from kio.schema.fetch.v13 import request as fetch_req
from kio.schema.fetch.v13 import response as fetch_res
from kio.schema.fetch_snapshot.v0 import request as snap_req
from kio.schema.fetch_snapshot.v0 import response as snap_res
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_res

from ._describe_wire import DescribeQuorumError as DescribeQuorumError
from ._describe_wire import QuorumNode as QuorumNode
from ._describe_wire import (
    check_describe_quorum_request as check_describe_quorum_request,
)
from ._describe_wire import (
    decode_describe_quorum_response as decode_describe_quorum_response,
)
from ._describe_wire import describe_quorum_error_v2 as describe_quorum_error_v2
from ._describe_wire import encode_describe_quorum_error as encode_describe_quorum_error
from ._describe_wire import (
    encode_describe_quorum_request as encode_describe_quorum_request,
)
from ._describe_wire import (
    encode_describe_quorum_request_v2 as encode_describe_quorum_request_v2,
)
from ._describe_wire import (
    encode_describe_quorum_response as encode_describe_quorum_response,
)
from ._describe_wire import (
    encode_describe_quorum_response_v2 as encode_describe_quorum_response_v2,
)
from ._fetch_wire import METADATA_TOPIC_ID as METADATA_TOPIC_ID
from ._fetch_wire import decode_fetch_request as decode_fetch_request
from ._fetch_wire import decode_fetch_response as decode_fetch_response
from ._fetch_wire import decode_fetch_snapshot_request as decode_fetch_snapshot_request
from ._fetch_wire import (
    decode_fetch_snapshot_response as decode_fetch_snapshot_response,
)
from ._fetch_wire import encode_fetch_request as encode_fetch_request
from ._fetch_wire import encode_fetch_response as encode_fetch_response
from ._fetch_wire import encode_fetch_snapshot_request as encode_fetch_snapshot_request
from ._fetch_wire import (
    encode_fetch_snapshot_response as encode_fetch_snapshot_response,
)
from ._messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    Message,
    Request,
    VoteRequest,
)
from ._wire import (
    decode_begin_quorum_epoch_request as decode_begin_quorum_epoch_request,
)
from ._wire import (
    decode_begin_quorum_epoch_response as decode_begin_quorum_epoch_response,
)
from ._wire import decode_end_quorum_epoch_request as decode_end_quorum_epoch_request
from ._wire import decode_end_quorum_epoch_response as decode_end_quorum_epoch_response
from ._wire import decode_vote_request as decode_vote_request
from ._wire import decode_vote_response as decode_vote_response
from ._wire import (
    encode_begin_quorum_epoch_request as encode_begin_quorum_epoch_request,
)
from ._wire import (
    encode_begin_quorum_epoch_response as encode_begin_quorum_epoch_response,
)
from ._wire import encode_end_quorum_epoch_request as encode_end_quorum_epoch_request
from ._wire import encode_end_quorum_epoch_response as encode_end_quorum_epoch_response
from ._wire import encode_vote_request as encode_vote_request
from ._wire import encode_vote_response as encode_vote_response

KioRequest = (
    vote_req.VoteRequest
    | bqe_req.BeginQuorumEpochRequest
    | eqe_req.EndQuorumEpochRequest
    | fetch_req.FetchRequest
    | snap_req.FetchSnapshotRequest
)


def decode_request(request: KioRequest) -> tuple[int, Request]:
    """The core's request and who sent it; ValueError if it is not about the quorum."""
    match request:
        case vote_req.VoteRequest():
            vote = decode_vote_request(request)
            return vote.candidate_id, vote
        case bqe_req.BeginQuorumEpochRequest():
            begin = decode_begin_quorum_epoch_request(request)
            return begin.leader_id, begin
        case eqe_req.EndQuorumEpochRequest():
            end = decode_end_quorum_epoch_request(request)
            return end.leader_id, end
        case fetch_req.FetchRequest():
            fetch = decode_fetch_request(request)
            return fetch.replica_id, fetch
        case snap_req.FetchSnapshotRequest():
            snapshot = decode_fetch_snapshot_request(request)
            return snapshot.replica_id, snapshot


def decode_response(request: Message, response: object) -> Message:
    """The core's response to ``request`` from the kio ``response`` that answered it;
    ValueError if it is not the matching kind or not about the quorum."""
    match request, response:
        case VoteRequest(), vote_res.VoteResponse():
            return decode_vote_response(response, pre_vote=request.pre_vote)
        case BeginQuorumEpochRequest(), bqe_res.BeginQuorumEpochResponse():
            return decode_begin_quorum_epoch_response(response)
        case EndQuorumEpochRequest(), eqe_res.EndQuorumEpochResponse():
            return decode_end_quorum_epoch_response(response)
        case FetchRequest(), fetch_res.FetchResponse():
            return decode_fetch_response(response, request.fetch_offset)
        case FetchSnapshotRequest(), snap_res.FetchSnapshotResponse():
            return decode_fetch_snapshot_response(response)
    raise ValueError(
        f"{type(response).__name__} does not answer {type(request).__name__}"
    )
