"""One consumer of lab 18, in a process of its own, reporting which partitions it holds.

``python member.py BOOTSTRAP GROUP CLIENT_ID PROTOCOL TOPIC SESSION_MS HEARTBEAT_MS``
subscribes a confluent-kafka (librdkafka) consumer to TOPIC in GROUP and prints one JSON
line on stdout per rebalance callback, with the wall-clock time ``ts`` (seconds since
the epoch) and its ``partitions``:

- ``PROTOCOL`` ``classic``: the classic group protocol with the eager ``range``
  assignor, and the session and heartbeat given (``session.timeout.ms``,
  ``heartbeat.interval.ms``); ``assign`` is the whole new assignment, ``revoke`` takes
  everything;
- ``PROTOCOL`` ``consumer``: KIP-848 (``group.protocol=consumer``) with the broker's
  ``uniform`` assignor; the session and the heartbeat interval are the broker's
  (``group.consumer.*``: the two numbers are not used); ``assign`` adds partitions and
  ``revoke`` / ``lost`` take some.

It is a process, not a thread, because librdkafka heartbeats from a background thread:
only a SIGKILL of the whole process makes a member go silent the way a crash does. It
reads until its stdin ends (the scenario is gone) and then closes.
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
    protocol: str,
    session_ms: int,
    heartbeat_ms: int,
) -> dict[str, object]:
    common: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client_id,
        "auto.offset.reset": "latest",
        "fetch.wait.max.ms": 100,
        "log_level": 0,
    }
    if protocol == "consumer":
        # The session and the heartbeat interval are the broker's (KIP-848).
        return {
            **common,
            "group.protocol": "consumer",
            "group.remote.assignor": "uniform",
        }
    return {
        **common,
        "group.protocol": "classic",
        "partition.assignment.strategy": "range",
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": heartbeat_ms,
    }


def main(argv: Sequence[str]) -> int:
    bootstrap, group, client_id, protocol, topic, session_ms, heartbeat_ms = argv
    incremental = protocol == "consumer"  # KIP-848's rebalances are incremental
    config = consumer_config(
        bootstrap, group, client_id, protocol, int(session_ms), int(heartbeat_ms)
    )
    consumer = Consumer(config)
    closing = threading.Event()

    def wait_for_end() -> None:
        for _ in sys.stdin:  # the scenario writes nothing: this waits for the end
            pass
        closing.set()

    def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
        if incremental:
            c.incremental_assign(partitions)
        else:
            c.assign(partitions)
        report("assign", partitions=sorted(tp.partition for tp in partitions))

    def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
        if incremental:
            c.incremental_unassign(partitions)
        else:
            c.unassign()
        report("revoke", partitions=sorted(tp.partition for tp in partitions))

    def on_lost(c: Consumer, partitions: list[TopicPartition]) -> None:
        on_revoke(c, partitions)

    threading.Thread(target=wait_for_end, daemon=True).start()
    report("subscribe")
    consumer.subscribe(
        [topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost
    )
    while not closing.is_set():
        # Rebalance callbacks run inside consume(), on this thread: a short timeout
        # keeps their timestamps close to the moment librdkafka had the news.
        consumer.consume(100, 0.05)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
