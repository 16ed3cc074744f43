"""Lab 14's checks: the rack-aware range assignor (KIP-881).

Properties over random groups (hypothesis, seeded) call minikafka's ``RangeAssignor``
with a ``ClusterMetadata`` that says where each partition's replicas are; then a real
cluster of three brokers, one per rack (``broker.rack``), and three of minikafka's own
consumers, one per rack (``client.rack``), form a group with ``range``.

The one reference here is plain range (:func:`plain_range`), which the lab keeps: with
no racks to go by, the assignment must be exactly the one minikafka gives today.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.client import Consumer
from minikafka.common import TopicPartition
from minikafka.coordination import Assignment, RangeAssignor, Subscription

pytestmark = pytest.mark.skipif(
    not os.environ.get("MINIKAFKA_LAB_EXTEND"),
    reason="an extend lab: run it with `make lab 14` (python -m minikafka.labs run 14)",
)

RACKS = ("a", "b", "c", "d")
PROPERTY = settings(max_examples=100, deadline=None, derandomize=True)


def cluster_metadata(
    counts: Mapping[str, int], racks: Mapping[TopicPartition, frozenset[str]]
) -> Mapping[str, int]:
    """The lab's contract: ``minikafka.coordination.ClusterMetadata``."""
    from minikafka import coordination

    cls = getattr(coordination, "ClusterMetadata", None)
    assert cls is not None, "minikafka.coordination has no ClusterMetadata"
    made = cls(counts, racks)
    assert isinstance(made, Mapping)
    return made


def plain_range(
    counts: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    """Rack-unaware range, Kafka's: per topic, sorted members, the first n % m get one
    more. (Members here are all dynamic: sorted by member id.)"""
    out: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    for topic, n in sorted(counts.items()):
        members = sorted(m for m, s in subscriptions.items() if topic in s.topics)
        if not members:
            continue
        share, extra = divmod(n, len(members))
        start = 0
        for i, member in enumerate(members):
            length = share + (1 if i < extra else 0)
            out[member] += [
                TopicPartition(topic, p) for p in range(start, start + length)
            ]
            start += length
    return {m: sorted(tps) for m, tps in out.items()}


def parts(plan: Mapping[str, Assignment]) -> dict[str, list[TopicPartition]]:
    return {m: sorted(a.partitions) for m, a in plan.items()}


# --- random groups -----------------------------------------------------------------------


@st.composite
def groups(
    draw: st.DrawFn,
) -> tuple[
    dict[str, int], dict[TopicPartition, frozenset[str]], dict[str, Subscription]
]:
    """Topics, each partition's replica racks, and members with racks and topics."""
    topics = {f"t{i}": draw(st.integers(0, 12)) for i in range(draw(st.integers(1, 3)))}
    racks = {
        TopicPartition(t, p): frozenset(draw(st.sets(st.sampled_from(RACKS))))
        for t, n in topics.items()
        for p in range(n)
    }
    members = {}
    for i in range(draw(st.integers(1, 7))):
        subscribed = draw(st.sets(st.sampled_from(sorted(topics)), min_size=1))
        rack = draw(st.none() | st.sampled_from(RACKS))
        members[f"m{i}"] = Subscription(sorted(subscribed), rack_id=rack)
    return topics, racks, members


# --- stage exclusive_and_balanced --------------------------------------------------------


@PROPERTY
@given(groups())
def test_every_partition_is_assigned_once(
    group: tuple[
        dict[str, int], dict[TopicPartition, frozenset[str]], dict[str, Subscription]
    ],
) -> None:
    counts, racks, members = group
    plan = parts(RangeAssignor().assign(cluster_metadata(counts, racks), members))
    assert set(plan) == set(members), "every member gets an assignment, empty or not"
    given_out = Counter(tp for tps in plan.values() for tp in tps)
    wanted = {
        TopicPartition(t, p)
        for t, n in counts.items()
        if any(t in s.topics for s in members.values())
        for p in range(n)
    }
    assert set(given_out) == wanted, "a subscribed partition is missing, or extra"
    assert max(given_out.values(), default=1) == 1, "a partition went to two members"
    for member, tps in plan.items():
        assert all(tp.topic in members[member].topics for tp in tps), (
            f"{member} got a topic it does not subscribe to"
        )


@PROPERTY
@given(groups())
def test_each_topic_is_balanced_as_range_is(
    group: tuple[
        dict[str, int], dict[TopicPartition, frozenset[str]], dict[str, Subscription]
    ],
) -> None:
    counts, racks, members = group
    plan = parts(RangeAssignor().assign(cluster_metadata(counts, racks), members))
    for topic, n in counts.items():
        subscribers = [m for m, s in members.items() if topic in s.topics]
        if not subscribers:
            continue
        share, extra = divmod(n, len(subscribers))
        got = sorted(
            (sum(tp.topic == topic for tp in plan[m]) for m in subscribers),
            reverse=True,
        )
        expected = [share + 1] * extra + [share] * (len(subscribers) - extra)
        assert got == expected, f"{topic}: counts {got}, range gives {expected}"


# --- stage no_racks_no_change ------------------------------------------------------------


@PROPERTY
@given(groups(), st.sampled_from(["members", "partitions", "everywhere"]))
def test_without_racks_to_go_by_it_is_plain_range(
    group: tuple[
        dict[str, int], dict[TopicPartition, frozenset[str]], dict[str, Subscription]
    ],
    why: str,
) -> None:
    counts, racks, members = group
    if why == "members":  # no member says its rack
        members = {m: Subscription(s.topics) for m, s in members.items()}
    elif why == "partitions":  # the metadata says no partition's racks
        racks = {}
    else:  # every partition has a replica on every rack
        racks = dict.fromkeys(racks, frozenset(RACKS))
    plan = parts(RangeAssignor().assign(cluster_metadata(counts, racks), members))
    assert plan == plain_range(counts, members)


# --- stage rack_matching -----------------------------------------------------------------


@st.composite
def aligned_groups(
    draw: st.DrawFn,
) -> tuple[
    dict[str, int], dict[TopicPartition, frozenset[str]], dict[str, Subscription]
]:
    """One topic and members on racks, where a balanced assignment exists that gives
    every member only partitions with a replica on its rack: each rack holds exactly
    range's share for each of its members (n divisible by m), in any partition order."""
    members = {
        f"m{i}": Subscription(["t"], rack_id=draw(st.sampled_from(RACKS[:3])))
        for i in range(draw(st.integers(1, 6)))
    }
    share = draw(st.integers(1, 4))
    owners = [s.rack_id for s in members.values() for _ in range(share)]
    order = draw(st.permutations(owners))
    racks: dict[TopicPartition, frozenset[str]] = {}
    for p, rack in enumerate(order):
        assert rack is not None
        # The partition's own rack, and maybe the unused rack d too.
        extra = draw(st.sets(st.just("d")))
        racks[TopicPartition("t", p)] = frozenset({rack}) | extra
    return {"t": len(order)}, racks, members


@PROPERTY
@given(aligned_groups())
def test_members_get_partitions_on_their_rack(
    group: tuple[
        dict[str, int], dict[TopicPartition, frozenset[str]], dict[str, Subscription]
    ],
) -> None:
    counts, racks, members = group
    plan = parts(RangeAssignor().assign(cluster_metadata(counts, racks), members))
    for member, tps in plan.items():
        rack = members[member].rack_id
        remote = [tp.partition for tp in tps if rack not in racks[tp]]
        assert not remote, (
            f"{member} (rack {rack}) got partitions {remote} off its rack"
        )


def test_a_member_without_a_rack_may_take_any_partition() -> None:
    """Kafka's racksMatch: in its turn, a member with no rack may take any partition,
    even one that a later member would have had on its rack."""
    counts = {"t": 4}
    racks = {
        TopicPartition("t", p): frozenset({"b" if p < 2 else "a"}) for p in range(4)
    }
    members = {"m0": Subscription(["t"]), "m1": Subscription(["t"], rack_id="b")}
    plan = parts(RangeAssignor().assign(cluster_metadata(counts, racks), members))
    assert plan["m0"] == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert plan["m1"] == [TopicPartition("t", 2), TopicPartition("t", 3)]


# --- stage consumers: minikafka's own consumers on a cluster with racks -------------------

BROKER_RACKS = {1: "a", 2: "b", 3: "c"}
WAIT = 90.0


@pytest.fixture(scope="module")
def racked_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from minikafka.broker.testing import ProcessCluster, free_ports

    ports = free_ports(4)
    cluster = ProcessCluster.create(
        tmp_path_factory.mktemp("racks") / "cluster",
        3,
        controller_port=ports[0],
        broker_ports=ports[1:],
        overrides={
            "broker.heartbeat.interval.ms": "500",
            "group.initial.rebalance.delay.ms": "200",
            "group.min.session.timeout.ms": "1000",
            "offsets.topic.replication.factor": "1",
        },
        racks=BROKER_RACKS,
    )
    try:
        cluster.up()
        yield cluster.bootstrap
    finally:
        cluster.kill_all()


def test_consumers_read_from_their_own_rack(racked_cluster: str) -> None:
    admin = AdminClient({"bootstrap.servers": racked_cluster})
    admin.create_topics([NewTopic("racked", 6, 1)])["racked"].result(timeout=WAIT)
    deadline = time.monotonic() + WAIT
    placed: dict[int, int] = {}
    while time.monotonic() < deadline and len(placed) < 6:
        topic = admin.list_topics("racked", timeout=10).topics["racked"]
        placed = {p: m.replicas[0] for p, m in topic.partitions.items() if m.replicas}
    assert len(placed) == 6, "the topic's six partitions never showed in the metadata"
    consumers = {
        rack: Consumer(
            {
                "bootstrap.servers": racked_cluster,
                "group.id": "rack-aware",
                "client.id": f"consumer-{rack}",
                "client.rack": rack,
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 500,
            }
        )
        for rack in ("a", "b", "c")
    }
    try:
        for consumer in consumers.values():
            consumer.subscribe(["racked"])
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for consumer in consumers.values():
                consumer.consume(10, 0.05)
            owned = [len(c.assignment()) for c in consumers.values()]
            if owned == [2, 2, 2]:
                break
        assignments = {r: c.assignment() for r, c in consumers.items()}
    finally:
        for consumer in consumers.values():
            consumer.close()
    assert [len(a) for a in assignments.values()] == [2, 2, 2], assignments
    for rack, tps in assignments.items():
        racks_of = {tp.partition: BROKER_RACKS[placed[tp.partition]] for tp in tps}
        assert set(racks_of.values()) == {rack}, (
            f"the consumer on rack {rack} got partitions whose only replica is on "
            f"racks {racks_of}"
        )
