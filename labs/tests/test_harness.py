"""The lab harness: Spark reads trace files with the trace package's schemas."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from minikafka.labs import (
    ExerciseNotDone,
    Lab,
    all_labs,
    find_lab,
    lab_of,
    read_events,
    spark_session,
    to_parquet,
)
from minikafka.log import SegmentRolled
from minikafka.net import RequestCompleted
from minikafka.trace import JsonLinesTracer


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


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    tracer = JsonLinesTracer.open(tmp_path, node=1)
    tracer.emit(_request("Produce", 2.0), ts=1_700_000_000.25)
    tracer.emit(
        SegmentRolled("orders", 0, 1200, "segment.bytes", 4096), ts=1_700_000_001.0
    )
    tracer.emit(_request("Fetch", 501.0), ts=1_700_000_002.5)
    tracer.close()
    return tmp_path


def test_read_events_keeps_one_event_type_with_its_schema(
    spark: SparkSession, trace_dir: Path
) -> None:
    requests = read_events(spark, trace_dir, RequestCompleted)
    rows = sorted(requests.collect(), key=lambda row: row.ts)
    assert [(row.api_name, row.total_ms, row.node) for row in rows] == [
        ("Produce", 2.0, 1),
        ("Fetch", 501.0, 1),
    ]
    assert dict(requests.dtypes)["request_bytes"] == "bigint"
    # `time` is ts as a UTC timestamp.
    assert rows[0].time.isoformat().startswith("2023-11-14T22:13:20.25")

    rolls = read_events(spark, trace_dir, SegmentRolled).collect()
    assert [(row.topic, row.base_offset, row.reason) for row in rolls] == [
        ("orders", 1200, "segment.bytes")
    ]


def test_read_events_names_an_empty_directory(
    spark: SparkSession, tmp_path: Path
) -> None:
    with pytest.raises(FileNotFoundError, match="no trace files"):
        read_events(spark, tmp_path, SegmentRolled)


def test_the_session_is_local_and_utc(spark: SparkSession) -> None:
    assert spark_session() is spark
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert str(spark.sparkContext.master).startswith("local")
    assert spark.conf.get("spark.ui.enabled") == "false"


def test_labs_are_found_by_number_and_by_file() -> None:
    labs = all_labs()
    assert [lab.number for lab in labs] == sorted(lab.number for lab in labs)
    for lab in labs:
        assert find_lab(lab.number) == lab
        assert lab_of(lab.directory / "test_lab.py") == lab
    with pytest.raises(LookupError, match="there is no lab 99"):
        find_lab(99)


def test_a_lab_loads_its_modules_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number, answer in ((98, 1), (97, 2)):
        directory = tmp_path / f"{number}-demo"
        directory.mkdir()
        (directory / "exercises.py").write_text("ANSWER = 0\n")
        # The reference answers live apart, in instructor/NN-topic/.
        reference = tmp_path / "instructor" / directory.name
        reference.mkdir(parents=True)
        (reference / "solutions.py").write_text(f"ANSWER = {answer}\n")
    first, second = Lab(98, tmp_path / "98-demo"), Lab(97, tmp_path / "97-demo")
    assert first.implementation().ANSWER == 1
    assert second.implementation().ANSWER == 2
    monkeypatch.setenv("MINIKAFKA_LAB_IMPL", "exercises")
    assert first.implementation().ANSWER == 0
    monkeypatch.setenv("MINIKAFKA_LAB_IMPL", "answers")
    with pytest.raises(ValueError, match="expected one of solutions, exercises"):
        first.implementation()


def test_an_unfinished_exercise_says_which() -> None:
    error = ExerciseNotDone("request_counts", "group by api_name")
    assert str(error) == (
        "exercise 'request_counts' is not done yet: write it in exercises.py (group by api_name)"
    )


def test_a_trace_converted_to_parquet_reads_the_same_by_event_type(
    spark: SparkSession, trace_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "parquet"
    written = to_parquet(spark, trace_dir, out)
    assert written == sorted(
        [
            (SegmentRolled.COMPONENT, SegmentRolled.EVENT),
            (RequestCompleted.COMPONENT, RequestCompleted.EVENT),
        ]
    )
    # One directory per event type, partitioned by node.
    requests_dir = out / "component=net" / f"event={RequestCompleted.EVENT}"
    assert (requests_dir / "node=1").is_dir()
    for event_type in (RequestCompleted, SegmentRolled):
        from_json = read_events(spark, trace_dir, event_type)
        from_parquet = read_events(spark, out, event_type)
        assert from_parquet.columns == from_json.columns
        assert sorted(map(tuple, from_parquet.collect())) == sorted(
            map(tuple, from_json.collect())
        )
