"""The server-side range assignor (KIP-848): contiguous ranges, co-partitioned topics.

Kafka's group-coordinator ``RangeAssignor`` (``group.consumer.assignors=range``), the
broker-side sibling of the classic client-side one in ``_range.py``. For each topic, its
subscribers are put in one fixed order (static members first, by instance id, then the
others by member id) and each takes the next run of ``n // m`` partitions, the first
``n % m`` of them one more. Because the cut depends only on the partition count and the
member order, two topics with the same partition count land partition by partition on
the same members when every member subscribes to both: the co-partitioning a consumer
needs to join two streams by key.

It ignores the current assignment. Its stickiness comes from the member order alone: as
long as the members, their subscriptions and the partition counts stay the same, the
answer stays the same, and static members keep their ranges across restarts. Adding a
member shifts every range after it; that is the price of co-partitioning, and the
``uniform`` assignor is the one to use when moves matter more.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition

from ._server_assignor import (
    GroupAssignment,
    GroupSpec,
    SubscriptionType,
    member_sort_key,
)

__all__ = ["ServerRangeAssignor"]


@attrs.frozen
class ServerRangeAssignor:
    """Kafka's ``org.apache.kafka.coordinator.group.assignor.RangeAssignor``.

    The homogeneous and heterogeneous cases are one loop here: with every member
    subscribed to every topic, each topic's subscribers are all the members in the same
    order, which is what makes the homogeneous case co-partitioned. Rack-unaware, as the
    Kafka 4.1 assignor is.
    """

    name = "range"

    def assign(self, group: GroupSpec, topics: Mapping[str, int]) -> GroupAssignment:
        order = sorted(
            group.members, key=lambda m: member_sort_key(m, group.members[m])
        )
        assigned: dict[str, set[TopicPartition]] = {m: set() for m in order}
        subscribed = {t for m in group.members.values() for t in m.subscribed_topics}
        for topic in sorted(subscribed):
            if topic not in topics:
                continue
            subscribers = [
                m for m in order if topic in group.members[m].subscribed_topics
            ]
            for member, partitions in zip(
                subscribers, _ranges(topics[topic], len(subscribers)), strict=True
            ):
                assigned[member].update(TopicPartition(topic, p) for p in partitions)
        return GroupAssignment({m: frozenset(tps) for m, tps in assigned.items()})

    @staticmethod
    def co_partitioned(group: GroupSpec, topics: Mapping[str, int]) -> bool:
        """Whether Kafka promises co-partitioning for this input: every member
        subscribes to the same topics and those topics have one partition count."""
        if group.subscription_type is not SubscriptionType.HOMOGENEOUS:
            return False
        subscribed = {t for m in group.members.values() for t in m.subscribed_topics}
        return len({topics[t] for t in subscribed if t in topics}) <= 1


def _ranges(partitions: int, members: int) -> list[range]:
    """``partitions`` cut into ``members`` contiguous runs, the longer ones first."""
    per_member, extra = divmod(partitions, members)
    runs = []
    start = 0
    for index in range(members):
        length = per_member + (1 if index < extra else 0)
        runs.append(range(start, start + length))
        start += length
    return runs
