"""The election messages through Kafka's byte layout (kio's codecs, generated from
Kafka's schemas) and back: every field the core uses survives, for every kind of value."""

from __future__ import annotations

import dataclasses
import io

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer
from kio.static.protocol import Entity

from minikafka.raft import Errors
from minikafka.raft._messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    VoteRequest,
    VoteResponse,
)
from minikafka.raft._wire import (
    decode_begin_quorum_epoch_request,
    decode_begin_quorum_epoch_response,
    decode_end_quorum_epoch_request,
    decode_end_quorum_epoch_response,
    decode_vote_request,
    decode_vote_response,
    encode_begin_quorum_epoch_request,
    encode_begin_quorum_epoch_response,
    encode_end_quorum_epoch_request,
    encode_end_quorum_epoch_response,
    encode_vote_request,
    encode_vote_response,
)


@attrs.frozen
class Endpoint:
    name: str
    host: str
    port: int


ENDPOINTS = [Endpoint("CONTROLLER", "127.0.0.1", 9090)]
ids = st.integers(0, 2**31 - 1)
epochs = st.integers(0, 2**31 - 1)
leaders = st.none() | ids
errors = st.sampled_from(list(Errors))


def through_bytes(entity: Entity) -> Entity:
    """What the other end of a connection decodes."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, size = entity_reader(type(entity))(buffer.getvalue(), 0)
    assert size == len(buffer.getvalue())
    return decoded


@given(epochs, ids, epochs, st.integers(0, 2**63 - 1), st.booleans())
def test_vote_requests(
    epoch: int, candidate: int, last_epoch: int, last: int, pre: bool
) -> None:
    message = VoteRequest(epoch, candidate, last_epoch, last, pre)
    wire = encode_vote_request(message, cluster_id="c", voter_id=3)
    assert decode_vote_request(through_bytes(wire)) == message  # type: ignore[arg-type]


@given(errors, epochs, leaders, st.booleans(), st.booleans())
def test_vote_responses(
    error: Errors, epoch: int, leader: int | None, granted: bool, pre: bool
) -> None:
    message = VoteResponse(error, epoch, leader, granted, pre)
    wire = through_bytes(encode_vote_response(message))
    assert decode_vote_response(wire, pre_vote=pre) == message  # type: ignore[arg-type]


@given(epochs, ids, errors, leaders)
def test_begin_quorum_epoch(
    epoch: int, leader: int, error: Errors, known: int | None
) -> None:
    request = BeginQuorumEpochRequest(epoch, leader)
    wire = encode_begin_quorum_epoch_request(
        request, cluster_id="c", voter_id=2, leader_endpoints=ENDPOINTS
    )
    decoded = through_bytes(wire)
    assert decode_begin_quorum_epoch_request(decoded) == request  # type: ignore[arg-type]
    assert decoded.leader_endpoints[0].port == 9090  # type: ignore[attr-defined]
    response = BeginQuorumEpochResponse(error, epoch, known)
    back = through_bytes(encode_begin_quorum_epoch_response(response))
    assert decode_begin_quorum_epoch_response(back) == response  # type: ignore[arg-type]


@given(epochs, ids, st.lists(ids, max_size=5), errors, leaders)
def test_end_quorum_epoch(
    epoch: int, leader: int, successors: list[int], error: Errors, known: int | None
) -> None:
    request = EndQuorumEpochRequest(epoch, leader, tuple(successors))
    wire = encode_end_quorum_epoch_request(
        request, cluster_id="c", leader_endpoints=ENDPOINTS
    )
    assert decode_end_quorum_epoch_request(through_bytes(wire)) == request  # type: ignore[arg-type]
    response = EndQuorumEpochResponse(error, epoch, known)
    back = through_bytes(encode_end_quorum_epoch_response(response))
    assert decode_end_quorum_epoch_response(back) == response  # type: ignore[arg-type]


def test_a_message_about_another_partition_is_refused() -> None:
    wire = encode_vote_request(VoteRequest(1, 2, 0, 0), cluster_id="c", voter_id=1)
    topic = wire.topics[0]
    moved = dataclasses.replace(
        wire,
        topics=(dataclasses.replace(topic, topic_name="orders"),),  # type: ignore[arg-type]
    )
    with pytest.raises(ValueError, match="not about __cluster_metadata-0"):
        decode_vote_request(moved)
    with pytest.raises(ValueError, match="names 2 topics"):
        decode_vote_request(dataclasses.replace(wire, topics=(topic, topic)))
