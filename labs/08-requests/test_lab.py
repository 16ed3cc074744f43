"""Lab 8's checks: each exercise's answer against what the clients recorded themselves.

The scenario runs once for the module. Its ``truth.json`` comes from the clients'
side: librdkafka's own counters and round-trip times (``stats_cb``), the delivery latency
the scenario measured for every message, and the wall-clock window of each phase. Each
answer is also compared with the same number computed in plain Python from the trace
files, so a check fails for a wrong answer even where the clients cannot see the broker.

What librdkafka's statistics cannot count: the requests of its *bootstrap* connection
(the first one, to the address in ``bootstrap.servers``; its counters are dropped when
the client learns the broker's node id and moves to a connection of its own) and any
request sent after its last report (a consumer may refresh metadata as it closes). The
checks take those from the trace, by connection and time, and add them to the client's
counts; they must be only the requests such a connection or moment can carry.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from minikafka.labs import (
    IMPLEMENTATION_ENV,
    ExerciseNotDone,
    implementations,
    lab_of,
    load_answers,
    read_events,
    scenario_run,
    trace_schema,
)
from minikafka.net import REQUEST_TIME_COMPONENTS, RequestCompleted
from minikafka.trace import read_trace

LAB = lab_of(__file__)
pytestmark = pytest.mark.timeout(600)

Record = dict[str, Any]
"""One ``net.request`` event as read in plain Python from the trace files."""

# librdkafka's names for the request types it counts, where they are not Kafka's.
_LIBRDKAFKA_NAMES = {"ApiVersion": "ApiVersions", "Offset": "ListOffsets"}
_SIZE_PREFIX = 4  # librdkafka counts a frame's 4-byte size; the trace does not
STAMP_SLACK_MS = 20.0
"""How much later than the client's callback the broker may stamp a request done: its
task is scheduled after the response's bytes are written (see test_time_percentiles)."""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_run(LAB, tmp_path_factory, seed=1, scale=1.0)


@pytest.fixture(scope="module")
def truth(run_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run_dir / "truth.json").read_text())
    return loaded


@pytest.fixture(scope="module")
def raw(run_dir: Path) -> list[Record]:
    return [
        record
        for record in read_trace(run_dir / "traces")
        if record["component"] == RequestCompleted.COMPONENT
        and record["event"] == RequestCompleted.EVENT
    ]


@pytest.fixture(scope="module")
def requests(spark: SparkSession, run_dir: Path) -> DataFrame:
    return read_events(spark, run_dir / "traces", RequestCompleted).cache()


@pytest.fixture(scope="module", params=implementations(LAB))
def answers(request: pytest.FixtureRequest) -> ModuleType:
    """The reference, then each mutant (a wrong answer the checks must fail)."""
    return load_answers(LAB, request.param)


# --- plain Python, for comparison ------------------------------------------------------


def percentile(values: Iterable[float], p: float) -> float:
    """Exact, linear between the nearest ranks: what Spark's ``percentile`` computes."""
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def of_client(raw: list[Record], client_id: str) -> list[Record]:
    return sorted(
        (r for r in raw if r["client_id"] == client_id), key=lambda r: r["ts"]
    )


def bootstrap_connection(raw: list[Record], client_id: str) -> str:
    """The client's first connection: librdkafka's bootstrap broker."""
    connection: str = of_client(raw, client_id)[0]["connection_id"]
    return connection


def stats_counts(facts: dict[str, Any]) -> Counter[str]:
    """Requests per API in the client's last statistics report, all its brokers together."""
    counts: Counter[str] = Counter()
    for broker in facts["stats"]["brokers"].values():
        for api, n in broker["req"].items():
            counts[_LIBRDKAFKA_NAMES.get(api, api)] += n
    return counts


def stats_total(facts: dict[str, Any], counter: str) -> int:
    return sum(int(broker[counter]) for broker in facts["stats"]["brokers"].values())


def not_in_stats(
    raw: list[Record], client_id: str, facts: dict[str, Any]
) -> list[Record]:
    """The client's requests its statistics cannot include (see the module docstring)."""
    bootstrap = bootstrap_connection(raw, client_id)
    mine = of_client(raw, client_id)
    early = [r for r in mine if r["connection_id"] == bootstrap]
    if any(b["source"] == "configured" for b in facts["stats"]["brokers"].values()):
        early = []  # the bootstrap broker is still in the report: its requests are counted
    late = [
        r
        for r in mine
        if r["connection_id"] != bootstrap and r["ts"] > facts["stats"]["taken_at"]
    ]
    # A bootstrap connection only learns about the cluster; nothing else goes over it.
    assert {r["api_name"] for r in early} <= {
        "ApiVersions",
        "Metadata",
        "FindCoordinator",
    }
    assert Counter(r["api_name"] for r in early)["ApiVersions"] == 1
    assert {r["api_name"] for r in late} <= {"Metadata"}, (client_id, late)
    assert len(late) <= 2, (client_id, late)
    return early + late


def rows_by(frame: DataFrame, *keys: str) -> dict[tuple[Any, ...], Any]:
    rows = frame.collect()
    table = {tuple(row[key] for key in keys): row for row in rows}
    assert len(table) == len(rows), f"more than one row per {keys}"
    return table


def answer(answers: ModuleType, exercise: str, *args: Any, **kwargs: Any) -> DataFrame:
    """The exercise's DataFrame; an unfinished exercise fails its check in one line."""
    try:
        result: DataFrame = getattr(answers, exercise)(*args, **kwargs)
    except ExerciseNotDone as error:
        unfinished = str(error)
    else:
        return result
    pytest.fail(unfinished, pytrace=False)  # outside `except`: no chained traceback


def approx(value: float) -> Any:
    return pytest.approx(value, rel=1e-9, abs=1e-9)


# --- the checks ------------------------------------------------------------------------


def test_request_counts(
    answers: ModuleType, requests: DataFrame, raw: list[Record], truth: dict[str, Any]
) -> None:
    by_client = answer(answers, "request_counts", requests, by_client=True)
    assert by_client.columns == [
        "client_id",
        "api_name",
        "requests",
        "request_bytes",
        "response_bytes",
    ]
    got: dict[str, dict[str, Any]] = defaultdict(dict)
    for (client_id, api), row in rows_by(by_client, "client_id", "api_name").items():
        got[client_id][api] = row
    assert set(got) == set(truth["clients"]), (
        "every request comes from a scenario's client"
    )

    # Most requests first, with the client's rows among everyone's.
    counts = [row.requests for row in by_client.collect()]
    assert counts == sorted(counts, reverse=True), "order by requests, most first"

    for client_id, facts in truth["clients"].items():
        unseen = not_in_stats(raw, client_id, facts)
        mine = got[client_id]
        # Requests per API: librdkafka's count plus what it could not count.
        expected = stats_counts(facts) + Counter(r["api_name"] for r in unseen)
        assert {api: row.requests for api, row in mine.items()} == dict(expected), (
            client_id
        )
        # Bytes: librdkafka counts every frame it sent (tx) and received (rx) with its
        # 4-byte size prefix; an acks=0 Produce has no response, so no rx.
        tx, rx = stats_total(facts, "tx"), stats_total(facts, "rx")
        sent = stats_total(facts, "txbytes") - _SIZE_PREFIX * tx
        received = stats_total(facts, "rxbytes") - _SIZE_PREFIX * rx
        assert sum(row.request_bytes for row in mine.values()) == sent + sum(
            r["request_bytes"] for r in unseen
        ), client_id
        assert sum(row.response_bytes for row in mine.values()) == received + sum(
            r["response_bytes"] for r in unseen
        ), client_id

    per_api = answer(answers, "request_counts", requests)
    assert per_api.columns == [
        "api_name",
        "requests",
        "request_bytes",
        "response_bytes",
    ]
    rows = per_api.collect()
    assert [row.requests for row in rows] == sorted(
        (row.requests for row in rows), reverse=True
    )
    for row in rows:
        assert (row.requests, row.request_bytes, row.response_bytes) == (
            sum(
                mine[row.api_name].requests
                for mine in got.values()
                if row.api_name in mine
            ),
            sum(
                mine[row.api_name].request_bytes
                for mine in got.values()
                if row.api_name in mine
            ),
            sum(
                mine[row.api_name].response_bytes
                for mine in got.values()
                if row.api_name in mine
            ),
        )
    assert {row.api_name for row in rows} == {r["api_name"] for r in raw}


def test_time_percentiles(
    answers: ModuleType, requests: DataFrame, raw: list[Record], truth: dict[str, Any]
) -> None:
    result = answer(answers, "time_percentiles", requests)
    assert result.columns == ["api_name", "component", "requests", "p50_ms", "p99_ms"]
    rows = rows_by(result, "api_name", "component")
    apis = {r["api_name"] for r in raw}
    assert set(rows) == {
        (api, component) for api in apis for component in REQUEST_TIME_COMPONENTS
    }
    for (api, component), row in rows.items():
        values = [r[component] for r in raw if r["api_name"] == api]
        assert row.requests == len(values)
        assert row.p50_ms == approx(percentile(values, 0.5)), (api, component)
        assert row.p99_ms == approx(percentile(values, 0.99)), (api, component)

    # Against the clients' clocks. In the flush and burst phases every message went in a
    # Produce of its own, and its delivery latency (produce() to the delivery callback)
    # holds the whole of that request's time in the broker and more: so at every
    # percentile the broker's total_ms is below the latency, but for the moments the
    # broker's task waits, on a loaded machine, between its response reaching the socket
    # and its stamping the request done (seen once: a p99 a few ms over the client's).
    # A mistake of unit or of column is orders of magnitude off, far beyond that slack.
    phases = truth["phases"]
    for client_id, phase, until in [
        ("lab08-producer-acks1", "flush", phases["batched"]["start"]),
        ("lab08-producer-acksall", "flush", phases["batched"]["start"]),
        ("lab08-producer-burst", "burst", phases["consume"]["start"]),
    ]:
        latencies = truth["clients"][client_id]["delivery_ms"][phase]
        during = requests.where(
            (F.col("client_id") == client_id)
            & (F.col("ts") >= phases[phase]["start"])
            & (F.col("ts") < until)
        )
        produce = rows_by(
            answer(answers, "time_percentiles", during), "api_name", "component"
        )
        total = produce["Produce", "total_ms"]
        assert total.requests == len(latencies), client_id
        assert total.p50_ms <= percentile(latencies, 0.5) + STAMP_SLACK_MS, client_id
        assert total.p99_ms <= percentile(latencies, 0.99) + STAMP_SLACK_MS, client_id

    # librdkafka's rtt: from sending a request to reading its response, so the broker's
    # total_ms plus the network. Its reports give percentiles per window (the requests
    # answered since the last report); the median of all of them is at most the largest
    # window median, and at least the broker's median. One API name for all, to get
    # every request of the client in one percentile.
    for client_id in [
        "lab08-producer-acks1",
        "lab08-producer-acksall",
        "lab08-producer-burst",
        "lab08-consumer-wait500",
        "lab08-consumer-wait10",
    ]:
        facts = truth["clients"][client_id]
        counted = requests.where(
            (F.col("client_id") == client_id)
            & (F.col("connection_id") != bootstrap_connection(raw, client_id))
            & (F.col("ts") <= facts["stats"]["taken_at"])
        ).withColumn("api_name", F.lit("every API"))
        broker = rows_by(
            answer(answers, "time_percentiles", counted), "api_name", "component"
        )
        rtt_p50 = max(window["p50"] for window in facts["rtt_windows_ms"])
        # librdkafka's histogram rounds a value to 3 significant digits.
        assert broker["every API", "total_ms"].p50_ms <= rtt_p50 * 1.01 + 0.01, (
            client_id
        )


def test_acks_and_long_polling(
    answers: ModuleType, requests: DataFrame, raw: list[Record], truth: dict[str, Any]
) -> None:
    result = answer(answers, "acks_and_long_polling", requests)
    assert result.columns == [
        "client_id",
        "api_name",
        "requests",
        "total_p50_ms",
        "total_p99_ms",
        "remote_p50_ms",
        "remote_p99_ms",
        "remote_share",
        "no_response",
    ]
    rows = rows_by(result, "client_id", "api_name")
    clients = truth["clients"]
    main_api = {"producer": "Produce", "consumer": "Fetch"}
    assert set(rows) == {
        (client_id, main_api[facts["role"]])
        for client_id, facts in clients.items()
        if facts["role"] in main_api
    }
    for (client_id, api), row in rows.items():
        mine = [r for r in of_client(raw, client_id) if r["api_name"] == api]
        total = [r["total_ms"] for r in mine]
        remote = [r["remote_ms"] for r in mine]
        assert row.requests == len(mine) == stats_counts(clients[client_id])[api]
        assert row.total_p50_ms == approx(percentile(total, 0.5))
        assert row.total_p99_ms == approx(percentile(total, 0.99))
        assert row.remote_p50_ms == approx(percentile(remote, 0.5))
        assert row.remote_p99_ms == approx(percentile(remote, 0.99))
        assert row.remote_share == approx(sum(remote) / sum(total))

    # acks=0: Kafka writes no response at all; everyone else always gets one.
    for client_id, facts in clients.items():
        if facts["role"] == "producer":
            row = rows[client_id, "Produce"]
            silent = facts["settings"]["acks"] == "0"
            assert row.no_response == (row.requests if silent else 0), client_id
            # One broker: nothing to wait for (acks=all waits for an ISR of one).
            assert row.remote_p50_ms < 50, client_id
        elif facts["role"] == "consumer":
            assert rows[client_id, "Fetch"].no_response == 0

    # Long polling: with nothing to read a Fetch waits out fetch.wait.max.ms in the
    # purgatory, so remote time is most of its total; a short wait keeps it small.
    waits = {
        client_id: int(facts["settings"]["fetch.wait.max.ms"])
        for client_id, facts in clients.items()
        if facts["role"] == "consumer"
    }
    long_poll = max(waits, key=lambda client_id: waits[client_id])
    short_poll = min(waits, key=lambda client_id: waits[client_id])
    wait = waits[long_poll]
    row = rows[long_poll, "Fetch"]
    assert 0.8 * wait <= row.remote_p50_ms <= wait + 500
    assert row.remote_share > 0.5
    row = rows[short_poll, "Fetch"]
    assert row.remote_p50_ms <= waits[short_poll] + 100
    assert row.remote_p99_ms < 0.5 * wait


def test_busiest_second(
    answers: ModuleType, requests: DataFrame, raw: list[Record], truth: dict[str, Any]
) -> None:
    result = answer(answers, "busiest_second", requests)
    assert result.columns == ["second", "requests"]
    rows = result.select(
        F.unix_timestamp("second").alias("start"), "requests"
    ).collect()
    assert len(rows) == 1
    (row,) = rows
    # Spark's timestamp from seconds: microseconds, truncated.
    per_second = Counter(int(r["ts"] * 1_000_000) // 1_000_000 for r in raw)
    assert row.requests == per_second[row.start] == max(per_second.values())
    burst = truth["phases"]["burst"]
    # The second [start, start + 1) overlaps the burst.
    assert row.start < burst["end"], (row, burst)
    assert burst["start"] < row.start + 1, (row, burst)


def test_busiest_second_tie_goes_to_the_earliest(
    answers: ModuleType, requests: DataFrame
) -> None:
    # Two seconds of the run cut to the same number of requests: a tie, whichever
    # second comes first in the data.
    seconds = (
        requests.groupBy(F.floor("ts").alias("second"))
        .count()
        .orderBy(F.desc("count"), "second")
        .limit(2)
        .collect()
    )
    assert len(seconds) == 2
    tied = min(row["count"] for row in seconds)
    later, earlier = sorted((row.second for row in seconds), reverse=True)
    parts = [
        requests.where(F.floor("ts") == second).orderBy("ts").limit(tied)
        for second in (later, earlier)
    ]
    result = answer(answers, "busiest_second", parts[0].unionByName(parts[1]))
    rows = result.select(
        F.unix_timestamp("second").alias("start"), "requests"
    ).collect()
    assert [(row.start, row.requests) for row in rows] == [(earlier, tied)], (
        "a tie goes to the earliest second"
    )


def test_every_exercise_starts_unfinished(spark: SparkSession) -> None:
    if os.environ.get(IMPLEMENTATION_ENV) == "exercises":
        pytest.skip("checks the exercises.py the lab ships with; you are writing yours")
    exercises, solutions = (
        LAB.implementation("exercises"),
        LAB.implementation("solutions"),
    )

    def functions(module: ModuleType) -> dict[str, inspect.Signature]:
        return {
            name: inspect.signature(value)
            for name, value in vars(module).items()
            if inspect.isfunction(value)
            and value.__module__ == module.__name__
            and not name.startswith("_")
        }

    assert functions(exercises) == functions(solutions)
    assert exercises.COMPONENTS == solutions.COMPONENTS
    empty = spark.createDataFrame([], trace_schema(RequestCompleted))
    for name in functions(exercises):
        with pytest.raises(ExerciseNotDone, match=name):
            getattr(exercises, name)(empty)
