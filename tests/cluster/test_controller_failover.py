"""Controller failover with real processes: a Raft quorum of three controllers (seed 004;
KIP-595, KIP-631) under SIGKILL and a network partition, with real clients.

Three controllers (nodes 0-2) and three brokers (nodes 3-5), each a process of its own.
The guarantees checked:

- **an acknowledged creation is durable**: every topic whose CreateTopics was answered
  without error, while the active controller was SIGKILLed, exists afterwards with the
  partitions asked for, three replicas each, and every broker reports the same
  assignment;
- **a new active controller serves** within a few election timeouts (and brokers and
  clients find it by themselves: they are only given the voters and the brokers);
- **a client never hears NOT_CONTROLLER**: a creation sent through a broker the moment
  the active controller dies is forwarded again until the new one answers (KIP-590);
- **the data path does not depend on the controller**: an ``acks=all`` producer writing
  throughout loses nothing and sees no failed delivery;
- **no majority, no writes, nothing lost**: with two of three controllers dead, no
  creation succeeds and none appears; one restarted controller is a majority again, and
  everything acknowledged before is still there;
- **a partitioned leader resigns** (check-quorum) and the majority elects another; when
  the partition heals, the old leader follows the new one;
- **a silent active controller fences no broker**: with the active controller paused
  (SIGSTOP: its connections open, nothing answered), the brokers give up on it within
  half their session (their heartbeats' timeout, as Kafka's) and on their metadata
  fetch within ``quorum.request.timeout.ms``, find the new one, and stay unfenced: the
  Metadata response lists every broker throughout, and a topic created through the new
  controller reaches every broker.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster
from minikafka.net.testing import FaultProxies, FaultProxy
from tests.cluster._cluster import (
    WAIT,
    MakeCluster,
    admin,
    create_topic,
    read_values,
    wait_for,
)

pytestmark = pytest.mark.timeout(300)

CONTROLLERS = (0, 1, 2)


def quorum_status(
    cluster: ProcessCluster, controllers: tuple[int, ...] = CONTROLLERS
) -> dict[str, str]:
    """What ``minikafka metadata-quorum --bootstrap-controller ... describe --status``
    prints, as a dict ({} if no controller in ``controllers`` leads the quorum)."""
    voters = ",".join(f"127.0.0.1:{cluster.listen_port(c)}" for c in controllers)
    command = [sys.executable, "-m", "minikafka.broker", "metadata-quorum"]
    command += ["--bootstrap-controller", voters, "describe", "--status"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return {}
    return {
        key.strip(): value.strip()
        for key, _, value in (line.partition(":") for line in done.stdout.splitlines())
    }


def active_controller(
    cluster: ProcessCluster,
    controllers: tuple[int, ...] = CONTROLLERS,
    other_than: int = -1,
) -> int:
    """The leader of the quorum as ``controllers`` see it, once there is one (and it is
    not ``other_than``)."""
    found: list[int] = []

    def elected() -> bool:
        leader = int(quorum_status(cluster, controllers).get("LeaderId", "-1"))
        found[:] = [leader]
        return leader >= 0 and leader != other_than

    wait_for(
        elected, f"a leader of the quorum among {controllers} other than {other_than}"
    )
    return found[0]


class TopicCreator:
    """Creates topics t0, t1, ... (1-3 partitions, RF 3) one after another until stopped,
    keeping those whose creation was acknowledged."""

    def __init__(self, cluster: ProcessCluster) -> None:
        self.client: AdminClient = admin(cluster)
        self.acked: dict[str, int] = {}
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            name, partitions = f"t{i}", 1 + i % 3
            i += 1
            future = self.client.create_topics(
                [NewTopic(name, partitions, 3)],
                operation_timeout=10,
                request_timeout=15,
            )[name]
            try:
                future.result(timeout=30)
            except Exception:
                self.failed.append(name)  # perhaps created, perhaps not: not counted
                # the cluster is electing: do not spin, inside the test's deadline
                time.sleep(0.2)
            else:
                self.acked[name] = partitions

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(WAIT)


class NumberedProducer:
    """confluent-kafka writing 0, 1, 2, ... with acks=all (idempotent) until stopped."""

    def __init__(self, cluster: ProcessCluster, topic: str) -> None:
        self.topic = topic
        self.acked: list[int] = []
        self.errors: list[str] = []
        self.producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "log_level": 0,
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            value = message.value()
            assert value is not None
            self.acked.append(int(value))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            self.producer.produce(
                self.topic, str(n).encode(), partition=0, on_delivery=self._delivered
            )
            n += 1
            self.producer.poll(0.01)
        self.producer.flush(WAIT)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(WAIT)


def assignments(
    cluster: ProcessCluster, broker: int
) -> dict[str, list[tuple[int, ...]]]:
    """Every topic's replicas per partition, as ``broker`` alone reports them."""
    client = AdminClient(
        {"bootstrap.servers": f"127.0.0.1:{cluster.port(broker)}", "log_level": 0}
    )
    metadata = client.list_topics(timeout=WAIT)
    return {
        name: [tuple(t.partitions[p].replicas) for p in sorted(t.partitions)]
        for name, t in metadata.topics.items()
        if not name.startswith("__")
    }


def test_killing_the_active_controller_loses_no_acknowledged_creation(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(controllers=3)
    brokers = sorted(cluster.broker_ports)
    leader = active_controller(cluster)
    create_topic(cluster, "data")
    producer = NumberedProducer(cluster, "data")
    creator = TopicCreator(cluster)
    try:
        wait_for(lambda: len(creator.acked) >= 5, "five topics created")
        cluster.kill(leader)
        survivors = tuple(c for c in CONTROLLERS if c != leader)
        # A few election timeouts: the followers' fetch timeout (2 s), a pre-vote and
        # a vote (1-2 s each); the wait is a deadline, generous for a loaded machine.
        new_leader = active_controller(cluster, survivors, other_than=leader)
        before = len(creator.acked)
        wait_for(
            lambda: len(creator.acked) >= before + 5,
            "five more topics, from the new leader",
        )
    finally:
        creator.stop()
        producer.stop()
    assert new_leader != leader

    # Every acknowledged creation is there, as asked, and every broker says the same.
    # Compared on the answers the wait saw: a later Metadata request may be answered by
    # another broker (librdkafka picks any it knows), one that has not replayed as far.
    seen: dict[int, dict[str, list[tuple[int, ...]]]] = {}

    def every_broker_knows() -> bool:
        seen.update({b: assignments(cluster, b) for b in brokers})
        return all(set(creator.acked) <= set(seen[b]) for b in brokers)

    wait_for(every_broker_knows, "every broker knows every acknowledged topic")
    for name, partitions in creator.acked.items():
        layout = seen[brokers[0]][name]
        assert len(layout) == partitions, (name, layout)
        assert all(len(replicas) == 3 for replicas in layout), (name, layout)
        assert all(seen[b][name] == layout for b in brokers), (name, seen)

    # The brokers served produce throughout: nothing failed, everything acked is there.
    assert producer.errors == []
    assert producer.acked, "the producer had nothing acknowledged"
    values = {int(v) for v in read_values(cluster, "data")}
    assert set(producer.acked) <= values

    # The killed controller comes back as a follower and catches up with the leader.
    cluster.start(leader)
    wait_for(
        lambda: quorum_status(cluster).get("MaxFollowerLag") == "0",
        "the restarted controller caught up (MaxFollowerLag 0)",
    )


def test_a_creation_as_the_active_controller_dies_never_hears_not_controller(
    make_cluster: MakeCluster,
) -> None:
    """KIP-590 forwarding, as Kafka's broker does it: CreateTopics sent through a broker
    the moment the active controller is SIGKILLed is forwarded to the dead controller,
    then to voters electing a new leader (NOT_CONTROLLER), and the broker sends it again
    until the new leader answers: the client hears no error and the topics exist.
    librdkafka retries neither NOT_CONTROLLER nor REQUEST_TIMED_OUT for CreateTopics,
    so any answer the broker passed on fails the creation."""
    cluster = make_cluster(controllers=3)
    leader = active_controller(cluster)
    create_topic(cluster, "before")  # every broker has asked the leader by now
    broker = min(cluster.broker_ports)
    client = AdminClient(
        {"bootstrap.servers": f"127.0.0.1:{cluster.port(broker)}", "log_level": 0}
    )
    client.list_topics(timeout=WAIT)  # connected, so nothing waits after the kill
    cluster.kill(leader)
    names = [f"during-{i}" for i in range(3)]
    futures: dict[str, Future[None]] = {}
    for name in names:  # one request each, sent at once
        futures |= client.create_topics(
            [NewTopic(name, 1, 3)], operation_timeout=30, request_timeout=WAIT * 2
        )
    errors: dict[str, str] = {}
    for name, future in futures.items():
        try:
            future.result(timeout=WAIT * 2)
        except KafkaException as exc:
            errors[name] = exc.args[0].name()
    assert errors == {}, errors
    wait_for(
        lambda: set(names) <= set(assignments(cluster, broker)),
        "the topics created through the new controller",
    )
    assert all(
        len(replicas) == 3
        for name in names
        for replicas in assignments(cluster, broker)[name]
    )


def test_without_a_majority_nothing_is_written_and_nothing_lost(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster(controllers=3)
    leader = active_controller(cluster)
    for name in ("before-0", "before-1"):
        create_topic(cluster, name)
    followers = [c for c in CONTROLLERS if c != leader]
    cluster.kill(leader)
    cluster.kill(followers[0])
    # One voter of three: no leader, no commit, so no creation may be acknowledged.
    futures = admin(cluster).create_topics(
        [NewTopic("during", 1, 3)], operation_timeout=5, request_timeout=8
    )
    with pytest.raises((KafkaException, TimeoutError)):
        futures["during"].result(timeout=30)
    assert "during" not in admin(cluster).list_topics(timeout=WAIT).topics
    # One of them back: a majority again, a leader, and the writes resume.
    cluster.start(followers[0])
    active_controller(cluster, (followers[0], followers[1]))
    create_topic(cluster, "after")
    # Every broker replays the new topic a moment apart: wait until the one asked has.
    wait_for(
        lambda: (
            {"before-0", "before-1", "after"}
            <= set(admin(cluster).list_topics(timeout=WAIT).topics)
        ),
        "the topics created before and after, all listed",
    )


def test_a_partitioned_leader_resigns_and_the_majority_elects_another(
    make_cluster: MakeCluster,
) -> None:
    links: list[FaultProxies] = []
    cluster = make_cluster(controllers=3, controller_proxies=links)
    into = links[0]
    leader = active_controller(cluster)
    # Cut every link into the leader (new connections refused, open ones closed): the
    # others cannot fetch from it, and it hears from no majority.
    into.call(leader, lambda proxy: proxy.refuse(True))
    into.call(leader, FaultProxy.cut)
    majority = tuple(c for c in CONTROLLERS if c != leader)
    new_leader = active_controller(cluster, majority, other_than=leader)
    # Check-quorum: the old leader stops leading by itself (it answers NOT_LEADER, so
    # the status tool, asking it alone, finds no leader there).
    wait_for(
        lambda: quorum_status(cluster, (leader,)) == {}, "the cut-off leader resigned"
    )
    create_topic(cluster, "on-the-majority-side")
    # Healed: the old leader follows the new one and catches up.
    into.call(leader, lambda proxy: proxy.refuse(False))
    into.call(leader, FaultProxy.heal)
    wait_for(
        lambda: quorum_status(cluster).get("MaxFollowerLag") == "0",
        "the old leader caught up with the new one",
    )
    assert int(quorum_status(cluster)["LeaderId"]) in majority
    assert new_leader in majority


def test_a_silent_active_controller_fences_no_broker(make_cluster: MakeCluster) -> None:
    cluster = make_cluster(controllers=3)
    brokers = set(cluster.broker_ports)
    leader = active_controller(cluster)
    client = admin(cluster)
    cluster.signal(leader, signal.SIGSTOP)
    try:
        others = tuple(c for c in CONTROLLERS if c != leader)
        active_controller(cluster, others, other_than=leader)
        # Past the new controller's first broker.session.timeout.ms (5 s here, counted
        # from its election, when it gives every broker a fresh session): a broker
        # still waiting on the paused one would be fenced by then, and fenced brokers
        # are not in a Metadata answer.
        watched_until = time.monotonic() + 8.0
        listed: list[set[int]] = []

        def watched() -> bool:
            listed.append(set(client.list_topics(timeout=10).brokers))
            assert listed[-1] == brokers, f"a broker fenced: Metadata lists {listed}"
            return time.monotonic() >= watched_until

        wait_for(watched, "every broker listed through the new controller's session")
        created = client.create_topics([NewTopic("after-the-pause", 1, 3)])
        for future in created.values():
            future.result(timeout=30)  # placed on three unfenced brokers
        wait_for(
            lambda: all("after-the-pause" in assignments(cluster, b) for b in brokers),
            "every broker learned the topic from the new controller",
            timeout=10.0,  # not the 30 s a fetch to the paused one would hang
        )
    finally:
        cluster.signal(leader, signal.SIGCONT)
