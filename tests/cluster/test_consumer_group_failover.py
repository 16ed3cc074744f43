"""A KIP-848 consumer group (``group.protocol=consumer``) on a three-broker cluster: it
survives the death of its coordinator, and members that die or arrive.

Three confluent-kafka consumers in one group share a six-partition RF 3 topic holding
numbered records; each commits every batch synchronously (OffsetCommit with its member
epoch) before it polls again. In the first test, once a third is processed the
consumers pause, the broker that leads the group's ``__consumer_offsets`` partition
(its coordinator) is SIGKILLed, and they go on: the partition's new leader replays the
group's records (ConsumerGroupMetadata, TargetAssignment, CurrentMemberAssignment ...)
from its copy of the log, becomes the coordinator, and the members carry on with their
member epochs. In the second, a member in a child process is SIGKILLed (fenced when its
session ends) and a new one joins.

Guarantees checked, in KRaft mode and in ZooKeeper mode alike: **every record is
processed (none skipped), and the only ones processed twice are those of a batch whose
commit failed** (Kafka's at-least-once window); **no partition is owned by two members
at once**, as the members' own rebalance callbacks saw it, as the records they read
show (each was read by a member that owned its partition then), and as each
coordinator's ``group.member_assignment`` trace shows.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as ClientPartition
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import ProcessCluster
from minikafka.trace import read_trace
from tests.cluster._cluster import MODES, WAIT, MakeCluster, create_topic, wait_for

# Clusters of real processes, killed and restarted: minutes on a loaded two-core
# machine, more than the suite's default per-test timeout.
pytestmark = pytest.mark.timeout(400)

PARTITIONS = 6
TOPIC = "jobs"
GROUP = "kip848-workers"
CONSUMER_GROUPS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
}

Record = tuple[int, int]  # partition, offset


class Worker:
    """One consumer-protocol member polling in a thread: what it read, when it owned
    which partition (its callbacks, on the monotonic clock), what it failed to commit."""

    def __init__(
        self, bootstrap: str, name: str, hold: Callable[[], bool] = lambda: False
    ) -> None:
        self.name = name
        self.processed: list[Record] = []
        self.uncommitted: set[Record] = set()
        self.errors: list[str] = []
        self.misread: list[Record] = []
        """Records read from a partition the member did not own at the time."""
        self.owned: set[int] = set()
        self.spans: list[tuple[int, float, float]] = []
        """(partition, from, to): each stretch the member owned a partition."""
        self._since: dict[int, float] = {}
        self.hold = hold
        self.stop = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "group.protocol": "consumer",
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "log_level": 0,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True, name=name)

    def _assigned(self, _: Consumer, partitions: list[ClientPartition]) -> None:
        now = time.monotonic()
        for p in partitions:
            self.owned.add(p.partition)
            self._since[p.partition] = now

    def _revoked(self, _: Consumer, partitions: list[ClientPartition]) -> None:
        now = time.monotonic()
        for p in partitions:
            self.owned.discard(p.partition)
            self.spans.append((p.partition, self._since.pop(p.partition, now), now))

    def _run(self) -> None:
        try:
            self.consumer.subscribe(
                [TOPIC],
                on_assign=self._assigned,
                on_revoke=self._revoked,
                on_lost=self._revoked,
            )
            while not self.stop.is_set():
                if self.hold():
                    # not poll(): it would hand out records; librdkafka's own thread
                    # keeps heartbeating
                    self.stop.wait(0.05)
                    continue
                batch = []
                for m in self.consumer.consume(100, 0.2):
                    error = m.error()
                    if error is None:
                        batch.append(m)
                    elif error.code() != KafkaError._PARTITION_EOF:
                        self.errors.append(str(error))
                taken = [(m.partition(), m.offset()) for m in batch]
                records = [(p, o) for p, o in taken if p is not None and o is not None]
                self.misread += [r for r in records if r[0] not in self.owned]
                self.processed += records
                if not records:
                    continue
                try:
                    self.consumer.commit(asynchronous=False)
                except KafkaException:
                    # The coordinator is gone, or the partition moved: whoever owns it
                    # next may process these again.
                    self.uncommitted.update(records)
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))
        finally:
            self._revoked(
                self.consumer, [ClientPartition(TOPIC, p) for p in self.owned]
            )
            self.consumer.close()

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(WAIT)


def produce(cluster: ProcessCluster, first: int, count: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "enable.idempotence": True,
            "log_level": 0,
        }
    )
    for n in range(first, first + count):
        producer.produce(TOPIC, b"%d" % n, partition=n % PARTITIONS)
    assert producer.flush(WAIT) == 0


def coordinator(cluster: ProcessCluster) -> int:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    [described] = client.describe_consumer_groups([GROUP]).values()
    return int(described.result(timeout=WAIT).coordinator.id)


def processed(workers: list[Worker]) -> int:
    return len({r for w in workers for r in w.processed})


def wait_members(
    workers: list[Worker],
    condition: Callable[[], bool],
    what: str,
    timeout: float = WAIT,
) -> None:
    """wait_for, saying on failure what each member owned, read and met."""
    try:
        wait_for(condition, what, timeout=timeout)
    except AssertionError as exc:
        seen = {
            w.name: (sorted(w.owned), len(w.processed), w.errors[-3:]) for w in workers
        }
        raise AssertionError(f"{exc}; {processed(workers)} processed; {seen}") from None


def assert_at_least_once(workers: list[Worker], records: int) -> None:
    """Every record processed; twice only after a commit that failed on its partition."""
    counts = Counter(r for w in workers for r in w.processed)
    assert len(counts) == records
    failed_from: dict[int, int] = {}
    for partition, offset in set().union(*(w.uncommitted for w in workers)):
        failed_from[partition] = min(failed_from.get(partition, offset), offset)
    twice = {r for r, n in counts.items() if n > 1}
    beyond = {(p, o) for p, o in twice if p not in failed_from or o < failed_from[p]}
    assert not beyond, f"processed twice without a failed commit: {sorted(beyond)[:10]}"


def assert_owned_once(
    spans: list[tuple[str, int, float, float]], workers: list[Worker]
) -> None:
    """No two members' stretches of ownership of a partition overlap, and each record
    was read by a member that owned its partition then."""
    by_partition: dict[int, list[tuple[float, float, str]]] = {}
    for member, partition, start, end in spans:
        by_partition.setdefault(partition, []).append((start, end, member))
    for partition, stretches in by_partition.items():
        stretches.sort()
        held_until, holder = 0.0, ""
        for start, end, member in stretches:
            assert member == holder or held_until <= start, (
                f"partition {partition}: {holder} and {member} overlap"
            )
            if end > held_until:
                held_until, holder = end, member
    assert not [r for w in workers for r in w.misread]


def assert_traced_owned_once(cluster: ProcessCluster) -> int:
    """Replays each broker's ``group.member_assignment`` events of the group: at no
    point does one coordinator count a partition as two members'. The events seen."""
    owned: dict[tuple[int, str], set[str]] = {}
    seen = 0
    for record in read_trace(cluster.root / "traces"):
        if record["event"] != "member_assignment" or record["group_id"] != GROUP:
            continue
        seen += 1
        node = int(str(record["node"]))
        assigned = record["assigned_partitions"]
        pending = record["partitions_pending_revocation"]
        assert isinstance(assigned, list)
        assert isinstance(pending, list)
        owned[node, str(record["member_id"])] = {
            *map(str, assigned),
            *map(str, pending),
        }
        mine = [p for (n, _), parts in owned.items() if n == node for p in parts]
        assert len(mine) == len(set(mine)), f"broker {node}: a partition owned twice"
    return seen


def member_spans(workers: list[Worker]) -> list[tuple[str, int, float, float]]:
    return [(w.name, p, a, b) for w in workers for p, a, b in w.spans]


@pytest.mark.parametrize("mode", MODES)
def test_a_consumer_group_keeps_consuming_when_its_coordinator_dies(
    make_cluster: MakeCluster, mode: str
) -> None:
    cluster = make_cluster(mode=mode, **CONSUMER_GROUPS)
    records = 3000
    create_topic(cluster, TOPIC, PARTITIONS, {"min.insync.replicas": "2"})
    resume = threading.Event()
    workers: list[Worker] = []

    def hold() -> bool:
        # Pause once a third is processed, until the coordinator has been killed.
        return not resume.is_set() and processed(workers) >= records // 3

    workers += [Worker(cluster.bootstrap, f"worker-{i}", hold) for i in range(3)]
    for w in workers:
        w.thread.start()
    try:
        # The group forms first: a member applies its assignment only while it polls,
        # and it stops polling in the pause.
        wait_members(
            workers,
            lambda: sorted(len(w.owned) for w in workers) == [2, 2, 2],
            "three members own two partitions each",
        )
        produce(cluster, 0, records)
        wait_for(lambda: processed(workers) >= records // 3, "a third processed")
        dead = coordinator(cluster)
        cluster.kill(dead)
        at_kill = processed(workers)
        resume.set()
        wait_for(lambda: coordinator(cluster) not in (dead, -1), "a new coordinator")
        wait_members(
            workers,
            lambda: processed(workers) >= records,
            "every record processed",
            timeout=WAIT * 2,
        )
    finally:
        for w in workers:
            w.finish()
    cluster.down()  # the live brokers write out their traces
    assert not [e for w in workers for e in w.errors]
    assert at_kill < records  # the rest was consumed under the new coordinator
    assert_at_least_once(workers, records)
    assert_owned_once(member_spans(workers), workers)
    assert assert_traced_owned_once(cluster) > 0


# A member in a child process, to be SIGKILLed: it reports each assignment and each
# revocation on stdout, with the monotonic clock (the same on this machine), and reads
# nothing, so every record is left to the members the test watches.
CHILD = r"""
import sys, time
from confluent_kafka import Consumer

bootstrap, group, topic = sys.argv[1:4]
consumer = Consumer({
    "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
    "client.id": "doomed", "enable.auto.commit": False, "log_level": 0,
})
def report(kind, partitions):
    parts = " ".join(str(p.partition) for p in partitions)
    print(kind, time.monotonic(), parts, flush=True)
consumer.subscribe(
    [topic],
    on_assign=lambda _, ps: report("assign", ps),
    on_revoke=lambda _, ps: report("revoke", ps),
    on_lost=lambda _, ps: report("revoke", ps),
)
while True:
    consumer.poll(0.1)
"""


def child_spans(
    lines: list[str], killed_at: float
) -> list[tuple[str, int, float, float]]:
    """The killed member's stretches of ownership, from what it printed; what it held
    at its death ends then."""
    since: dict[int, float] = {}
    spans = []
    for line in lines:
        kind, at, *parts = line.split()
        for p in map(int, parts):
            if kind == "assign":
                since[p] = float(at)
            elif p in since:
                spans.append(("doomed", p, since.pop(p), float(at)))
    return spans + [("doomed", p, t, killed_at) for p, t in since.items()]


@pytest.mark.parametrize("mode", MODES)
def test_members_killed_and_added_leave_each_partition_one_owner(
    make_cluster: MakeCluster, mode: str
) -> None:
    cluster = make_cluster(mode=mode, **CONSUMER_GROUPS)
    create_topic(cluster, TOPIC, PARTITIONS, {"min.insync.replicas": "2"})
    produce(cluster, 0, 600)
    workers = [Worker(cluster.bootstrap, f"worker-{i}") for i in range(2)]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, cluster.bootstrap, GROUP, TOPIC],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in child.stdout or ():
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    doomed: list[tuple[str, int, float, float]] = []
    try:
        for w in workers:
            w.thread.start()
        printed = [lines.get(timeout=WAIT)]
        assert printed[0].split()[0] == "assign"
        wait_for(lambda: processed(workers) >= 200, "the two members read")
        child.kill()  # no leave: its session ends it
        child.wait(WAIT)
        killed_at = time.monotonic()
        reader.join(WAIT)  # it has read everything the child printed
        while not lines.empty():
            printed.append(lines.get_nowait())
        doomed += child_spans(printed, killed_at)
        wait_for(
            lambda: set().union(*(w.owned for w in workers)) == set(range(PARTITIONS)),
            "the killed member's partitions move to the others",
        )
        workers.append(Worker(cluster.bootstrap, "worker-new"))
        workers[-1].thread.start()
        wait_for(lambda: bool(workers[-1].owned), "the new member gets partitions")
        produce(cluster, 600, 600)
        wait_for(lambda: processed(workers) >= 1200, "every record processed")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(WAIT)
        for w in workers:
            w.finish()
    cluster.down()
    assert not [e for w in workers for e in w.errors]
    assert_at_least_once(workers, 1200)
    assert_owned_once(member_spans(workers) + doomed, workers)
    assert assert_traced_owned_once(cluster) > 0
