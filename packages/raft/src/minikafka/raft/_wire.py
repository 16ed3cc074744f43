"""The quorum's election messages in Kafka's wire schemas (KIP-595; KIP-853's versions:
Vote v2 with KIP-996's ``PreVote``, BeginQuorumEpoch v1, EndQuorumEpoch v1).

Groundwork for the quorum's trio shell: the core speaks :mod:`._messages` values; these
functions turn them into kio's generated request and response classes and back, so a
shell can put them on a Kafka connection. Every message names the one partition of the
metadata quorum, ``__cluster_metadata-0``; a message about any other partition, or with
the wrong number of them, is refused with ``ValueError`` (the shell answers such a request
with an error or closes the connection). Fetch and FetchSnapshot, which carry record
batches, and DescribeQuorum come with the shell.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol

from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_res
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_res
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_res
from kio.static.primitive import i32, i64, u16

from ._messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Errors,
    VoteRequest,
    VoteResponse,
)

METADATA_TOPIC = "__cluster_metadata"
NO_ID = -1


class Endpoint(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


def _only_partition(topics: Sequence[object], what: str) -> object:
    """The one partition of ``__cluster_metadata`` a quorum message must be about."""
    if len(topics) != 1:
        raise ValueError(
            f"{what} names {len(topics)} topics, not just {METADATA_TOPIC}"
        )
    topic = topics[0]
    name = getattr(topic, "topic_name", None)
    partitions: Sequence[object] = getattr(topic, "partitions", ())
    first = partitions[0] if len(partitions) == 1 else None
    if name != METADATA_TOPIC or getattr(first, "partition_index", None) != 0:
        raise ValueError(f"{what} is not about {METADATA_TOPIC}-0")
    return first


def _id(value: int | None) -> BrokerId:
    return BrokerId(NO_ID if value is None else value)


def _optional(value: int) -> int | None:
    return None if value == NO_ID else value


# -- Vote -----------------------------------------------------------------------------


def encode_vote_request(
    message: VoteRequest, *, cluster_id: str, voter_id: int
) -> vote_req.VoteRequest:
    partition = vote_req.PartitionData(
        partition_index=i32(0),
        replica_epoch=i32(message.candidate_epoch),
        replica_id=BrokerId(message.candidate_id),
        replica_directory_id=None,
        voter_directory_id=None,
        last_offset_epoch=i32(message.last_offset_epoch),
        last_offset=i64(message.last_offset),
        pre_vote=message.pre_vote,
    )
    topic = vote_req.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return vote_req.VoteRequest(
        cluster_id=cluster_id, voter_id=BrokerId(voter_id), topics=(topic,)
    )


def decode_vote_request(request: vote_req.VoteRequest) -> VoteRequest:
    p = _only_partition(request.topics, "Vote")
    assert isinstance(p, vote_req.PartitionData)
    return VoteRequest(
        p.replica_epoch, p.replica_id, p.last_offset_epoch, p.last_offset, p.pre_vote
    )


def encode_vote_response(message: VoteResponse) -> vote_res.VoteResponse:
    partition = vote_res.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode(int(message.error)),
        leader_id=_id(message.leader_id),
        leader_epoch=i32(message.leader_epoch),
        vote_granted=message.vote_granted,
    )
    topic = vote_res.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return vote_res.VoteResponse(error_code=ErrorCode.none, topics=(topic,))


def decode_vote_response(
    response: vote_res.VoteResponse, *, pre_vote: bool
) -> VoteResponse:
    """``pre_vote`` is the request's: Kafka's answer does not repeat it."""
    p = _only_partition(response.topics, "VoteResponse")
    assert isinstance(p, vote_res.PartitionData)
    return VoteResponse(
        Errors(int(p.error_code)),
        p.leader_epoch,
        _optional(p.leader_id),
        p.vote_granted,
        pre_vote,
    )


# -- BeginQuorumEpoch ------------------------------------------------------------------


def encode_begin_quorum_epoch_request(
    message: BeginQuorumEpochRequest,
    *,
    cluster_id: str,
    voter_id: int,
    leader_endpoints: Sequence[Endpoint],
) -> bqe_req.BeginQuorumEpochRequest:
    partition = bqe_req.PartitionData(
        partition_index=i32(0),
        voter_directory_id=None,
        leader_id=BrokerId(message.leader_id),
        leader_epoch=i32(message.leader_epoch),
    )
    topic = bqe_req.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    endpoints = tuple(
        bqe_req.LeaderEndpoint(name=e.name, host=e.host, port=u16(e.port))
        for e in leader_endpoints
    )
    return bqe_req.BeginQuorumEpochRequest(
        cluster_id=cluster_id,
        voter_id=BrokerId(voter_id),
        topics=(topic,),
        leader_endpoints=endpoints,
    )


def decode_begin_quorum_epoch_request(
    request: bqe_req.BeginQuorumEpochRequest,
) -> BeginQuorumEpochRequest:
    p = _only_partition(request.topics, "BeginQuorumEpoch")
    assert isinstance(p, bqe_req.PartitionData)
    return BeginQuorumEpochRequest(p.leader_epoch, p.leader_id)


def encode_begin_quorum_epoch_response(
    message: BeginQuorumEpochResponse,
) -> bqe_res.BeginQuorumEpochResponse:
    partition = bqe_res.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode(int(message.error)),
        leader_id=_id(message.leader_id),
        leader_epoch=i32(message.leader_epoch),
    )
    topic = bqe_res.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return bqe_res.BeginQuorumEpochResponse(error_code=ErrorCode.none, topics=(topic,))


def decode_begin_quorum_epoch_response(
    response: bqe_res.BeginQuorumEpochResponse,
) -> BeginQuorumEpochResponse:
    p = _only_partition(response.topics, "BeginQuorumEpochResponse")
    assert isinstance(p, bqe_res.PartitionData)
    return BeginQuorumEpochResponse(
        Errors(int(p.error_code)), p.leader_epoch, _optional(p.leader_id)
    )


# -- EndQuorumEpoch --------------------------------------------------------------------


def encode_end_quorum_epoch_request(
    message: EndQuorumEpochRequest,
    *,
    cluster_id: str,
    leader_endpoints: Sequence[Endpoint],
) -> eqe_req.EndQuorumEpochRequest:
    candidates = tuple(
        eqe_req.ReplicaInfo(
            candidate_id=BrokerId(c), candidate_directory_id=uuid.UUID(int=0)
        )
        for c in message.preferred_successors
    )
    partition = eqe_req.PartitionData(
        partition_index=i32(0),
        leader_id=BrokerId(message.leader_id),
        leader_epoch=i32(message.leader_epoch),
        preferred_candidates=candidates,
    )
    topic = eqe_req.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    endpoints = tuple(
        eqe_req.LeaderEndpoint(name=e.name, host=e.host, port=u16(e.port))
        for e in leader_endpoints
    )
    return eqe_req.EndQuorumEpochRequest(
        cluster_id=cluster_id, topics=(topic,), leader_endpoints=endpoints
    )


def decode_end_quorum_epoch_request(
    request: eqe_req.EndQuorumEpochRequest,
) -> EndQuorumEpochRequest:
    p = _only_partition(request.topics, "EndQuorumEpoch")
    assert isinstance(p, eqe_req.PartitionData)
    successors = tuple(int(c.candidate_id) for c in p.preferred_candidates)
    return EndQuorumEpochRequest(p.leader_epoch, p.leader_id, successors)


def encode_end_quorum_epoch_response(
    message: EndQuorumEpochResponse,
) -> eqe_res.EndQuorumEpochResponse:
    partition = eqe_res.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode(int(message.error)),
        leader_id=_id(message.leader_id),
        leader_epoch=i32(message.leader_epoch),
    )
    topic = eqe_res.TopicData(
        topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)
    )
    return eqe_res.EndQuorumEpochResponse(error_code=ErrorCode.none, topics=(topic,))


def decode_end_quorum_epoch_response(
    response: eqe_res.EndQuorumEpochResponse,
) -> EndQuorumEpochResponse:
    p = _only_partition(response.topics, "EndQuorumEpochResponse")
    assert isinstance(p, eqe_res.PartitionData)
    return EndQuorumEpochResponse(
        Errors(int(p.error_code)), p.leader_epoch, _optional(p.leader_id)
    )
