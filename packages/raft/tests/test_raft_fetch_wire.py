"""Fetch and FetchSnapshot of the quorum through Kafka's byte layout and back (KIP-595,
KIP-630): entries, control entries included, survive as record batches; a diverging
epoch, a snapshot id and errors survive; anything not about ``__cluster_metadata-0`` is
refused; and a response is only accepted as the answer to its own kind of request."""

from __future__ import annotations

import dataclasses
import io
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32
from kio.static.protocol import Entity

from minikafka.raft import Entry, Errors, SnapshotId, wire
from minikafka.raft._messages import (
    DivergingEpoch,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
)

epochs = st.integers(1, 2**31 - 1)
offsets = st.integers(0, 2**40)


def through_bytes(entity: Entity) -> Entity:
    """What the other end of a connection decodes."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, size = entity_reader(type(entity))(buffer.getvalue(), 0)
    assert size == len(buffer.getvalue())
    return decoded


@given(st.integers(0, 2**31 - 1), epochs, offsets, st.integers(0, 2**31 - 1))
def test_fetch_requests(replica: int, epoch: int, offset: int, last_epoch: int) -> None:
    sent = FetchRequest(replica, epoch, offset, last_epoch)
    body = wire.encode_fetch_request(sent, cluster_id="c", max_wait=0.5)
    assert wire.decode_request(through_bytes(body)) == (replica, sent)  # type: ignore[arg-type]


def test_a_fetcher_with_nothing_says_epoch_0() -> None:
    """-1 (the schema's unknown, what a broker with an empty log sends) is the core's 0."""
    body = wire.encode_fetch_request(
        FetchRequest(4, 1, 0, 0), cluster_id="c", max_wait=0.5
    )
    unknown = dataclasses.replace(
        body,
        topics=(
            dataclasses.replace(
                body.topics[0],
                partitions=(
                    dataclasses.replace(
                        body.topics[0].partitions[0], last_fetched_epoch=i32(-1)
                    ),
                ),
            ),
        ),
    )
    assert wire.decode_fetch_request(unknown).last_fetched_epoch == 0


entries = st.lists(
    st.tuples(st.binary(max_size=40), st.booleans()), min_size=0, max_size=8
).map(
    lambda items: tuple(
        Entry(100 + i, 3 + i // 3, data, control)
        for i, (data, control) in enumerate(items)
    )
)


@given(entries, st.integers(-1, 2**40), st.sampled_from(list(Errors)))
def test_fetch_responses_carry_entries_as_batches(
    records: tuple[Entry, ...], high_watermark: int, error: Errors
) -> None:
    sent = FetchResponse(error, 7, 2, high_watermark, records)
    body = wire.encode_fetch_response(sent, log_start_offset=0)
    request = FetchRequest(1, 7, 100, 3)
    assert wire.decode_response(request, through_bytes(body)) == sent


@pytest.mark.parametrize(
    "sent",
    [
        FetchResponse(Errors.NONE, 5, 0, 10, diverging_epoch=DivergingEpoch(3, 42)),
        FetchResponse(Errors.NONE, 5, 0, 10, snapshot_id=SnapshotId(40, 4)),
        FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, 6, None),
        FetchResponse(Errors.FENCED_LEADER_EPOCH, 6, 1),
    ],
)
def test_fetch_responses_carry_corrections_and_errors(sent: FetchResponse) -> None:
    body = wire.encode_fetch_response(sent, log_start_offset=0)
    assert wire.decode_response(FetchRequest(1, 5, 50, 4), through_bytes(body)) == sent


@given(st.integers(0, 2**31 - 1), epochs, offsets, epochs, st.integers(0, 2**31 - 1))
def test_fetch_snapshot_requests(
    replica: int, epoch: int, end: int, snapshot_epoch: int, position: int
) -> None:
    sent = FetchSnapshotRequest(
        replica, epoch, SnapshotId(end, snapshot_epoch), position
    )
    body = wire.encode_fetch_snapshot_request(sent, cluster_id="c", max_bytes=1024)
    assert wire.decode_request(through_bytes(body)) == (replica, sent)  # type: ignore[arg-type]


@given(st.binary(max_size=100), st.integers(0, 1000))
def test_fetch_snapshot_responses(chunk: bytes, position: int) -> None:
    snapshot = SnapshotId(40, 4)
    sent = FetchSnapshotResponse(
        Errors.NONE, 5, 0, snapshot, position + len(chunk), position, chunk
    )
    request = FetchSnapshotRequest(1, 5, snapshot, position)
    body = wire.encode_fetch_snapshot_response(sent, snapshot)
    assert wire.decode_response(request, through_bytes(body)) == sent
    refused = FetchSnapshotResponse(Errors.SNAPSHOT_NOT_FOUND, 5, 0)
    body = wire.encode_fetch_snapshot_response(refused, snapshot)
    assert wire.decode_response(request, through_bytes(body)) == refused


def test_a_fetch_of_another_topic_is_refused() -> None:
    body = wire.encode_fetch_request(
        FetchRequest(1, 1, 0, 0), cluster_id="c", max_wait=0.5
    )
    other = dataclasses.replace(
        body, topics=(dataclasses.replace(body.topics[0], topic_id=uuid.uuid4()),)
    )
    with pytest.raises(ValueError, match="__cluster_metadata-0"):
        wire.decode_request(other)


def test_an_answer_of_the_wrong_kind_is_refused() -> None:
    answer = wire.encode_fetch_response(
        FetchResponse(Errors.NONE, 1, 0, 0), log_start_offset=0
    )
    with pytest.raises(ValueError, match="does not answer"):
        wire.decode_response(VoteRequest(1, 0, 0, 0), answer)
