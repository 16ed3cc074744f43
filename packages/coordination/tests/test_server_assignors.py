"""The server-side assignors of KIP-848: uniform and range.

Golden tests take the examples of Kafka's assignors' documentation; the properties check
what each promises: every subscribed partition in the target exactly once and only with
a subscriber; uniform's balance (at most one apart when every member subscribes to the
same topics; when not, no single move to another subscriber of the topic narrows a
gap); stickiness (a rerun on its own answer changes nothing; a new member takes only its
share, every moved partition going to it; a departed member's partitions are the only
ones that move); range's co-partitioning; determinism whatever order the members come
in. Hypothesis runs derandomized, so every run tests the same examples.
"""

from __future__ import annotations

from collections.abc import Mapping
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._server_assignor import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    MemberSubscriptionAndAssignment,
    SubscriptionType,
    partitions_of,
)
from minikafka.coordination.assignors._server_range import ServerRangeAssignor
from minikafka.coordination.assignors._uniform import UniformAssignor

DETERMINISTIC = settings(derandomize=True, max_examples=120, deadline=None)

TP = TopicPartition
Member = MemberSubscriptionAndAssignment
ASSIGNORS: list[ConsumerGroupPartitionAssignor] = [
    UniformAssignor(),
    ServerRangeAssignor(),
]


def tps(spec: str) -> frozenset[TopicPartition]:
    """``"a0 b2"`` -> {TP("a", 0), TP("b", 2)}."""
    return frozenset(TP(item[0], int(item[1:])) for item in spec.split())


def rerun(group: GroupSpec, result: GroupAssignment) -> GroupSpec:
    """The same group with the assignor's answer as its current target."""
    return GroupSpec(
        {
            m: with_target(spec, result.members.get(m, frozenset()))
            for m, spec in group.members.items()
        }
    )


def with_target(member: Member, assigned: frozenset[TopicPartition]) -> Member:
    return Member(
        member.subscribed_topics, assigned, member.rack_id, member.instance_id
    )


@st.composite
def groups(
    draw: st.DrawFn, homogeneous: bool | None = None
) -> tuple[GroupSpec, dict[str, int]]:
    """A cluster of up to four topics and a group of up to six members, with a current
    target drawn at random (partial, stale, or naming unsubscribed topics)."""
    topics = {f"t{i}": draw(st.integers(1, 8)) for i in range(draw(st.integers(1, 4)))}
    names = sorted(topics)
    count = draw(st.integers(1, 6))
    subsets = st.sets(st.sampled_from([*names, "gone"]), min_size=1).map(frozenset)
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    shared = draw(subsets)
    subscriptions = [shared if homogeneous else draw(subsets) for _ in range(count)]
    current: list[set[TopicPartition]] = [set() for _ in range(count)]
    for tp in partitions_of(topics, names):
        owner = draw(st.integers(-1, count - 1))
        if owner >= 0:
            current[owner].add(tp)
    members = {
        f"m{i}": Member(subscriptions[i], current[i], None, None) for i in range(count)
    }
    return GroupSpec(members), topics


def check_complete(
    group: GroupSpec, topics: Mapping[str, int], result: GroupAssignment
) -> None:
    """Every subscribed partition once, and only with a subscriber of its topic."""
    assert set(result.members) == set(group.members)
    seen: list[TopicPartition] = []
    for member, partitions in result.members.items():
        for tp in partitions:
            assert tp.topic in group.members[member].subscribed_topics
            seen.append(tp)
    subscribed = {t for m in group.members.values() for t in m.subscribed_topics}
    assert sorted(seen) == partitions_of(topics, subscribed)


def sizes(result: GroupAssignment) -> dict[str, int]:
    return {m: len(p) for m, p in result.members.items()}


def moved(before: GroupAssignment, after: GroupAssignment) -> set[TopicPartition]:
    return {
        tp
        for m, partitions in after.members.items()
        for tp in partitions
        if tp not in before.members.get(m, frozenset())
    }


def test_the_server_assignors_carry_kafkas_names() -> None:
    assert [a.name for a in ASSIGNORS] == ["uniform", "range"]


def test_subscription_type_is_homogeneous_only_when_every_member_subscribes_alike() -> (
    None
):
    alike = GroupSpec({"a": Member({"x", "y"}), "b": Member({"y", "x"})})
    unlike = GroupSpec({"a": Member({"x"}), "b": Member({"x", "y"})})
    assert alike.subscription_type is SubscriptionType.HOMOGENEOUS
    assert unlike.subscription_type is SubscriptionType.HETEROGENEOUS


def test_range_co_partitions_topics_with_the_same_partition_count() -> None:
    """Kafka's example: two members, two topics of three partitions."""
    group = GroupSpec({"M0": Member({"a", "b"}), "M1": Member({"a", "b"})})
    result = ServerRangeAssignor().assign(group, {"a": 3, "b": 3})
    assert result.members == {"M0": tps("a0 a1 b0 b1"), "M1": tps("a2 b2")}
    assert ServerRangeAssignor.co_partitioned(group, {"a": 3, "b": 3})


def test_range_orders_static_members_by_instance_id_so_a_restart_keeps_ranges() -> None:
    """Kafka's example: after a rolling bounce the member ids are new and sort the
    other way round, but the instance ids are not, so the ranges stay put."""
    before = GroupSpec(
        {"M0": Member({"a"}, (), None, "I0"), "M1": Member({"a"}, (), None, "I1")}
    )
    after = GroupSpec(
        {"M3": Member({"a"}, (), None, "I0"), "M2": Member({"a"}, (), None, "I1")}
    )
    assert ServerRangeAssignor().assign(before, {"a": 3}).members == {
        "M0": tps("a0 a1"),
        "M1": tps("a2"),
    }
    assert ServerRangeAssignor().assign(after, {"a": 3}).members == {
        "M3": tps("a0 a1"),
        "M2": tps("a2"),
    }


def test_uniform_keeps_the_current_target_and_hands_out_the_rest() -> None:
    """Seven partitions over three members: 3, 2, 2. The member holding four gives
    one up, the one holding none gets what is left, nobody else changes."""
    group = GroupSpec(
        {
            "a": Member({"t"}, tps("t0 t1 t2 t3")),
            "b": Member({"t"}, tps("t4 t5")),
            "c": Member({"t"}),
        }
    )
    result = UniformAssignor().assign(group, {"t": 7})
    assert result.members == {
        "a": tps("t0 t1 t2"),
        "b": tps("t4 t5"),
        "c": tps("t3 t6"),
    }


def test_uniform_drops_partitions_of_topics_a_member_left() -> None:
    group = GroupSpec(
        {"a": Member({"x"}, tps("x0 y0")), "b": Member({"x", "y"}, tps("x1"))}
    )
    result = UniformAssignor().assign(group, {"x": 2, "y": 2})
    check_complete(group, {"x": 2, "y": 2}, result)
    # a keeps x0 and gives up y0; balance then moves x1 over, since b would
    # otherwise hold three against a's one.
    assert result.members["a"] == tps("x0 x1")
    assert result.members["b"] == tps("y0 y1")


def test_an_empty_group_gets_an_empty_target() -> None:
    for assignor in ASSIGNORS:
        assert assignor.assign(GroupSpec({}), {"t": 3}).members == {}


@DETERMINISTIC
@given(groups())
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(
    case: tuple[GroupSpec, dict[str, int]],
) -> None:
    group, topics = case
    for assignor in ASSIGNORS:
        check_complete(group, topics, assignor.assign(group, topics))


@DETERMINISTIC
@given(groups(homogeneous=True))
def test_uniform_homogeneous_counts_differ_by_at_most_one(
    case: tuple[GroupSpec, dict[str, int]],
) -> None:
    group, topics = case
    counts = sizes(UniformAssignor().assign(group, topics)).values()
    assert max(counts) - min(counts) <= 1


@DETERMINISTIC
@given(groups(homogeneous=False))
def test_uniform_heterogeneous_no_single_move_narrows_a_gap(
    case: tuple[GroupSpec, dict[str, int]],
) -> None:
    """What holds when subscriptions differ: a member may hold more than one over
    another only if none of its partitions could go to that other member."""
    group, topics = case
    result = UniformAssignor().assign(group, topics)
    count = sizes(result)
    for owner, partitions in result.members.items():
        for tp in partitions:
            for other, spec in group.members.items():
                if tp.topic in spec.subscribed_topics:
                    assert count[owner] - count[other] <= 1, (tp, owner, other)


@DETERMINISTIC
@given(groups())
def test_range_gives_each_topic_in_contiguous_runs_at_most_one_apart(
    case: tuple[GroupSpec, dict[str, int]],
) -> None:
    group, topics = case
    result = ServerRangeAssignor().assign(group, topics)
    for topic in topics:
        runs = [
            sorted(tp.partition for tp in parts if tp.topic == topic)
            for m, parts in result.members.items()
            if topic in group.members[m].subscribed_topics
        ]
        if runs:
            assert max(map(len, runs)) - min(map(len, runs)) <= 1
        for run in filter(None, runs):
            assert run == list(range(run[0], run[0] + len(run)))
    if ServerRangeAssignor.co_partitioned(group, topics):
        for parts in result.members.values():
            per_topic = {
                t: {tp.partition for tp in parts if tp.topic == t}
                for t in {tp.topic for tp in parts}
            }
            assert len({frozenset(p) for p in per_topic.values()}) <= 1


@DETERMINISTIC
@given(groups())
def test_a_rerun_on_its_own_answer_changes_nothing(
    case: tuple[GroupSpec, dict[str, int]],
) -> None:
    group, topics = case
    for assignor in ASSIGNORS:
        first = assignor.assign(group, topics)
        assert assignor.assign(rerun(group, first), topics) == first


@DETERMINISTIC
@given(groups(), st.randoms(use_true_random=False))
def test_the_answer_does_not_depend_on_the_order_members_come_in(
    case: tuple[GroupSpec, dict[str, int]], random: Random
) -> None:
    group, topics = case
    order = list(group.members)
    random.shuffle(order)
    shuffled = GroupSpec({m: group.members[m] for m in order})
    for assignor in ASSIGNORS:
        assert assignor.assign(shuffled, topics) == assignor.assign(group, topics)


@DETERMINISTIC
@given(groups(homogeneous=True))
def test_uniform_a_new_member_takes_only_its_share(
    case: tuple[GroupSpec, dict[str, int]],
) -> None:
    """Every partition that moves goes to the newcomer, and it gets exactly the
    minimum share: the fewest moves balance allows."""
    group, topics = case
    assignor = UniformAssignor()
    settled = assignor.assign(group, topics)
    subscribed = next(iter(group.members.values())).subscribed_topics
    grown = dict(rerun(group, settled).members)
    grown["new"] = Member(subscribed)
    after = assignor.assign(GroupSpec(grown), topics)
    total = len(partitions_of(topics, subscribed))
    assert moved(settled, after) == after.members["new"]
    assert len(after.members["new"]) == total // len(grown)


@DETERMINISTIC
@given(groups(homogeneous=True))
def test_uniform_only_a_departed_members_partitions_move(
    case: tuple[GroupSpec, dict[str, int]],
) -> None:
    group, topics = case
    assignor = UniformAssignor()
    settled = assignor.assign(group, topics)
    if len(group.members) < 2:
        return
    gone = sorted(group.members)[0]
    shrunk = {m: s for m, s in rerun(group, settled).members.items() if m != gone}
    after = assignor.assign(GroupSpec(shrunk), topics)
    assert moved(settled, after) <= settled.members[gone]
