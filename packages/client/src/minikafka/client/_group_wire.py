"""The consumer's group requests on the wire: the ConsumerCoordinator (a core) asks for
FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetFetch and
OffsetCommit as plain values; :func:`group_request_body` writes each as the kio request
body the ConsumerShell sends (KIP-345's group.instance.id included).

A read_committed consumer fetches its committed offsets with OffsetFetch v7 and
``require_stable`` (KIP-447): while a transaction that commits offsets for the group is
open, the coordinator answers UNSTABLE_OFFSET_COMMIT and the consumer asks again,
rather than start from an offset that transaction is about to replace.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping

from kio.schema.consumer_group_heartbeat.v1.request import (
    ConsumerGroupHeartbeatRequest,
)
from kio.schema.consumer_group_heartbeat.v1.request import (
    TopicPartitions as HeartbeatTopicPartitions,
)
from kio.schema.consumer_group_heartbeat.v1.response import (
    ConsumerGroupHeartbeatResponse,
)
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.heartbeat.v3.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v3.request import LeaveGroupRequest, MemberIdentity
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.offset_commit.v7.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_commit.v9 import request as offset_commit_v9
from kio.schema.offset_fetch.v5.request import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
)
from kio.schema.offset_fetch.v7.request import (
    OffsetFetchRequest as StableOffsetFetchRequest,
)
from kio.schema.offset_fetch.v7.request import (
    OffsetFetchRequestTopic as StableOffsetFetchRequestTopic,
)
from kio.schema.sync_group.v3.request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64
from kio.static.protocol import RequestPayload

from minikafka.common import TopicPartition
from minikafka.coordination.member import (
    ConsumerGroupHeartbeat,
    FindCoordinator,
    GroupRequest,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
)


def _by_topic(partitions: list[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def heartbeat_body(
    request: ConsumerGroupHeartbeat, topic_ids: Mapping[str, uuid.UUID]
) -> ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeat v1 (KIP-848); owned partitions name their topics by id."""
    owned = None
    if request.owned is not None:
        owned = tuple(
            HeartbeatTopicPartitions(
                topic_id=topic_ids[t], partitions=tuple(map(i32, ps))
            )
            for t, ps in _by_topic(list(request.owned)).items()
        )
    timeout = request.rebalance_timeout_ms
    return ConsumerGroupHeartbeatRequest(
        group_id=GroupId(request.group_id),
        member_id=request.member_id,
        member_epoch=i32(request.member_epoch),
        instance_id=request.instance_id,
        rack_id=None,
        rebalance_timeout=i32Timedelta.parse(
            datetime.timedelta(milliseconds=-1 if timeout is None else timeout)
        ),
        subscribed_topic_names=(
            None
            if request.subscribed_topic_names is None
            else tuple(map(TopicName, request.subscribed_topic_names))
        ),
        subscribed_topic_regex=request.subscribed_topic_regex,
        server_assignor=request.server_assignor,
        topic_partitions=owned,
    )


def heartbeat_assignment(
    response: ConsumerGroupHeartbeatResponse, names: Mapping[uuid.UUID, str]
) -> tuple[TopicPartition, ...] | None:
    """The answer's assignment by topic name (None: unchanged). A topic whose id the
    metadata does not name yet is left out until it does, as Kafka's client waits."""
    if response.assignment is None:
        return None
    return tuple(
        TopicPartition(names[t.topic_id], int(p))
        for t in response.assignment.topic_partitions
        if t.topic_id is not None and t.topic_id in names
        for p in t.partitions
    )


def names_unknown_topic(
    response: ConsumerGroupHeartbeatResponse, names: Mapping[uuid.UUID, str]
) -> bool:
    """Whether the answer's assignment names a topic id the metadata does not know."""
    return response.assignment is not None and any(
        t.topic_id not in names for t in response.assignment.topic_partitions
    )


def topic_ids_request(topics: Iterable[str] | None) -> MetadataRequest:
    """Metadata v12 for ``topics`` (None: every topic, for a member subscribed by
    pattern, whose assignment may name any): the consumer protocol names topics by
    id."""
    return MetadataRequest(
        topics=None
        if topics is None
        else tuple(
            MetadataRequestTopic(topic_id=None, name=TopicName(t))
            for t in sorted(topics)
        ),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def topic_ids_from(response: MetadataResponse) -> dict[uuid.UUID, str]:
    return {
        t.topic_id: str(t.name)
        for t in response.topics
        if t.topic_id is not None and t.name is not None and t.topic_id.int != 0
    }


JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000  # Kafka's AbstractCoordinator: small delays


def request_timeout_of(request: GroupRequest, request_timeout_ms: int) -> float | None:
    """Seconds ``request`` may wait for its answer, None: ``request.timeout.ms`` as
    every group request but one. A JoinGroup is answered only when the whole group has
    rejoined, up to its rebalance timeout: it waits that long and a little more, as in
    Kafka's ``AbstractCoordinator.sendJoinGroupRequest``. A heartbeat, commit or any
    other request to a coordinator that stopped answering fails after
    ``request.timeout.ms`` and the coordinator is looked up again."""
    if not isinstance(request, JoinGroup):
        return None
    lapse = request.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS
    return max(request_timeout_ms, lapse) / 1000


def group_request_body(
    request: GroupRequest, require_stable: bool = False
) -> RequestPayload:
    """The request body a consumer's group coordinator asks for, in the versions this
    client speaks (FindCoordinator v2, JoinGroup v5, SyncGroup v3, Heartbeat v3,
    LeaveGroup v3, OffsetFetch v5, or v7 with ``require_stable``, OffsetCommit v7)."""
    group = GroupId(getattr(request, "group_id", ""))
    if isinstance(request, ConsumerGroupHeartbeat):  # one that owns nothing: a leave
        return heartbeat_body(request, {})
    if isinstance(request, FindCoordinator):
        return FindCoordinatorRequest(key=request.group_id, key_type=i8(0))
    if isinstance(request, JoinGroup):
        return JoinGroupRequest(
            group_id=group,
            session_timeout=i32Timedelta.parse(
                datetime.timedelta(milliseconds=request.session_timeout_ms)
            ),
            rebalance_timeout=i32Timedelta.parse(
                datetime.timedelta(milliseconds=request.rebalance_timeout_ms)
            ),
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            protocol_type="consumer",
            protocols=tuple(
                JoinGroupRequestProtocol(name=name, metadata=metadata)
                for name, metadata in request.protocols
            ),
        )
    if isinstance(request, SyncGroup):
        return SyncGroupRequest(
            group_id=group,
            generation_id=i32(request.generation_id),
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            assignments=tuple(
                SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in request.assignments
            ),
        )
    if isinstance(request, Heartbeat):
        return HeartbeatRequest(
            group_id=group,
            generation_id=i32(request.generation_id),
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
        )
    if isinstance(request, LeaveGroup):
        return LeaveGroupRequest(
            group_id=group,
            members=(
                MemberIdentity(
                    member_id=request.member_id,
                    group_instance_id=request.group_instance_id,
                ),
            ),
        )
    if isinstance(request, OffsetFetch) and require_stable:
        return StableOffsetFetchRequest(
            group_id=group,
            topics=tuple(
                StableOffsetFetchRequestTopic(
                    name=TopicName(t), partition_indexes=tuple(map(i32, ps))
                )
                for t, ps in _by_topic(list(request.partitions)).items()
            ),
            require_stable=True,
        )
    if isinstance(request, OffsetFetch):
        return OffsetFetchRequest(
            group_id=group,
            topics=tuple(
                OffsetFetchRequestTopic(
                    name=TopicName(t), partition_indexes=tuple(map(i32, ps))
                )
                for t, ps in _by_topic(list(request.partitions)).items()
            ),
        )
    if request.member_epoch:
        return _member_epoch_commit(request)
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for tp, offset, epoch in request.offsets:
        topics.setdefault(tp.topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=i32(tp.partition),
                committed_offset=i64(offset),
                committed_leader_epoch=i32(epoch),
                committed_metadata="",
            )
        )
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=i32(request.generation_id),
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        topics=tuple(
            OffsetCommitRequestTopic(name=TopicName(t), partitions=tuple(ps))
            for t, ps in topics.items()
        ),
    )


def _member_epoch_commit(request: OffsetCommit) -> offset_commit_v9.OffsetCommitRequest:
    """OffsetCommit v9: a consumer-protocol group takes commits from v9 on (KIP-848)."""
    v9 = offset_commit_v9
    topics: dict[str, list[v9.OffsetCommitRequestPartition]] = {}
    for tp, offset, epoch in request.offsets:
        topics.setdefault(tp.topic, []).append(
            v9.OffsetCommitRequestPartition(
                partition_index=i32(tp.partition),
                committed_offset=i64(offset),
                committed_leader_epoch=i32(epoch),
                committed_metadata="",
            )
        )
    return v9.OffsetCommitRequest(
        group_id=GroupId(request.group_id),
        generation_id_or_member_epoch=i32(request.generation_id),
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        topics=tuple(
            v9.OffsetCommitRequestTopic(name=TopicName(t), partitions=tuple(ps))
            for t, ps in topics.items()
        ),
    )
