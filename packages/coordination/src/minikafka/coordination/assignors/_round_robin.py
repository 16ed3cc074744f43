"""RoundRobinAssignor: all partitions of all topics dealt out to the members in turn.

Seed 000, "分配策略": where Range hands every topic's remainder to the same first
members, dealing the group's whole partition list round-robin spreads it, so with equal
subscriptions the members' counts differ by at most one. Kafka's ``RoundRobinAssignor``:
the partitions sorted by topic and partition, the members sorted, and a cursor that goes
around the members; a member not subscribed to the partition's topic is passed over, and
the cursor moves on past the member that took the partition.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition

from ._assignor import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    sorted_members,
    topic_partitions,
)


@attrs.frozen
class RoundRobinAssignor:
    """Kafka's ``RoundRobinAssignor`` (``partition.assignment.strategy=roundrobin``)."""

    name = "roundrobin"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        assigned: dict[str, list[TopicPartition]] = {member: [] for member in members}
        all_topics = {topic for sub in subscriptions.values() for topic in sub.topics}
        cursor = 0
        for tp in topic_partitions(cluster, all_topics):
            # Some member subscribes to the topic (it is in all_topics), so this stops
            # within one turn around the members.
            while tp.topic not in subscriptions[members[cursor]].topics:
                cursor = (cursor + 1) % len(members)
            assigned[members[cursor]].append(tp)
            cursor = (cursor + 1) % len(members)
        return {member: Assignment(tps) for member, tps in assigned.items()}
