"""Lab 19's data: chaos histories with their final logs, and the checker's verdict on
each, made without a cluster (ARCHITECTURE.md, "Traces and labs").

``run(out, seed, scale)`` writes ``out/histories/NAME/history.jsonl`` and ``final.json``
(the files a chaos run writes, :mod:`chaos.history`'s formats) for:

- ``recorded-seed3``: the run of seed 3 kept in ``chaos/recorded/kraft-c3-seed3`` (KRaft,
  three controllers, two duplicates from a producer epoch bump: the book's chapter
  "Breaking the cluster on purpose" tells it);
- ``generated-S`` for :data:`GENERATED` seeds from ``seed`` on: a history drawn by
  :func:`generate`, a simulated cluster's partitions with background traffic and a
  consumer, and at seeded moments each *episode* the checker's rules must tell apart
  (:data:`EPISODES`).

and ``out/truth.json``: for each history, the lost writes and the duplicates
:func:`chaos.checker.check` itself finds, as rows of the exercises' columns. Nothing
here starts a broker: the checks take seconds and see the same data on every run.

``python scenario.py OUT`` writes it too.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import attrs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from chaos.checker import check
from chaos.history import (
    ACKS_ALL,
    FinalState,
    Op,
    Record,
    TopicPartition,
    encode_final_state,
    format_history,
    parse_final_state,
    parse_history,
)

RECORDED = Path(__file__).resolve().parents[2] / "chaos" / "recorded" / "kraft-c3-seed3"
GENERATED = 3
"""How many generated histories a run writes, besides the recorded one."""
TOPIC, SCRATCH = "chaos", "scratch"
PARTITIONS = 3
STEPS = 300
"""Background steps of a generated history (times ``scale``): a send each, a poll of
every partition every :data:`POLL_EVERY`."""
POLL_EVERY = 7
START = 1_800_000_000.0
STEP_SECONDS = 0.05
EPISODES = (
    "lost_after_read",  # acknowledged, read by the consumer, then truncated away
    "lost_unread",  # acknowledged, then truncated away before any read
    "unknown_gone",  # a send that timed out, never written: allowed
    "epoch_bump_duplicate",  # written, then written again under a new epoch
    "duplicate_hidden",  # read at one offset, truncated, written again elsewhere
    "retry_duplicate",  # a producer without idempotence retried: allowed
)
IDEMPOTENT, PLAIN = (0, 1), 2
"""The producers' processes: two idempotent ones, and one without idempotence."""
CONSUMER = 100
TIMEOUT = "Local: Message timed out"


@attrs.define
class _Run:
    """A generated history being drawn: the partitions' logs, the ops, the clock."""

    rng: random.Random
    logs: dict[TopicPartition, list[int]]
    ops: list[dict[str, Any]] = attrs.field(factory=list)
    read: dict[TopicPartition, int] = attrs.field(factory=dict)
    now: float = START
    next_value: int = 0

    def tick(self, seconds: float = 0.001) -> float:
        self.now += seconds
        return self.now

    def value(self) -> int:
        self.next_value += 1
        return self.next_value

    def append(self, tp: TopicPartition, value: int) -> int:
        self.logs[tp].append(value)
        return len(self.logs[tp]) - 1

    def send(
        self, process: int, tp: TopicPartition, value: int, outcome: str, **more: Any
    ) -> None:
        invoke = more.pop("invoke", self.now)
        self.ops.append(
            {
                "process": process,
                "kind": "send",
                "outcome": outcome,
                "invoke": invoke,
                "complete": self.tick(),
                "client": "kafka-python" if process == PLAIN else "confluent-kafka",
                "topic": tp[0],
                "partition": tp[1],
                "value": value,
                "acks": 1 if process == PLAIN else ACKS_ALL,
                "idempotent": process != PLAIN,
                **more,
            }
        )

    def poll(self, tp: TopicPartition) -> None:
        """The consumer reads the partition from its position to the log's end (past
        any high watermark: so a read can see a record later truncated)."""
        log = self.logs[tp]
        position = min(self.read.get(tp, 0), len(log))
        records = [[offset, log[offset]] for offset in range(position, len(log))]
        invoke = self.now
        self.ops.append(
            {
                "process": CONSUMER,
                "kind": "poll",
                "outcome": "ok",
                "invoke": invoke,
                "complete": self.tick(),
                "client": "confluent-kafka",
                "topic": tp[0],
                "partition": tp[1],
                "records": records,
            }
        )
        self.read[tp] = len(log)

    def truncate(self, tp: TopicPartition, offset: int) -> None:
        """A new leader without the tail: the log ends at ``offset`` again."""
        del self.logs[tp][offset:]


def _episode(run: _Run, name: str, tp: TopicPartition) -> None:
    rng = run.rng
    if name in ("lost_after_read", "lost_unread"):
        value = run.value()
        offset = run.append(tp, value)
        run.send(rng.choice(IDEMPOTENT), tp, value, "ok", offset=offset)
        if name == "lost_after_read":
            run.poll(tp)
        run.truncate(tp, offset)
    elif name == "unknown_gone":
        run.send(rng.choice(IDEMPOTENT), tp, run.value(), "unknown", error=TIMEOUT)
    elif name in ("epoch_bump_duplicate", "duplicate_hidden", "retry_duplicate"):
        process = PLAIN if name == "retry_duplicate" else rng.choice(IDEMPOTENT)
        value, invoke = run.value(), run.now
        first = run.append(tp, value)
        if name == "duplicate_hidden":
            run.poll(tp)
            run.truncate(tp, first)
        others = [p for p in (*IDEMPOTENT, PLAIN) if p != process]
        for _ in range(rng.randint(1, 4)):  # others' records between the two copies
            other = run.value()
            run.send(rng.choice(others), tp, other, "ok", offset=run.append(tp, other))
        run.tick(rng.uniform(0.5, 2.0))
        second = run.append(tp, value)
        run.send(process, tp, value, "ok", offset=second, invoke=invoke)


def generate(seed: int, steps: int = STEPS) -> tuple[list[Op], FinalState]:
    """A history and its final state drawn from ``seed``: background sends (mostly
    acknowledged; some timed out, written or not; some refused), a consumer polling,
    every episode of :data:`EPISODES` at a seeded step, and a scratch topic written to
    and deleted halfway."""
    rng = random.Random(f"lab19-{seed}")
    partitions = [(TOPIC, p) for p in range(PARTITIONS)]
    run = _Run(rng, {tp: [] for tp in [*partitions, (SCRATCH, 0)]})
    run.ops.append(
        {
            "process": CONSUMER + 1,
            "kind": "create_topic",
            "outcome": "ok",
            "invoke": run.now,
            "complete": run.tick(),
            "topic": SCRATCH,
            "partitions": 1,
        }
    )
    due = {rng.randrange(10, steps - 10): name for name in EPISODES}
    while len(due) < len(EPISODES):  # two episodes drew one step: draw again
        missing = [name for name in EPISODES if name not in due.values()]
        due[rng.randrange(10, steps - 10)] = missing[0]
    deleted_at = steps // 2
    for step in range(steps):
        run.now = max(run.now, START + step * STEP_SECONDS)  # an episode took long
        if step in due:
            _episode(run, due[step], rng.choice(partitions))
        live = partitions + ([(SCRATCH, 0)] if step < deleted_at else [])
        tp, value = rng.choice(live), run.value()
        fate = rng.random()
        process = rng.choice((*IDEMPOTENT, PLAIN))
        if fate < 0.85:
            run.send(process, tp, value, "ok", offset=run.append(tp, value))
        elif fate < 0.92:  # timed out after the leader wrote it
            run.append(tp, value)
            run.send(process, tp, value, "unknown", error=TIMEOUT)
        elif fate < 0.97:
            run.send(process, tp, value, "unknown", error=TIMEOUT)
        else:
            run.send(process, tp, value, "failed", error="Local: Queue full")
        if step % POLL_EVERY == 0:
            for polled in live:
                run.poll(polled)
        if step == deleted_at:
            run.ops.append(
                {
                    "process": CONSUMER + 1,
                    "kind": "delete_topic",
                    "outcome": "ok",
                    "invoke": run.now,
                    "complete": run.tick(),
                    "topic": SCRATCH,
                }
            )
    # The history's order is completion order, as a chaos run's recorder writes it.
    ordered = sorted(run.ops, key=lambda op: (op["complete"], op["invoke"]))
    ops = parse_history(json.dumps({"index": i, **op}) for i, op in enumerate(ordered))
    final: dict[TopicPartition, tuple[Record, ...]] = {
        tp: tuple(enumerate(run.logs[tp])) for tp in partitions
    }
    return ops, final


def truth(ops: list[Op], final: FinalState) -> dict[str, list[dict[str, Any]]]:
    """The lost writes and the duplicates :func:`chaos.checker.check` reports, as the
    exercises' rows (their columns, their order)."""
    report = check(ops, final)
    lost = []
    duplicates = []
    for anomaly in report.anomalies:
        if anomaly.kind == "lost":
            send = ops[anomaly.ops[0]]
            lost.append(
                {
                    "topic": send.topic,
                    "partition": send.partition,
                    "value": send.value,
                    "offset": send.offset,
                    "op": send.index,
                }
            )
        elif anomaly.kind == "duplicate":
            found = re.fullmatch(r"value (-?\d+) at offsets (.*)", anomaly.detail)
            assert found is not None, anomaly.detail  # the checker's own wording
            offsets = [int(o) for o in re.findall(r"(?:^|, )(\d+) by", found[2])]
            duplicates.append(
                {
                    "topic": anomaly.topic,
                    "partition": anomaly.partition,
                    "value": int(found[1]),
                    "offsets": sorted(offsets),
                }
            )
    return {
        "lost": sorted(lost, key=_row_key),
        "duplicates": sorted(duplicates, key=_row_key),
    }


def _row_key(row: dict[str, Any]) -> tuple[str, int, int]:
    return (row["topic"], row["partition"], row["value"])


def run(out: Path, seed: int = 1, scale: float = 1.0) -> Path:
    """Write every history, its final state and ``truth.json`` (last) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    histories = out / "histories"
    shutil.rmtree(histories, ignore_errors=True)
    verdicts: dict[str, Any] = {}
    recorded = histories / "recorded-seed3"
    recorded.mkdir(parents=True)
    with gzip.open(RECORDED / "history.jsonl.gz", "rt") as lines:
        ops = parse_history(lines)
    with gzip.open(RECORDED / "final.json.gz", "rt") as text:
        final: FinalState = parse_final_state(text.read())
    drawn = [("recorded-seed3", ops, final)]
    for s in range(seed, seed + GENERATED):
        drawn.append((f"generated-{s}", *generate(s, max(40, int(STEPS * scale)))))
    for name, ops, final in drawn:
        home = histories / name
        home.mkdir(parents=True, exist_ok=True)
        (home / "history.jsonl").write_text("".join(format_history(ops)))
        (home / "final.json").write_text(encode_final_state(final))
        verdicts[name] = truth(ops, final)
    (out / "truth.json").write_text(json.dumps({"histories": verdicts}, indent=1))
    return out


RECORD = T.StructType(
    [T.StructField("offset", T.LongType()), T.StructField("value", T.LongType())]
)
HISTORY_SCHEMA = T.StructType(
    [
        T.StructField("index", T.LongType(), False),
        T.StructField("process", T.LongType(), False),
        T.StructField("kind", T.StringType(), False),
        T.StructField("outcome", T.StringType(), False),
        T.StructField("invoke", T.DoubleType(), False),
        T.StructField("complete", T.DoubleType(), False),
        T.StructField("client", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("value", T.LongType()),
        T.StructField("offset", T.LongType()),
        T.StructField("records", T.ArrayType(RECORD)),
        T.StructField("group", T.StringType()),
        T.StructField("acks", T.IntegerType()),
        T.StructField("idempotent", T.BooleanType()),
        T.StructField("error", T.StringType()),
    ]
)
"""One row per operation: :class:`chaos.history.Op`'s fields (``partitions`` and a
transaction's fields left out)."""
FINAL_SCHEMA = T.StructType(
    [
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("offset", T.LongType(), False),
        T.StructField("value", T.LongType(), False),
    ]
)
"""One row per record of the final log."""


def read_history(spark: SparkSession, directory: Path) -> DataFrame:
    """A history's operations (``directory/history.jsonl``), one row each."""
    ops = parse_history((directory / "history.jsonl").read_text().splitlines())
    rows = [
        (
            *(op.index, op.process, op.kind, op.outcome, op.invoke, op.complete),
            *(op.client, op.topic, op.partition, op.value, op.offset),
            [(offset, value) for offset, value in op.records],
            *(op.group, op.acks, op.idempotent, op.error),
        )
        for op in ops
    ]
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


def read_final(spark: SparkSession, directory: Path) -> DataFrame:
    """A history's final state (``directory/final.json``), one row per record."""
    final = parse_final_state((directory / "final.json").read_text())
    rows = [
        (topic, partition, offset, value)
        for (topic, partition), records in sorted(final.items())
        for offset, value in records
    ]
    return spark.createDataFrame(rows, FINAL_SCHEMA)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    print(run(args.out, args.seed, args.scale))
