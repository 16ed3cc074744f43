"""When a consumer group's epoch moves, and the new target it then gets (KIP-848).

The *group epoch* counts changes that can change who should read what: a member joins
with a subscription, leaves or is fenced, changes its subscription, or a subscribed
topic gains partitions or appears or disappears. When the group epoch is ahead of the
*target assignment epoch*, the coordinator runs its assignor over the members and their
current targets and stamps the answer with the group epoch (Kafka's
``TargetAssignmentBuilder``); the members then reconcile towards it one by one
(``_current_assignment.py``). Nothing else moves the target, so a member that only
heartbeats, or finishes a revocation, changes neither epoch.

A static member (``group.instance.id``) is one member across restarts: a member that
rejoins with the instance id of one that left with epoch -2 takes over its subscription
and target, and if its subscription is the same no epoch moves. Here a member's identity
for the bump rules is its instance id when it has one.

Pure functions over values; the records Kafka writes for each (ConsumerGroupMetadata,
ConsumerGroupTargetAssignmentMember for each changed member,
ConsumerGroupTargetAssignmentMetadata) are ``_consumer_records.py``'s.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ..assignors._server_assignor import (
    ConsumerGroupPartitionAssignor,
    GroupSpec,
    MemberSubscriptionAndAssignment,
)

__all__ = [
    "DEFAULT_CONSUMER_ASSIGNORS",
    "EpochBump",
    "MemberSubscription",
    "TargetAssignmentResult",
    "assignor_error",
    "build_target_assignment",
    "epoch_bumps",
    "select_assignor",
    "subscription_metadata",
]

DEFAULT_CONSUMER_ASSIGNORS = ("uniform", "range")
"""Kafka's default ``group.consumer.assignors``: the first is used when no member asks."""


def _names(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


@attrs.frozen
class MemberSubscription:
    """What a member's heartbeats declared (the ConsumerGroupMemberMetadata record's
    part the assignment depends on)."""

    subscribed_topic_names: frozenset[str] = attrs.field(converter=_names)
    instance_id: str | None = None
    rack_id: str | None = None
    server_assignor: str | None = None
    subscribed_topic_regex: str | None = None
    """Topics by regular expression, resolved by the group (``_regex_subscriptions``)."""

    def identity(self, member_id: str) -> str:
        """Who this member is across restarts: its instance id if static."""
        return self.instance_id if self.instance_id is not None else member_id


class EpochBump(enum.Enum):
    """Why the group epoch moves (Kafka's ``GroupMetadataManager`` heartbeat path)."""

    MEMBER_JOINED = "member joined"
    MEMBER_LEFT = "member left or was fenced"
    SUBSCRIPTION_CHANGED = "subscription changed"
    METADATA_CHANGED = "subscribed topics' partitions changed"


def subscription_metadata(
    subscriptions: Mapping[str, MemberSubscription], topics: Mapping[str, int]
) -> dict[str, int]:
    """The partition counts of every topic some member subscribes to and the cluster
    has (Kafka's subscription metadata, written as ConsumerGroupPartitionMetadata)."""
    subscribed = {t for s in subscriptions.values() for t in s.subscribed_topic_names}
    return {t: topics[t] for t in sorted(subscribed) if t in topics}


def epoch_bumps(
    before: Mapping[str, MemberSubscription],
    after: Mapping[str, MemberSubscription],
    metadata_before: Mapping[str, int],
    metadata_after: Mapping[str, int],
) -> tuple[EpochBump, ...]:
    """Why the group epoch moves from ``before`` to ``after`` (member id ->
    subscription); empty when it stays. A member that joins subscribed to nothing
    moves nothing: it could be given nothing."""
    old = {s.identity(m): s.subscribed_topic_names for m, s in before.items()}
    new = {s.identity(m): s.subscribed_topic_names for m, s in after.items()}
    reasons = []
    if any(who not in old and topics for who, topics in new.items()):
        reasons.append(EpochBump.MEMBER_JOINED)
    if any(who not in new for who in old):
        reasons.append(EpochBump.MEMBER_LEFT)
    if any(who in old and old[who] != topics for who, topics in new.items()):
        reasons.append(EpochBump.SUBSCRIPTION_CHANGED)
    if dict(metadata_before) != dict(metadata_after):
        reasons.append(EpochBump.METADATA_CHANGED)
    return tuple(reasons)


def select_assignor(
    subscriptions: Mapping[str, MemberSubscription],
    configured: Sequence[str] = DEFAULT_CONSUMER_ASSIGNORS,
) -> str:
    """The assignor the group uses: the one most members ask for in their heartbeat's
    ``ServerAssignor``, ties to the one listed first in ``group.consumer.assignors``;
    the first listed when nobody asks (Kafka's preferred server assignor)."""
    asked = Counter(
        s.server_assignor
        for s in subscriptions.values()
        if s.server_assignor is not None
    )
    if not asked:
        return configured[0]
    return max(
        asked,
        key=lambda n: (
            asked[n],
            -configured.index(n) if n in configured else -len(configured),
        ),
    )


def assignor_error(name: str | None, configured: Sequence[str]) -> ErrorCode:
    """A heartbeat naming an assignor the broker does not have: UNSUPPORTED_ASSIGNOR."""
    if name is not None and name not in configured:
        return ErrorCode.unsupported_assignor
    return ErrorCode.none


@attrs.frozen
class TargetAssignmentResult:
    """The new target, its epoch, and the members whose target changed (each one a
    ConsumerGroupTargetAssignmentMember record, before the epoch's metadata record)."""

    assignment_epoch: int
    members: Mapping[str, frozenset[TopicPartition]]
    changed: tuple[str, ...]


def build_target_assignment(
    *,
    group_epoch: int,
    assignor: ConsumerGroupPartitionAssignor,
    subscriptions: Mapping[str, MemberSubscription],
    current_target: Mapping[str, frozenset[TopicPartition]],
    topics: Mapping[str, int],
    replaced: Mapping[str, str] | None = None,
) -> TargetAssignmentResult:
    """Kafka's ``TargetAssignmentBuilder.build``: run ``assignor`` over the members
    with their current targets, and say which targets changed.

    ``replaced`` maps a static member's new member id to the member id it took over;
    the new one starts from the old one's target, so the assignor keeps it in place.
    """
    replaced = replaced or {}
    specs = {}
    for member_id, subscription in subscriptions.items():
        previous = current_target.get(member_id)
        if previous is None and member_id in replaced:
            previous = current_target.get(replaced[member_id])
        specs[member_id] = MemberSubscriptionAndAssignment(
            subscription.subscribed_topic_names,
            previous or frozenset(),
            subscription.rack_id,
            subscription.instance_id,
        )
    metadata = subscription_metadata(subscriptions, topics)
    result = assignor.assign(GroupSpec(specs), metadata)
    members = {m: result.members.get(m, frozenset()) for m in sorted(subscriptions)}
    changed = tuple(m for m, tps in members.items() if current_target.get(m) != tps)
    return TargetAssignmentResult(group_epoch, members, changed)
