"""What the member asks its shell to send, and what it tells the application.

The requests of the group protocol as the member's core makes them (the shell encodes
each into its Kafka request), the one result type its calls return
(:data:`MemberResult`, whose messages they are), and the rebalance callbacks it asks the
application to run (:class:`RebalanceEvent`).
"""

from __future__ import annotations

from typing import Never, TypeAlias

import attrs

from minikafka.common import CoreResult, TopicPartition


@attrs.frozen
class FindCoordinator:
    group_id: str


@attrs.frozen
class JoinGroup:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@attrs.frozen
class SyncGroup:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    assignments: tuple[tuple[str, bytes], ...]


@attrs.frozen
class Heartbeat:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


@attrs.frozen
class LeaveGroup:
    group_id: str
    member_id: str
    group_instance_id: str | None


@attrs.frozen
class OffsetFetch:
    group_id: str
    partitions: tuple[TopicPartition, ...]


@attrs.frozen
class OffsetCommit:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    offsets: tuple[tuple[TopicPartition, int, int], ...]  # (tp, offset, leader epoch)
    commit_id: int
    # KIP-848: generation_id is the member's epoch (OffsetCommit v9 and later)
    member_epoch: bool = False


@attrs.frozen
class ConsumerGroupHeartbeat:
    """KIP-848's one request: ``None`` in a field means unchanged since the last one
    (the member sends every field when it joins and after an error)."""

    group_id: str
    member_id: str
    member_epoch: int  # 0 joins, -1 leaves, -2 leaves a static member's place
    instance_id: str | None = None
    rebalance_timeout_ms: int | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    owned: tuple[TopicPartition, ...] | None = None  # the partitions it owns now
    # v1: the subscription's expression; "" drops the one sent before
    subscribed_topic_regex: str | None = None


GroupRequest = (
    FindCoordinator
    | ConsumerGroupHeartbeat
    | JoinGroup
    | SyncGroup
    | Heartbeat
    | LeaveGroup
    | OffsetFetch
    | OffsetCommit
)


MemberResult: TypeAlias = CoreResult[Never, Never, GroupRequest]
"""What a call into the member hands back: requests for its coordinator (or, for
FindCoordinator, any broker) to send now."""


@attrs.frozen
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@attrs.frozen
class RebalanceEvent:
    """A callback to run on the application's thread: ``revoke``, ``assign`` or ``lost``."""

    kind: str
    partitions: tuple[TopicPartition, ...]
