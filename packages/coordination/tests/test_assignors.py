"""Range, RoundRobin, Sticky and CooperativeSticky (seed 000, "分配策略" and "重平衡协议").

The golden tests are the seed's examples and the examples in the Kafka assignors' own
documentation; the properties check what each assignor promises: every partition placed
once and only with a subscriber, balance, stickiness (nothing moves when nothing changed,
and no more than balance requires when a member joins or leaves), and KIP-429's rule
that a partition is never given out while another member still owns it. Hypothesis runs
derandomized, so every run tests the same examples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import (
    Assignment,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
)
from minikafka.coordination.assignors._cooperative_sticky import (
    CooperativeStickyAssignor,
    cooperative_violations,
    revoked_partitions,
)
from minikafka.coordination.assignors._range import RangeAssignor
from minikafka.coordination.assignors._round_robin import RoundRobinAssignor
from minikafka.coordination.assignors._sticky import StickyAssignor

DETERMINISTIC = settings(derandomize=True, max_examples=300, deadline=None)

TP = TopicPartition
Cluster = Mapping[str, int]
Subscriptions = Mapping[str, Subscription]


def tps(spec: str) -> list[TopicPartition]:
    """``"t0p0 t1p2"`` -> [TP("t0", 0), TP("t1", 2)]."""
    result = []
    for item in spec.split():
        topic, partition = item.rsplit("p", 1)
        result.append(TP(topic, int(partition)))
    return result


def partitions_of(result: Mapping[str, Assignment]) -> dict[str, list[TopicPartition]]:
    return {member: list(a.partitions) for member, a in result.items()}


def test_the_assignors_are_partition_assignors_with_kafkas_names() -> None:
    assignors: list[PartitionAssignor] = [
        RangeAssignor(),
        RoundRobinAssignor(),
        StickyAssignor(),
        CooperativeStickyAssignor(),
    ]
    assert [a.name for a in assignors] == [
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
    ]
    assert [
        RebalanceProtocol.COOPERATIVE in a.supported_protocols for a in assignors
    ] == [
        False,
        False,
        False,
        True,
    ]
    assert all(RebalanceProtocol.EAGER in a.supported_protocols for a in assignors)


# --- Range -------------------------------------------------------------------------------


def test_range_seed_example_two_consumers_two_topics() -> None:
    subscriptions = {"C0": Subscription(["T0", "T1"]), "C1": Subscription(["T0", "T1"])}
    result = RangeAssignor().assign({"T0": 3, "T1": 3}, subscriptions)
    assert partitions_of(result) == {
        "C0": tps("T0p0 T0p1 T1p0 T1p1"),
        "C1": tps("T0p2 T1p2"),
    }


def test_range_gives_the_remainder_to_the_first_members() -> None:
    # The seed: 5 partitions over 3 consumers, remainder 2, so the first two get one more.
    subscriptions = {m: Subscription(["t"]) for m in ("c2", "c0", "c1")}
    result = RangeAssignor().assign({"t": 5}, subscriptions)
    assert partitions_of(result) == {
        "c0": tps("tp0 tp1"),
        "c1": tps("tp2 tp3"),
        "c2": tps("tp4"),
    }


def test_range_cuts_each_topic_among_its_own_subscribers() -> None:
    subscriptions = {
        "a": Subscription(["x", "y"]),
        "b": Subscription(["y"]),
        "c": Subscription([]),
    }
    result = RangeAssignor().assign({"x": 2, "y": 3, "z": 4}, subscriptions)
    assert partitions_of(result) == {
        "a": tps("xp0 xp1 yp0 yp1"),
        "b": tps("yp2"),
        "c": [],
    }


def test_range_orders_static_members_by_instance_id_before_dynamic_ones() -> None:
    # KIP-345: a static member keeps its place (and partitions) across restarts, whatever
    # fresh member id it comes back with.
    subscriptions = {
        "a-dynamic": Subscription(["t"]),
        "z-static": Subscription(["t"], group_instance_id="instance-1"),
        "y-static": Subscription(["t"], group_instance_id="instance-2"),
    }
    result = RangeAssignor().assign({"t": 3}, subscriptions)
    assert partitions_of(result) == {
        "z-static": tps("tp0"),
        "y-static": tps("tp1"),
        "a-dynamic": tps("tp2"),
    }


def test_range_skips_topics_without_metadata() -> None:
    result = RangeAssignor().assign({}, {"a": Subscription(["t"])})
    assert partitions_of(result) == {"a": []}


# --- RoundRobin --------------------------------------------------------------------------


def test_round_robin_deals_all_partitions_in_turn() -> None:
    subscriptions = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    result = RoundRobinAssignor().assign({"t0": 3, "t1": 3}, subscriptions)
    assert partitions_of(result) == {
        "C0": tps("t0p0 t0p2 t1p1"),
        "C1": tps("t0p1 t1p0 t1p2"),
    }


# The unequal subscriptions of Kafka's RoundRobinAssignor and StickyAssignor documentation.
UNEQUAL_SUBSCRIPTIONS = {
    "C0": Subscription(["t0"]),
    "C1": Subscription(["t0", "t1"]),
    "C2": Subscription(["t0", "t1", "t2"]),
}
UNEQUAL_CLUSTER = {"t0": 1, "t1": 2, "t2": 3}


def test_round_robin_passes_over_members_not_subscribed() -> None:
    # The example of Kafka's RoundRobinAssignor documentation.
    result = RoundRobinAssignor().assign(UNEQUAL_CLUSTER, UNEQUAL_SUBSCRIPTIONS)
    assert partitions_of(result) == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0"),
        "C2": tps("t1p1 t2p0 t2p1 t2p2"),
    }


# --- Sticky ------------------------------------------------------------------------------


def _rejoin(
    subscriptions: Subscriptions, result: Mapping[str, Assignment], generation: int
) -> dict[str, Subscription]:
    """Every member comes back owning what ``result`` gave it (KIP-429 style, v2+)."""
    return {
        member: attrs.evolve(
            sub, owned_partitions=result[member].partitions, generation_id=generation
        )
        for member, sub in subscriptions.items()
        if member in result
    }


def test_sticky_keeps_everything_of_the_remaining_members_when_one_leaves() -> None:
    # Kafka's StickyAssignor documentation: 3 consumers, 4 topics of 2 partitions.
    topics = ["t0", "t1", "t2", "t3"]
    cluster = dict.fromkeys(topics, 2)
    subscriptions = {m: Subscription(topics) for m in ("C0", "C1", "C2")}
    first = StickyAssignor().assign(cluster, subscriptions)
    assert sorted(len(a.partitions) for a in first.values()) == [2, 3, 3]
    remaining = {m: s for m, s in _rejoin(subscriptions, first, 1).items() if m != "C1"}
    second = StickyAssignor().assign(cluster, remaining)
    for member in ("C0", "C2"):
        assert set(first[member].partitions) <= set(second[member].partitions)
    assert sorted(len(a.partitions) for a in second.values()) == [4, 4]


def test_sticky_with_unequal_subscriptions_matches_kafkas_example() -> None:
    subscriptions, cluster = UNEQUAL_SUBSCRIPTIONS, UNEQUAL_CLUSTER
    first = StickyAssignor().assign(cluster, subscriptions)
    # RoundRobin gives C2 four partitions here; Sticky balances as far as subscriptions allow.
    assert partitions_of(first) == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0 t1p1"),
        "C2": tps("t2p0 t2p1 t2p2"),
    }
    without_c0 = {
        m: s for m, s in _rejoin(subscriptions, first, 1).items() if m != "C0"
    }
    second = StickyAssignor().assign(cluster, without_c0)
    assert partitions_of(second) == {
        "C1": tps("t0p0 t1p0 t1p1"),
        "C2": tps("t2p0 t2p1 t2p2"),
    }


def test_eager_sticky_reads_the_previous_assignment_from_user_data() -> None:
    # Eager members own nothing when they rejoin; the user data remembers for them.
    cluster = {"t": 4}
    user_data = StickyAssignor.subscription_user_data(tps("tp1 tp3"), 5)
    subscriptions = {
        "a": Subscription(["t"]),
        "b": Subscription(["t"], user_data=user_data),
    }
    result = StickyAssignor().assign(cluster, subscriptions)
    assert partitions_of(result) == {"a": tps("tp0 tp2"), "b": tps("tp1 tp3")}


def test_sticky_ignores_claims_from_an_older_generation() -> None:
    # "b" was fenced after generation 3; "a" took its partitions over in generation 4.
    subscriptions = {
        "a": Subscription(["t"], owned_partitions=tps("tp0 tp1 tp2"), generation_id=4),
        "b": Subscription(["t"], owned_partitions=tps("tp2 tp3"), generation_id=3),
        "c": Subscription(["t"], owned_partitions=tps("tp3"), generation_id=4),
    }
    result = StickyAssignor().assign({"t": 4}, subscriptions)
    assert partitions_of(result) == {
        "a": tps("tp0 tp1"),
        "b": tps("tp2"),
        "c": tps("tp3"),
    }


def test_sticky_treats_a_partition_claimed_twice_as_nobodys() -> None:
    subscriptions = {
        "a": Subscription(["t"], owned_partitions=tps("tp0 tp1"), generation_id=2),
        "b": Subscription(["t"], owned_partitions=tps("tp1 tp2"), generation_id=2),
    }
    result = StickyAssignor().assign({"t": 4}, subscriptions)
    assert partitions_of(result) == {"a": tps("tp0 tp1"), "b": tps("tp2 tp3")}


def test_sticky_drops_partitions_of_topics_a_member_no_longer_wants() -> None:
    subscriptions = {
        "a": Subscription(["u"], owned_partitions=tps("tp0 up0"), generation_id=1),
        "b": Subscription(["t", "u"], owned_partitions=tps("tp1"), generation_id=1),
    }
    result = StickyAssignor().assign({"t": 2, "u": 2}, subscriptions)
    assert partitions_of(result) == {"a": tps("up0 up1"), "b": tps("tp0 tp1")}


# --- CooperativeSticky -------------------------------------------------------------------


def test_cooperative_moves_a_partition_in_two_rebalances() -> None:
    # The seed's four steps: C0 owns all four partitions and C1 joins.
    cluster = {"t": 4}
    assignor = CooperativeStickyAssignor()
    round1_subs = {
        "C0": Subscription(
            ["t"], owned_partitions=tps("tp0 tp1 tp2 tp3"), generation_id=1
        ),
        "C1": Subscription(["t"]),
    }
    # 1. The proposal leaves out what must move: C1 gets nothing yet.
    round1 = assignor.assign(cluster, round1_subs)
    assert partitions_of(round1) == {"C0": tps("tp0 tp1"), "C1": []}
    assert cooperative_violations(round1_subs, round1) == ()
    # 2. C0 revokes the difference and, having revoked something, rejoins.
    assert revoked_partitions(
        round1_subs["C0"].owned_partitions, round1["C0"]
    ) == tuple(tps("tp2 tp3"))
    # 3./4. Nobody owns tp2 and tp3 any more: the proposal is complete.
    round2 = assignor.assign(cluster, _rejoin(round1_subs, round1, 2))
    assert partitions_of(round2) == {"C0": tps("tp0 tp1"), "C1": tps("tp2 tp3")}
    assert revoked_partitions(tps("tp0 tp1"), round2["C0"]) == ()


def test_cooperative_gives_free_partitions_at_once() -> None:
    # A leaving member's partitions have no owner left in the group: nothing to wait for.
    subscriptions = {
        "a": Subscription(["t"], owned_partitions=tps("tp0 tp1"), generation_id=3),
        "c": Subscription(["t"], owned_partitions=tps("tp4 tp5"), generation_id=3),
    }
    result = CooperativeStickyAssignor().assign({"t": 6}, subscriptions)
    assert partitions_of(result) == {"a": tps("tp0 tp1 tp2"), "c": tps("tp3 tp4 tp5")}


def test_cooperative_violations_finds_a_partition_given_while_still_owned() -> None:
    subscriptions = {
        "a": Subscription(["t"], owned_partitions=tps("tp0"), generation_id=1),
        "b": Subscription(["t"]),
    }
    bad = {"a": Assignment(()), "b": Assignment(tps("tp0"))}
    assert cooperative_violations(subscriptions, bad) == (TP("t", 0),)


# --- properties --------------------------------------------------------------------------

TOPICS = ("t0", "t1", "t2", "t3")
_topic_sets = st.lists(
    st.sampled_from((*TOPICS, "gone")), min_size=1, max_size=4, unique=True
)


@st.composite
def groups(
    draw: st.DrawFn, identical: bool | None = None
) -> tuple[Cluster, Subscriptions]:
    """A cluster and a group whose members claim arbitrary, possibly stale, partitions."""
    cluster = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 7)))
    members = draw(
        st.lists(
            st.sampled_from([f"m{i}" for i in range(8)]),
            min_size=1,
            max_size=6,
            unique=True,
        )
    )
    if identical is None:
        identical = draw(st.booleans())
    same = draw(_topic_sets)
    claimable = [TP(t, p) for t, n in sorted(cluster.items()) for p in range(n)] + [
        TP("t0", 50)
    ]
    subscriptions = {}
    for member in members:
        topics = same if identical else draw(_topic_sets)
        subscriptions[member] = Subscription(
            topics,
            owned_partitions=draw(st.lists(st.sampled_from(claimable), max_size=6)),
            generation_id=draw(st.integers(-1, 3)),
            group_instance_id=draw(st.none() | st.sampled_from(["s1", "s2", "s3"])),
        )
    # Instance ids are unique within a group.
    seen: set[str] = set()
    for member, sub in list(subscriptions.items()):
        if sub.group_instance_id in seen:
            subscriptions[member] = attrs.evolve(sub, group_instance_id=None)
        elif sub.group_instance_id is not None:
            seen.add(sub.group_instance_id)
    return cluster, subscriptions


def _expected_partitions(
    cluster: Cluster, subscriptions: Subscriptions
) -> set[TopicPartition]:
    topics = {t for sub in subscriptions.values() for t in sub.topics if t in cluster}
    return {TP(t, p) for t in topics for p in range(cluster[t])}


def _check_valid(
    cluster: Cluster, subscriptions: Subscriptions, result: Mapping[str, Assignment]
) -> None:
    assert set(result) == set(subscriptions)
    placed = Counter(tp for a in result.values() for tp in a.partitions)
    assert set(placed) == _expected_partitions(cluster, subscriptions)
    assert all(count == 1 for count in placed.values())
    for member, assignment in result.items():
        assert all(
            tp.topic in subscriptions[member].topics for tp in assignment.partitions
        )


def _spread(result: Mapping[str, Assignment]) -> int:
    counts = [len(a.partitions) for a in result.values()]
    return max(counts) - min(counts)


def _no_balancing_move_left(
    subscriptions: Subscriptions, result: Mapping[str, Assignment]
) -> bool:
    """No member holds a partition another member could take while having two fewer."""
    for a in result.values():
        for destination, b in result.items():
            if len(a.partitions) >= len(b.partitions) + 2 and any(
                tp.topic in subscriptions[destination].topics for tp in a.partitions
            ):
                return False
    return True


def _cooperative_target(
    cluster: Cluster, subscriptions: Subscriptions
) -> dict[str, Assignment]:
    target = CooperativeStickyAssignor().target(cluster, subscriptions)
    return {member: Assignment(partitions) for member, partitions in target.items()}


ASSIGNORS = {
    "range": RangeAssignor().assign,
    "roundrobin": RoundRobinAssignor().assign,
    "sticky": StickyAssignor().assign,
    "cooperative-sticky target": _cooperative_target,
}


@pytest.mark.parametrize("name", list(ASSIGNORS))
@DETERMINISTIC
@given(group=groups())
def test_every_partition_goes_to_exactly_one_subscriber(
    name: str, group: tuple[Cluster, Subscriptions]
) -> None:
    cluster, subscriptions = group
    _check_valid(cluster, subscriptions, ASSIGNORS[name](cluster, subscriptions))


@pytest.mark.parametrize("name", ["roundrobin", "sticky", "cooperative-sticky target"])
@DETERMINISTIC
@given(group=groups(identical=True))
def test_identical_subscriptions_are_balanced_within_one(
    name: str, group: tuple[Cluster, Subscriptions]
) -> None:
    cluster, subscriptions = group
    assert _spread(ASSIGNORS[name](cluster, subscriptions)) <= 1


@DETERMINISTIC
@given(group=groups())
def test_range_is_balanced_per_topic_with_the_extra_partitions_first(
    group: tuple[Cluster, Subscriptions],
) -> None:
    cluster, subscriptions = group
    result = RangeAssignor().assign(cluster, subscriptions)
    order = sorted(
        subscriptions,
        key=lambda m: (
            subscriptions[m].group_instance_id is None,
            subscriptions[m].group_instance_id or m,
        ),
    )
    for topic, count in cluster.items():
        members = [m for m in order if topic in subscriptions[m].topics]
        counts = [
            sum(tp.topic == topic for tp in result[m].partitions) for m in members
        ]
        if members:
            assert max(counts) - min(counts) <= 1
            assert counts == sorted(counts, reverse=True)
            # Ranges: each member's partitions are consecutive, in member order.
            flat = [
                tp.partition
                for m in members
                for tp in result[m].partitions
                if tp.topic == topic
            ]
            assert flat == list(range(count))


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky target"])
@DETERMINISTIC
@given(group=groups(identical=False))
def test_sticky_leaves_no_member_two_behind_one_it_could_take_from(
    name: str, group: tuple[Cluster, Subscriptions]
) -> None:
    cluster, subscriptions = group
    assert _no_balancing_move_left(
        subscriptions, ASSIGNORS[name](cluster, subscriptions)
    )


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky target"])
@DETERMINISTIC
@given(group=groups(), generation=st.integers(0, 5))
def test_sticky_changes_nothing_when_nothing_changed(
    name: str, group: tuple[Cluster, Subscriptions], generation: int
) -> None:
    cluster, subscriptions = group
    first = ASSIGNORS[name](cluster, subscriptions)
    again = ASSIGNORS[name](cluster, _rejoin(subscriptions, first, generation))
    assert again == first


@DETERMINISTIC
@given(group=groups(), generation=st.integers(0, 5))
def test_eager_sticky_changes_nothing_when_user_data_remembers(
    group: tuple[Cluster, Subscriptions], generation: int
) -> None:
    cluster, subscriptions = group
    first = StickyAssignor().assign(cluster, subscriptions)
    eager = {
        member: Subscription(
            sub.topics,
            user_data=StickyAssignor.subscription_user_data(
                first[member].partitions, generation
            ),
        )
        for member, sub in subscriptions.items()
    }
    assert StickyAssignor().assign(cluster, eager) == first


def _fewest_moves(owned_counts: list[int], n_partitions: int) -> int:
    """The partitions balance forces away from their owners, whoever assigns.

    With m members, every member ends with ``n // m`` or one more, and only ``n % m``
    members get one more; the best an assignment can keep is each owner's partitions up
    to the floor, plus one for as many members owning more than the floor as allowed.
    """
    floor, extra = divmod(n_partitions, len(owned_counts))
    keep = sum(min(c, floor) for c in owned_counts) + min(
        extra, sum(c > floor for c in owned_counts)
    )
    return sum(owned_counts) - keep


def _moved(before: Mapping[str, Assignment], after: Mapping[str, Assignment]) -> int:
    """Partitions that a member had before and lost, counting only members still there."""
    return sum(
        len(set(before[m].partitions) - set(after[m].partitions))
        for m in after
        if m in before
    )


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky target"])
@pytest.mark.parametrize("change", ["join", "leave"])
@DETERMINISTIC
@given(group=groups(identical=True), data=st.data())
def test_sticky_moves_only_what_balance_requires_when_a_member_joins_or_leaves(
    name: str, change: str, group: tuple[Cluster, Subscriptions], data: st.DataObject
) -> None:
    cluster, subscriptions = group
    assign = ASSIGNORS[name]
    before = assign(cluster, subscriptions)
    rejoined = _rejoin(subscriptions, before, 7)
    if change == "join":
        topics = next(iter(subscriptions.values())).topics
        rejoined["newcomer"] = Subscription(topics)
    else:
        leaving = data.draw(st.sampled_from(sorted(rejoined)))
        del rejoined[leaving]
        if not rejoined:
            return
    after = assign(cluster, rejoined)
    _check_valid(cluster, rejoined, after)
    assert _spread(after) <= 1
    n = len(_expected_partitions(cluster, rejoined))
    owned = [len(before[m].partitions) if m in before else 0 for m in rejoined]
    assert _moved(before, after) == _fewest_moves(owned, n)


def _cooperative_rounds(
    cluster: Cluster, subscriptions: Subscriptions, max_rounds: int
) -> list[tuple[dict[str, Subscription], dict[str, Assignment]]]:
    """Rebalance until no member has to revoke anything; each round's input and output."""
    assignor = CooperativeStickyAssignor()
    rounds = []
    current = dict(subscriptions)
    for generation in range(10, 10 + max_rounds):
        result = assignor.assign(cluster, current)
        rounds.append((current, result))
        if not any(
            revoked_partitions(sub.owned_partitions, result[m])
            for m, sub in current.items()
        ):
            return rounds
        current = _rejoin(current, result, generation)
    raise AssertionError(f"still revoking after {max_rounds} rebalances")


@DETERMINISTIC
@given(group=groups(identical=True))
def test_cooperative_two_rounds_reach_exactly_the_sticky_target(
    group: tuple[Cluster, Subscriptions],
) -> None:
    cluster, subscriptions = group
    target = _cooperative_target(cluster, subscriptions)
    rounds = _cooperative_rounds(cluster, subscriptions, max_rounds=2)
    (subs1, round1) = rounds[0]
    assert cooperative_violations(subs1, round1) == ()
    for member, assignment in round1.items():
        assert set(assignment.partitions) <= set(target[member].partitions)
    # The follow-up rebalance hands out exactly what round one withheld, and nobody
    # has to revoke anything after it.
    assert len(rounds) <= 2
    assert rounds[-1][1] == target


@DETERMINISTIC
@given(group=groups(identical=False))
def test_cooperative_never_double_owns_and_settles(
    group: tuple[Cluster, Subscriptions],
) -> None:
    cluster, subscriptions = group
    # Kafka promises no bound; two rebalances suffice with equal subscriptions (the test
    # above), and four is a generous ceiling for the rest.
    rounds = _cooperative_rounds(cluster, subscriptions, max_rounds=4)
    for subs, result in rounds:
        assert cooperative_violations(subs, result) == ()
        assert all(
            tp.topic in subs[m].topics for m, a in result.items() for tp in a.partitions
        )
    final_subs, final = rounds[-1]
    _check_valid(cluster, final_subs, final)
