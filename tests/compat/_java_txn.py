"""Kafka's Java client's exactly-once program (``java/JavaExactlyOnce.java``) against any
broker, and what it must show: minikafka's (tests/compat/test_java_transactions.py) and
Apache Kafka's own (tests/reference/test_java_transactions.py) run the same program and
the same checks.

:func:`exactly_once` writes numbered input records (confluent-kafka), then runs the
program's consume-transform-produce copy, with two of its transactions aborted on
purpose, and a zombie producer fenced by its successor; it reads both output topics back
with read_committed and read_uncommitted, in the same JVM, and checks:

- read_committed sees each input record copied exactly once, and none of the aborted
  transactions' records, which read_uncommitted sees;
- the group's committed offsets (sent with the transactions, KIP-447) are the input's
  end, and the group had a real generation when they were sent;
- the zombie's commit throws ProducerFencedException once its successor has called
  initTransactions; its records are aborted (read_uncommitted only), the successor's
  committed.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from reference.java import ScenarioRun, compile_sources, run_scenario

SOURCES = (Path(__file__).resolve().parent / "java" / "JavaExactlyOnce.java",)
MAIN = "JavaExactlyOnce"
WAIT = 60.0
COUNT = 120
"""Input records, over two partitions; the copy polls at most ``MAX_POLL`` at a time."""
MAX_POLL = 10
ABORT = (1, 4)
"""The copy's transactions (numbered from 0) that are aborted and redone."""
ZOMBIE = ["zombie-0", "zombie-1", "zombie-2"]
SUCCESSOR = ["successor-0", "successor-1"]


@functools.cache
def classes() -> Path:
    """The compiled program (javac at most once per session, and once per content)."""
    return compile_sources(SOURCES)


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    """Create ``topics`` (name: partitions) and wait until each partition has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(name, partitions, 1) for name, partitions in topics.items()]
    for future in admin.create_topics(new).values():
        future.result(WAIT)
    deadline = time.monotonic() + WAIT
    for name, partitions in topics.items():
        while True:
            found = admin.list_topics(name, timeout=WAIT).topics.get(name)
            if (
                found is not None
                and found.error is None
                and len(found.partitions) == partitions
                and all(p.leader >= 0 for p in found.partitions.values())
            ):
                break
            assert time.monotonic() < deadline, f"{name} has no leaders"
            time.sleep(0.05)


def write_input(bootstrap: str, topic: str) -> None:
    """``COUNT`` records, key ``k<i>`` and value ``<i>``, alternating two partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(COUNT):
        producer.produce(topic, str(i).encode(), f"k{i}".encode(), partition=i % 2)
    assert producer.flush(WAIT) == 0


def exactly_once(
    bootstrap: str, name: str, request_log: Path | None = None
) -> ScenarioRun:
    """Runs the program against ``bootstrap`` with topics, group and transactional ids
    named after ``name``, checks what the module docstring says, returns the run."""
    source, sink, fenced = f"{name}-in", f"{name}-out", f"{name}-fence"
    create_topics(bootstrap, {source: 2, sink: 2, fenced: 1})
    write_input(bootstrap, source)
    steps = [
        {
            "op": "copy",
            "input": source,
            "output": sink,
            "group": f"{name}-copier",
            "transactional_id": f"{name}-copier",
            "count": COUNT,
            "max_poll": MAX_POLL,
            "abort": list(ABORT),
        },
        {"op": "read", "topic": sink, "isolation": "read_committed", "count": COUNT},
        {"op": "read", "topic": sink, "isolation": "read_uncommitted"},
        {
            "op": "fence",
            "topic": fenced,
            "transactional_id": f"{name}-fenced",
            "zombie": ZOMBIE,
            "successor": SUCCESSOR,
        },
        {
            "op": "read",
            "topic": fenced,
            "isolation": "read_committed",
            "count": len(SUCCESSOR),
        },
        {"op": "read", "topic": fenced, "isolation": "read_uncommitted"},
    ]
    run = run_scenario(
        MAIN,
        classes(),
        {"bootstrap": bootstrap, "steps": steps},
        timeout=4 * WAIT,
        request_log=request_log,
    ).check()

    copy = run.result(0)
    assert copy["copied"] == COUNT, copy
    assert copy["transactions"] >= COUNT // MAX_POLL + len(ABORT), copy
    assert copy["committed"] == {f"{source}-0": COUNT // 2, f"{source}-1": COUNT // 2}
    assert copy["generation"] >= 1, "the offsets were sent without a group generation"
    aborted = Counter(copy["aborted_values"])
    assert aborted, "no records were written by the aborted transactions"
    expected = Counter(f"copy-{i}" for i in range(COUNT))
    committed = Counter(value for _, _, value in run.result(1))
    assert committed == expected, (
        f"read_committed: missing {expected - committed}, extra {committed - expected}"
    )
    everything = Counter(value for _, _, value in run.result(2))
    assert everything == expected + aborted, (
        "read_uncommitted is not every committed record plus the aborted ones: "
        f"{everything - expected - aborted} more, {expected + aborted - everything} less"
    )

    fence = run.result(3)
    assert fence == {"fenced": "ProducerFencedException", "successor_committed": True}
    assert [value for _, _, value in run.result(4)] == SUCCESSOR
    assert [value for _, _, value in run.result(5)] == ZOMBIE + SUCCESSOR
    return run
