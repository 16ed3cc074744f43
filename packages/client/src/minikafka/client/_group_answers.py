"""The classic group protocol's answers handed to the member's core: what the
ConsumerShell does with a JoinGroup, SyncGroup, Heartbeat, OffsetFetch or OffsetCommit
response (Kafka's ``ConsumerCoordinator`` response handlers, here calls into
:class:`~minikafka.coordination.member.ConsumerCoordinator` with plain values).

FindCoordinator's and ConsumerGroupHeartbeat's answers stay in the shell: they change
what the shell itself knows (the coordinator's connection, topic ids, a fatal error).
"""

from __future__ import annotations

from kio.schema.heartbeat.v3.response import HeartbeatResponse
from kio.schema.join_group.v5.response import JoinGroupResponse
from kio.schema.offset_commit.v7.response import OffsetCommitResponse
from kio.schema.offset_commit.v9.response import (
    OffsetCommitResponse as MemberEpochCommitResponse,
)
from kio.schema.offset_fetch.v5.response import OffsetFetchResponse
from kio.schema.offset_fetch.v7.response import (
    OffsetFetchResponse as StableOffsetFetchResponse,
)
from kio.schema.sync_group.v3.response import SyncGroupResponse

from minikafka.common import TopicPartition
from minikafka.coordination.member import (
    ConsumerCoordinator,
    ConsumerProtocolMember,
    GroupRequest,
    JoinMember,
    OffsetCommit,
)


def deliver_answer(
    coordinator: ConsumerCoordinator | ConsumerProtocolMember,
    request: GroupRequest,
    response: object,
    now: float,
) -> GroupRequest | None:
    """Hand ``response`` (to ``request``) to the member; the request that must follow
    on the same connection at once (the SyncGroup after a JoinGroup), if any."""
    if isinstance(response, JoinGroupResponse):
        assert isinstance(coordinator, ConsumerCoordinator)
        members = [
            JoinMember(m.member_id, m.group_instance_id, bytes(m.metadata))
            for m in response.members
        ]
        result = coordinator.on_join(
            int(response.error_code),
            int(response.generation_id),
            response.protocol_name,
            response.leader,
            response.member_id,
            members,
            now,
        )
        return result.messages[0] if result.messages else None
    if isinstance(response, SyncGroupResponse):
        assert isinstance(coordinator, ConsumerCoordinator)
        coordinator.on_sync(int(response.error_code), bytes(response.assignment), now)
    elif isinstance(response, HeartbeatResponse):
        assert isinstance(coordinator, ConsumerCoordinator)
        coordinator.on_heartbeat(int(response.error_code), now)
    elif isinstance(response, OffsetFetchResponse | StableOffsetFetchResponse):
        offsets = {
            TopicPartition(str(t.name), int(p.partition_index)): (
                int(p.error_code) or int(response.error_code),
                int(p.committed_offset),
            )
            for t in response.topics
            for p in t.partitions
        }
        coordinator.on_offset_fetch(offsets, now)
    elif isinstance(response, OffsetCommitResponse | MemberEpochCommitResponse):
        assert isinstance(request, OffsetCommit)
        errors = [int(p.error_code) for t in response.topics for p in t.partitions]
        coordinator.on_commit(request.commit_id, errors, now)
    return None
