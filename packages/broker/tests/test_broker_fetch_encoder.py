"""The hand-written Fetch response encoder against kio's, byte for byte.

``encode_fetch_response`` writes every field itself and leaves the records in the segment
files as file regions (sent with ``sendfile``). Reading those regions back and splicing
them in must give exactly what kio's generated encoder writes for the same response with
the records inline, for every version the broker advertises: the flexible versions'
compact lengths and tagged fields (v12+), topic ids (v13+), a session's id and error
(v7+), KIP-951's current leaders and their endpoints (v16+).
"""

from __future__ import annotations

import datetime
import itertools
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from minikafka.broker import KafkaApis, encode_fetch_response
from minikafka.broker._fetch_sessions import FetchAnswer
from minikafka.broker._metadata_cache import AliveBroker
from minikafka.common import FileRegion, TopicPartition
from minikafka.log import FileSlice, build_batch, make_records
from minikafka.net import ApiKey, build, encode_entity, nested, response_schema
from minikafka.replication import FetchPartition, FetchPartitionResult

FETCH_KEY = ApiKey.FETCH
LOW, HIGH = KafkaApis.SUPPORTED[FETCH_KEY]
VERSIONS = range(LOW, HIGH + 1)

Result = tuple[FetchPartition, FetchPartitionResult]


@pytest.fixture
def segment(tmp_path: Path) -> Iterator[tuple[int, Path, list[tuple[int, int]]]]:
    """A file of three batches: its fd, its path and each batch's (position, length)."""
    path = tmp_path / "00000000000000000000.log"
    batches = [
        build_batch(
            make_records([(b"k%d" % i, b"v" * (i * 7))], timestamp_ms=1_000 + i)
        )
        for i in range(3)
    ]
    path.write_bytes(b"".join(batches))
    spans, position = [], 0
    for batch in batches:
        spans.append((position, len(batch)))
        position += len(batch)
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd, path, spans
    finally:
        os.close(fd)


def fetch(topic: str, partition: int) -> FetchPartition:
    return FetchPartition(
        TopicPartition(topic, partition), fetch_offset=0, max_bytes=1 << 20
    )


def splice(parts: Sequence[bytes | FileRegion]) -> bytes:
    """The bytes on the wire: file regions read from their files."""
    out = bytearray()
    for part in parts:
        if isinstance(part, bytes):
            out += part
            continue
        assert isinstance(part.file, (str, os.PathLike))
        with open(part.file, "rb") as f:
            f.seek(part.position)
            data = f.read(part.length)
        assert len(data) == part.length
        out += data
    return bytes(out)


TOPIC_IDS = {
    name: uuid.uuid5(uuid.NAMESPACE_DNS, name)
    for name in ("orders", "tópico-ü", "z", "t")
}


def kio_encoding(
    version: int,
    results: Sequence[Result],
    read_committed: bool,
    session: FetchAnswer | None = None,
    leaders: dict[TopicPartition, tuple[int, int]] | None = None,
    endpoints: Sequence[AliveBroker] = (),
) -> bytes:
    """The same response built from kio's classes, records inline."""
    cls = response_schema(FETCH_KEY, version)
    assert cls is not None
    topic_cls = nested(cls, "responses")
    partition_cls = nested(topic_cls, "partitions")
    topics: list[tuple[str, list[Entity]]] = []
    for request, result in results:
        tp = request.topic_partition
        if not topics or topics[-1][0] != tp.topic:
            topics.append((tp.topic, []))
        records = b"" if result.records is None else result.records.read_bytes()
        extra: dict[str, object] = {}
        if result.diverging_epoch is not None:
            epoch, end = result.diverging_epoch
            extra["diverging_epoch"] = build(
                nested(partition_cls, "diverging_epoch"), epoch=epoch, end_offset=end
            )
        leader = (leaders or {}).get(tp)
        if leader is not None:
            leader_cls = nested(partition_cls, "current_leader")
            extra["current_leader"] = build(
                leader_cls, leader_id=leader[0], leader_epoch=leader[1]
            )
        topics[-1][1].append(
            build(
                partition_cls,
                partition_index=tp.partition,
                error_code=result.error_code,
                high_watermark=result.high_watermark,
                last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset,
                # Empty for read_committed, and for a partition refused before any
                # read (unknown), as Kafka answers; null otherwise.
                aborted_transactions=()
                if read_committed
                or result.error_code
                in (ErrorCode.unknown_topic_or_partition, ErrorCode.unknown_topic_id)
                else None,
                preferred_read_replica=-1,
                records=records,
                **extra,
            )
        )
    top: dict[str, object] = {}
    if endpoints:
        node_cls = nested(cls, "node_endpoints")
        top["node_endpoints"] = tuple(
            build(node_cls, node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
            for n in endpoints
        )
    body = build(
        cls,
        throttle_time=datetime.timedelta(0),
        error_code=session.error_code if session else ErrorCode.none,
        session_id=session.session_id if session else 0,
        responses=tuple(
            build(
                topic_cls, topic=name, topic_id=TOPIC_IDS[name], partitions=tuple(parts)
            )
            for name, parts in topics
        ),
        **top,
    )
    return encode_entity(body)


def encode(
    version: int, results: Sequence[Result], read_committed: bool
) -> list[bytes | FileRegion]:
    return encode_fetch_response(version, results, read_committed, topic_ids=TOPIC_IDS)


def mixed_results(fd: int, path: Path, spans: list[tuple[int, int]]) -> list[Result]:
    """Two topics (one with a non-ASCII name), data, an error, empty records, a slice of two."""
    (p0, l0), (p1, l1), (p2, l2) = spans
    return [
        (
            fetch("orders", 0),
            FetchPartitionResult(ErrorCode.none, 3, 3, 0, FileSlice(fd, path, p0, l0)),
        ),
        (fetch("orders", 1), FetchPartitionResult(ErrorCode.none, 10, 9, 2, None)),
        (
            fetch("orders", 7),
            FetchPartitionResult(
                ErrorCode.none, 42, 42, 40, FileSlice(fd, path, p1, l1 + l2)
            ),
        ),
        (
            fetch("tópico-ü", 0),
            FetchPartitionResult(ErrorCode.offset_out_of_range, 5, 5, 1),
        ),
        (
            fetch("tópico-ü", 2),
            FetchPartitionResult(ErrorCode.unknown_topic_or_partition),
        ),
        (
            fetch("tópico-ü", 3),
            FetchPartitionResult(ErrorCode.none, 1, 1, 0, FileSlice(fd, path, p2, 0)),
        ),
        (
            fetch("z", 2**31 - 1),
            FetchPartitionResult(
                ErrorCode.none, 2**40, 2**40, 2**39, FileSlice(fd, path, 0, l0)
            ),
        ),
    ]


@pytest.mark.parametrize(
    "read_committed", [False, True], ids=["uncommitted", "committed"]
)
@pytest.mark.parametrize("version", VERSIONS)
def test_the_encoder_writes_what_kio_writes(
    segment: tuple[int, Path, list[tuple[int, int]]], version: int, read_committed: bool
) -> None:
    results = mixed_results(*segment)
    parts = encode(version, results, read_committed)
    assert splice(parts) == kio_encoding(version, results, read_committed)


@pytest.mark.parametrize("version", VERSIONS)
def test_records_are_file_regions_never_copied(
    segment: tuple[int, Path, list[tuple[int, int]]], version: int
) -> None:
    fd, path, spans = segment
    results = mixed_results(fd, path, spans)
    parts = encode(version, results, read_committed=False)
    regions = [p for p in parts if isinstance(p, FileRegion)]
    sent = [
        r.records for _, r in results if r.records is not None and r.records.length > 0
    ]
    assert [(r.file, r.position, r.length) for r in regions] == [
        (s.path, s.position, s.length) for s in sent
    ]
    # Never two bytes parts in a row: the fields between two regions are one write.
    kinds = [isinstance(p, bytes) for p in parts]
    assert not any(a and b for a, b in itertools.pairwise(kinds))


@pytest.mark.parametrize(
    "read_committed", [False, True], ids=["uncommitted", "committed"]
)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_response_without_records_or_partitions(
    version: int, read_committed: bool
) -> None:
    empty: list[Result] = []
    parts = encode(version, empty, read_committed)
    assert splice(parts) == kio_encoding(version, empty, read_committed)
    only_errors = [
        (fetch("t", 0), FetchPartitionResult(ErrorCode.not_leader_or_follower))
    ]
    parts = encode(version, only_errors, read_committed)
    assert all(isinstance(p, bytes) for p in parts)
    assert splice(parts) == kio_encoding(version, only_errors, read_committed)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_aborted_transactions_field_depends_on_the_isolation_level(
    version: int,
) -> None:
    results = [(fetch("t", 0), FetchPartitionResult(ErrorCode.none, 1, 1, 0, None))]
    uncommitted = splice(encode(version, results, read_committed=False))
    committed = splice(encode(version, results, read_committed=True))
    # The only difference: null (-1) for read_uncommitted, an empty array (0) otherwise;
    # from v12 compact: null is 0, empty is 1 (length + 1).
    assert len(uncommitted) == len(committed)
    diff = [
        i for i, (a, b) in enumerate(zip(uncommitted, committed, strict=True)) if a != b
    ]
    null, empty = (b"\x00", b"\x01") if version >= 12 else (b"\xff" * 4, b"\x00" * 4)
    assert uncommitted[diff[0] : diff[-1] + 1] == null
    assert committed[diff[0] : diff[-1] + 1] == empty


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 7])
def test_a_session_s_id_and_error(
    segment: tuple[int, Path, list[tuple[int, int]]], version: int
) -> None:
    results = mixed_results(*segment)
    session = FetchAnswer(ErrorCode.none, 123_456_789, [])
    parts = encode_fetch_response(
        version, results, False, session=session, topic_ids=TOPIC_IDS
    )
    assert splice(parts) == kio_encoding(version, results, False, session)
    refused = FetchAnswer(ErrorCode.invalid_fetch_session_epoch, 0, [])
    parts = encode_fetch_response(version, [], False, session=refused)
    assert splice(parts) == kio_encoding(version, [], False, refused)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 16])
def test_current_leaders_and_their_endpoints(
    segment: tuple[int, Path, list[tuple[int, int]]], version: int
) -> None:
    results = [
        *mixed_results(*segment),
        (fetch("t", 1), FetchPartitionResult(ErrorCode.not_leader_or_follower)),
        (fetch("t", 4), FetchPartitionResult(ErrorCode.fenced_leader_epoch)),
    ]
    leaders = {TopicPartition("t", 1): (2, 7), TopicPartition("t", 4): (3, 0)}
    endpoints = [AliveBroker(2, "b2.example", 9093, "r1"), AliveBroker(3, "ö", 1, None)]
    parts = encode_fetch_response(
        version,
        results,
        True,
        topic_ids=TOPIC_IDS,
        current_leaders=leaders,
        endpoints=endpoints,
    )
    assert splice(parts) == kio_encoding(
        version, results, True, None, leaders, endpoints
    )


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 12])
def test_a_diverging_epoch(version: int) -> None:
    """Tagged field 0 of a partition (v12+): where the fetcher's log diverged."""
    results = [
        (
            fetch("t", 0),
            FetchPartitionResult(ErrorCode.none, 9, 9, 0, None, None, (2, 7)),
        ),
        (fetch("t", 1), FetchPartitionResult(ErrorCode.not_leader_or_follower)),
    ]
    leaders = {TopicPartition("t", 0): (1, 4)} if version >= 16 else {}
    parts = encode_fetch_response(
        version, results, False, topic_ids=TOPIC_IDS, current_leaders=leaders
    )
    assert splice(parts) == kio_encoding(version, results, False, None, leaders)
