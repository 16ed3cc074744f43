"""What the server-side assignors share (KIP-848): the group spec in, the target out.

Under the classic protocol the group leader, a client, assigns (see ``_assignor.py``).
KIP-848 moves that job into the group coordinator: when the group epoch moves, the
coordinator hands one of its own assignors (``group.consumer.assignors``, ``uniform``
first) a description of the group and of the subscribed topics, and the answer becomes
the group's new *target assignment*, which every member then reconciles towards on its
own. Kafka's interface is ``ConsumerGroupPartitionAssignor``; its input is a
``GroupSpec`` (each member's subscription, rack, static instance id and current
assignment, and whether every member subscribes to the same topics) and a
``SubscribedTopicDescriber`` (how many partitions each subscribed topic has), its output a
``GroupAssignment``.

Kafka keys topics by topic id, which the coordinator resolves from the subscribed names;
here a topic is keyed by its name, and the metadata is a mapping from name to partition
count. A subscribed topic the metadata does not have is skipped, as Kafka's coordinator
drops unknown names before it calls the assignor.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from minikafka.common import TopicPartition

__all__ = [
    "ConsumerGroupPartitionAssignor",
    "GroupAssignment",
    "GroupSpec",
    "MemberSubscriptionAndAssignment",
    "SubscriptionType",
    "member_sort_key",
    "partitions_of",
]


def _topics(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


def _partitions(values: Iterable[TopicPartition]) -> frozenset[TopicPartition]:
    return frozenset(values)


@attrs.frozen
class MemberSubscriptionAndAssignment:
    """One member as the assignor sees it (Kafka's ``MemberSubscriptionAndAssignmentImpl``).

    ``assigned`` is the member's partitions in the *current target* assignment, not what
    the member owns right now: the assignors are sticky to the last target, and the
    reconciliation gets the members from one to the other.
    """

    subscribed_topics: frozenset[str] = attrs.field(converter=_topics)
    assigned: frozenset[TopicPartition] = attrs.field(
        default=frozenset(), converter=_partitions
    )
    rack_id: str | None = None
    instance_id: str | None = None


class SubscriptionType(enum.Enum):
    """Kafka's ``SubscriptionType``: whether every member subscribes to the same topics.

    The assignors take a faster and tighter path when it is ``HOMOGENEOUS``: every member
    can take any partition, so a balance of "at most one apart" is always reachable.
    """

    HOMOGENEOUS = "homogeneous"
    HETEROGENEOUS = "heterogeneous"


@attrs.frozen
class GroupSpec:
    """The group's members, by member id (Kafka's ``GroupSpec``)."""

    members: Mapping[str, MemberSubscriptionAndAssignment]

    @property
    def subscription_type(self) -> SubscriptionType:
        subscriptions = {m.subscribed_topics for m in self.members.values()}
        if len(subscriptions) <= 1:
            return SubscriptionType.HOMOGENEOUS
        return SubscriptionType.HETEROGENEOUS

    def is_partition_assigned(self, partition: TopicPartition) -> bool:
        """Whether some member holds ``partition`` in the current target."""
        return any(partition in m.assigned for m in self.members.values())


@attrs.frozen
class GroupAssignment:
    """The new target: every member's partitions, empty ones included."""

    members: Mapping[str, frozenset[TopicPartition]]


class ConsumerGroupPartitionAssignor(Protocol):
    """The port the coordinator calls (Kafka's ``ConsumerGroupPartitionAssignor``).

    ``name`` is what ``group.consumer.assignors`` lists and what a member may ask for in
    its heartbeat's ``ServerAssignor``; ``assign`` must be a pure function of its input,
    since a coordinator that takes over after a failover recomputes nothing it loaded.
    """

    @property
    def name(self) -> str: ...

    def assign(
        self, group: GroupSpec, topics: Mapping[str, int]
    ) -> GroupAssignment: ...


def partitions_of(
    topics: Mapping[str, int], subscribed: Iterable[str]
) -> list[TopicPartition]:
    """Every partition of the ``subscribed`` topics the metadata has, sorted."""
    return [
        TopicPartition(topic, partition)
        for topic in sorted(set(subscribed))
        if topic in topics
        for partition in range(topics[topic])
    ]


def member_sort_key(
    member_id: str, member: MemberSubscriptionAndAssignment
) -> tuple[int, str, str]:
    """Kafka's member order for the server-side range assignor: static members first,
    by instance id, then the others by member id.

    A static member keeps its instance id across restarts while its member id is new, so
    ordering by instance id gives a restarted static member its old ranges back.
    """
    if member.instance_id is not None:
        return (0, member.instance_id, member_id)
    return (1, member_id, member_id)
