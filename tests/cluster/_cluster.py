"""What the cluster tests share: the settings their clusters run with, and what they ask
a cluster, through confluent-kafka's AdminClient (librdkafka reads the brokers' Metadata
as any client does). Every wait has a deadline.

And what every suite of real broker processes shares (the cluster, e2e and compat
suites): no node may die of an unexpected exception or end without being told to.
:func:`check_crashes` fails a test after which a node did (each suite's teardown calls
it); :data:`SHARED` holds the clusters :func:`shared_cluster` has up, and
:class:`BrokerProcessWatch` sees every :class:`BrokerProcess` a suite runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs
import pytest
import trio
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.schema.describe_cluster.v2.response import DescribeClusterResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from minikafka.broker._node_exits import describe_exit, tracebacks
from minikafka.broker.testing import (
    BrokerProcess,
    NodeProcess,
    ProcessCluster,
    free_ports,
)
from minikafka.client import AsyncAdminClient

WAIT = 60.0
"""Seconds a test waits for the cluster to do something that takes a few (a fencing,
an election, a restart) on a loaded two-core machine."""

MODES = ("kraft", "zookeeper")
"""The two ways a cluster runs: suites that must hold in both take them as a
parameter."""

FAST = {
    # A killed broker is fenced, and its partitions get new leaders, within 5 s: short
    # for the tests, long enough that a loaded two-core machine fences no live broker.
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "5000",
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
    # ZooKeeper mode's equivalent: a killed broker's session (and its registration, and
    # the controller role if it held it) ends within 6 s.
    "zookeeper.session.timeout.ms": "6000",
    # A ZooKeeper-mode broker stopping while it leads a partition no other live replica
    # can take (the last of a cluster stopped together, a test's lone leader) asks the
    # controller controlled.shutdown.max.retries (3) times in all, waiting this long
    # after each refusal, then stops: 3 s of waiting, not Kafka's default 15 s, for
    # each such stop.
    "controlled.shutdown.retry.backoff.ms": "1000",
}

MakeCluster = Callable[..., ProcessCluster]


Condition = Callable[[], bool]


def wait_for(condition: Condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.1)  # polling the cluster's state, inside the deadline


@attrs.frozen
class PartitionState:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def admin(cluster: ProcessCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})


def create_topic(
    cluster: ProcessCluster,
    name: str,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
) -> None:
    """An RF 3 topic, once every partition has its whole ISR. Sent again if librdkafka
    dropped the broker it waited on (``_DESTROY_BROKER``: right after a cluster starts,
    a broker may answer Metadata before its image lists every broker unfenced, and
    librdkafka removes a broker a Metadata answer does not list); a topic the first
    attempt created is then TOPIC_ALREADY_EXISTS."""
    client = admin(cluster)  # held until the answer: a collected client cancels it
    for attempt in range(3):
        futures = client.create_topics(
            [NewTopic(name, partitions, 3, config=dict(configs or {}))],
            operation_timeout=30,
        )
        try:
            futures[name].result(timeout=WAIT)
            break
        except KafkaException as exc:
            code = exc.args[0].code()
            if attempt > 0 and code == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if code != KafkaError._DESTROY_BROKER or attempt == 2:
                raise
    for p in range(partitions):
        wait_for(in_sync(cluster, name, p), f"{name}-{p} in sync")


def in_sync(
    cluster: ProcessCluster, topic: str, partition: int, size: int = 3
) -> Condition:
    """The partition's ISR has ``size`` replicas."""
    return lambda: len(state(cluster, topic, partition).isr) == size


def state(cluster: ProcessCluster, topic: str, partition: int = 0) -> PartitionState:
    """What the brokers' Metadata says of ``topic``-``partition`` now (leader -1: none, or
    the answering broker does not know the partition yet). A request no broker answers
    is asked again, within :data:`WAIT`."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            metadata = admin(cluster).list_topics(topic, timeout=5)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or partition not in found.partitions:
        return PartitionState(-1, (), ())
    p = found.partitions[partition]
    return PartitionState(p.leader, tuple(p.replicas), tuple(p.isrs))


def registered_brokers(cluster: ProcessCluster) -> dict[int, bool]:
    """Every registered broker and whether it is fenced (DescribeCluster v2 with
    ``include_fenced_brokers``), as the first broker answers."""

    async def ask() -> dict[int, bool]:
        config = {"bootstrap.servers": cluster.bootstrap}
        with trio.fail_after(WAIT):
            async with AsyncAdminClient.open(config) as client:
                body = DescribeClusterRequest(
                    include_cluster_authorized_operations=False,
                    endpoint_type=i8(1),
                    include_fenced_brokers=True,
                )
                response = await client.request(
                    client.bootstrap[0], body, DescribeClusterResponse
                )
                assert response.error_code == ErrorCode.none, response
                return {int(b.broker_id): b.is_fenced for b in response.brokers}

    return trio.run(ask)


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    """Partition 0's (earliest, latest) from its leader (ListOffsets); asked again while
    the client's metadata still names a leader that is gone."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "watermarks", "log_level": 0}
    )
    deadline = time.monotonic() + WAIT
    try:
        while True:
            try:
                low, high = consumer.get_watermark_offsets(
                    KafkaTopicPartition(topic, 0), timeout=WAIT / 4
                )
                return int(low), int(high)
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # polling the cluster, inside the deadline
    finally:
        consumer.close()


def read_from_zero(bootstrap: str, topic: str, count: int) -> list[bytes]:
    """``count`` values of partition 0 from a consumer assigned offset 0, which is out of
    range once records below it are deleted: ``auto.offset.reset=earliest`` moves it to
    the log start."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + WAIT
        while len(values) < count:
            assert time.monotonic() < deadline, f"read {len(values)} of {count}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
    finally:
        consumer.close()
    return values


def read_values(cluster: ProcessCluster, topic: str) -> list[bytes]:
    """Partition 0 from its start to its high watermark, as the leader serves it."""

    def reader() -> Consumer:
        return Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": "reader",
                # No group offsets: committing them on close would wait for a group
                # coordinator, which a cluster that lost brokers may not have.
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )

    consumer = reader()
    try:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                tp = KafkaTopicPartition(topic, 0)
                end = consumer.get_watermark_offsets(tp, timeout=WAIT / 4)[1]
                break
            except KafkaException as exc:
                # Right after a leader change librdkafka may still hold metadata from a
                # broker that had not replayed it (Local: Unknown partition), and keep it
                # for minutes: ask again with a new client, as an application restarted
                # would, until the deadline.
                if time.monotonic() > deadline:
                    # Name what the brokers say now: readable from CI's output alone.
                    now = state(cluster, topic)
                    raise AssertionError(f"{exc}; {topic}-0 is now {now}") from exc
                consumer.close()
                time.sleep(0.2)  # polling, inside the deadline: do not spin
                consumer = reader()
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT
        while len(values) < end:
            assert time.monotonic() < deadline, f"read {len(values)} of {end}"
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value)
        return values
    finally:
        consumer.close()


def known_state(
    cluster: ProcessCluster, topic: str, partition: int = 0
) -> PartitionState:
    """``state``, waiting until the answering broker knows the partition's leader (a
    broker that has not replayed the topic yet says -1)."""
    found: list[PartitionState] = []

    def known() -> bool:
        found[:] = [state(cluster, topic, partition)]
        return found[0].leader >= 0

    wait_for(known, f"a known leader of {topic}-{partition}")
    return found[0]


def create_on(
    cluster: ProcessCluster,
    topic: str,
    replicas: list[int],
    configs: Mapping[str, str] | None = None,
) -> None:
    """A one-partition topic on exactly ``replicas`` (the first leads), once in sync."""
    client = admin(cluster)
    new = NewTopic(
        topic,
        num_partitions=1,
        replica_assignment=[replicas],
        config=dict(configs or {}),
    )
    client.create_topics([new])[topic].result(timeout=WAIT)
    wait_for(in_sync(cluster, topic, 0, len(replicas)), f"{topic} in sync")


@contextmanager
def shared_cluster(
    root: Path,
    brokers: int = 3,
    *,
    mode: str = "kraft",
    racks: Mapping[int, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Iterator[ProcessCluster]:
    """A started cluster with :data:`FAST` settings for a module's tests to share (each
    uses topics of its own); killed at the end. ``mode`` ``zookeeper``: ZooKeeper mode
    (a ZooKeeper server, brokers 0..N-1 electing their controller through it);
    ``overrides``: settings on top of FAST."""
    ports = free_ports(brokers + 1)
    cluster = ProcessCluster.create(
        root,
        brokers,
        controller_port=ports[0],
        broker_ports=ports[1:],
        overrides={**FAST, **(overrides or {})},
        zookeeper=mode == "zookeeper",
        zookeeper_port=ports[0],
        racks=racks,
    )
    SHARED.append(cluster)
    try:
        cluster.up()
        yield cluster
    finally:
        SHARED.remove(cluster)
        cluster.kill_all()


SHARED: list[ProcessCluster] = []
"""The clusters :func:`shared_cluster` has up: each test's crash check asks them too."""

REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
"""Each phase's report of a test, kept on its item by the suites' conftests (their
``pytest_runtest_makereport``) for the teardowns to read."""


def check_crashes(item: pytest.Item, crashes: Sequence[object]) -> None:
    """At a test's teardown: fail it if a node crashed (``crashes``, new since the last
    test's check) and the test itself passed; after a failed test, print them (they
    may be why)."""
    if not crashes:
        return
    text = "\n\n".join(str(crash) for crash in crashes)
    call = item.stash.get(REPORTS, {}).get("call")
    if call is None or not call.passed:
        print(f"----- node processes that crashed during this test:\n{text}")
        return
    pytest.fail(
        "No node process dies of an unexpected exception (a traceback in its output)"
        f" or ends without being told to; during this test:\n{text}",
        pytrace=False,
    )


@attrs.define(eq=False)
class _Run:
    """One start of a BrokerProcess: its child, the thread reading its output, and
    whether ``stop()`` or ``kill()`` told it to end (``untold``: its status, had it ended
    before)."""

    child: NodeProcess
    drain: threading.Thread | None
    told: bool = False
    untold: int | None = None

    @property
    def crashed_with(self) -> int | None:
        """The status it ended with, untold and other than 0; None if it did not."""
        status = self.untold if self.told else self.child.poll()
        return status if status else None


@attrs.define(eq=False)
class _Watched:
    runs: list[_Run] = attrs.field(factory=list)
    reported: set[str] = attrs.field(factory=set)


class BrokerProcessWatch:
    """Every :class:`BrokerProcess` a suite starts, whoever starts it (a fixture, or a
    test itself), and which crashed: wrote a traceback to its output, or ended, other
    than by ``stop()`` or ``kill()``, with a status other than 0. :meth:`install` (a
    session fixture's) wraps BrokerProcess's ``start``, ``stop`` and ``kill`` for the
    session; :meth:`crashes` (each test's teardown) says what is new since it last did."""

    def __init__(self) -> None:
        self._watched: dict[BrokerProcess, _Watched] = {}
        """Held until a check finds it ended (a test may start one and drop it)."""

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        start, stop, kill = BrokerProcess.start, BrokerProcess.stop, BrokerProcess.kill
        watched = self._watched

        def started(process: BrokerProcess, timeout: float = 60.0) -> None:
            runs = watched.setdefault(process, _Watched()).runs
            before = set(threading.enumerate())
            start(process, timeout)  # starts the thread that reads the output on
            new = [
                t
                for t in threading.enumerate()
                if t not in before and "drain" in t.name  # "Thread-3 (drain)"
            ]
            assert process.process is not None
            runs.append(_Run(process.process, new[0] if len(new) == 1 else None))

        def told(process: BrokerProcess) -> None:
            for run in watched.get(process, _Watched()).runs:
                if run.child is process.process and not run.told:
                    run.untold = run.child.poll()  # None: running until told now
                    run.told = True

        def stopped(process: BrokerProcess, timeout: float = 60.0) -> int:
            told(process)
            return stop(process, timeout)

        def killed(process: BrokerProcess) -> None:
            told(process)
            kill(process)

        monkeypatch.setattr(BrokerProcess, "start", started)
        monkeypatch.setattr(BrokerProcess, "stop", stopped)
        monkeypatch.setattr(BrokerProcess, "kill", killed)

    def expect_exit(self, process: BrokerProcess) -> None:
        """``process`` is about to end by itself, as the test means it to (a fatal fault
        it provoked): its exit is not a crash. A traceback still is."""
        for run in self._watched.get(process, _Watched()).runs:
            if run.child is process.process:
                run.told, run.untold = True, None

    def crashes(self) -> list[str]:
        found = []
        for process, watched in list(self._watched.items()):
            for run in watched.runs:
                if run.child.poll() is not None and run.drain is not None:
                    run.drain.join(WAIT)  # it has read the run's output to the end
                status = run.crashed_with
                if status is None:
                    continue
                what = f"(pid {run.child.pid}) {describe_exit(status)}"
                if what not in watched.reported:
                    watched.reported.add(what)
                    tail = "\n".join(process.output[-40:])
                    found.append(
                        f"broker {process.data_dir} {what} without being told to;"
                        f" the end of its output:\n{tail}"
                    )
            for line, traceback in tracebacks("\n".join(list(process.output))):
                what = f"traceback at line {line}"
                if what not in watched.reported:
                    watched.reported.add(what)
                    found.append(
                        f"broker {process.data_dir} wrote a traceback (line {line}"
                        f" of its output):\n{traceback}"
                    )
            if process.process is None or process.process.poll() is not None:
                del self._watched[process]  # ended, its output read: nothing to come
        return found
