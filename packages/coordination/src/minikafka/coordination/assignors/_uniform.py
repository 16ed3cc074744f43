"""The uniform assignor (KIP-848): balance first, then stickiness to the current target.

Kafka's group-coordinator ``UniformAssignor`` (``group.consumer.assignors=uniform``, the
default), in its two paths: ``UniformHomogeneousAssignmentBuilder`` when every member
subscribes to the same topics and ``UniformHeterogeneousAssignmentBuilder`` when not.
Both put balance before stickiness: a member keeps what it held in the current target
only as far as balance allows, and only partitions that have to move do.

Homogeneous: with ``P`` partitions and ``M`` members, every member's quota is ``P // M``
and ``P % M`` of them get one more. A member keeps its current partitions up to its
quota; what is over quota, and what nobody holds, goes to the members under quota.
Kafka hands the extra slots to the first members in its (hash) member order; here the
members that already hold more than the minimum get them first, then the others by
member id, so a rerun on an unchanged group moves nothing and a new member takes only
its share, every moved partition going to it.

Heterogeneous: a member keeps every current partition of a topic it still subscribes
to; the partitions nobody holds go, topic by topic, each to the least loaded of that
topic's subscribers; then a balancing pass moves partitions of a topic from its most
loaded subscriber to its least loaded one while they differ by more than one, over and
over until a pass moves nothing (Kafka bounds the passes at 16). What holds then is
local: no single move of a partition to another subscriber of its topic would narrow
the gap between two members. Overlapping subscriptions can leave members further apart
than one (three members, two topics, the middle member subscribed to both: 9, 10, 11).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition

from ._server_assignor import (
    GroupAssignment,
    GroupSpec,
    SubscriptionType,
    partitions_of,
)

__all__ = ["MAX_BALANCE_PASSES", "UniformAssignor"]

MAX_BALANCE_PASSES = 16
"""Kafka's ``MAX_ITERATION_COUNT``: the bound on the heterogeneous balancing passes.
Each pass roughly halves the imbalance, so 16 is far more than a real group needs."""


@attrs.frozen
class UniformAssignor:
    """Kafka's ``org.apache.kafka.coordinator.group.assignor.UniformAssignor``;
    rack-unaware, as the Kafka 4.1 assignor is."""

    name = "uniform"

    def assign(self, group: GroupSpec, topics: Mapping[str, int]) -> GroupAssignment:
        if not group.members:
            return GroupAssignment({})
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            return _homogeneous(group, topics)
        return _Heterogeneous(group, topics).build()


def _retainable(
    group: GroupSpec, topics: Mapping[str, int]
) -> dict[str, list[TopicPartition]]:
    """Each member's current partitions it may keep: of a topic it still subscribes to
    and that still has that partition; a partition two members claim stays with the
    first by member id (a target never has that, but the result must not either)."""
    taken: set[TopicPartition] = set()
    kept: dict[str, list[TopicPartition]] = {}
    for member_id in sorted(group.members):
        member = group.members[member_id]
        kept[member_id] = [
            tp
            for tp in sorted(member.assigned)
            if tp.topic in member.subscribed_topics
            and tp.partition < topics.get(tp.topic, 0)
            and tp not in taken
        ]
        taken.update(kept[member_id])
    return kept


def _homogeneous(group: GroupSpec, topics: Mapping[str, int]) -> GroupAssignment:
    subscribed = next(iter(group.members.values())).subscribed_topics
    every = partitions_of(topics, subscribed)
    retainable = _retainable(group, topics)
    minimum, extra = divmod(len(every), len(group.members))
    # The extra slots go to members already holding more than the minimum, so
    # nothing moves just because of the order members happen to be visited in.
    ranked = sorted(group.members, key=lambda m: (len(retainable[m]) <= minimum, m))
    quota = {m: minimum + (1 if i < extra else 0) for i, m in enumerate(ranked)}
    target = {m: retainable[m][: quota[m]] for m in sorted(group.members)}
    held = {tp for tps in target.values() for tp in tps}
    unassigned = iter(tp for tp in every if tp not in held)
    for member, partitions in target.items():
        while len(partitions) < quota[member]:
            partitions.append(next(unassigned))
    return GroupAssignment({m: frozenset(tps) for m, tps in target.items()})


class _Heterogeneous:
    """One run of the heterogeneous path; members are numbered in member-id order."""

    def __init__(self, group: GroupSpec, topics: Mapping[str, int]) -> None:
        self._topics = topics
        self._members = sorted(group.members)
        self._subscribers: dict[str, list[int]] = defaultdict(list)
        for index, member_id in enumerate(self._members):
            for topic in sorted(group.members[member_id].subscribed_topics):
                if topic in topics:
                    self._subscribers[topic].append(index)
        self._owner: dict[TopicPartition, int] = {}
        self._size = [0] * len(self._members)
        for member_id, kept in _retainable(group, topics).items():
            for tp in kept:
                self._give(tp, self._members.index(member_id))

    def build(self) -> GroupAssignment:
        for topic in self._topic_order(self._subscribers):
            for partition in range(self._topics[topic]):
                tp = TopicPartition(topic, partition)
                if tp not in self._owner:
                    self._give(tp, self._least_loaded(topic))
        self._balance()
        assigned: dict[str, set[TopicPartition]] = {m: set() for m in self._members}
        for tp, index in self._owner.items():
            assigned[self._members[index]].add(tp)
        return GroupAssignment({m: frozenset(tps) for m, tps in assigned.items()})

    def _topic_order(self, topics: Mapping[str, list[int]]) -> list[str]:
        """Kafka's order: most partitions per subscriber first, then fewest
        subscribers, then by topic; hard-to-place topics go while there is room."""
        return sorted(
            topics,
            key=lambda t: (
                -self._topics[t] / len(self._subscribers[t]),
                len(self._subscribers[t]),
                t,
            ),
        )

    def _give(self, tp: TopicPartition, member: int) -> None:
        previous = self._owner.get(tp)
        if previous is not None:
            self._size[previous] -= 1
        self._owner[tp] = member
        self._size[member] += 1

    def _least_loaded(self, topic: str) -> int:
        return min(self._subscribers[topic], key=lambda m: (self._size[m], m))

    def _balance(self) -> None:
        shared = {t: s for t, s in self._subscribers.items() if len(s) >= 2}
        order = self._topic_order(shared)
        for _ in range(MAX_BALANCE_PASSES):
            moved = sum(self._balance_topic(topic) for topic in order)
            if moved == 0:
                return

    def _balance_topic(self, topic: str) -> int:
        """Move partitions of ``topic`` from its most to its least loaded subscriber
        while the two differ by more than one; returns how many moved."""
        moved = 0
        while True:
            receiver = self._least_loaded(topic)
            donors = [
                m
                for m in self._subscribers[topic]
                if self._size[m] - self._size[receiver] > 1 and self._owns(m, topic)
            ]
            if not donors:
                return moved
            donor = max(donors, key=lambda m: (self._size[m], m))
            partition = max(
                tp
                for tp, owner in self._owner.items()
                if owner == donor and tp.topic == topic
            )
            self._give(partition, receiver)
            moved += 1

    def _owns(self, member: int, topic: str) -> bool:
        return any(
            owner == member and tp.topic == topic for tp, owner in self._owner.items()
        )
