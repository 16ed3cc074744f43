"""Wrong on purpose: minikafka's ``RoundRobinAssignor``, each variant below wrong in one way
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
from minikafka.coordination.assignors._round_robin import RoundRobinAssignor

Cluster = Mapping[str, int]
Subscriptions = Mapping[str, Subscription]


def _deal(
    cluster: Cluster,
    subscriptions: Subscriptions,
    members: list[str],
    *,
    per_topic: bool = False,
    skip: bool = True,
) -> dict[str, Assignment]:
    assigned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    all_topics = {t for sub in subscriptions.values() for t in sub.topics}
    cursor = 0
    topic = None
    for tp in topic_partitions(cluster, all_topics):
        if per_topic and tp.topic != topic:
            cursor, topic = 0, tp.topic
        while skip and tp.topic not in subscriptions[members[cursor]].topics:
            cursor = (cursor + 1) % len(members)
        assigned[members[cursor]].append(tp)
        cursor = (cursor + 1) % len(members)
    return {m: Assignment(tps) for m, tps in assigned.items()}


class RoundRobinPerTopic(RoundRobinAssignor):
    """Each topic dealt from the first member again, not the group's whole list."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        return _deal(cluster, subscriptions, members, per_topic=True)


class RoundRobinNoSkip(RoundRobinAssignor):
    """A member not subscribed to the partition's topic is dealt it anyway."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        return _deal(cluster, subscriptions, members, skip=False)


class RoundRobinByMemberId(RoundRobinAssignor):
    """Members in member-id order: static members are not taken first."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        return _deal(cluster, subscriptions, sorted(subscriptions))
