"""The replication round trip of one ``acks=all`` produce, hop by hop, from the traces.

Three broker-only nodes and a controller, each a process of its own
(``minikafka.broker.testing.ProcessCluster``, what ``make cluster`` runs; every node
writes its trace to the cluster's ``traces/``), a one-partition topic with RF 3. A
confluent-kafka (librdkafka) producer in this process sends 100-byte records with
``acks=all`` and ``linger.ms=0`` at a steady ``RATES`` records/s for ``SECONDS`` (after
``WARMUP_SECONDS`` not counted; a fresh cluster per rate), each record's latency taken
from its ``produce()`` to its delivery report. Then the nodes stop and their traces are
joined, one Produce request of the leader at a time (a connection's requests are served
one after another: the leader reads the next only after answering this one, Kafka's
muting), into the hops of its round trip:

1. **client and wire**: the record's latency at the producer less the leader's
   ``total_ms`` for the request that carried it (librdkafka's queue and threads, the
   wire both ways);
2. **request queue** (leader): ``request_queue_ms``, the Processor to a handler;
3. **leader append**: ``local_ms``, the handler: the append, and the parked follower
   fetches it completes (their answers are handed to their Processors);
4. **follower fetch answered**: from the append to the leader's Fetch answer to the
   follower leaving it (that Fetch's ``net.request``: ``response_queue_ms`` and
   ``response_send_ms``, and the read of a fetch that did not wait);
5. **wire to the follower**: to the follower having the answer decoded (the follower's
   ``follower_append``: its ts less ``append_ms``);
6. **follower append**: ``append_ms``;
7. **follower's next fetch**: from that append to the leader taking the follower's next
   Fetch, which carries the new log end (the leader's ``follower_fetch``);
8. **HW move**: to the ``hw_advance`` that passes the request's records (0 when the
   fetch moves it; the second follower's fetch is the one that can);
9. **DelayedProduce completion**: from the HW move to the answer handed back (0 when it
   is completed in the same call);
10. **response**: ``response_queue_ms`` and ``response_send_ms`` of the Produce.

Hops 4-7 are those of the follower whose fetch moved the high watermark (the later of
the two: the one the produce waited for). Each hop's p50 and p99 over the requests are
printed, beside the leader's ``total_ms`` and the client's latency. The sum of the p50s
is not the p50 of the sum. The trace events are the broker's own (``net.request``,
``replication.follower_fetch``, ``hw_advance``, ``follower_append``); no hop is
estimated. Nodes run unpinned (five processes on two cores); this process's cyclic
collector is off while it produces (its pauses would be counted as the cluster's).
"""

from __future__ import annotations

import bisect
import functools
import gc
import json
import math
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import KafkaError, Message, Producer

from . import e2e_latency
from ._common import (
    BenchError,
    Report,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    now_utc,
    own_cpu_seconds,
    percentile,
    process_cpu_seconds,
    report_header,
)
from ._wire import VALUE_BYTES
from .cluster_replication import three_brokers, wait_in_sync

NAME = "replication_waterfall"
RATES = (200, 10_000)
SECONDS = {200: 5.0, 10_000: 1.0}
"""Timed seconds per rate: at 10,000/s the cluster falls behind, and each second sent
takes many to drain (``--quick``: ``QUICK_SECONDS``)."""
QUICK_SECONDS = {200: 1.5, 10_000: 0.3}
WARMUP_SECONDS = 0.5
TOPIC = "waterfall"
_VALUE = b"x" * VALUE_BYTES

HOPS = (
    "client and wire",
    "request queue (leader)",
    "leader append",
    "follower fetch answered",
    "wire to the follower",
    "follower append",
    "follower's next fetch",
    "HW move",
    "DelayedProduce completion",
    "response (leader)",
)
TOTALS = ("leader total", "client latency")
CHECKS = (
    "follower answers woken by the append",
    "follower fetches expired (not woken)",
    "DelayedProduce completed in the HW move's call",
)
"""Counted over the joined requests (the second from the timed stretch's start to the
last Produce answered): the follower's answer on the critical path was parked and
completed within the produce's own handler call; a parked follower fetch was answered
by ``replica.fetch.wait.max.ms`` running out instead; the ``delayed_op`` of the produce
carries the ``now`` of the HW move's call."""

Event = Mapping[str, Any]


@attrs.frozen
class Run:
    rate: int
    leader: int
    """The partition's leader (``node-N`` in ``cpu_percent``)."""
    sent: int
    joined: int
    """Produce requests whose every hop was found in the traces."""
    requests: int
    """Produce requests the leader read from the timed stretch's start on (at 10,000/s
    the warm-up's too, still queued)."""
    hops: dict[str, list[float]]
    """Hop (and the two totals) -> its milliseconds, one per joined request."""
    checks: dict[str, int]
    """``CHECKS`` -> how many."""
    cpu_percent: dict[str, float | None]
    """Process (producer, node-N) -> its CPU over the timed stretch, % of one core; and
    ``rest of machine``: everything else's."""


def _produce(
    bootstrap: str, rate: int, seconds: float
) -> tuple[dict[int, float], float, float]:
    """Paced acks=all records; (offset -> latency ms of the timed records, the timed
    stretch's start and end on the epoch clock)."""
    latencies: dict[int, float] = {}
    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "compression.type": "none",
        }
    )
    producer.list_topics(TOPIC, timeout=30)

    def report(error: KafkaError | None, message: Message, sent: float) -> None:
        if error is not None:
            errors.append(str(error))
        elif sent >= timed_from:
            offset = message.offset()
            assert offset is not None
            latencies[offset] = (time.time() - sent) * 1000

    total = round(rate * (WARMUP_SECONDS + seconds))
    # This process's own collector must not pause the delivery reports: a full pass over
    # confluent-kafka's and this package's objects takes tens of ms here, and it would
    # be counted as the cluster's latency. It collects once the records are in.
    gc.collect()
    gc.disable()
    try:
        start = time.monotonic()
        timed_from = time.time() + WARMUP_SECONDS
        i = 0
        while i < total:
            wait = start + i / rate - time.monotonic()
            if wait > 0:
                producer.poll(wait)  # serves delivery reports while it waits
                continue
            sent = time.time()
            producer.produce(
                TOPIC,
                _VALUE,
                partition=0,
                on_delivery=functools.partial(_report_one, report, sent),
            )
            producer.poll(0)
            i += 1
        ended = time.time()
        if producer.flush(120) != 0:
            raise BenchError("records still unacknowledged after 120 s")
    finally:
        gc.enable()
    if errors:
        raise BenchError(f"delivery errors: {errors[:3]}")
    return latencies, timed_from, ended


def _report_one(
    report: Callable[[KafkaError | None, Message, float], None],
    sent: float,
    error: KafkaError | None,
    message: Message,
) -> None:
    report(error, message, sent)


def _events(traces: Path) -> list[Event]:
    events: list[Event] = []
    for path in sorted(traces.glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # a line cut short when its node stopped
    events.sort(key=lambda e: float(e["ts"]))
    return events


def _first(
    events: Sequence[Event], times: Sequence[float], after: float, match: Any
) -> Event | None:
    """The first of ``events`` (sorted by ``times``) at or after ``after`` that
    ``match``es."""
    for i in range(bisect.bisect_left(times, after), len(events)):
        if match(events[i]):
            return events[i]
    return None


def waterfall(
    events: Iterable[Event],
    leader: int,
    latencies: Mapping[int, float],
    window: tuple[float, float],
) -> tuple[dict[str, list[float]], dict[str, int], int, int]:
    """Each Produce request's hops (see the module's docstring): (hop -> ms, the
    ``CHECKS`` counted, requests joined, requests seen)."""
    on_leader = [e for e in events if e["node"] == leader]
    produces = [
        e
        for e in on_leader
        if e["event"] == "request"
        and e["api_name"] == "Produce"
        and e["ts"] - e["total_ms"] / 1000 >= window[0]
    ]
    hw = [e for e in on_leader if e["event"] == "hw_advance" and e["topic"] == TOPIC]
    hw_ts = [e["ts"] for e in hw]
    taken = [
        e for e in on_leader if e["event"] == "follower_fetch" and e["topic"] == TOPIC
    ]
    taken_ts = [e["ts"] for e in taken]
    answers = [
        e
        for e in on_leader
        if e["event"] == "request"
        and e["api_name"] == "Fetch"
        and str(e["client_id"]).startswith("ReplicaFetcherThread-")
    ]
    answers_ts = [e["ts"] for e in answers]
    appends = [
        e for e in events if e["event"] == "follower_append" and e["topic"] == TOPIC
    ]
    appends_ts = [e["ts"] for e in appends]
    produce_done = {
        e["ts"]
        for e in on_leader
        if e["event"] == "delayed_op" and e["kind"] == "produce"
    }
    # Until the last Produce is answered: after it the followers' fetches wait for
    # records that do not come, and expire, as they should.
    last = max((e["ts"] for e in produces), default=window[0])
    expired = [
        e
        for e in on_leader
        if e["event"] == "delayed_op"
        and e["kind"] == "fetch"
        and e["outcome"] == "expired"
        and window[0] <= e["ts"] <= last
    ]
    hops: dict[str, list[float]] = {name: [] for name in HOPS + TOTALS}
    checks = dict.fromkeys(CHECKS, 0)
    checks["follower fetches expired (not woken)"] = len(expired)
    joined = 0
    for produce in produces:
        end = produce["ts"]
        start = end - produce["total_ms"] / 1000
        appended = start + (produce["request_queue_ms"] + produce["local_ms"]) / 1000
        answered = (
            end - (produce["response_queue_ms"] + produce["response_send_ms"]) / 1000
        )
        # The leader reads the next Produce only after answering this one: every HW move
        # in between is toward this request's records, the last one reaches them.
        lo = bisect.bisect_left(hw_ts, appended)
        hi = bisect.bisect_right(hw_ts, answered + 1e-6)
        if lo >= hi:
            continue  # answered at once: the ISR was the leader alone
        moved = hw[hi - 1]
        target = moved["high_watermark"]
        first = next(e for e in hw[lo:hi] if e["high_watermark"] >= target)
        client = latencies.get(target - 1)
        if client is None:
            continue
        # The follower whose fetch moved the HW: the one taken last, reaching target.
        reached = {}
        for follower_id in {e["follower"] for e in taken}:
            found = _first(
                taken,
                taken_ts,
                appended,
                lambda e, f=follower_id, t=target: (
                    e["follower"] == f and e["fetch_offset"] >= t
                ),
            )
            if found is not None:
                reached[follower_id] = found
        if not reached:
            continue
        follower_id, next_fetch = max(reached.items(), key=lambda kv: kv[1]["ts"])
        append = _first(
            appends,
            appends_ts,
            appended,
            lambda e, f=follower_id, t=target: (
                e["node"] == f and e["fetch_offset"] < t <= e["log_end_offset"]
            ),
        )
        if append is None:
            continue
        received = append["ts"] - append["append_ms"] / 1000
        prefix = f"ReplicaFetcherThread-{follower_id}-"
        i = bisect.bisect_right(answers_ts, received) - 1
        while i >= 0 and not str(answers[i]["client_id"]).startswith(prefix):
            i -= 1
        if i < 0 or answers_ts[i] < appended - 0.5:
            continue
        answer = answers[i]
        joined += 1
        woken = (
            answer["ts"]
            - (answer["response_queue_ms"] + answer["response_send_ms"]) / 1000
        )
        if answer["remote_ms"] > 0 and woken <= appended + 1e-4:
            checks["follower answers woken by the append"] += 1
        if first["ts"] in produce_done:
            checks["DelayedProduce completed in the HW move's call"] += 1
        ms = 1000.0
        hops["client and wire"].append(client - produce["total_ms"])
        hops["request queue (leader)"].append(produce["request_queue_ms"])
        hops["leader append"].append(produce["local_ms"])
        hops["follower fetch answered"].append(max(answer["ts"] - appended, 0) * ms)
        hops["wire to the follower"].append((received - answer["ts"]) * ms)
        hops["follower append"].append(append["append_ms"])
        hops["follower's next fetch"].append((next_fetch["ts"] - append["ts"]) * ms)
        hops["HW move"].append(max(first["ts"] - next_fetch["ts"], 0) * ms)
        hops["DelayedProduce completion"].append(max(answered - first["ts"], 0) * ms)
        hops["response (leader)"].append(
            produce["response_queue_ms"] + produce["response_send_ms"]
        )
        hops["leader total"].append(produce["total_ms"])
        hops["client latency"].append(client)
    return hops, checks, joined, len(produces)


def _one_rate(root: Path, rate: int, seconds: float) -> Run:
    with three_brokers(root) as cluster:
        e2e_latency._create_topic(cluster.bootstrap, TOPIC, 3)
        leader = wait_in_sync(cluster.bootstrap, TOPIC)
        pids = {
            f"node-{n}": pid
            for n in cluster.node_ids
            if (pid := cluster.pid(n)) is not None
        }
        before = {name: process_cpu_seconds(pid) for name, pid in pids.items()}
        own, busy, clock = (
            own_cpu_seconds(),
            machine_busy_seconds(),
            time.perf_counter(),
        )
        latencies, timed_from, ended = _produce(cluster.bootstrap, rate, seconds)
        elapsed = time.perf_counter() - clock
        cpu: dict[str, float | None] = {
            "producer": 100 * (own_cpu_seconds() - own) / elapsed
        }
        for name, pid in pids.items():
            after, was = process_cpu_seconds(pid), before[name]
            cpu[name] = (
                None if after is None or was is None else 100 * (after - was) / elapsed
            )
        now_busy = machine_busy_seconds()
        if busy is not None and now_busy is not None:
            ours = sum(v for v in cpu.values() if v is not None)
            cpu["rest of machine"] = max(100 * (now_busy - busy) / elapsed - ours, 0.0)
    events = _events(root / "traces")
    hops, checks, joined, requests = waterfall(
        events, leader, latencies, (timed_from, ended)
    )
    if not joined:
        raise BenchError(f"{rate}/s: no Produce request could be joined in the traces")
    return Run(
        rate,
        leader,
        len(latencies),
        joined,
        requests,
        hops,
        checks,
        cpu,
    )


def run(quick: bool = False) -> Report:
    started, clock = now_utc(), time.perf_counter()
    seconds = QUICK_SECONDS if quick else SECONDS
    runs = []
    with tempfile.TemporaryDirectory(prefix="minikafka-bench-waterfall-") as scratch:
        for rate in RATES:
            done = _one_rate(Path(scratch) / f"rate-{rate}", rate, seconds[rate])
            print(
                f"  {rate:,}/s: {done.sent:,} records, {done.requests:,} requests, "
                f"{done.joined:,} joined; client p99 "
                f"{_p(done.hops['client latency'], 99):.2f} ms",
                flush=True,
            )
            runs.append(done)
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, 1, started, clock),
        "seconds": {str(rate): s for rate, s in seconds.items()},
        "value_bytes": VALUE_BYTES,
        "producer": {"acks": "all", "linger.ms": 0, "other": "librdkafka defaults"},
        "machine": machine_facts(),
        "runs": [_summary(r) for r in runs],
    }
    return Report(NAME, document, _table(runs))


def _summary(run: Run) -> dict[str, object]:
    """The run for the JSON: each hop's percentiles, not its every value."""
    document = attrs.asdict(run)
    document["hops"] = {hop: hop_summary(ms) for hop, ms in run.hops.items()}
    return document


def hop_summary(ms: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99/max/mean of one hop's milliseconds, and how many."""
    ordered = sorted(ms)
    return {
        "p50_ms": percentile(ordered, 50),
        "p90_ms": percentile(ordered, 90),
        "p99_ms": percentile(ordered, 99),
        "max_ms": ordered[-1] if ordered else math.nan,
        "mean_ms": sum(ordered) / len(ordered) if ordered else math.nan,
        "count": len(ordered),
    }


def _p(values: Sequence[float], p: float) -> float:
    return percentile(sorted(values), p)


def _table(runs: Sequence[Run]) -> str:
    header = ["hop"]
    for r in runs:
        header += [f"{r.rate:,}/s p50 ms", f"{r.rate:,}/s p99 ms"]
    rows = []
    for hop in HOPS + TOTALS:
        row = [hop]
        for r in runs:
            row += [f"{_p(r.hops[hop], 50):.2f}", f"{_p(r.hops[hop], 99):.2f}"]
        rows.append(row)
    table = markdown_table(header, rows)
    for r in runs:
        cpu = ", ".join(
            f"{k} {v:.0f}" for k, v in r.cpu_percent.items() if v is not None
        )
        table += (
            f"\n{r.rate:,}/s: {r.sent:,} records timed; {r.requests:,} Produce requests "
            f"answered from the timed stretch's start, {r.joined:,} of them carrying a "
            f"timed record joined hop by hop; the leader node-{r.leader}; CPU (% of a "
            f"core): {cpu}."
        )
        table += "\n" + "; ".join(f"{k}: {v:,}" for k, v in r.checks.items()) + "."
    return table
