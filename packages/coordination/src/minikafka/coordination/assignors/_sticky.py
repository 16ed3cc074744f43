"""StickyAssignor: a balanced assignment that moves as few partitions as possible.

Seed 000, "分配策略" ("StickyAssignor 玩法更高级 ... 最大化实现平衡分配"); Kafka's
``AbstractStickyAssignor`` (KIP-54) and its eager ``StickyAssignor``. Two goals, in this
order: the assignment is balanced, and as many partitions as possible stay where they
were, so a rebalance costs little (caches, state stores and fetch positions stay warm).

Previous ownership comes from the members: Kafka's eager consumers revoke everything
before they rejoin, so ``StickyAssignor`` carries each member's last assignment and its
generation in the subscription's user data (``StickyAssignorUserData`` v0/v1); without
user data the subscription's owned partitions and generation serve, which is what the
cooperative assignor always uses. Only claims from the newest generation count (KIP-792):
a member from an older generation was fenced, and its partitions may since have moved.
A partition two members claim in that generation is treated as nobody's.

Two algorithms, as in Kafka:

- every member subscribes to the same topics (the common case): quotas are computed first
  (``n // m`` each, one more for ``n % m`` members, given first to members that already
  own more than the floor), every member keeps its owned partitions up to its quota, and
  the rest fill the gaps. That keeps the largest number of partitions any balanced
  assignment can keep.
- otherwise: members keep what they own and may still consume, free partitions go to the
  least loaded member that may take them (partitions with the fewest candidates first),
  then partitions move from a member to one with at least two fewer that may take them,
  newly placed partitions before owned ones, until no such move is left.

Kafka's rack-aware variant (KIP-881) needs the partitions' replica racks, which the
``topic -> partition count`` cluster view does not carry; ``rack_id`` is decoded but unused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from minikafka.common import TopicPartition

from ._assignor import (
    NO_GENERATION,
    Assignment,
    RebalanceProtocol,
    Subscription,
    sorted_members,
    topic_partitions,
)
from ._consumer_protocol import ConsumerProtocolError, _Reader, encode_topic_partitions


@attrs.frozen
class MemberData:
    """What a sticky assignor knows of a member's past: Kafka's ``MemberData``."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None = None
    rack_id: str | None = None


def encode_sticky_user_data(
    partitions: Iterable[TopicPartition], generation: int
) -> bytes:
    """``StickyAssignorUserData`` v1: the member's last assignment and its generation.

    The eager StickyAssignor's ``subscriptionUserData``: what the member got in the last
    rebalance it completed, since its owned partitions are empty by the time it rejoins.
    """
    return encode_topic_partitions(partitions) + generation.to_bytes(
        4, "big", signed=True
    )


def decode_sticky_user_data(data: bytes) -> MemberData:
    """Parse v1 or v0 (without the generation) ``StickyAssignorUserData``."""
    reader = _Reader(data)
    partitions = reader.topic_partitions()
    # Kafka tries v1 and falls back to v0: v0 is v1 without the trailing generation.
    generation = reader.int32() if reader.remaining >= 4 else None
    return MemberData(tuple(partitions), _known(generation))


def _known(generation: int | None) -> int | None:
    return None if generation is None or generation < 0 else generation


def subscription_member_data(subscription: Subscription) -> MemberData:
    """The owned partitions and generation a v1+ subscription carries itself."""
    return MemberData(
        subscription.owned_partitions,
        _known(subscription.generation_id),
        subscription.rack_id,
    )


def sticky_member_data(subscription: Subscription) -> MemberData:
    """The eager StickyAssignor's view of a member: its user data, else its subscription."""
    if subscription.user_data:
        try:
            data = decode_sticky_user_data(subscription.user_data)
        except ConsumerProtocolError:
            # Kafka logs and ignores user data it cannot read: the member just has no
            # history, which costs stickiness, not correctness.
            return MemberData((), None, subscription.rack_id)
        return attrs.evolve(data, rack_id=subscription.rack_id)
    return subscription_member_data(subscription)


def current_owners(
    cluster: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """Each member's partitions it may keep: valid, uniquely claimed, newest generation."""
    known = [g for d in member_data.values() if (g := d.generation) is not None]
    newest = max(known, default=None)
    claims: dict[TopicPartition, list[str]] = {}
    for member, subscription in subscriptions.items():
        data = member_data[member]
        # Without any generation (old clients) every claim counts, as in Kafka.
        if newest is not None and data.generation != newest:
            continue
        for tp in set(data.partitions):
            # A partition of a topic the member dropped, or that no longer exists, is
            # not the member's to keep.
            if tp.topic in subscription.topics and 0 <= tp.partition < cluster.get(
                tp.topic, 0
            ):
                claims.setdefault(tp, []).append(member)
    owners: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
    for tp, claimants in claims.items():
        if len(claimants) == 1:
            owners[claimants[0]].append(tp)
    for partitions in owners.values():
        partitions.sort()
    return owners


def sticky_assignment(
    cluster: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """The sticky target: every member's partitions, sorted (the shared core)."""
    members = sorted_members(subscriptions)
    if not members:
        return {}
    owned = current_owners(cluster, subscriptions, member_data)
    topic_sets = {frozenset(subscriptions[m].topics) for m in members}
    if len(topic_sets) == 1:
        target = _constrained_assign(
            topic_partitions(cluster, topic_sets.pop()), members, owned
        )
    else:
        target = _general_assign(cluster, subscriptions, members, owned)
    return {member: sorted(target[member]) for member in members}


def _constrained_assign(
    partitions: Sequence[TopicPartition],
    members: Sequence[str],
    owned: Mapping[str, Sequence[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    min_quota, extra = divmod(len(partitions), len(members))
    quota = dict.fromkeys(members, min_quota)
    # The n % m larger quotas go first to members that own more than the floor: each
    # of them then keeps one partition more than it could with the floor.
    for member in members:
        if extra and len(owned[member]) > min_quota:
            quota[member] += 1
            extra -= 1
    for member in members:
        if extra and quota[member] == min_quota:
            quota[member] += 1
            extra -= 1
    target = {member: list(owned[member][: quota[member]]) for member in members}
    kept = {tp for tps in target.values() for tp in tps}
    unassigned = [tp for tp in partitions if tp not in kept]
    # Gaps in member order, each member's as one run, dealt the sorted free partitions.
    # Deterministic and order-preserving on purpose: in the cooperative protocol's
    # follow-up rebalance the withheld partitions meet the same gaps in the same order,
    # so the second round completes exactly the first round's target.
    slots = [
        member for member in members for _ in range(quota[member] - len(target[member]))
    ]
    for member, tp in zip(slots, unassigned, strict=True):
        target[member].append(tp)
    return target


def _general_assign(
    cluster: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    members: Sequence[str],
    owned: Mapping[str, Sequence[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    order = {member: index for index, member in enumerate(members)}
    all_topics = {topic for m in members for topic in subscriptions[m].topics}
    consumers = {
        topic: [m for m in members if topic in subscriptions[m].topics]
        for topic in all_topics
    }
    target = {member: set(owned[member]) for member in members}
    taken = {tp for tps in target.values() for tp in tps}
    free = [tp for tp in topic_partitions(cluster, all_topics) if tp not in taken]
    # The partitions with the fewest possible consumers go first, while those consumers
    # still have room; a partition anyone may take can fill whatever gap is left.
    free.sort(key=lambda tp: (len(consumers[tp.topic]), tp))
    for tp in free:
        least = min(consumers[tp.topic], key=lambda m: (len(target[m]), order[m]))
        target[least].add(tp)
    previously = {member: set(owned[member]) for member in members}
    while (
        move := _balancing_move(subscriptions, members, order, target, previously)
    ) is not None:
        tp, source, destination = move
        target[source].remove(tp)
        target[destination].add(tp)
    return {member: sorted(tps) for member, tps in target.items()}


def _balancing_move(
    subscriptions: Mapping[str, Subscription],
    members: Sequence[str],
    order: Mapping[str, int],
    target: Mapping[str, set[TopicPartition]],
    previously: Mapping[str, set[TopicPartition]],
) -> tuple[TopicPartition, str, str] | None:
    """A partition to move to a member with at least two fewer, or None when balanced.

    Every move lowers the sum of squared counts, so the loop calling this ends.
    """
    donors = sorted(members, key=lambda m: (-len(target[m]), order[m]))
    receivers = sorted(members, key=lambda m: (len(target[m]), order[m]))
    for source in donors:
        # Moving a partition placed in this very rebalance costs nothing; moving one
        # the member owned interrupts its consumption, so those go last.
        candidates = sorted(
            target[source], key=lambda tp: (tp in previously[source], tp)
        )
        for destination in receivers:
            if len(target[destination]) + 2 > len(target[source]):
                break
            topics = subscriptions[destination].topics
            for tp in candidates:
                if tp.topic in topics:
                    return tp, source, destination
    return None


@attrs.frozen
class StickyAssignor:
    """Kafka's eager ``StickyAssignor`` (``partition.assignment.strategy=sticky``)."""

    name = "sticky"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        data = {
            member: sticky_member_data(sub) for member, sub in subscriptions.items()
        }
        target = sticky_assignment(cluster, subscriptions, data)
        return {member: Assignment(tps) for member, tps in target.items()}

    @staticmethod
    def subscription_user_data(
        assigned: Iterable[TopicPartition], generation: int = NO_GENERATION
    ) -> bytes:
        """The user data a member sends when it rejoins, after ``assigned`` in ``generation``."""
        return encode_sticky_user_data(assigned, generation)
