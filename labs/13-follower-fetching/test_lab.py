"""Lab 13's checks: fetching from the closest replica (KIP-392), on real brokers.

One KRaft cluster of real processes for the whole module: a controller and brokers 1, 2
and 3 in racks ``a``, ``b`` and ``c``. Brokers 1 and 2 run with
``replica.selector.class=minikafka.replication.RackAwareReplicaSelector``; broker 3 is
left at Kafka's default (no selector). Topic ``near`` lives on 1, 2, 3 (broker 1 leads),
topic ``plain`` on 3, 1, 2 (broker 3 leads). The checks speak the Fetch protocol
themselves where a field is the point (``rack_id`` in, ``preferred_read_replica``,
records and high watermark out) and run confluent-kafka consumers with ``client.rack``
where the point is what a real client does with the answer.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

# confluent_kafka.admin re-exports NewTopic without listing it in __all__.
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v10.request import FetchPartition as FetchPartitionV10
from kio.schema.fetch.v10.request import FetchRequest as FetchRequestV10
from kio.schema.fetch.v10.request import FetchTopic as FetchTopicV10
from kio.schema.fetch.v10.response import FetchResponse as FetchResponseV10
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.fetch.v11.response import FetchResponse
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.common import ConfigError
from minikafka.log import decode_batch
from minikafka.net import NetworkClient, Node

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("MINIKAFKA_LAB_EXTEND"),
        reason="an extend lab: `python -m minikafka.labs run 13` checks your minikafka",
    ),
    pytest.mark.timeout(300),
]

SELECTOR = "minikafka.replication.RackAwareReplicaSelector"
RACKS = {1: "a", 2: "b", 3: "c"}
NEAR, PLAIN = "near", "plain"
LEADER, FOLLOWER_B, FOLLOWER_C = 1, 2, 3
NO_SELECTOR = 3
"""The broker left at Kafka's default: it leads ``plain``."""
LAG_MAX_MS = 2000
"""``replica.lag.time.max.ms``: how long a stopped follower stays in the ISR."""
MAX_WAIT_MS = 10_000
"""A long poll's ``max_wait`` on the follower: its HW moves within a fetch round trip of
the leader's; an answer this late came from the wait running out."""
RECORDS = 20
WAIT = 60.0
READ_WAIT = 20.0
"""A consumer's deadline for the module's records: it reads them within a second or two
on a loaded machine. A consumer the leader sends nowhere (no records, no preferred read
replica named) reads none: its check fails here, not a minute later at :data:`WAIT`."""
HOST = "127.0.0.1"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.05)  # polling the cluster, inside the deadline


# --- the protocol, spoken directly ------------------------------------------------------


def call(
    port: int, body: RequestPayload, sent: threading.Event | None = None
) -> ResponsePayload:
    """``body``'s answer from the broker on ``port``; ``sent`` is set once the request
    is written (a long poll's caller acts on the broker only after that)."""

    async def send() -> ResponsePayload:
        async with NetworkClient.open(client_id="lab13") as client:
            with trio.fail_after(WAIT):
                pending = await client.enqueue(Node(-1, HOST, port), body)
                if sent is not None:
                    sent.set()
                response = await pending.response()
            assert response is not None
            return response

    return trio.run(send)


@attrs.frozen
class Fetched:
    error_code: ErrorCode
    high_watermark: int
    preferred_read_replica: int
    offsets: list[int]
    values: list[bytes | None]


def fetch(
    cluster: ProcessCluster,
    broker: int,
    topic: str,
    offset: int,
    *,
    rack: str | None = "",
    leader_epoch: int = -1,
    max_wait_ms: int = 0,
    sent: threading.Event | None = None,
) -> Fetched:
    """A consumer's Fetch of partition 0 (replica_id -1): v11 with ``rack``, or v10
    (before KIP-392) when ``rack`` is None."""
    wait = i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms))
    if rack is None:
        old = FetchRequestV10(
            replica_id=BrokerId(-1),
            max_wait=wait,
            min_bytes=i32(1),
            max_bytes=i32(1 << 20),
            isolation_level=i8(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                FetchTopicV10(
                    topic=TopicName(topic),
                    partitions=(
                        FetchPartitionV10(
                            partition=i32(0),
                            current_leader_epoch=i32(leader_epoch),
                            fetch_offset=i64(offset),
                            log_start_offset=i64(-1),
                            partition_max_bytes=i32(1 << 20),
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        )
        response = call(cluster.port(broker), old)
        assert isinstance(response, FetchResponseV10)
        [[data]] = [t.partitions for t in response.responses]
        records, preferred = data.records, -1
    else:
        body = FetchRequest(
            replica_id=BrokerId(-1),
            max_wait=wait,
            min_bytes=i32(1),
            max_bytes=i32(1 << 20),
            isolation_level=i8(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                FetchTopic(
                    topic=TopicName(topic),
                    partitions=(
                        FetchPartition(
                            partition=i32(0),
                            current_leader_epoch=i32(leader_epoch),
                            fetch_offset=i64(offset),
                            log_start_offset=i64(-1),
                            partition_max_bytes=i32(1 << 20),
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id=rack,
        )
        answer = call(cluster.port(broker), body, sent)
        assert isinstance(answer, FetchResponse)
        [[data11]] = [t.partitions for t in answer.responses]
        data = data11  # type: ignore[assignment]
        records, preferred = data11.records, int(data11.preferred_read_replica)
    offsets: list[int] = []
    values: list[bytes | None] = []
    position = 0
    while records and position < len(records):
        header, batch = decode_batch(records, position)
        offsets += [r.offset for r in batch]
        values += [r.value for r in batch]
        position += header.size
    return Fetched(
        data.error_code, int(data.high_watermark), preferred, offsets, values
    )


def leader_epoch(cluster: ProcessCluster, topic: str) -> int:
    body = MetadataRequest(
        topics=(MetadataRequestTopic(name=TopicName(topic)),),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    response = call(cluster.port(LEADER), body)
    assert isinstance(response, MetadataResponse)
    [found] = response.topics
    [partition] = found.partitions
    return int(partition.leader_epoch)


def isr(cluster: ProcessCluster, topic: str) -> set[int]:
    """The ISR the cluster's metadata shows; empty while the broker asked does not know
    the topic's partition yet (a topic just created), so a wait goes on waiting."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    found = admin.list_topics(topic, timeout=10).topics.get(topic)
    if found is None or 0 not in found.partitions:
        return set()
    return set(found.partitions[0].isrs)


def produce(
    cluster: ProcessCluster, topic: str, values: list[bytes], acks: str
) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": acks, "log_level": 0}
    )
    failed: list[object] = []

    def delivered(error: object, message: object) -> None:
        if error is not None:
            failed.append(error)

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
    assert producer.flush(WAIT) == 0
    assert not failed, failed


def high_watermark(cluster: ProcessCluster, broker: int, topic: str) -> int:
    """What ``broker`` answers a pre-KIP-392 consumer (the leader's HW)."""
    return fetch(cluster, broker, topic, 0, rack=None).high_watermark


# --- the cluster ------------------------------------------------------------------------


def make_cluster(root: Path, ports: list[int]) -> ProcessCluster:
    cluster = ProcessCluster.create(
        root / "cluster",
        3,
        broker_ports=ports[:3],
        controller_port=ports[3],
        racks=RACKS,
        overrides={
            "replica.selector.class": SELECTOR,
            "replica.lag.time.max.ms": str(LAG_MAX_MS),
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "5000",
        },
    )
    # Broker 3 is left at Kafka's default: no replica.selector.class.
    props = cluster.properties_file(NO_SELECTOR)
    lines = props.read_text().splitlines(keepends=True)
    props.write_text(
        "".join(x for x in lines if not x.startswith("replica.selector.class="))
    )
    return cluster


def in_sync(cluster: ProcessCluster, topic: str) -> Callable[[], bool]:
    return lambda: len(isr(cluster, topic)) == 3


def leader_prefers(cluster: ProcessCluster, rack: str, preferred: int) -> Fetched:
    """The leader's answer to a consumer in ``rack`` once it names ``preferred``.

    The ISR a client reads in Metadata may come from a broker that applied a change
    before the leader did (each applies it on its own), so the leader is asked until
    its own answer shows the change; an answer that never does fails the wait."""
    answers: list[Fetched] = []

    def names_it() -> bool:
        answers.append(fetch(cluster, LEADER, NEAR, 0, rack=rack))
        return answers[-1].preferred_read_replica == preferred

    wait_for(names_it, f"the leader naming {preferred} for rack {rack!r}", 15)
    return answers[-1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    root = tmp_path_factory.mktemp("lab13")
    try:
        cluster = make_cluster(root, free_ports(4))
    except ConfigError as exc:
        pytest.fail(f"the brokers cannot be configured (the first stage): {exc}")
    try:
        cluster.up()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
        topics = [
            NewTopic(NEAR, 1, replica_assignment=[[LEADER, FOLLOWER_B, FOLLOWER_C]]),
            NewTopic(PLAIN, 1, replica_assignment=[[NO_SELECTOR, LEADER, FOLLOWER_B]]),
        ]
        for future in admin.create_topics(topics).values():
            future.result(timeout=WAIT)
        for topic in (NEAR, PLAIN):
            wait_for(in_sync(cluster, topic), f"{topic} in sync")
        produce(cluster, NEAR, [b"n%d" % i for i in range(RECORDS)], "all")
        produce(cluster, PLAIN, [b"p%d" % i for i in range(RECORDS)], "all")
        yield cluster
    finally:
        for node in cluster.node_ids:  # a stopped (SIGSTOP) node must wake to end
            pid = cluster.pid(node)
            if pid is not None:
                os.kill(pid, signal.SIGCONT)
        cluster.down()


def caught_up(cluster: ProcessCluster, broker: int, topic: str, hw: int) -> Fetched:
    """The follower's answer at offset 0 once it serves everything below ``hw``."""
    found: list[Fetched] = []

    def served() -> bool:
        found[:] = [fetch(cluster, broker, topic, 0, rack=RACKS[broker])]
        # The follower has followed since the topic was in sync: a refusal is final.
        assert found[0].error_code is not ErrorCode.not_leader_or_follower, (
            f"broker {broker}, a follower of {topic}, refused a consumer's Fetch v11"
        )
        return found[0].error_code is ErrorCode.none and found[0].high_watermark >= hw

    # A follower learns the HW within a fetch round trip: 15 s is ample.
    wait_for(served, f"broker {broker} serving {topic} up to {hw}: {found}", 15)
    return found[0]


# --- stage 1: a follower serves consumers ------------------------------------------------


def test_follower_serves_committed_records(cluster: ProcessCluster) -> None:
    hw = high_watermark(cluster, LEADER, NEAR)
    assert hw >= RECORDS
    answer = caught_up(cluster, FOLLOWER_B, NEAR, hw)
    assert answer.preferred_read_replica == -1  # a follower never sends anyone on
    assert answer.offsets == list(range(len(answer.offsets)))
    assert answer.values[:RECORDS] == [b"n%d" % i for i in range(RECORDS)]
    assert all(o < answer.high_watermark for o in answer.offsets)


def test_follower_fetch_offsets_at_and_beyond_its_end(cluster: ProcessCluster) -> None:
    hw = high_watermark(cluster, LEADER, NEAR)
    caught_up(cluster, FOLLOWER_B, NEAR, hw)
    epoch = leader_epoch(cluster, NEAR)
    at_end = fetch(cluster, FOLLOWER_B, NEAR, hw, rack="b", leader_epoch=epoch)
    assert (at_end.error_code, at_end.offsets) == (ErrorCode.none, [])
    # Past the follower's log, a consumer that names the epoch is told: out of range
    # here (it asks the leader next); one that names none gets nothing, no error.
    beyond = fetch(cluster, FOLLOWER_B, NEAR, hw + 100, rack="b", leader_epoch=epoch)
    assert beyond.error_code is ErrorCode.offset_out_of_range
    unnamed = fetch(cluster, FOLLOWER_B, NEAR, hw + 100, rack="b")
    assert (unnamed.error_code, unnamed.offsets) == (ErrorCode.none, [])
    if epoch > 0:  # epoch 0 has nothing older to name (-1 names none)
        stale = fetch(cluster, FOLLOWER_B, NEAR, 0, rack="b", leader_epoch=epoch - 1)
        assert stale.error_code is ErrorCode.fenced_leader_epoch
    newer = fetch(cluster, FOLLOWER_B, NEAR, 0, rack="b", leader_epoch=epoch + 1)
    assert newer.error_code is ErrorCode.unknown_leader_epoch
    # Before Fetch v11 a consumer cannot have been sent here: the leader only.
    old = fetch(cluster, FOLLOWER_B, NEAR, 0, rack=None)
    assert old.error_code is ErrorCode.not_leader_or_follower


def test_follower_long_poll_answered_when_its_high_watermark_moves(
    cluster: ProcessCluster,
) -> None:
    """A consumer's long poll parked on follower 2 while the HW is held back (follower 3
    stopped, still in the ISR) is answered once 3 resumes and the HW passes the new
    records: not at once with nothing, not only when ``max_wait`` runs out. Nothing in
    the partition's metadata changes meanwhile: only the follower's HW moves."""
    hw = high_watermark(cluster, LEADER, NEAR)
    caught_up(cluster, FOLLOWER_B, NEAR, hw)
    written = [b"w%d" % i for i in range(3)]
    result: list[tuple[Fetched, float]] = []
    sent = threading.Event()

    def long_poll() -> None:
        start = time.monotonic()
        answer = fetch(
            cluster, FOLLOWER_B, NEAR, hw, rack="b", max_wait_ms=MAX_WAIT_MS, sent=sent
        )
        result.append((answer, time.monotonic() - start))

    poller = threading.Thread(target=long_poll)
    cluster.signal(FOLLOWER_C, signal.SIGSTOP)
    try:
        produce(cluster, NEAR, written, "1")
        poller.start()
        assert sent.wait(WAIT)
        # A round trip to the same broker after the poll was written: by its answer the
        # broker has read the poll too. The HW is still held back.
        assert fetch(cluster, FOLLOWER_B, NEAR, hw, rack="b").offsets == []
    finally:
        cluster.signal(FOLLOWER_C, signal.SIGCONT)
    poller.join(WAIT)
    [(answer, took)] = result
    assert answer.error_code is ErrorCode.none
    assert answer.values == written, "answered before the records were committed"
    assert took < MAX_WAIT_MS / 1000 - 4, (
        f"answered after {took:.1f}s: not when the HW moved"
    )
    wait_for(in_sync(cluster, NEAR), "broker 3 in the ISR")


def test_follower_serves_nothing_past_its_high_watermark(
    cluster: ProcessCluster,
) -> None:
    """With follower 3 stopped the leader's HW stays put until the ISR drops 3; records
    written meanwhile reach follower 2's log, but no consumer may read them there."""
    hw = high_watermark(cluster, LEADER, NEAR)
    caught_up(cluster, FOLLOWER_B, NEAR, hw)
    cluster.signal(FOLLOWER_C, signal.SIGSTOP)
    try:
        produce(cluster, NEAR, [b"u%d" % i for i in range(5)], "1")
        deadline = time.monotonic() + LAG_MAX_MS / 1000 / 2
        while time.monotonic() < deadline:
            answer = fetch(cluster, FOLLOWER_B, NEAR, hw, rack="b")
            committed = high_watermark(cluster, LEADER, NEAR)
            assert all(o < committed for o in answer.offsets), (
                f"follower served {answer.offsets} past the HW {committed}"
            )
        # Once the ISR has dropped broker 3 the HW moves, and the follower serves them.
        caught_up(cluster, FOLLOWER_B, NEAR, hw + 5)
    finally:
        cluster.signal(FOLLOWER_C, signal.SIGCONT)
    wait_for(in_sync(cluster, NEAR), "broker 3 back in the ISR")


# --- stage 2: the leader names the preferred read replica -------------------------------


def test_leader_names_the_in_sync_replica_in_the_consumers_rack(
    cluster: ProcessCluster,
) -> None:
    wait_for(in_sync(cluster, NEAR), "near in sync")
    hw = high_watermark(cluster, LEADER, NEAR)
    for rack, preferred in (("b", FOLLOWER_B), ("c", FOLLOWER_C)):
        answer = leader_prefers(cluster, rack, preferred)
        assert answer.error_code is ErrorCode.none
        assert answer.offsets == [], "a consumer sent elsewhere gets no records"
        assert answer.high_watermark == hw
    for rack in ("a", "", "nowhere"):
        answer = fetch(cluster, LEADER, NEAR, 0, rack=rack)
        assert (answer.preferred_read_replica, answer.offsets[:1]) == (-1, [0]), rack
    old = fetch(cluster, LEADER, NEAR, 0, rack=None)  # v10: no rack to go by
    assert old.offsets[:1] == [0]


def test_leader_without_a_selector_serves_every_consumer(
    cluster: ProcessCluster,
) -> None:
    for rack in ("a", "b"):
        answer = fetch(cluster, NO_SELECTOR, PLAIN, 0, rack=rack)
        assert answer.error_code is ErrorCode.none
        assert (answer.preferred_read_replica, answer.offsets[:1]) == (-1, [0]), rack


def test_a_follower_out_of_the_isr_is_not_preferred(cluster: ProcessCluster) -> None:
    wait_for(in_sync(cluster, NEAR), "near in sync")
    leader_prefers(cluster, "c", FOLLOWER_C)
    cluster.signal(FOLLOWER_C, signal.SIGSTOP)
    try:
        wait_for(lambda: FOLLOWER_C not in isr(cluster, NEAR), "3 out of the ISR")
        answer = leader_prefers(cluster, "c", -1)
        assert answer.offsets[:1] == [0], "the leader serves the consumer itself"
    finally:
        cluster.signal(FOLLOWER_C, signal.SIGCONT)
    wait_for(in_sync(cluster, NEAR), "broker 3 back in the ISR")


def session_fetch(
    cluster: ProcessCluster, rack: str, session_id: int, epoch: int
) -> tuple[int, dict[int, int]]:
    """A consumer's Fetch v11 of ``near`` from the leader in a fetch session (KIP-227):
    the full fetch (epoch 0) names partition 0; an incremental one (epoch > 0) names
    nothing new. The session id of the answer, and each partition it names with its
    ``preferred_read_replica``."""
    body = FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(datetime.timedelta(0)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        session_id=i32(session_id),
        session_epoch=i32(epoch),
        topics=(
            FetchTopic(
                topic=TopicName(NEAR),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(0),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        )
        if epoch == 0
        else (),
        forgotten_topics_data=(),
        rack_id=rack,
    )
    answer = call(cluster.port(LEADER), body)
    assert isinstance(answer, FetchResponse)
    assert answer.error_code is ErrorCode.none
    named = {
        int(p.partition_index): int(p.preferred_read_replica)
        for t in answer.responses
        for p in t.partitions
    }
    return int(answer.session_id), named


def test_a_fetch_session_names_the_redirect_every_time(cluster: ProcessCluster) -> None:
    """An incremental answer leaves out the partitions with nothing new; one the leader
    sends elsewhere is named every time, or a consumer in a session (the Java client's
    way) would never hear where to go, and would get nothing from the leader."""
    wait_for(in_sync(cluster, NEAR), "near in sync")
    leader_prefers(cluster, "b", FOLLOWER_B)
    session, named = session_fetch(cluster, "b", 0, 0)
    assert session != 0, "the leader opens a fetch session"
    assert named == {0: FOLLOWER_B}
    for epoch in (1, 2):
        assert session_fetch(cluster, "b", session, epoch) == (session, {0: FOLLOWER_B})


def test_a_selector_that_is_no_class_stops_the_broker(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    """The module's brokers 1 and 2 started with the selector's dotted path; a node
    whose replica.selector.class names no class must refuse to start, naming the key
    (a broker that started would fail its consumers later)."""
    assert cluster.pid(LEADER) is not None
    port, controller = free_ports(2)
    props = {
        "node.id": "1",
        "process.roles": "broker,controller",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": f"1@{HOST}:{controller}",
        "log.dirs": str(tmp_path / "logs"),
        "replica.selector.class": "minikafka.replication.NoSuchSelector",
    }
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log = tmp_path / "broker.log"
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "minikafka.broker", "broker", str(path)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        # Either it stops (right) or it says it is ready (wrong): whichever comes first.
        wait_for(
            lambda: child.poll() is not None or b"ready on" in log.read_bytes(),
            "the broker either stopping or ready",
            30,
        )
        started = child.poll() is None
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(WAIT)
    output = log.read_bytes()
    assert not started, "a broker started with a selector class that is none"
    assert child.returncode != 0
    assert b"replica.selector.class" in output, output[-2000:]


# --- stage 3: real consumers -----------------------------------------------------------


def consume(
    cluster: ProcessCluster, topic: str, rack: str | None, count: int
) -> tuple[list[bytes], set[int]]:
    """``count`` records of ``topic`` from offset 0 by a confluent-kafka consumer in
    ``rack``, and every broker librdkafka's statistics say it fetched from."""
    fetched_from: set[int] = set()

    def stats(text: str) -> None:
        partition = json.loads(text)["topics"].get(topic, {}).get("partitions", {})
        broker = partition.get("0", {}).get("broker", -1)
        if broker >= 0:
            fetched_from.add(broker)

    settings: dict[str, Any] = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": f"lab13-{topic}-{rack}",
        "enable.auto.commit": False,
        "statistics.interval.ms": 100,
        "stats_cb": stats,
        "log_level": 0,
    }
    if rack is not None:
        settings["client.rack"] = rack
    consumer = Consumer(settings)
    values: list[bytes] = []
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + READ_WAIT
        while len(values) < count:
            assert time.monotonic() < deadline, f"read {len(values)} of {count}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value)
        # A few more statistics, so the last broker fetched from is counted.
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            consumer.poll(0.1)
    finally:
        consumer.close()
    return values, fetched_from


def test_consumer_in_a_followers_rack_reads_that_follower(
    cluster: ProcessCluster,
) -> None:
    wait_for(in_sync(cluster, NEAR), "near in sync")
    values, brokers = consume(cluster, NEAR, "b", RECORDS)
    assert values == [b"n%d" % i for i in range(RECORDS)]
    assert FOLLOWER_B in brokers, f"fetched from {brokers}, never from broker 2"


def test_consumers_read_the_leader_when_nothing_is_closer(
    cluster: ProcessCluster,
) -> None:
    for rack in ("a", None):
        values, brokers = consume(cluster, NEAR, rack, RECORDS)
        assert values == [b"n%d" % i for i in range(RECORDS)]
        assert brokers == {LEADER}, (rack, brokers)
    values, brokers = consume(cluster, PLAIN, "b", RECORDS)
    assert values == [b"p%d" % i for i in range(RECORDS)]
    assert brokers == {NO_SELECTOR}, brokers
