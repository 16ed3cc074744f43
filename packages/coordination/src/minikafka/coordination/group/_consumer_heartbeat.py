"""ConsumerGroupHeartbeat in the coordinator (KIP-848): Kafka's
``GroupMetadataManager.consumerGroupHeartbeat``.

One request does everything a classic member needs four for. A member joins with epoch
0 and its subscription, heartbeats with its epoch (and, when it changed, what it owns),
and leaves with epoch -1 (-2: a static member that will be back). Each heartbeat:

1. checks the request's fields (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR,
   INVALID_REGULAR_EXPRESSION for a pattern RE2/J would refuse) and the group's
   kind (a classic group with members is not a consumer group: GROUP_ID_NOT_FOUND);
2. finds or creates the member (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH for an epoch
   that is neither its current one nor, after a lost answer, its previous one);
3. folds the member's subscription in (its topic names, and the topics its regular
   expression resolves to, ``_regex_subscriptions.py``); if it changed who should read
   what, the group epoch moves and the target is computed again
   (``build_target_assignment``);
4. takes one step of the member towards its target (``_current_assignment.heartbeat``)
   and answers with its epoch, its partitions and ``group.consumer.heartbeat.interval.ms``.

Sessions (``group.consumer.session.timeout.ms``) and rebalance timeouts are deadlines on
the members; :meth:`ConsumerGroupManager.expire` removes a member whose deadline passed,
which moves the group epoch for the others. Pure over the groups it is given: ``now``
comes in, the response goes out; the coordinator writes the records (``_consumer_records``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.trace import NullTracer, Tracer

from ..assignors._server_assignor import ConsumerGroupPartitionAssignor
from ..assignors._server_range import ServerRangeAssignor
from ..assignors._uniform import UniformAssignor
from ._config import GroupConfig
from ._consumer_group import STATIC_LEFT_EPOCH, ConsumerGroup, MemberInfo
from ._consumer_trace import trace_member
from ._current_assignment import epoch_is_valid, expire, heartbeat, new_member
from ._group import GroupMetadata
from ._group_state import GroupState
from ._member_state import Step
from ._regex_subscriptions import expand, regex_error_message, used_regexes
from ._target_assignment import (
    MemberSubscription,
    build_target_assignment,
    epoch_bumps,
    select_assignor,
    subscription_metadata,
)

__all__ = [
    "SERVER_ASSIGNORS",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupManager",
    "consumer_offset_commit_error",
    "consumer_offset_fetch_error",
]

SERVER_ASSIGNORS: Mapping[str, ConsumerGroupPartitionAssignor] = {
    a.name: a for a in (UniformAssignor(), ServerRangeAssignor())
}
"""The assignors ``group.consumer.assignors`` may name."""

LEAVE_EPOCH = -1


@attrs.frozen
class ConsumerGroupHeartbeatRequest:
    """The request's fields; None means "not sent: unchanged since the last one".

    ``topics`` is the cluster's topics and their partition counts as the broker knows
    them now: the coordinator's view of what the subscriptions resolve to; the records
    name topics by ``topic_ids``."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: frozenset[TopicPartition] | None = None
    topics: Mapping[str, int] = attrs.field(factory=dict)
    topic_ids: Mapping[str, uuid.UUID] = attrs.field(factory=dict)
    metadata_version: int = -1
    """The version (log offset) of the metadata ``topics`` is read from."""
    client_id: str = ""
    client_host: str = ""
    version: int = 1


@attrs.frozen
class ConsumerGroupHeartbeatResponse:
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: frozenset[TopicPartition] | None = None


def _invalid(message: str) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(ErrorCode.invalid_request, message)


def request_error(
    r: ConsumerGroupHeartbeatRequest, assignors: tuple[str, ...]
) -> ConsumerGroupHeartbeatResponse | None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
    if not r.group_id:
        return _invalid("GroupId can't be empty.")
    if r.instance_id == "":
        return _invalid("InstanceId can't be empty.")
    if r.rack_id == "":
        return _invalid("RackId can't be empty.")
    if not r.member_id and (r.version >= 1 or r.member_epoch != 0):
        return _invalid("MemberId can't be empty.")
    if r.member_epoch < STATIC_LEFT_EPOCH:
        return _invalid(f"MemberEpoch is invalid: {r.member_epoch}.")
    if r.member_epoch == STATIC_LEFT_EPOCH and r.instance_id is None:
        return _invalid("InstanceId can't be null.")
    if r.member_epoch == 0:
        if r.rebalance_timeout_ms == -1:
            return _invalid("RebalanceTimeoutMs must be provided in first request.")
        if r.owned is None or r.owned:
            return _invalid("TopicPartitions must be empty when (re-)joining.")
        if r.subscribed_topic_names is None and not r.subscribed_topic_regex:
            return _invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first "
                "request."
            )
    if r.server_assignor is not None and r.server_assignor not in assignors:
        return ConsumerGroupHeartbeatResponse(
            ErrorCode.unsupported_assignor,
            f"ServerAssignor {r.server_assignor} is not supported. Supported "
            f"assignors: {', '.join(assignors)}.",
        )
    return None


@attrs.define(eq=False)
class ConsumerGroupManager:
    """The consumer groups of this coordinator, beside the classic ones it shares ids
    with: a group id names one group of one kind."""

    config: GroupConfig
    groups: dict[str, ConsumerGroup]
    classic: dict[str, GroupMetadata]
    tracer: Tracer = attrs.field(factory=NullTracer, kw_only=True)
    """Where each move of a member's current assignment is traced."""

    def heartbeat(
        self, r: ConsumerGroupHeartbeatRequest, now: float
    ) -> ConsumerGroupHeartbeatResponse:
        refused = request_error(r, self.config.group_consumer_assignors)
        if refused is None:
            refused = self._regex_error(r)
        if refused is not None:
            return refused
        classic = self.classic.get(r.group_id)
        if classic is not None:
            if classic.state is not GroupState.EMPTY or r.member_epoch != 0:
                return ConsumerGroupHeartbeatResponse(
                    ErrorCode.group_id_not_found,
                    f"Group {r.group_id} is not a consumer group.",
                )
            # an empty classic group becomes a consumer group; its offsets stay
            del self.classic[r.group_id]
        group = self.groups.get(r.group_id)
        if group is None:
            if r.member_epoch != 0:
                return ConsumerGroupHeartbeatResponse(
                    ErrorCode.group_id_not_found,
                    f"Consumer group {r.group_id} not found.",
                )
            group = self.groups[r.group_id] = ConsumerGroup(r.group_id)
        if r.member_epoch in (LEAVE_EPOCH, STATIC_LEFT_EPOCH):
            return self._leave(group, r, now)
        return self._heartbeat(group, r, now)

    def _regex_error(
        self, r: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse | None:
        """INVALID_REGULAR_EXPRESSION for an expression new to the group that RE2/J
        would refuse (Kafka compiles one when no member uses it yet). Checked before
        anything changes; a request the member checks refuse is left to them."""
        regex = r.subscribed_topic_regex
        if not regex or r.member_epoch in (LEAVE_EPOCH, STATIC_LEFT_EPOCH):
            return None
        group = self.groups.get(r.group_id)
        if group is not None:
            if regex in used_regexes(group.subscriptions):
                return None
            member = group.members.get(r.member_id)
            if r.member_epoch != 0 and (
                member is None or not epoch_is_valid(member, r.member_epoch, r.owned)
            ):
                return None
        message = regex_error_message(regex)
        if message is None:
            return None
        return ConsumerGroupHeartbeatResponse(
            ErrorCode.invalid_regular_expression, message
        )

    def _leave(
        self, group: ConsumerGroup, r: ConsumerGroupHeartbeatRequest, now: float
    ) -> ConsumerGroupHeartbeatResponse:
        member_id = r.member_id
        if r.member_epoch == STATIC_LEFT_EPOCH:
            member_id = group.instance_owner(r.instance_id or "") or ""
        member = group.members.get(member_id)
        if member is None:
            return ConsumerGroupHeartbeatResponse(
                ErrorCode.unknown_member_id,
                f"Member {r.member_id} is not a member of group {r.group_id}.",
            )
        if r.member_epoch == STATIC_LEFT_EPOCH:
            # it keeps its partitions for its next incarnation, until its session ends
            group.members[member_id] = attrs.evolve(
                member,
                member_epoch=STATIC_LEFT_EPOCH,
                previous_member_epoch=member.member_epoch,
                rebalance_deadline=None,
            )
        else:
            self.remove_member(group, member_id, now)
        return ConsumerGroupHeartbeatResponse(
            member_id=r.member_id, member_epoch=r.member_epoch
        )

    def _heartbeat(
        self, group: ConsumerGroup, r: ConsumerGroupHeartbeatRequest, now: float
    ) -> ConsumerGroupHeartbeatResponse:
        config = self.config
        member_id = r.member_id or uuid.uuid4().hex
        member = group.members.get(member_id)
        was = member  # what it owned, for the trace
        subscription = group.subscriptions.get(member_id)
        if r.member_epoch == 0:
            if r.instance_id is not None:
                owner = group.instance_owner(r.instance_id)
                if owner is not None and owner != member_id:
                    previous = group.members[owner]
                    if previous.member_epoch != STATIC_LEFT_EPOCH:
                        return ConsumerGroupHeartbeatResponse(
                            ErrorCode.unreleased_instance_id,
                            f"Static member {r.instance_id} is still in use.",
                        )
                    # the instance is back under a new member id: it takes over its
                    # old self's partitions, epoch and subscription (KIP-848)
                    member = attrs.evolve(previous, member_id=member_id)
                    subscription = group.subscriptions[owner]
                    group.target[member_id] = group.target.get(owner, frozenset())
                    self.trace_gone(group, owner, now)
                    group.remove(owner)
                    group.members[member_id] = member
                    group.subscriptions[member_id] = subscription
            if member is None or member.member_epoch != STATIC_LEFT_EPOCH:
                if (
                    member is None
                    and len(group.members) >= config.group_consumer_max_size
                ):
                    return ConsumerGroupHeartbeatResponse(
                        ErrorCode.group_max_size_reached,
                        f"The consumer group has reached its maximum capacity of "
                        f"{config.group_consumer_max_size} members.",
                    )
                timeout = r.rebalance_timeout_ms
                # (re)joining: it owns nothing (the request says so)
                member = new_member(
                    member_id, now, config.group_consumer_session_timeout_ms, timeout
                )
            else:
                member = attrs.evolve(member, member_epoch=member.previous_member_epoch)
        elif member is None:
            return ConsumerGroupHeartbeatResponse(
                ErrorCode.unknown_member_id,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        elif not epoch_is_valid(member, r.member_epoch, r.owned):
            return ConsumerGroupHeartbeatResponse(
                ErrorCode.fenced_member_epoch,
                f"The consumer group member has a smaller member epoch "
                f"({r.member_epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}). The member must abandon all its partitions "
                "and rejoin."
                if r.member_epoch < member.member_epoch
                else f"The consumer group member has a greater member epoch "
                f"({r.member_epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}). The member must abandon all its partitions "
                "and rejoin.",
            )
        if r.rebalance_timeout_ms != -1:
            member = attrs.evolve(member, rebalance_timeout_ms=r.rebalance_timeout_ms)
        before = subscription or MemberSubscription(())
        updated = MemberSubscription(
            before.subscribed_topic_names
            if r.subscribed_topic_names is None
            else r.subscribed_topic_names,
            r.instance_id if r.instance_id is not None else before.instance_id,
            r.rack_id if r.rack_id is not None else before.rack_id,
            r.server_assignor
            if r.server_assignor is not None
            else before.server_assignor,
            # "" drops the expression; None leaves it as it was
            before.subscribed_topic_regex
            if r.subscribed_topic_regex is None
            else r.subscribed_topic_regex or None,
        )
        subscriptions = {**group.subscriptions, member_id: updated}
        old = expand(group.subscriptions, group.regex.resolved)
        group.regex.refresh(subscriptions, r.topics, now, r.metadata_version)
        new = expand(subscriptions, group.regex.resolved)
        metadata = subscription_metadata(new, r.topics)
        if epoch_bumps(old, new, group.metadata, metadata):
            group.group_epoch += 1
        group.subscriptions = subscriptions
        group.metadata = metadata
        group.topic_ids.update(
            (name, r.topic_ids[name]) for name in metadata if name in r.topic_ids
        )
        group.members[member_id] = member
        group.info[member_id] = MemberInfo(r.client_id, r.client_host)
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
        result = heartbeat(
            member,
            received_epoch=member.member_epoch,
            owned=r.owned,
            target_epoch=group.assignment_epoch,
            target=group.target.get(member_id, frozenset()),
            owners={tp: m for tp, m in group.owners().items() if m != member_id},
            now=now,
            session_timeout_ms=config.group_consumer_session_timeout_ms,
        )
        if result.step is Step.FENCE:
            self.remove_member(group, member_id, now)
            return ConsumerGroupHeartbeatResponse(
                ErrorCode.fenced_member_epoch, "The member's state is unknown."
            )
        done = result.member
        group.members[member_id] = done
        trace_member(
            self.tracer, group.group_id, member_id, r.client_id, was, done, now
        )
        full = r.member_epoch == 0 or r.owned is not None
        changed = (done.assigned, done.member_epoch) != (
            member.assigned,
            member.member_epoch,
        )
        return ConsumerGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=done.member_epoch,
            heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
            assignment=done.assigned if full or changed else None,
        )

    def _assign(self, group: ConsumerGroup) -> None:
        """A new target at the group epoch (Kafka's ``TargetAssignmentBuilder``)."""
        name = select_assignor(
            group.subscriptions, self.config.group_consumer_assignors
        )
        result = build_target_assignment(
            group_epoch=group.group_epoch,
            assignor=SERVER_ASSIGNORS[name],
            subscriptions=expand(group.subscriptions, group.regex.resolved),
            current_target=group.target,
            topics=group.metadata,
        )
        group.target = dict(result.members)
        group.assignment_epoch = result.assignment_epoch
        group.assignor = name

    def remove_member(self, group: ConsumerGroup, member_id: str, now: float) -> None:
        """The member left or was fenced: the group epoch moves and the others get a
        new target (their partitions' other owner is gone)."""
        self.trace_gone(group, member_id, now)
        group.remove(member_id)
        group.group_epoch += 1
        # its expression goes with it if no other member uses it
        group.regex.forget_unused(group.subscriptions)
        subscriptions = expand(group.subscriptions, group.regex.resolved)
        group.metadata = subscription_metadata(subscriptions, group.metadata)
        self._assign(group)

    def trace_gone(self, group: ConsumerGroup, member_id: str, now: float) -> None:
        """The member's last ``group.member_assignment``: it owns nothing any more."""
        info = group.info.get(member_id)
        client_id = "" if info is None else info.client_id
        member = group.members.get(member_id)
        trace_member(
            self.tracer, group.group_id, member_id, client_id, member, None, now
        )

    # --- deadlines ------------------------------------------------------------------------

    def expire(self, group_id: str, member_id: str, now: float) -> bool:
        """Fence the member if its session or rebalance deadline has passed."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None or expire(member, now) is None:
            return False
        self.remove_member(group, member_id, now)
        return True


def member_deadline(group: ConsumerGroup, member_id: str) -> float | None:
    """When the member is fenced if nothing comes: its session, or its revocation."""
    member = group.members[member_id]
    due = [d for d in (member.session_deadline, member.rebalance_deadline) if d]
    return min(due) if due else None


def consumer_offset_commit_error(
    group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int
) -> ErrorCode:
    """Kafka's ``ConsumerGroup.validateOffsetCommit``: a commit with a negative
    generation is an admin's or a simple consumer's, allowed while the group is empty;
    otherwise the member must be known (UNKNOWN_MEMBER_ID), use OffsetCommit v9+ (older
    versions cannot speak for a consumer-protocol member: UNSUPPORTED_VERSION) and send
    its current member epoch as the generation id (STALE_MEMBER_EPOCH otherwise, older
    or newer alike)."""
    if member_epoch < 0 and not group.members:
        return ErrorCode.none
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if member_id in group.classic:
        # a classic member of a migrated group commits with its generation, at any
        # version (Kafka's ``validateMemberEpoch`` for a classic member)
        if member_epoch != member.member_epoch:
            return ErrorCode.illegal_generation
        return ErrorCode.none
    if api_version < 9:
        return ErrorCode.unsupported_version
    if member_epoch != member.member_epoch:
        return ErrorCode.stale_member_epoch
    return ErrorCode.none


def consumer_offset_fetch_error(
    group: ConsumerGroup, member_id: str | None, member_epoch: int
) -> ErrorCode:
    """Kafka's ``ConsumerGroup.validateOffsetFetch`` (OffsetFetch v9): a request with
    no member id and a negative epoch is an admin's (or an older client's) and is
    answered; a member must be known (UNKNOWN_MEMBER_ID) and send its current member
    epoch (STALE_MEMBER_EPOCH), so a member that was fenced does not start from
    offsets it may no longer own."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.none
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    if member_epoch != member.member_epoch:
        return ErrorCode.stale_member_epoch
    return ErrorCode.none
