"""The group membership requests and responses as the coordinator core sees them (seed 002 §2).

JoinGroup, SyncGroup, Heartbeat and LeaveGroup, with only the fields the coordinator
decides on. The broker's shell builds these from kio's decoded requests and turns the
responses back into kio's per-version response types; versions matter to the core in
two places only, both taken from the request: JoinGroup v4+ makes a new dynamic member
rejoin with the id it is handed (MEMBER_ID_REQUIRED, KIP-394), and LeaveGroup before v3
has one member and reports its error at the top level (v3 batches members, KIP-345).
"""

from __future__ import annotations

from typing import TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

__all__ = [
    "UNKNOWN_MEMBER_ID",
    "CommittedOffset",
    "DeletableGroupResult",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "LeaveGroupMemberResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "MemberIdentity",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchResponse",
    "Protocols",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
]

UNKNOWN_MEMBER_ID = ""
"""The member id of a member that has none yet (Kafka: ``JoinGroupRequest.UNKNOWN_MEMBER_ID``)."""

Protocols: TypeAlias = tuple[tuple[str, bytes], ...]
"""A member's supported protocols in its order of preference: (name, metadata)."""

LATEST_JOIN_GROUP_VERSION = 9
LATEST_LEAVE_GROUP_VERSION = 5


@attrs.frozen
class JoinGroupRequest:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout. So does a
    # non-positive value here.
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = LATEST_JOIN_GROUP_VERSION

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        if self.version == 0 or self.rebalance_timeout_ms <= 0:
            return self.session_timeout_ms
        return self.rebalance_timeout_ms


@attrs.frozen
class JoinGroupResponseMember:
    """One member as the leader sees it: its metadata for the group's chosen protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@attrs.frozen
class JoinGroupResponse:
    error_code: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()
    # KIP-814: a static leader replaced while the group is Stable learns the members but
    # must not compute a new assignment (a Stable group would not hand it out).
    skip_assignment: bool = False

    @classmethod
    def error(
        cls, error_code: ErrorCode, member_id: str = UNKNOWN_MEMBER_ID
    ) -> JoinGroupResponse:
        return cls(error_code, member_id)


@attrs.frozen
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    # Sent from v5 on; None when the client did not say.
    protocol_type: str | None = None
    protocol_name: str | None = None
    # Only the leader's request carries the assignment: (member id, assignment bytes).
    assignments: tuple[tuple[str, bytes], ...] = ()


@attrs.frozen
class SyncGroupResponse:
    error_code: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@attrs.frozen
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@attrs.frozen
class HeartbeatResponse:
    error_code: ErrorCode


@attrs.frozen
class MemberIdentity:
    """A member leaving: by member id, or by instance id alone (an administrative removal)."""

    member_id: str
    group_instance_id: str | None = None


@attrs.frozen
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]
    version: int = LATEST_LEAVE_GROUP_VERSION

    @classmethod
    def single(cls, group_id: str, member_id: str) -> LeaveGroupRequest:
        """A LeaveGroup v0-2: one member, by member id."""
        return cls(group_id, (MemberIdentity(member_id),), version=0)


@attrs.frozen
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@attrs.frozen
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupMemberResponse, ...] = ()


@attrs.frozen
class CommittedOffset:
    """One partition's position in an OffsetCommit: the next offset to consume, the
    leader epoch of the record before it (KIP-320, -1 unknown) and the client's note."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@attrs.frozen
class OffsetCommitRequest:
    group_id: str
    generation_id: int
    member_id: str
    offsets: tuple[tuple[TopicPartition, CommittedOffset], ...]
    group_instance_id: str | None = None
    # OffsetCommit v2-v4's retention_time_ms; -1 (or later versions): the broker's
    # offsets.retention.minutes, counted from when the group becomes Empty (KIP-211).
    retention_time_ms: int = -1
    # The request's version: from v9 a commit that carries a generation, to a group
    # that does not exist, is GROUP_ID_NOT_FOUND rather than ILLEGAL_GENERATION (KIP-848).
    api_version: int = 8


@attrs.frozen
class OffsetCommitResponse:
    errors: tuple[tuple[TopicPartition, ErrorCode], ...]


@attrs.frozen
class DeletableGroupResult:
    """DeleteGroups' answer for one group (Kafka's ``DeletableGroupResult``): NONE once
    its tombstones are committed."""

    group_id: str
    error_code: ErrorCode


@attrs.frozen
class OffsetDeleteResponse:
    """OffsetDelete's answer (KIP-496): a group-level error, or each partition's
    (NONE: its committed offset is gone, or there was none; GROUP_SUBSCRIBED_TO_TOPIC:
    a member of the group still consumes its topic)."""

    error_code: ErrorCode
    partitions: tuple[tuple[TopicPartition, ErrorCode], ...] = ()


@attrs.frozen
class OffsetFetchResponse:
    """The group-level error (v2+), and each partition's committed offset (None: none).

    ``errors`` names the partitions answered with an error of their own, the others
    having none: UNSTABLE_OFFSET_COMMIT (KIP-447) for a partition with a transactional
    offset still pending when the request required stable offsets; such a partition's
    offset is None (-1 on the wire)."""

    error_code: ErrorCode
    offsets: tuple[tuple[TopicPartition, CommittedOffset | None], ...] = ()
    errors: tuple[tuple[TopicPartition, ErrorCode], ...] = ()

    def partition_error(self, tp: TopicPartition) -> ErrorCode:
        """The partition's own error (NONE for most)."""
        return dict(self.errors).get(tp, ErrorCode.none)


@attrs.frozen
class TxnOffsetCommitRequest:
    """TxnOffsetCommit (KIP-98): offsets a transactional producer sends with its
    transaction; they count only if it commits. Since KIP-447 (v3) the request carries
    the consumer's group generation, member id and instance id, so a zombie producer
    whose consumer was fenced by a rebalance cannot commit; v0-2's requests leave them
    at their defaults (no check)."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    offsets: tuple[tuple[TopicPartition, CommittedOffset], ...] = ()


@attrs.frozen
class TxnOffsetCommitResponse:
    errors: tuple[tuple[TopicPartition, ErrorCode], ...]
