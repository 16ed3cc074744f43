"""Wrong on purpose: minikafka's ``sticky_assignment``, each variant below wrong in one way
(mutants.toml switches one in at a time, in place of minikafka's)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import (
    Subscription,
    sorted_members,
    topic_partitions,
)
from minikafka.coordination.assignors._round_robin import RoundRobinAssignor
from minikafka.coordination.assignors._sticky import (
    MemberData,
    current_owners,
    sticky_assignment,
)

Cluster = Mapping[str, int]
Subscriptions = Mapping[str, Subscription]


def _dealt(
    cluster: Cluster, subscriptions: Subscriptions
) -> dict[str, list[TopicPartition]]:
    result = RoundRobinAssignor().assign(cluster, subscriptions)
    return {m: sorted(a.partitions) for m, a in result.items()}


def sticky_forgets_owners(
    cluster: Cluster,
    subscriptions: Subscriptions,
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """Balanced, but computed afresh: what members own is ignored."""
    return _dealt(cluster, subscriptions)


def sticky_reshuffles_on_change(
    cluster: Cluster,
    subscriptions: Subscriptions,
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """Sticky while the group stays the same; when a member arrives owning nothing,
    everything is dealt afresh."""
    owned = current_owners(cluster, subscriptions, member_data)
    if any(owned.values()) and not all(owned.values()):
        return _dealt(cluster, subscriptions)
    return sticky_assignment(cluster, subscriptions, member_data)


def sticky_keeps_all_owned(
    cluster: Cluster,
    subscriptions: Subscriptions,
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """Everyone keeps all it owns; only free partitions go, each to the subscriber with
    fewest: never balanced by moving a partition."""
    target = current_owners(cluster, subscriptions, member_data)
    taken = {tp for tps in target.values() for tp in tps}
    topics = {t for sub in subscriptions.values() for t in sub.topics}
    for tp in topic_partitions(cluster, topics):
        if tp in taken:
            continue
        takers = [
            m
            for m in sorted_members(subscriptions)
            if tp.topic in subscriptions[m].topics
        ]
        target[min(takers, key=lambda m: len(target[m]))].append(tp)
    return {m: sorted(tps) for m, tps in target.items()}


def sticky_unsorted(
    cluster: Cluster,
    subscriptions: Subscriptions,
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """The right partitions, but each member's list is not sorted."""
    target = sticky_assignment(cluster, subscriptions, member_data)
    return {m: sorted(tps, reverse=True) for m, tps in target.items()}


def sticky_by_member_id(
    cluster: Cluster,
    subscriptions: Subscriptions,
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """Members in member-id order: static members are not taken first."""
    dynamic = {
        m: attrs.evolve(sub, group_instance_id=None) for m, sub in subscriptions.items()
    }
    return sticky_assignment(cluster, dynamic, member_data)


def sticky_deals_again_when_owned(
    cluster: Cluster,
    subscriptions: Subscriptions,
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """Once members own partitions, everything is dealt again, last member first: a
    group that did not change still sees its partitions move."""
    if not any(current_owners(cluster, subscriptions, member_data).values()):
        return sticky_assignment(cluster, subscriptions, member_data)
    members = list(reversed(sorted_members(subscriptions)))
    target: dict[str, list[TopicPartition]] = {m: [] for m in members}
    topics = {t for sub in subscriptions.values() for t in sub.topics}
    for tp in topic_partitions(cluster, topics):
        takers = [m for m in members if tp.topic in subscriptions[m].topics]
        target[min(takers, key=lambda m: len(target[m]))].append(tp)
    return {m: sorted(tps) for m, tps in target.items()}
