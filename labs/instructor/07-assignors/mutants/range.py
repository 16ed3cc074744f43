"""Wrong on purpose: minikafka's ``RangeAssignor``, each variant below wrong in one way
(mutants.toml switches one in at a time, in place of minikafka's)."""

from __future__ import annotations

from collections.abc import Mapping

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import (
    Assignment,
    Subscription,
    sorted_members,
    topic_partitions,
)
from minikafka.coordination.assignors._range import RangeAssignor

Cluster = Mapping[str, int]
Subscriptions = Mapping[str, Subscription]


def _ranges(
    cluster: Cluster,
    subscriptions: Subscriptions,
    members: list[str],
    *,
    extra_last: bool = False,
    everyone: bool = False,
) -> dict[str, list[TopicPartition]]:
    assigned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    topics = sorted({t for sub in subscriptions.values() for t in sub.topics})
    for topic in topics:
        if topic not in cluster:
            continue
        consumers = [m for m in members if everyone or topic in subscriptions[m].topics]
        per_member, extra = divmod(cluster[topic], len(consumers))
        start = 0
        for index, member in enumerate(consumers):
            first = len(consumers) - extra if extra_last else 0
            takes_extra = first <= index < first + extra
            length = per_member + (1 if takes_extra else 0)
            assigned[member].extend(
                TopicPartition(topic, p) for p in range(start, start + length)
            )
            start += length
    return assigned


class RangeExtraLast(RangeAssignor):
    """The partitions that do not divide go to the last members, not the first."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        got = _ranges(cluster, subscriptions, members, extra_last=True)
        return {m: Assignment(sorted(tps)) for m, tps in got.items()}


class RangeAllTopicsAsOne(RangeAssignor):
    """The partitions of every topic cut into ranges together, not topic by topic."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        topics = {t for sub in subscriptions.values() for t in sub.topics}
        partitions = topic_partitions(cluster, topics)
        assigned: dict[str, list[TopicPartition]] = {m: [] for m in members}
        subscribed = [m for m in members if subscriptions[m].topics] or members
        per_member, extra = divmod(len(partitions), len(subscribed))
        start = 0
        for index, member in enumerate(subscribed):
            length = per_member + (1 if index < extra else 0)
            assigned[member].extend(partitions[start : start + length])
            start += length
        return {m: Assignment(sorted(tps)) for m, tps in assigned.items()}


class RangeToEveryone(RangeAssignor):
    """Each topic is cut among every member, subscribed to it or not."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        got = _ranges(cluster, subscriptions, members, everyone=True)
        return {m: Assignment(sorted(tps)) for m, tps in got.items()}


class RangeDropsIdleMembers(RangeAssignor):
    """A member given nothing is left out of the result."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        result = super().assign(cluster, subscriptions)
        return {m: a for m, a in result.items() if a.partitions}


class RangeByMemberId(RangeAssignor):
    """Members in member-id order: static members are not taken first."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        got = _ranges(cluster, subscriptions, sorted(subscriptions))
        return {m: Assignment(sorted(tps)) for m, tps in got.items()}
