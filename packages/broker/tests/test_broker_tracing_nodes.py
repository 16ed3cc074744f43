"""Three nodes in one process, three trace streams.

Three BrokerServers (each a combined broker and controller, with its own data dir, its
own port and its own node id) run in ONE trio loop, each built with a tracer of its own;
all three tracers write JSON Lines into one shared directory. Real kafka-python clients,
one set per node and all at the same time, create a topic with tiny segments, produce to
it and read it back in a consumer group. Then the directory is read back: every line's
envelope names the node whose tracer wrote it, each node's stream holds events from every
component that emits (net, log, controller, replication, group), and none of them speaks
of another node's topic, group, clients or broker id. Nothing reaches the process-global
tracer, which is where every event went before tracing was injected.

Waits have deadlines; nothing sleeps.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import trio
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.errors import RebalanceInProgressError

import minikafka.broker  # noqa: F401  (registers every package's events for decode_event)
from minikafka.broker import BrokerServer
from minikafka.broker.testing import single_node_config
from minikafka.common.testing import GROUP_POLL_MS
from minikafka.trace import JsonLinesTracer, read_trace
from minikafka.trace.testing import recording_tracer

DEADLINE = 60.0  # seconds; three brokers and their clients on a shared 2-core machine
NODES = (1, 2, 3)
RECORDS = 30
VALUE = b"v" * 100
SEGMENT_BYTES = "1024"  # 30 batches of ~170 B: a few segment rolls, so the log emits
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__cluster_metadata"})
COMPONENTS = frozenset({"net", "log", "controller", "replication", "group"})

Record = dict[str, Any]


def _names(node: int) -> tuple[str, str, str]:
    """The topic, group and client-id prefix that only node ``node``'s clients use."""
    return f"topic-of-{node}", f"group-of-{node}", f"client-of-{node}"


def _clients(node: int, bootstrap: str) -> list[bytes]:
    """Create the topic, produce RECORDS one per request, read them back in a group."""
    topic, group, client = _names(node)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=f"{client}-admin")
    try:
        spec = {"num_partitions": 1, "replication_factor": 1}
        admin.create_topics(
            {topic: {**spec, "configs": {"segment.bytes": SEGMENT_BYTES}}},
            wait_for_metadata=True,
        )
    finally:
        admin.close()
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, client_id=f"{client}-producer", acks=1, linger_ms=0
    )
    try:
        for _ in range(RECORDS):
            producer.send(topic, VALUE).get(timeout=DEADLINE)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id=f"{client}-consumer",
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        # Three brokers and three clients share one process: on a loaded machine a
        # heartbeat can wait longer than kafka-python's 10 s default session.
        session_timeout_ms=30_000,
    )
    # The topic in the consumer's metadata before it joins: a leader that assigns while
    # its metadata lacks the topic assigns nothing, and kafka-python may not notice.
    assert consumer.partitions_for_topic(topic) == {0}
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(values) < RECORDS and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=GROUP_POLL_MS).values():
                values += [message.value for message in batch]
        # The commit has a deadline of its own: a rebalance can still be under way
        # after the last record was read (GROUP_POLL_MS says why polls are long).
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                consumer.commit()
                break
            except RebalanceInProgressError:
                # The client's own advice: poll, which completes the rebalance, and
                # commit again (what was read is still this member's to commit).
                assert time.monotonic() < deadline, "the group never settled"
                consumer.poll(timeout_ms=GROUP_POLL_MS)
    finally:
        consumer.close()
    return values


async def _run_three(tmp_path: Path, trace_dir: Path) -> None:
    # The stack inside the nursery: it shuts each server down, then closes (so flushes)
    # its tracer, before the nursery waits for the servers' tasks.
    with trio.fail_after(DEADLINE * 3):
        async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
            servers: dict[int, BrokerServer] = {}
            for node in NODES:
                tracer = JsonLinesTracer.open(trace_dir, node)
                stack.callback(tracer.close)
                config = single_node_config(
                    tmp_path / f"node-{node}",
                    {
                        "node.id": str(node),
                        "group.initial.rebalance.delay.ms": "0",
                        "offsets.topic.num.partitions": "1",
                    },
                )
                server = BrokerServer.open(config, tracer=tracer)
                assert server.tracer is tracer
                await nursery.start(server.run)
                stack.push_async_callback(server.shutdown)
                servers[node] = server

            read: dict[int, list[bytes]] = {}

            async def drive(node: int) -> None:
                host, port = servers[node].bound_address()
                read[node] = await trio.to_thread.run_sync(
                    _clients, node, f"{host}:{port}"
                )

            async with trio.open_nursery() as clients:
                for node in NODES:
                    clients.start_soon(drive, node)
            assert read == {node: [VALUE] * RECORDS for node in NODES}


def _strings(record: Record) -> list[str]:
    """Every string in the event's own fields (lists and maps included)."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for key, value in record.items():
        if key not in ("ts", "node", "component", "event"):
            walk(value)
    return found


def _foreign_names(node: int) -> list[str]:
    return [name for other in NODES if other != node for name in _names(other)]


def test_three_nodes_in_one_process_trace_to_three_streams(tmp_path: Path) -> None:
    trace_dir = tmp_path / "traces"
    with recording_tracer() as process_tracer:
        trio.run(_run_three, tmp_path, trace_dir)
    assert process_tracer.records == []  # every component emitted to its node's tracer

    streams: dict[int, list[Record]] = defaultdict(list)
    for record in read_trace(trace_dir):
        node = record["node"]
        assert isinstance(node, int)
        streams[node].append(record)
    assert sorted(streams) == list(NODES)
    # One tracer, one set of files: the file names carry the node too.
    for node in NODES:
        assert list(trace_dir.glob(f"trace-node{node}-*.jsonl"))

    for node, records in streams.items():
        topic, group, client = _names(node)
        components = {r["component"] for r in records}
        assert components >= COMPONENTS, (node, COMPONENTS - components)
        # Nothing in this stream mentions another node's topic, group or clients ...
        foreign = _foreign_names(node)
        leaked = [
            r for r in records if any(f in s for s in _strings(r) for f in foreign)
        ]
        assert leaked == [], (node, leaked[:3])
        # ... and each component speaks of this node's own things.
        for r in records:
            if "topic" in r:
                assert r["topic"] in {topic, *INTERNAL_TOPICS}, (node, r)
            if "group_id" in r:
                assert r["group_id"] == group, (node, r)
            if r["component"] == "net" and r["event"] == "request":
                assert r["client_id"].startswith(client), (node, r)
            if r["component"] == "controller" and r["event"] == "broker_registration":
                assert r["broker_id"] == node, (node, r)
        rolls = [
            r
            for r in records
            if r["event"] == "segment_roll" and r.get("topic") == topic
        ]
        assert rolls, node
        assert any(r["event"] == "member_join" for r in records), node
        assert any(
            r["component"] == "replication"
            and r["event"] == "hw_advance"
            and r["topic"] == topic
            for r in records
        ), node
