"""A consumer-protocol group in its coordinator (KIP-848): Kafka's ``ConsumerGroup``.

The classic group (``_group.py``) is a state machine the whole group walks through
together; a consumer group is three epochs and, per member, a place on the way to its
target. ``group_epoch`` moves when the membership or a subscription changes
(``_target_assignment.epoch_bumps``); ``assignment_epoch`` is the group epoch the
current ``target`` was computed at; each member's :class:`ConsumerGroupMember` says
what it has been given and its member epoch (``_current_assignment.py``). The group's
state is derived from those, as Kafka's ``ConsumerGroup.maybeUpdateGroupState`` does:
Empty without members, Assigning while the target is behind the group epoch, Reconciling
while some member is not at the target epoch or not stable, else Stable.

Plain data and the derivations; what a heartbeat does to it is in
``_consumer_heartbeat.py``, and its records in ``_consumer_records.py``.
"""

from __future__ import annotations

import enum
import uuid

import attrs

from minikafka.common import TopicPartition

from ._current_assignment import ConsumerGroupMember, partition_owners
from ._member_state import MemberState
from ._regex_subscriptions import RegexSubscriptions
from ._target_assignment import MemberSubscription

__all__ = [
    "CONSUMER_GROUP_TYPE",
    "ConsumerGroup",
    "ConsumerGroupState",
    "MemberInfo",
]

CONSUMER_GROUP_TYPE = "consumer"
"""ListGroups' and ConsumerGroupDescribe's name for this kind of group (KIP-848)."""

STATIC_LEFT_EPOCH = -2
"""The member epoch of a static member that left saying it will be back (KIP-848)."""


class ConsumerGroupState(enum.Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState``, as ListGroups names them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@attrs.frozen
class MemberInfo:
    """What ConsumerGroupDescribe reports of a member beside its assignment."""

    client_id: str = ""
    client_host: str = ""


@attrs.define(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = attrs.field(factory=dict)
    subscriptions: dict[str, MemberSubscription] = attrs.field(factory=dict)
    target: dict[str, frozenset[TopicPartition]] = attrs.field(factory=dict)
    metadata: dict[str, int] = attrs.field(factory=dict)
    """The subscribed topics' partition counts the target was computed from."""
    info: dict[str, MemberInfo] = attrs.field(factory=dict)
    assignor: str = ""
    """The assignor the last target was computed with."""
    topic_ids: dict[str, uuid.UUID] = attrs.field(factory=dict)
    """The subscribed topics' ids, which the records name them by."""
    regex: RegexSubscriptions = attrs.field(factory=RegexSubscriptions)
    """The members' regular expressions, resolved (``_regex_subscriptions.py``)."""

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch == STATIC_LEFT_EPOCH:
                continue
            if (
                member.member_epoch != self.assignment_epoch
                or member.state is not MemberState.STABLE
            ):
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def owners(self) -> dict[TopicPartition, str]:
        """Who owns each partition now (assigned, or pending revocation)."""
        return partition_owners(self.members.values())

    def instance_owner(self, instance_id: str) -> str | None:
        """The member id holding static ``instance_id``, if any."""
        for member_id, subscription in self.subscriptions.items():
            if subscription.instance_id == instance_id:
                return member_id
        return None

    def remove(self, member_id: str) -> None:
        """Forget the member: its partitions are free for the others from now on."""
        self.members.pop(member_id, None)
        self.subscriptions.pop(member_id, None)
        self.target.pop(member_id, None)
        self.info.pop(member_id, None)
