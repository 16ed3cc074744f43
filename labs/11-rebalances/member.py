"""One consumer of lab 11, in a process of its own, reporting its side of each rebalance.

``python member.py BOOTSTRAP GROUP CLIENT_ID STRATEGY TOPIC SESSION_MS HEARTBEAT_MS``
subscribes a confluent-kafka (librdkafka) consumer to TOPIC in GROUP and prints one JSON
line on stdout per thing that happens to it, each with the wall-clock time ``ts``
(seconds since the epoch):

- ``subscribe``: just before ``subscribe()``;
- ``assign`` / ``revoke`` / ``lost``: a rebalance callback and its ``partitions``
  (incremental ones under ``cooperative-sticky``, KIP-429; the whole assignment under an
  eager strategy such as ``range``), with the ``member_id`` the coordinator gave it;
- ``close`` / ``closed``: around ``close()`` (its LeaveGroup), when the line ``close``
  arrives on stdin.

It is a process, not a thread, because librdkafka heartbeats from a background thread:
only a SIGKILL of the whole process makes a member go silent the way a crash does.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence

from confluent_kafka import Consumer, TopicPartition


def report(kind: str, **fields: object) -> None:
    print(json.dumps({"ts": time.time(), "kind": kind, **fields}), flush=True)


def consumer_config(
    bootstrap: str,
    group: str,
    client_id: str,
    strategy: str,
    session_ms: int,
    heartbeat_ms: int,
) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client_id,
        "partition.assignment.strategy": strategy,
        "session.timeout.ms": session_ms,
        # Kafka's rule of thumb: a third of the session or less. Short, so that members
        # learn of a rebalance (from a heartbeat's REBALANCE_IN_PROGRESS) quickly.
        "heartbeat.interval.ms": heartbeat_ms,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
    }


def main(argv: Sequence[str]) -> int:
    bootstrap, group, client_id, strategy, topic, session_ms, heartbeat_ms = argv
    cooperative = strategy == "cooperative-sticky"
    config = consumer_config(
        bootstrap, group, client_id, strategy, int(session_ms), int(heartbeat_ms)
    )
    consumer = Consumer(config)
    closing = threading.Event()

    def wait_for_close() -> None:
        # "close" on stdin, or the scenario went away (end of file): leave the group.
        for line in sys.stdin:
            if line.strip() == "close":
                break
        closing.set()

    def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
        if cooperative:
            c.incremental_assign(partitions)  # added to what it holds
        else:
            c.assign(partitions)  # the whole new assignment
        parts = sorted(tp.partition for tp in partitions)
        report("assign", partitions=parts, member_id=c.memberid())

    def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
        if cooperative:
            c.incremental_unassign(partitions)  # only these go
        else:
            c.unassign()  # eager: everything goes
        parts = sorted(tp.partition for tp in partitions)
        report("revoke", partitions=parts, member_id=c.memberid())

    def on_lost(c: Consumer, partitions: list[TopicPartition]) -> None:
        if cooperative:
            c.incremental_unassign(partitions)
        else:
            c.unassign()
        report("lost", partitions=sorted(tp.partition for tp in partitions))

    threading.Thread(target=wait_for_close, daemon=True).start()
    report("subscribe")
    consumer.subscribe(
        [topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost
    )
    records = 0
    while not closing.is_set():
        # Rebalance callbacks run inside consume(), on this thread: a short timeout
        # keeps their timestamps close to the moment librdkafka had the news.
        records += sum(1 for m in consumer.consume(100, 0.05) if m.error() is None)
    report("close", records=records)
    consumer.close()  # revokes (on_revoke runs here) and sends LeaveGroup
    report("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
