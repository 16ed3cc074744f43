"""Where the two protocols meet in one coordinator (KIP-848's online migration): which
group a request goes to, when a group changes kind, and how a failed write of a
consumer group is reverted.

The coordinator asks this module before it hands a request to the classic side
(``MembershipManager``) or the consumer side (``ConsumerGroupManager``):

- a ConsumerGroupHeartbeat joining a live classic group upgrades it
  (:meth:`MixedGroups.maybe_upgrade`) when ``group.consumer.migration.policy`` allows
  and its members' embedded protocol can be read; otherwise the group is not a consumer
  group (GROUP_ID_NOT_FOUND, Kafka's answer);
- JoinGroup, SyncGroup, Heartbeat and LeaveGroup to a consumer group with members are
  its classic members' (``_classic_members.py``);
- the last consumer-protocol member leaving or fenced downgrades the group
  (:meth:`MixedGroups.maybe_downgrade`) when the policy allows, which starts a classic
  rebalance among the members left.

Each returns the actions (replies and writes) for the coordinator to carry out.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from ._classic_members import ClassicMembers
from ._config import GroupConfig
from ._consumer_group import ConsumerGroup
from ._consumer_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupManager,
    request_error,
)
from ._consumer_records import changed_records, group_records
from ._consumer_timeline import ConsumerGroupTimeline
from ._current_assignment import expire
from ._group import GroupMetadata
from ._group_metadata_manager import GroupMetadataManager, StoredRecord
from ._group_requests import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
)
from ._group_state import GroupState
from ._migration import (
    MigrationError,
    MigrationPolicy,
    downgrade_allowed,
    to_classic_group,
    to_consumer_group,
    upgrade_refusal,
)
from ._offsets_records import GroupMetadataKey, encode_group_record
from ._rebalance import Rebalancer, answer_parked
from ._results import (
    ConsumerGroupStored,
    GroupAction,
    GroupReply,
    Unanswered,
    WriteOutcome,
    append,
    store_group_error,
)

__all__ = ["MixedGroups", "failed_response"]

LEAVE_EPOCH = -1


@attrs.define(eq=False)
class MixedGroups:
    config: GroupConfig
    manager: GroupMetadataManager
    consumer: ConsumerGroupManager
    rebalancer: Rebalancer
    classic_members: ClassicMembers = attrs.field(init=False)
    timeline: ConsumerGroupTimeline = attrs.field(
        init=False, factory=ConsumerGroupTimeline
    )

    def __attrs_post_init__(self) -> None:
        self.classic_members = ClassicMembers(self.consumer)

    @property
    def policy(self) -> MigrationPolicy:
        return MigrationPolicy.parse(self.config.group_consumer_migration_policy)

    def _records(self, group_id: str) -> dict[bytes, bytes]:
        group = self.manager.consumer_groups.get(group_id)
        return {} if group is None else group_records(group, group.topic_ids)

    def live_consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group a classic request goes to: one with members."""
        group = self.manager.consumer_groups.get(group_id)
        return group if group is not None and group.members else None

    def consumer_heartbeat(
        self, request_id: int, r: ConsumerGroupHeartbeatRequest, now: float
    ) -> list[GroupAction]:
        """A ConsumerGroupHeartbeat to a group this coordinator serves: maybe an
        upgrade first, maybe a downgrade as its member leaves, else the heartbeat
        itself; its records in one write, answered once it is committed."""
        group_id = r.group_id
        classic = group_id in self.manager.groups
        before = self._records(group_id)
        upgrade = self.maybe_upgrade(request_id, r, now)
        if upgrade is not None and upgrade[1] is None:
            return upgrade[0]  # refused
        downgrade = self.leave_downgrade(request_id, r, now)
        if downgrade is not None:
            return downgrade
        response = self.consumer.heartbeat(r, now)
        parked, replaced = upgrade if upgrade is not None else ([], None)
        if replaced is not None and response.error is not ErrorCode.none:
            self.undo_upgrade(group_id, replaced)
            return [GroupReply(request_id, response)]
        records: list[StoredRecord] = list(
            changed_records(before, self._records(group_id))
        )
        if classic and group_id not in self.manager.groups:
            # the classic group became this consumer group: its record goes
            records.insert(0, encode_group_record(GroupMetadataKey(group_id), None))
        if not records:
            return [GroupReply(request_id, response)]
        outcome = ConsumerGroupStored(group_id, request_id, response, replaced)
        return [*parked, append(records, outcome)]

    # --- upgrade ------------------------------------------------------------------------

    def maybe_upgrade(
        self, request_id: int, r: ConsumerGroupHeartbeatRequest, now: float
    ) -> tuple[list[GroupAction], GroupMetadata | None] | None:
        """A consumer-protocol member joining the live classic group ``r.group_id``:
        the group becomes a consumer group (Kafka's ``convertToConsumerGroup``), and
        its classic members' parked requests are told REBALANCE_IN_PROGRESS, so they
        rejoin the consumer group. Returns those replies and the classic group replaced,
        or a refusal to send; None when there is nothing to upgrade."""
        self.classic_members.saw_topics(r.topics, r.topic_ids)
        classic = self.manager.groups.get(r.group_id)
        if classic is None or classic.state is GroupState.EMPTY or r.member_epoch != 0:
            return None
        if request_error(r, self.config.group_consumer_assignors) is not None:
            return None  # the heartbeat refuses it
        refusal = upgrade_refusal(
            self.policy, classic, self.config.group_consumer_max_size
        )
        message = f"Group {r.group_id} is not a consumer group."
        if refusal is None:
            try:
                group = to_consumer_group(classic, r.topics, r.topic_ids, now)
            except MigrationError as e:
                refusal, message = str(e), str(e)
        if refusal is not None:
            refused = ConsumerGroupHeartbeatResponse(
                ErrorCode.group_id_not_found, message
            )
            return [GroupReply(request_id, refused)], None
        out: list[GroupAction] = []
        for member in classic.members.values():
            out += answer_parked(
                member, ErrorCode.rebalance_in_progress, member.member_id
            )
        classic.join_deadline = classic.sync_deadline = None
        del self.manager.groups[r.group_id]
        self.manager.consumer_groups[r.group_id] = group
        return out, classic

    def undo_upgrade(self, group_id: str, classic: GroupMetadata) -> None:
        """The heartbeat that upgraded the group was refused: it stays classic."""
        self.manager.consumer_groups.pop(group_id, None)
        self.manager.groups[group_id] = classic

    # --- classic members of a consumer group ----------------------------------------------

    def join(
        self, request_id: int, group: ConsumerGroup, r: JoinGroupRequest, now: float
    ) -> list[GroupAction]:
        before = self._records(group.group_id)
        response = self.classic_members.join(group, r, now)
        records = changed_records(before, self._records(group.group_id))
        if not records or response.error_code is not ErrorCode.none:
            return [GroupReply(request_id, response)]
        return [
            append(records, ConsumerGroupStored(group.group_id, request_id, response))
        ]

    def sync(
        self, request_id: int, group: ConsumerGroup, r: SyncGroupRequest, now: float
    ) -> list[GroupAction]:
        return [GroupReply(request_id, self.classic_members.sync(group, r, now))]

    def heartbeat(
        self, request_id: int, group: ConsumerGroup, r: HeartbeatRequest, now: float
    ) -> list[GroupAction]:
        error = self.classic_members.heartbeat(group, r, now)
        return [GroupReply(request_id, HeartbeatResponse(error))]

    def leave(
        self, request_id: int, group: ConsumerGroup, r: LeaveGroupRequest, now: float
    ) -> list[GroupAction]:
        before = self._records(group.group_id)
        response = self.classic_members.leave(group, r, now)
        records = changed_records(before, self._records(group.group_id))
        if not records:
            return [GroupReply(request_id, response)]
        return [
            append(records, ConsumerGroupStored(group.group_id, request_id, response))
        ]

    # --- downgrade ----------------------------------------------------------------------

    def maybe_downgrade(
        self,
        group_id: str,
        member_id: str,
        now: float,
        outcome: Callable[[], ConsumerGroupStored | Unanswered],
    ) -> list[GroupAction] | None:
        """``member_id`` leaves or is fenced: if it was the last consumer-protocol
        member and the policy allows, the group becomes a classic group (Kafka's
        ``convertToClassicGroup``): the consumer group's tombstones and the classic
        group's record in one write answered with ``outcome()``, and a rebalance of
        the members left. None when the group stays a consumer group."""
        group = self.manager.consumer_groups.get(group_id)
        if group is None or member_id not in group.members:
            return None
        allowed = downgrade_allowed(
            self.policy, group, member_id, self.config.group_max_size
        )
        if not allowed:
            return None
        before = self._records(group_id)
        # it leaves with nothing, as any departed member's trace ends
        self.consumer.trace_gone(group, member_id, now)
        classic, assignments = to_classic_group(group, member_id, now)
        del self.manager.consumer_groups[group_id]
        self.manager.groups[group_id] = classic
        records: list[StoredRecord] = list(changed_records(before, {}))
        records.append(self.manager.group_record(classic, assignments, now))
        out: list[GroupAction] = [append(records, outcome())]
        return out + self.rebalancer.prepare_rebalance(
            classic, now, "downgrade", member_id
        )

    def leave_downgrade(
        self, request_id: int, r: ConsumerGroupHeartbeatRequest, now: float
    ) -> list[GroupAction] | None:
        """A ConsumerGroupHeartbeat leaving with epoch -1 (Kafka's ``consumerGroupLeave``)."""
        if r.member_epoch != LEAVE_EPOCH:
            return None
        left = ConsumerGroupHeartbeatResponse(
            member_id=r.member_id, member_epoch=LEAVE_EPOCH
        )
        return self.maybe_downgrade(
            r.group_id,
            r.member_id,
            now,
            lambda: ConsumerGroupStored(r.group_id, request_id, left),
        )

    def expiry_downgrade(
        self, group_id: str, member_id: str, now: float
    ) -> list[GroupAction] | None:
        """A member's session or rebalance deadline passed (Kafka's
        ``consumerGroupFenceMember``)."""
        group = self.manager.consumer_groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None or expire(member, now) is None:
            return None
        return self.maybe_downgrade(
            group_id, member_id, now, lambda: Unanswered(group_id)
        )

    # --- a failed write ---------------------------------------------------------------------

    def revert(self, write_id: int, outcome: WriteOutcome, now: float) -> None:
        """The write ``write_id`` failed: each consumer group it wrote goes back to what
        the log will hold (``ConsumerGroupTimeline``); a classic group it replaced comes
        back, and one it created (a downgrade) goes."""
        session_ms = self.config.group_consumer_session_timeout_ms
        for group_id, rebuilt in self.timeline.failed(
            write_id, now, session_ms
        ).items():
            current = self.manager.consumer_groups.get(group_id)
            if rebuilt is None:
                self.manager.consumer_groups.pop(group_id, None)
                if isinstance(outcome, ConsumerGroupStored) and outcome.replaced:
                    self.manager.groups[group_id] = outcome.replaced
                continue
            if current is not None:
                for member_id, member in rebuilt.members.items():
                    kept = current.members.get(member_id)
                    if kept is not None:  # its deadlines are the live ones
                        rebuilt.members[member_id] = attrs.evolve(
                            member,
                            session_deadline=kept.session_deadline,
                            rebalance_deadline=kept.rebalance_deadline,
                        )
            self.manager.groups.pop(group_id, None)
            self.manager.consumer_groups[group_id] = rebuilt
        # the offsets' revert restores a group its offsets name as an Empty classic
        # group; a consumer group is not one
        for group_id in self.manager.consumer_groups:
            self.manager.groups.pop(group_id, None)


def failed_response(outcome: ConsumerGroupStored, error: ErrorCode) -> GroupReply:
    """What the request of a failed write is told (``store_group_error``), in its own
    response type."""
    code = store_group_error(error)
    response = outcome.response
    answer: ConsumerGroupHeartbeatResponse | JoinGroupResponse | LeaveGroupResponse
    if isinstance(response, JoinGroupResponse):
        answer = JoinGroupResponse.error(code, response.member_id)
    elif isinstance(response, LeaveGroupResponse):
        answer = LeaveGroupResponse(code)
    else:
        answer = ConsumerGroupHeartbeatResponse(code)
    return GroupReply(outcome.request_id, answer)
