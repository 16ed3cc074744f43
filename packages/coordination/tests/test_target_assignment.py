"""KIP-848's group epoch rules and target assignment (Kafka's TargetAssignmentBuilder).

The group epoch moves on a join with a subscription, a departure, a subscription change
and a change of the subscribed topics' partitions, and on nothing else (a restarted
static member with the same subscription included); the target is the assignor's
answer over the members' current targets, stamped with the group epoch, with the
members whose target changed listed; the assignor is the one members ask for most, or
the first configured. A property drives the whole loop: random membership changes, the
epoch moves exactly when the rules say, and the target stays complete and sticky.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._server_range import ServerRangeAssignor
from minikafka.coordination.assignors._uniform import UniformAssignor
from minikafka.coordination.group._target_assignment import (
    EpochBump,
    MemberSubscription,
    assignor_error,
    build_target_assignment,
    epoch_bumps,
    select_assignor,
    subscription_metadata,
)

Sub = MemberSubscription
TOPICS = {"a": 4, "b": 2}


def bumps(
    before: dict[str, Sub], after: dict[str, Sub], topics: dict[str, int] = TOPICS
) -> tuple[EpochBump, ...]:
    return epoch_bumps(
        before,
        after,
        subscription_metadata(before, TOPICS),
        subscription_metadata(after, topics),
    )


def test_a_join_with_a_subscription_moves_the_epoch_an_empty_one_does_not() -> None:
    one = {"m1": Sub({"a"})}
    assert bumps(one, one | {"m2": Sub({"a"})}) == (EpochBump.MEMBER_JOINED,)
    assert bumps(one, one | {"m2": Sub(())}) == ()


def test_a_departure_and_a_subscription_change_move_the_epoch() -> None:
    two = {"m1": Sub({"a"}), "m2": Sub({"a"})}
    assert bumps(two, {"m1": Sub({"a"})}) == (EpochBump.MEMBER_LEFT,)
    changed = {"m1": Sub({"a"}), "m2": Sub({"a", "b"})}
    assert bumps(two, changed) == (
        EpochBump.SUBSCRIPTION_CHANGED,
        EpochBump.METADATA_CHANGED,
    )


def test_more_partitions_in_a_subscribed_topic_move_the_epoch() -> None:
    one = {"m1": Sub({"a"})}
    assert bumps(one, one) == ()
    assert bumps(one, one, {"a": 6, "b": 2}) == (EpochBump.METADATA_CHANGED,)
    assert bumps(one, one, {"a": 4, "b": 9}) == (), "b is subscribed by nobody"


def test_a_restarted_static_member_with_the_same_subscription_moves_nothing() -> None:
    before = {"old-id": Sub({"a"}, instance_id="i1")}
    after = {"new-id": Sub({"a"}, instance_id="i1")}
    assert bumps(before, after) == ()


def test_the_target_starts_from_the_current_one_and_lists_what_changed() -> None:
    subs = {"m1": Sub({"a"}), "m2": Sub({"a"})}
    first = build_target_assignment(
        group_epoch=1,
        assignor=UniformAssignor(),
        subscriptions={"m1": Sub({"a"})},
        current_target={},
        topics=TOPICS,
    )
    assert first.assignment_epoch == 1
    assert len(first.members["m1"]) == 4
    second = build_target_assignment(
        group_epoch=2,
        assignor=UniformAssignor(),
        subscriptions=subs,
        current_target=first.members,
        topics=TOPICS,
    )
    assert second.changed == ("m1", "m2")
    assert second.members["m1"] <= first.members["m1"]
    assert len(second.members["m2"]) == 2


def test_a_static_member_taking_over_keeps_the_old_members_target() -> None:
    subs = {"m1": Sub({"a"}), "new": Sub({"a"}, instance_id="i")}
    current = {
        "m1": frozenset({TopicPartition("a", 0), TopicPartition("a", 1)}),
        "old": frozenset({TopicPartition("a", 2), TopicPartition("a", 3)}),
    }
    result = build_target_assignment(
        group_epoch=3,
        assignor=UniformAssignor(),
        subscriptions=subs,
        current_target=current,
        topics=TOPICS,
        replaced={"new": "old"},
    )
    assert result.members["new"] == current["old"]
    assert result.changed == ("new",)


def test_the_assignor_is_the_one_most_members_ask_for_or_the_first_configured() -> None:
    assert select_assignor({"m": Sub({"a"})}) == "uniform"
    asks = {
        "m1": Sub({"a"}, server_assignor="range"),
        "m2": Sub({"a"}, server_assignor="range"),
        "m3": Sub({"a"}, server_assignor="uniform"),
    }
    assert select_assignor(asks) == "range"
    tie = {
        "m1": Sub((), server_assignor="range"),
        "m2": Sub((), server_assignor="uniform"),
    }
    assert select_assignor(tie) == "uniform"
    assert (
        assignor_error("sticky", ("uniform", "range")) is ErrorCode.unsupported_assignor
    )
    assert assignor_error("range", ("uniform", "range")) is ErrorCode.none


changes = st.lists(
    st.tuples(
        st.sampled_from(["join", "leave", "subscribe"]),
        st.integers(0, 5),
        st.sets(st.sampled_from(["a", "b"])),
    ),
    max_size=25,
)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(changes, st.booleans())
def test_the_epoch_moves_exactly_when_the_rules_say_and_the_target_follows(
    steps: list[tuple[str, int, set[str]]], use_range: bool
) -> None:
    """After every change: the group epoch moved iff there is a reason; when it moved,
    the new target covers every subscribed partition once; when it did not, rebuilding
    the target changes nothing."""
    assignor = ServerRangeAssignor() if use_range else UniformAssignor()
    subs: dict[str, Sub] = {}
    group_epoch = 0
    target: dict[str, frozenset[TopicPartition]] = {}
    for kind, who, topics in steps:
        member_id = f"m{who}"
        after = dict(subs)
        if kind == "join" and member_id not in subs:
            after[member_id] = Sub(topics)
        elif kind == "leave":
            after.pop(member_id, None)
        elif kind == "subscribe" and member_id in subs:
            after[member_id] = Sub(topics)
        moved = bumps(subs, after)
        subs = after
        rebuilt = build_target_assignment(
            group_epoch=group_epoch + (1 if moved else 0),
            assignor=assignor,
            subscriptions=subs,
            current_target=target,
            topics=TOPICS,
        )
        if not moved:
            assert rebuilt.members == {m: target.get(m, frozenset()) for m in subs}
            continue
        group_epoch += 1
        target = dict(rebuilt.members)
        held = sorted(tp for tps in target.values() for tp in tps)
        wanted = sorted(
            TopicPartition(t, p)
            for t, n in subscription_metadata(subs, TOPICS).items()
            for p in range(n)
        )
        assert held == wanted
