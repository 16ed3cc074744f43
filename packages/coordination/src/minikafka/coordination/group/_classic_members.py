"""Classic members of a consumer group (KIP-848's online migration): Kafka's
``classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup`` and ``classicGroupLeaveToConsumerGroup``.

While a group upgraded from the classic protocol still has members that speak it, those
members go on sending JoinGroup, SyncGroup and Heartbeat, and the consumer group answers
them with its own machinery: no leader computes an assignment; the coordinator's
assignor does, as for every member.

- **JoinGroup** is a ConsumerGroupHeartbeat in disguise: the subscription in the
  member's protocol metadata is folded in (the group epoch moves if it changed), the
  target is recomputed if needed, and the member takes one reconciliation step with the
  partitions its subscription says it owns. The answer comes at once, with the member
  epoch as the generation, no leader and no member list.
- **SyncGroup** hands the member the partitions it may hold now, in the version of its
  subscription: no barrier, no leader's assignment to wait for.
- **Heartbeat** restarts the member's session, and answers REBALANCE_IN_PROGRESS when
  the member must rejoin to move on: the group epoch is ahead of it, it has partitions
  to give up, or the partitions it waited for are free.
- **LeaveGroup** removes the member, which moves the group epoch for the others.

A classic member's session is its own ``session.timeout.ms`` (from its JoinGroup), not
``group.consumer.session.timeout.ms``. Pure over the group it is given.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import attrs
from kio.schema.errors import ErrorCode

from ..assignors._consumer_protocol import ConsumerProtocolError, decode_subscription
from ._consumer_group import ClassicMemberMetadata, ConsumerGroup
from ._consumer_heartbeat import ConsumerGroupHeartbeatRequest, ConsumerGroupManager
from ._current_assignment import ConsumerGroupMember
from ._group_requests import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ._member_state import MemberState
from ._migration import CONSUMER_PROTOCOL_TYPE, classic_assignment

__all__ = ["ClassicMembers", "supports_classic_protocols"]

_MEMBER_ID_REQUIRED_VERSION = 4  # JoinGroup v4+: a new dynamic member rejoins (KIP-394)


def supports_classic_protocols(
    group: ConsumerGroup, protocol_type: str, names: tuple[str, ...]
) -> bool:
    """Kafka's ``ConsumerGroup.supportsClassicProtocols``: the consumer protocol type,
    and a protocol every classic member of the group supports."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        return False
    supported = [
        {name for name, _ in c.protocols}
        for m, c in group.classic.items()
        if m in group.members
    ]
    return any(all(name in s for s in supported) for name in names)


@attrs.define(eq=False)
class ClassicMembers:
    consumer: ConsumerGroupManager
    topics: dict[str, int] = attrs.field(factory=dict)
    """The cluster's topics as the last ConsumerGroupHeartbeat reported them: a classic
    request carries none, and the subscriptions of classic members resolve against it."""
    topic_ids: dict[str, uuid.UUID] = attrs.field(factory=dict)

    def saw_topics(
        self, topics: Mapping[str, int], topic_ids: Mapping[str, uuid.UUID]
    ) -> None:
        if topics:
            self.topics, self.topic_ids = dict(topics), dict(topic_ids)

    # --- JoinGroup --------------------------------------------------------------------

    def join(
        self, group: ConsumerGroup, r: JoinGroupRequest, now: float
    ) -> JoinGroupResponse:
        member_id = r.member_id or uuid.uuid4().hex
        names = tuple(name for name, _ in r.protocols)
        if not supports_classic_protocols(group, r.protocol_type, names):
            return JoinGroupResponse.error(
                ErrorCode.inconsistent_group_protocol, r.member_id
            )
        if (
            r.member_id == UNKNOWN_MEMBER_ID
            and r.group_instance_id is None
            and r.version >= _MEMBER_ID_REQUIRED_VERSION
        ):
            return JoinGroupResponse.error(ErrorCode.member_id_required, member_id)
        if r.group_instance_id is not None:
            owner = group.instance_owner(r.group_instance_id)
            if owner is not None and owner != member_id:
                if r.member_id != UNKNOWN_MEMBER_ID:
                    # another incarnation of the instance holds it under its own id
                    return JoinGroupResponse.error(
                        ErrorCode.fenced_instance_id, r.member_id
                    )
                _replace_static_member(group, owner, member_id)
        try:
            subscription = decode_subscription(r.protocols[0][1])
        except ConsumerProtocolError:
            # Kafka's IllegalStateException ("Malformed embedded consumer protocol")
            return JoinGroupResponse.error(ErrorCode.unknown_server_error, r.member_id)
        member = group.members.get(member_id)
        rejoining = member is not None and member.member_epoch > 0
        heartbeat = ConsumerGroupHeartbeatRequest(
            group_id=group.group_id,
            member_id=member_id,
            member_epoch=member.member_epoch if rejoining and member else 0,
            instance_id=r.group_instance_id,
            rack_id=subscription.rack_id,
            rebalance_timeout_ms=r.effective_rebalance_timeout_ms,
            subscribed_topic_names=subscription.topics,
            owned=frozenset(subscription.owned_partitions)
            if rejoining
            else frozenset(),
            topics=self.topics,
            topic_ids=self.topic_ids,
            client_id=r.client_id,
            client_host=r.client_host,
        )
        answer = self.consumer.heartbeat(heartbeat, now)
        if answer.error is not ErrorCode.none:
            return JoinGroupResponse.error(answer.error, r.member_id)
        classic = ClassicMemberMetadata(r.session_timeout_ms, r.protocols)
        group.classic[member_id] = classic
        self._restart_session(group, member_id, now)
        joined = group.members[member_id]
        if joined.state is not MemberState.UNREVOKED_PARTITIONS:
            # it rejoined: nothing left to wait for (a heartbeat's join deadline)
            joined = group.members[member_id] = attrs.evolve(
                joined, rebalance_deadline=None
            )
        return JoinGroupResponse(
            ErrorCode.none,
            member_id,
            joined.member_epoch,
            CONSUMER_PROTOCOL_TYPE,
            r.protocols[0][0],
        )

    # --- SyncGroup and Heartbeat ------------------------------------------------------

    def sync(
        self, group: ConsumerGroup, r: SyncGroupRequest, now: float
    ) -> SyncGroupResponse:
        member, error = self._validate(group, r.member_id, r.group_instance_id)
        if member is None:
            return SyncGroupResponse(error)
        classic = group.classic[member.member_id]
        if r.generation_id != member.member_epoch:
            return SyncGroupResponse(ErrorCode.illegal_generation)
        if (r.protocol_type not in (None, CONSUMER_PROTOCOL_TYPE)) or (
            r.protocol_name not in (None, classic.protocols[0][0])
        ):
            return SyncGroupResponse(ErrorCode.inconsistent_group_protocol)
        if (
            group.group_epoch > member.member_epoch
            and member.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            # a new target is on its way: rejoin to catch up (``throwIfRebalanceInProgress``)
            return SyncGroupResponse(ErrorCode.rebalance_in_progress)
        self._restart_session(group, member.member_id, now)
        assignment = classic_assignment(member.assigned, classic.protocols[0][1])
        return SyncGroupResponse(
            ErrorCode.none, assignment, r.protocol_type, r.protocol_name
        )

    def heartbeat(
        self, group: ConsumerGroup, r: HeartbeatRequest, now: float
    ) -> ErrorCode:
        member, error = self._validate(group, r.member_id, r.group_instance_id)
        if member is None:
            return error
        if r.generation_id != member.member_epoch:
            return ErrorCode.illegal_generation
        self._restart_session(group, member.member_id, now)
        if self._must_rejoin(group, member):
            if member.rebalance_deadline is None:
                # it must rejoin within its rebalance timeout (Kafka's join timeout)
                group.members[member.member_id] = attrs.evolve(
                    group.members[member.member_id],
                    rebalance_deadline=now + member.rebalance_timeout_ms / 1000,
                )
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    @staticmethod
    def _must_rejoin(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
        """Behind the group epoch, partitions to give up, or the partitions it waited
        for are free now."""
        if member.member_epoch < group.group_epoch:
            return True
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            return True
        if member.state is MemberState.UNRELEASED_PARTITIONS:
            owners = group.owners()
            waiting = group.target.get(member.member_id, frozenset()) - member.assigned
            return not any(
                owners.get(tp, member.member_id) != member.member_id for tp in waiting
            )
        return False

    # --- LeaveGroup -------------------------------------------------------------------

    def leave(
        self, group: ConsumerGroup, r: LeaveGroupRequest, now: float
    ) -> LeaveGroupResponse:
        answers = []
        for identity in r.members:
            member_id = identity.member_id
            if identity.group_instance_id is not None:
                owner = group.instance_owner(identity.group_instance_id)
                if owner is None:
                    error = ErrorCode.unknown_member_id
                elif member_id not in (UNKNOWN_MEMBER_ID, owner):
                    error = ErrorCode.fenced_instance_id
                else:
                    member_id, error = owner, ErrorCode.none
            else:
                error = ErrorCode.none
            if error is ErrorCode.none and member_id not in group.classic:
                error = ErrorCode.unknown_member_id
            if error is ErrorCode.none:
                self.consumer.remove_member(group, member_id, now)
            answers.append(
                LeaveGroupMemberResponse(member_id, identity.group_instance_id, error)
            )
        if r.version < 3 and answers:
            # v0-2: one member, its error at the top
            return LeaveGroupResponse(answers[0].error_code)
        return LeaveGroupResponse(ErrorCode.none, tuple(answers))

    # --- helpers ----------------------------------------------------------------------

    @staticmethod
    def _validate(
        group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> tuple[ConsumerGroupMember | None, ErrorCode]:
        """Kafka's ``validateConsumerGroupMember`` and
        ``throwIfMemberDoesNotUseClassicProtocol``."""
        if instance_id is not None:
            owner = group.instance_owner(instance_id)
            if owner is None:
                return None, ErrorCode.unknown_member_id
            if owner != member_id:
                return None, ErrorCode.fenced_instance_id
        member = group.members.get(member_id)
        if member is None or member_id not in group.classic:
            return None, ErrorCode.unknown_member_id
        return member, ErrorCode.none

    @staticmethod
    def _restart_session(group: ConsumerGroup, member_id: str, now: float) -> None:
        timeout_ms = group.classic[member_id].session_timeout_ms
        group.members[member_id] = attrs.evolve(
            group.members[member_id], session_deadline=now + timeout_ms / 1000
        )


def _replace_static_member(group: ConsumerGroup, old: str, new: str) -> None:
    """A static member restarted with a new member id (Kafka's
    ``getOrMaybeSubscribeStaticConsumerGroupMember``): the new one takes the old one's
    place, subscription and target, at epoch 0, so that it gets its partitions back
    without moving the group epoch."""
    group.members[new] = attrs.evolve(
        group.members[old], member_id=new, member_epoch=0, previous_member_epoch=0
    )
    group.subscriptions[new] = group.subscriptions[old]
    group.target[new] = group.target.get(old, frozenset())
    if old in group.info:
        group.info[new] = group.info[old]
    group.remove(old)
