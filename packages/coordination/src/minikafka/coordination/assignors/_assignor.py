"""What every assignor shares: a member's subscription, its assignment, the assignor port.

Seed 000, "分配策略" and "重平衡协议": the group leader, not the broker, decides which member
consumes which partition. The coordinator hands the leader every member's subscription
(JoinGroup) and relays the leader's answer (SyncGroup); it never looks inside either, so
the assignors are pure client-side functions of the cluster's topics and the subscriptions.
Kafka's ``ConsumerPartitionAssignor`` with its ``Subscription``, ``Assignment`` and
``RebalanceProtocol``; KIP-429 added the owned partitions and the cooperative protocol,
KIP-792 the generation and KIP-881 the rack to the subscription.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from minikafka.common import TopicPartition

NO_GENERATION = -1
"""Kafka's ``DEFAULT_GENERATION``: the member does not know (or does not say) its generation."""


def _str_tuple(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _partition_tuple(values: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    return tuple(values)


@attrs.frozen
class Subscription:
    """One member's JoinGroup metadata under the ``consumer`` protocol type.

    Which fields travel depends on the ConsumerProtocolSubscription version: ``topics`` and
    ``user_data`` since v0, ``owned_partitions`` since v1 (KIP-429), ``generation_id`` since
    v2 (KIP-792), ``rack_id`` since v3 (KIP-881). ``group_instance_id`` is not encoded at
    all: the leader learns it from the JoinGroup response's member list, and Range and
    RoundRobin order static members by it (KIP-345) so a restarted static member gets its
    old partitions back.
    """

    topics: tuple[str, ...] = attrs.field(converter=_str_tuple)
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = attrs.field(
        default=(), converter=_partition_tuple
    )
    generation_id: int = NO_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None


@attrs.frozen
class Assignment:
    """What the leader gives one member: its partitions (sorted) and opaque user data."""

    partitions: tuple[TopicPartition, ...] = attrs.field(converter=_partition_tuple)
    user_data: bytes | None = None


class RebalanceProtocol(enum.IntEnum):
    """How members give partitions up during a rebalance (seed 000, "重平衡协议").

    EAGER: every member revokes everything before it rejoins, so nothing is consumed while
    the group rebalances. COOPERATIVE (KIP-429): members keep consuming what they own and
    revoke only what the new assignment takes away, which then moves in a second
    rebalance. The values are Kafka's ``RebalanceProtocol.id()``.
    """

    EAGER = 0
    COOPERATIVE = 1


class PartitionAssignor(Protocol):
    """The port the group leader calls: Kafka's ``ConsumerPartitionAssignor``.

    ``name`` is the protocol name members advertise in JoinGroup
    (``partition.assignment. strategy``); the coordinator picks one every member
    supports. ``assign`` gets the topics' partition counts and every member's
    subscription and answers an assignment for every member, empty ones included, since
    every member waits on SyncGroup for one.
    """

    @property
    def name(self) -> str: ...

    @property
    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]: ...

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]: ...


def topic_partitions(
    cluster: Mapping[str, int], topics: Iterable[str]
) -> list[TopicPartition]:
    """Every partition of ``topics`` that the cluster knows, sorted by topic and partition.

    A subscribed topic missing from the metadata is skipped, as Kafka's assignors do: it
    may not be created yet, and it gets assigned in the rebalance its creation triggers.
    """
    return [
        TopicPartition(topic, partition)
        for topic in sorted(set(topics))
        if topic in cluster
        for partition in range(cluster[topic])
    ]


def member_order_key(
    member_id: str, subscription: Subscription
) -> tuple[int, str, str]:
    """Kafka's ``MemberInfo`` order: static members by instance id first, then member
    ids.

    Dynamic member ids are fresh UUIDs on every join, so ordering by them alone would
    move a restarted static member's partitions; its ``group.instance.id`` does not
    change.
    """
    if subscription.group_instance_id is not None:
        return (0, subscription.group_instance_id, member_id)
    return (1, member_id, member_id)


def sorted_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """The member ids in :func:`member_order_key` order."""
    return sorted(subscriptions, key=lambda m: member_order_key(m, subscriptions[m]))
