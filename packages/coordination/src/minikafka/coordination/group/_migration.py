"""The online migration between the two protocols (KIP-848's "Upgrade/Downgrade"):
Kafka's ``GroupMetadataManager.convertToConsumerGroup`` and ``convertToClassicGroup``,
``ConsumerGroup.fromClassicGroup`` and ``ClassicGroup.fromConsumerGroup``.

A live classic group becomes a consumer group when a member speaking the consumer
protocol joins it (its first ConsumerGroupHeartbeat), and a consumer group whose last
consumer-protocol member leaves becomes a classic group again. Between the two, the
classic members stay in the consumer group and are served through JoinGroup, SyncGroup
and Heartbeat (``_classic_members.py``). ``group.consumer.migration.policy`` says which
way a live group may go; an empty group changes kind whatever the policy.

The conversions keep what the members hold: upgraded, each classic member is a consumer
group member at the classic generation (as member epoch and group epoch), stable, owning
the partitions of its last assignment, which is also its target; downgraded, each
remaining member's target becomes its classic assignment, the group Stable at the group
epoch, and a rebalance starts because a member left. Pure functions over the groups;
the coordinator writes the records and swaps the groups.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Mapping

from minikafka.common import TopicPartition

from ..assignors._assignor import Assignment
from ..assignors._consumer_protocol import (
    HIGHEST_ASSIGNMENT_VERSION,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from ._consumer_group import ClassicMemberMetadata, ConsumerGroup, MemberInfo
from ._current_assignment import ConsumerGroupMember
from ._group import GroupMetadata, MemberMetadata
from ._group_state import GroupState
from ._target_assignment import MemberSubscription, subscription_metadata

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "Direction",
    "MigrationError",
    "MigrationPolicy",
    "downgrade_allowed",
    "to_classic_group",
    "to_consumer_group",
    "upgrade_refusal",
]

CONSUMER_PROTOCOL_TYPE = "consumer"
"""The classic protocol type whose embedded protocol a consumer group understands."""


class Direction(enum.Enum):
    UPGRADE = "upgrade"  # classic -> consumer
    DOWNGRADE = "downgrade"  # consumer -> classic


class MigrationPolicy(enum.Enum):
    """``group.consumer.migration.policy`` (Kafka's ``ConsumerGroupMigrationPolicy``)."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @classmethod
    def parse(cls, value: str) -> MigrationPolicy:
        return cls(value.lower())

    def allows(self, direction: Direction) -> bool:
        return direction in ALLOWED[self]


ALLOWED: Mapping[MigrationPolicy, frozenset[Direction]] = {
    MigrationPolicy.DISABLED: frozenset(),
    MigrationPolicy.UPGRADE: frozenset({Direction.UPGRADE}),
    MigrationPolicy.DOWNGRADE: frozenset({Direction.DOWNGRADE}),
    MigrationPolicy.BIDIRECTIONAL: frozenset(Direction),
}
"""Policy -> the ways a live group may change protocol."""


class MigrationError(Exception):
    """The group's embedded consumer protocol could not be read: it stays as it is."""


def upgrade_refusal(
    policy: MigrationPolicy, group: GroupMetadata, consumer_max_size: int
) -> str | None:
    """Why the live classic ``group`` may not become a consumer group, or None
    (Kafka's ``validateOnlineUpgrade``)."""
    if not policy.allows(Direction.UPGRADE):
        return "the online upgrade is disabled"
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return "the group does not use the consumer embedded protocol"
    if len(group.members) > consumer_max_size:
        return "the group size exceeds the consumer group maximum size"
    return None


def downgrade_allowed(
    policy: MigrationPolicy,
    group: ConsumerGroup,
    leaving_member_id: str,
    classic_max_size: int,
) -> bool:
    """Whether ``group`` becomes a classic group as ``leaving_member_id`` leaves or is
    fenced (Kafka's ``validateOnlineDowngradeWithFencedMember``): every other member
    speaks the classic protocol, some are left, and the policy and size allow it."""
    others = [m for m in group.members if m != leaving_member_id]
    return (
        bool(others)
        and all(m in group.classic for m in others)
        and policy.allows(Direction.DOWNGRADE)
        and len(others) <= classic_max_size
    )


def to_consumer_group(
    classic: GroupMetadata,
    topics: Mapping[str, int],
    topic_ids: Mapping[str, uuid.UUID],
    now: float,
) -> ConsumerGroup:
    """The consumer group a classic group becomes (Kafka's ``fromClassicGroup``): its
    generation is the group epoch and every member's epoch; each member keeps its last
    assignment, as what it owns and as its target, and is stable; a partition of a topic
    the cluster no longer has is dropped. A member of a group in a rebalance has no
    assignment yet and starts with nothing: it is told to rejoin."""
    epoch = classic.generation_id
    group = ConsumerGroup(classic.group_id, epoch, epoch)
    protocol = classic.protocol_name or ""
    for member_id, member in classic.members.items():
        try:
            subscription = decode_subscription(member.metadata(protocol))
            raw = member.assignment
            partitions = decode_assignment(raw).partitions if raw else ()
        except (ConsumerProtocolError, KeyError) as e:
            raise MigrationError(
                f"Cannot upgrade the classic group {classic.group_id} to consumer "
                "group because the embedded consumer protocol is malformed."
            ) from e
        owned = frozenset(tp for tp in partitions if tp.topic in topics)
        group.members[member_id] = ConsumerGroupMember(
            member_id,
            member_epoch=epoch,
            previous_member_epoch=epoch,
            assigned=owned,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            session_deadline=now + member.session_timeout_ms / 1000,
        )
        group.target[member_id] = owned
        group.subscriptions[member_id] = MemberSubscription(
            subscription.topics, member.group_instance_id, subscription.rack_id
        )
        group.info[member_id] = MemberInfo(member.client_id, member.client_host)
        group.classic[member_id] = ClassicMemberMetadata(
            member.session_timeout_ms, member.supported_protocols
        )
    group.metadata = subscription_metadata(group.subscriptions, topics)
    group.topic_ids = {t: topic_ids[t] for t in group.metadata if t in topic_ids}
    return group


def to_classic_group(
    group: ConsumerGroup, leaving_member_id: str, now: float
) -> tuple[GroupMetadata, dict[str, bytes]]:
    """The classic group a consumer group becomes when ``leaving_member_id``, its last
    consumer-protocol member, leaves (Kafka's ``fromConsumerGroup``): Stable at the
    group epoch, the others with their classic protocols and their target as their
    assignment (encoded in the version of each member's subscription). Returns it and
    the assignments, for its group record."""
    classic = GroupMetadata(
        group.group_id,
        GroupState.STABLE,
        group.group_epoch,
        CONSUMER_PROTOCOL_TYPE,
    )
    for member_id, member in group.members.items():
        if member_id == leaving_member_id:
            continue
        metadata = group.classic[member_id]
        classic.add(
            MemberMetadata(
                member_id,
                group.subscriptions[member_id].instance_id,
                group.info.get(member_id, MemberInfo()).client_id,
                group.info.get(member_id, MemberInfo()).client_host,
                member.rebalance_timeout_ms,
                metadata.session_timeout_ms,
                CONSUMER_PROTOCOL_TYPE,
                metadata.protocols,
                heartbeat_deadline=now + metadata.session_timeout_ms / 1000,
            )
        )
    classic.protocol_name = protocol = classic.select_protocol()
    assignments: dict[str, bytes] = {}
    for member_id, member_metadata in classic.members.items():
        target = group.target.get(member_id, frozenset())
        version = _protocol_version(member_metadata.metadata(protocol))
        assignments[member_id] = member_metadata.assignment = encode_assignment(
            Assignment(sorted(target)), version
        )
    classic.state_timestamp = now
    return classic, assignments


def classic_assignment(partitions: frozenset[TopicPartition], metadata: bytes) -> bytes:
    """A classic member's partitions as its SyncGroup answer carries them, in the
    version of its subscription (Kafka's ``prepareAssignment``)."""
    return encode_assignment(
        Assignment(sorted(partitions)), _protocol_version(metadata)
    )


def _protocol_version(metadata: bytes) -> int:
    """The embedded protocol's version (its first int16), capped at the highest
    assignment version this broker writes."""
    if len(metadata) < 2:
        return 0
    version: int = struct.unpack_from(">h", metadata)[0]
    return max(0, min(version, HIGHEST_ASSIGNMENT_VERSION))
