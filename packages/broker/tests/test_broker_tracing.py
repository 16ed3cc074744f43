"""The broker's traces: ``minikafka broker --trace-dir``, the environment
variable, and ``minikafka trace summary``.

One traced run of a real broker process (:class:`BrokerProcess` with ``trace_dir``) is
shared by most tests: confluent-kafka creates a topic with tiny segments, produces to it
one record per request and reads it back; then the broker is stopped with SIGTERM and the
directory is read. What the clients did and what the log directory holds are the ground
truth the trace is checked against. Waits have deadlines; nothing sleeps.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import attrs
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from typer.testing import CliRunner

import minikafka.broker  # noqa: F401  (registers every package's events for decode_event)
from minikafka.broker import KafkaApis
from minikafka.broker._cli import app
from minikafka.broker.testing import BrokerProcess
from minikafka.net import REQUEST_TIME_COMPONENTS, ApiKey
from minikafka.trace import TRACE_DIR_ENV, decode_event, read_trace, trace_files

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow
NODE_ID = 3  # not the default 1, so the envelope's node is seen to come from node.id
TOPIC = "traced"
RECORDS = 300
VALUE = b"v" * 100
SEGMENT_BYTES = 4096  # 300 batches of one 100 B record: about 42 KB, so about ten rolls
CLIENT_ID = "tracing-test"
STAGES = REQUEST_TIME_COMPONENTS[:-1]  # the five that add up to total_ms

Record = dict[str, object]


@attrs.frozen
class TracedRun:
    trace_dir: Path
    data_dir: Path
    records: list[Record]
    output: list[str]
    exit_status: int

    def of(self, component: str, event: str) -> list[Record]:
        return [
            r
            for r in self.records
            if (r["component"], r["event"]) == (component, event)
        ]

    def requests(self, api_name: str) -> list[Record]:
        return [r for r in self.of("net", "request") if r["api_name"] == api_name]


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": CLIENT_ID})
    futures = admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=DEADLINE)
    futures[topic].result(timeout=DEADLINE)


def _produce(bootstrap: str, topic: str, count: int) -> None:
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(error)

    # linger.ms=0 and one produce() at a time, each flushed: one record per Produce
    # request, so the log gets many small batches and the trace many requests.
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": CLIENT_ID,
            "acks": "1",
            "linger.ms": 0,
            "on_delivery": on_delivery,
        }
    )
    for _ in range(count):
        producer.produce(topic, VALUE, partition=0)
        assert producer.flush(DEADLINE) == 0
    assert errors == []


def _consume(bootstrap: str, topic: str, count: int) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": CLIENT_ID,
            "group.id": "tracing-test",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
        received = 0
        deadline = time.monotonic() + DEADLINE
        while received < count:
            assert time.monotonic() < deadline, (
                f"only {received} of {count} records arrived"
            )
            for message in consumer.consume(count - received, 1.0):
                assert message.error() is None, message.error()
                assert message.value() == VALUE
                received += 1
        return received
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> TracedRun:
    base = tmp_path_factory.mktemp("traced")
    trace_dir, data_dir = (
        base / "traces" / "run-1",
        base / "data",
    )  # the directory is created
    with pytest.MonkeyPatch.context() as env:
        env.delenv(TRACE_DIR_ENV, raising=False)
        broker = BrokerProcess(
            data_dir,
            overrides={
                "node.id": str(NODE_ID),
                "log.segment.bytes": str(SEGMENT_BYTES),
            },
            trace_dir=trace_dir,
        )
        broker.start()
    try:
        _create_topic(broker.bootstrap, TOPIC)
        _produce(broker.bootstrap, TOPIC, RECORDS)
        assert _consume(broker.bootstrap, TOPIC, RECORDS) == RECORDS
    finally:
        status = broker.stop()
    return TracedRun(
        trace_dir, data_dir, list(read_trace(trace_dir)), broker.output, status
    )


def test_the_broker_says_where_its_traces_go(run: TracedRun) -> None:
    assert run.exit_status == 0
    [line] = [line for line in run.output if "tracing to" in line]
    assert str(run.trace_dir.resolve()) in line
    assert f"trace-node{NODE_ID}-" in line
    files = trace_files(run.trace_dir)
    assert files, "no trace files"
    assert all(path.name.startswith(f"trace-node{NODE_ID}-") for path in files)


def test_every_line_is_a_complete_event_of_this_node(run: TracedRun) -> None:
    # read_trace skips a torn last line: after a clean stop there must be none.
    for path in trace_files(run.trace_dir):
        assert path.read_bytes().endswith(b"\n")
    assert {r["node"] for r in run.records} == {NODE_ID}
    for record in run.records:
        decode_event(record)  # every field of the registered type, with its type
    stamps = [r["ts"] for r in run.records]
    assert all(isinstance(ts, float) for ts in stamps)


def test_requests_carry_kafkas_time_breakdown(run: TracedRun) -> None:
    apis = Counter(r["api_name"] for r in run.of("net", "request"))
    for api in ("ApiVersions", "Metadata", "CreateTopics", "Produce", "Fetch"):
        assert apis[api] > 0, apis
    for request in run.of("net", "request"):
        assert isinstance(request["request_bytes"], int)
        assert request["request_bytes"] > 0
        assert isinstance(request["response_bytes"], int)
        # no acks=0 here: every request is answered
        assert request["response_bytes"] > 0
        total = request["total_ms"]
        assert isinstance(total, float)
        parts = [request[name] for name in STAGES]
        for part in parts:
            assert isinstance(part, float)
            assert -1e-6 <= part <= total + 1e-6, request
        # The five phases tile the request's life from read to sent (each of the six
        # written to the microsecond: three decimals, half a microsecond off at most).
        assert sum(p for p in parts if isinstance(p, float)) == pytest.approx(
            total, abs=3e-3
        )


def test_produce_and_fetch_requests_match_what_the_clients_did(run: TracedRun) -> None:
    produce = run.requests("Produce")
    # One record per request (flushed each time); the client may retry none on loopback.
    assert len(produce) == RECORDS
    assert {r["client_id"] for r in produce} == {CLIENT_ID}
    low, high = KafkaApis.SUPPORTED[ApiKey.PRODUCE]
    assert all(low <= _int(r["api_version"]) <= high for r in produce)
    assert sum(_int(r["request_bytes"]) for r in produce) > RECORDS * len(VALUE)
    # Each connection's correlation ids are distinct: one line per request, none twice.
    seen = Counter(
        (r["connection_id"], r["correlation_id"]) for r in run.of("net", "request")
    )
    assert max(seen.values()) == 1
    fetched = sum(_int(r["response_bytes"]) for r in run.requests("Fetch"))
    assert fetched > RECORDS * len(VALUE)


def test_connections_are_traced_from_accept_to_close(run: TracedRun) -> None:
    accepted = {r["connection_id"] for r in run.of("net", "connection_accepted")}
    closed = {r["connection_id"] for r in run.of("net", "connection_closed")}
    requested = {r["connection_id"] for r in run.of("net", "request")}
    assert requested <= accepted
    # The clean shutdown closes what the clients left open, and its events are written.
    assert closed == accepted


def test_segment_rolls_match_the_segments_on_disk(run: TracedRun) -> None:
    rolls = [r for r in run.of("log", "segment_roll") if r["topic"] == TOPIC]
    assert len(rolls) >= 2
    assert all(r["partition"] == 0 for r in rolls)
    bases = [_int(r["base_offset"]) for r in rolls]
    assert bases == sorted(bases)
    assert bases[0] > 0
    assert bases[-1] < RECORDS
    assert all(0 < _int(r["previous_segment_bytes"]) <= SEGMENT_BYTES for r in rolls)
    on_disk = sorted(int(p.stem) for p in (run.data_dir / f"{TOPIC}-0").glob("*.log"))
    assert on_disk == [0, *bases]


def test_trace_summary_prints_the_counts(run: TracedRun) -> None:
    result = CliRunner().invoke(app, ["trace", "summary", str(run.trace_dir)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    files = len(trace_files(run.trace_dir))
    assert lines[0] == f"{run.trace_dir}: {files} trace file(s)"
    counts = Counter((str(r["component"]), str(r["event"])) for r in run.records)
    rows = {tuple(line.split()[:2]): line.split()[2] for line in lines[2:-1]}
    assert rows == {key: str(count) for key, count in counts.items()}
    assert lines[-1].startswith(f"{len(run.records)} events, {len(counts)} event types")
    assert lines[-1].endswith(f"nodes {NODE_ID}")
    # The same report as the trace package's own command.
    module = subprocess.run(
        [sys.executable, "-m", "minikafka.trace", "summary", str(run.trace_dir)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=True,
    )
    assert module.stdout == result.stdout


def test_trace_summary_of_a_missing_or_empty_directory(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["trace", "summary", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2
    assert "not a directory" in missing.stderr
    empty = CliRunner().invoke(app, ["trace", "summary", str(tmp_path)])
    assert empty.exit_code == 0
    assert empty.stdout == f"{tmp_path}: no trace files (*.jsonl)\n"


def test_trace_summary_of_the_folder_make_run_traces_into(
    run: TracedRun, tmp_path: Path
) -> None:
    # `make run` traces each run into traces/<its start time>/: the folder's summary is
    # the newest run's, --all gives each run's.
    traces = tmp_path / "traces"
    newest = traces / "20261202T090000Z"
    shutil.copytree(run.trace_dir, newest)
    (traces / "20261201T090000Z").mkdir()
    shutil.copy(trace_files(run.trace_dir)[0], traces / "20261201T090000Z")
    older_file = trace_files(traces / "20261201T090000Z")[0]
    os.utime(older_file, (1_700_000_000, 1_700_000_000))
    alone = CliRunner().invoke(app, ["trace", "summary", str(run.trace_dir)])
    folder = CliRunner().invoke(app, ["trace", "summary", str(traces)])
    assert folder.exit_code == 0, folder.output
    first, rest = folder.stdout.split("\n", 1)
    assert first.startswith(f"{traces}: 2 run(s), the newest is {newest.name};")
    assert rest == alone.stdout.replace(str(run.trace_dir), str(newest))
    each = CliRunner().invoke(app, ["trace", "summary", "--all", str(traces)])
    assert each.exit_code == 0, each.output
    older, newer = each.stdout.split("\n\n")
    assert older.startswith(f"{traces / '20261201T090000Z'}: 1 trace file(s)\n")
    assert newer == rest


def test_a_trace_dir_that_cannot_be_created_stops_start_up(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    args = ["broker", "--override", "listeners=PLAINTEXT://127.0.0.1:0"]
    args += ["--override", f"log.dirs={tmp_path / 'data'}"]
    result = CliRunner().invoke(app, [*args, "--trace-dir", str(blocker / "traces")])
    assert result.exit_code == 2
    assert "cannot trace into" in result.stderr
    assert not (
        tmp_path / "data"
    ).exists()  # stopped before the broker touched its logs


def test_the_environment_variable_turns_tracing_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_env, from_flag = tmp_path / "env", tmp_path / "flag"
    monkeypatch.setenv(TRACE_DIR_ENV, str(from_env))
    with BrokerProcess(tmp_path / "data-env") as broker:
        _create_topic(broker.bootstrap, "from-env")
    assert any("tracing to" in line for line in broker.output)
    records = list(read_trace(from_env))
    assert {r["node"] for r in records} == {1}
    assert {"CreateTopics", "Metadata"} <= {r.get("api_name") for r in records}

    # --trace-dir wins over the variable.
    before = trace_files(from_env)
    with BrokerProcess(tmp_path / "data-flag", trace_dir=from_flag) as broker:
        _create_topic(broker.bootstrap, "from-flag")
    assert trace_files(from_env) == before
    assert any(r.get("api_name") == "CreateTopics" for r in read_trace(from_flag))


def test_no_tracing_without_the_flag_or_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRACE_DIR_ENV, "")  # empty means off, as unset does
    with monkeypatch.context() as cwd:
        cwd.chdir(tmp_path)
        with BrokerProcess(tmp_path / "data") as broker:
            _create_topic(broker.bootstrap, "untraced")
    assert not any("tracing to" in line for line in broker.output)
    assert list(tmp_path.rglob("*.jsonl")) == []


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value


def test_trace_events_writes_only_the_kinds_asked_for(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    with BrokerProcess(
        tmp_path / "data", trace_dir=traces, trace_events=("net.request",)
    ) as broker:
        _create_topic(broker.bootstrap, "selected")
    records = list(read_trace(traces))
    assert {(r["component"], r["event"]) for r in records} == {("net", "request")}
    assert "CreateTopics" in {r["api_name"] for r in records}


def test_an_unknown_trace_event_kind_stops_start_up(tmp_path: Path) -> None:
    args = ["broker", "--override", "listeners=PLAINTEXT://127.0.0.1:0"]
    args += ["--override", f"log.dirs={tmp_path / 'data'}"]
    args += ["--trace-dir", str(tmp_path / "traces")]
    result = CliRunner().invoke(app, [*args, "--trace-events", "net.request,net.nope"])
    assert result.exit_code == 2
    assert "no such trace events: ['net.nope']" in result.stderr
    assert not (tmp_path / "data").exists()
    assert not (tmp_path / "traces").exists()
