"""RangeAssignor: each topic's partitions cut into contiguous ranges, one per member.

Seed 000, "分配策略": Kafka's default assignor. For every topic on its own, the members
subscribed to it are sorted and each gets a run of ``n // m`` consecutive partitions; the
remainder ``n % m`` goes one each to the first members ("把余数分配出去": 5 partitions over
3 members give 2, 2, 1). Because the cut only depends on the partition count and the
member order, two co-partitioned topics (same partition count) land partition by
partition on the same member, which is what lets a consumer join them. The price is
that the same first members take the remainder of every topic.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition

from ._assignor import Assignment, RebalanceProtocol, Subscription, sorted_members


@attrs.frozen
class RangeAssignor:
    """Kafka's ``RangeAssignor`` (``partition.assignment.strategy=range``), rack-unaware."""

    name = "range"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        assigned: dict[str, list[TopicPartition]] = {member: [] for member in members}
        topics = sorted(
            {topic for sub in subscriptions.values() for topic in sub.topics}
        )
        for topic in topics:
            if topic not in cluster:
                continue
            consumers = [m for m in members if topic in subscriptions[m].topics]
            per_member, extra = divmod(cluster[topic], len(consumers))
            start = 0
            for index, member in enumerate(consumers):
                length = per_member + (1 if index < extra else 0)
                assigned[member].extend(
                    TopicPartition(topic, p) for p in range(start, start + length)
                )
                start += length
        return {member: Assignment(sorted(tps)) for member, tps in assigned.items()}
