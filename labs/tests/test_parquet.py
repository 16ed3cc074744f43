"""to_parquet: one parse per line, and the JSON Lines' own answers, torn lines included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from minikafka.labs import read_events, to_parquet
from minikafka.log import SegmentRolled
from minikafka.net import ConnectionAccepted, RequestCompleted
from minikafka.trace import JsonLinesTracer, TraceEvent

TYPES = (RequestCompleted, SegmentRolled, ConnectionAccepted)


def _request(api: str, total_ms: float) -> RequestCompleted:
    return RequestCompleted(
        listener="PLAINTEXT",
        connection_id="c1",
        processor_id=0,
        client_id="lab",
        api_key=0,
        api_name=api,
        api_version=7,
        correlation_id=1,
        request_bytes=100,
        response_bytes=50,
        request_queue_ms=0.1,
        local_ms=0.2,
        remote_ms=total_ms - 0.5,
        response_queue_ms=0.1,
        response_send_ms=0.1,
        total_ms=total_ms,
    )


def _trace(directory: Path, node: int) -> Path:
    tracer = JsonLinesTracer.open(directory, node=node)
    for i in range(5):
        tracer.emit(_request("Produce", 2.0 + i), ts=1_700_000_000.0 + i)
    tracer.emit(
        SegmentRolled("orders", 0, 1200, "segment.bytes", 4096), ts=1_700_000_010.0
    )
    tracer.close()
    (path,) = directory.glob(f"trace-node{node}-*.jsonl")
    return path


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)


def _rows(
    spark: SparkSession, directory: Path, event_type: type[TraceEvent]
) -> list[tuple[object, ...]]:
    return sorted(map(tuple, read_events(spark, directory, event_type).collect()))


@pytest.fixture
def untidy_trace(tmp_path: Path) -> Path:
    """Two nodes' files: well-formed events, then what a real directory can also hold."""
    directory = tmp_path / "traces"
    directory.mkdir()
    first = _trace(directory, 1)
    second = _trace(directory, 2)
    accepted = {"listener": "PLAINTEXT", "connection_id": "c9", "processor_id": 1}
    _append(
        first,
        "not json at all\n"
        "\n"
        # Valid JSON, envelope keys in another order with spaces: not the tracer's
        # prefix, so its type comes from parsing the two keys.
        + json.dumps(
            {
                "component": "net",
                "event": "connection_accepted",
                "node": 1,
                "ts": 1_700_000_020.5,
                **accepted,
            }
        )
        + "\n"
        # An event type no package registers.
        '{"ts":1700000021.0,"node":1,"component":"nobody","event":"knows","x":1}\n'
        # The process was killed mid-line: no newline, the JSON cut after the envelope.
        '{"ts":1700000022.0,"node":1,"component":"net","event":"request","listener":"PL',
    )
    # Killed earlier in its line: not even the envelope is whole.
    _append(second, '{"ts":1700000023.0,"node":2,"compo')
    return directory


def test_a_torn_last_line_converts_to_what_read_events_reads_from_the_json(
    spark: SparkSession, untidy_trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "parquet"
    written = to_parquet(spark, untidy_trace, out)
    assert written == sorted((t.COMPONENT, t.EVENT) for t in TYPES)
    for event_type in TYPES:
        from_json = read_events(spark, untidy_trace, event_type)
        from_parquet = read_events(spark, out, event_type)
        assert from_parquet.columns == from_json.columns
        assert _rows(spark, out, event_type) == _rows(spark, untidy_trace, event_type)
    # The torn line is dropped, as read_events drops it from the JSON Lines.
    assert len(_rows(spark, out, RequestCompleted)) == 10
    accepted = read_events(spark, out, ConnectionAccepted).collect()
    assert [(row.node, row.connection_id) for row in accepted] == [(1, "c9")]
    # The staging area is gone; only the types and the marker are left.
    assert sorted(p.name for p in out.iterdir()) == [
        "_MINIKAFKA_TRACE",
        "component=log",
        "component=net",
    ]
    assert {p.name for p in (out / "component=net").iterdir()} == {
        f"event={RequestCompleted.EVENT}",
        f"event={ConnectionAccepted.EVENT}",
    }
    assert {p.name for p in (out / "component=net/event=request").iterdir()} >= {
        "node=1",
        "node=2",
    }


def test_converting_again_replaces_the_types_written(
    spark: SparkSession, untidy_trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "parquet"
    to_parquet(spark, untidy_trace, out)
    to_parquet(spark, untidy_trace, out)
    assert len(_rows(spark, out, RequestCompleted)) == 10
    assert not list(out.glob("_staging-*"))


def test_a_type_the_new_trace_lacks_does_not_survive_a_conversion_over_an_old_one(
    spark: SparkSession, untidy_trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "parquet"
    to_parquet(spark, untidy_trace, out)
    assert (out / "component=log" / "event=segment_roll").is_dir()
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    tracer = JsonLinesTracer.open(fewer, node=3)
    tracer.emit(_request("Fetch", 1.0), ts=1_700_000_030.0)
    tracer.close()
    assert to_parquet(spark, fewer, out) == [("net", "request")]
    assert not (out / "component=log").exists()
    assert len(_rows(spark, out, RequestCompleted)) == 1


def test_a_directory_that_is_not_a_converted_trace_is_not_overwritten(
    spark: SparkSession, untidy_trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    with pytest.raises(FileExistsError, match="not a converted trace"):
        to_parquet(spark, untidy_trace, out)
    assert (out / "notes.txt").read_text() == "keep me\n"
