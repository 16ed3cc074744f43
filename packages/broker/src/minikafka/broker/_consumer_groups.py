"""KIP-848's consumer group APIs on the wire: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

The coordinator (``minikafka.coordination``'s ``_consumer_heartbeat.py``) keys topics by
name; the wire carries topic ids. These handlers translate with the metadata cache: an
owned partition of a topic id this broker does not know is dropped from what the member
reports (Kafka's coordinator does the same: it cannot be assigned), and an assignment is
sent back by id. The subscription resolves against the cache too: the coordinator is
handed the partition count of every topic the cluster has now, so a topic created or
grown after the member subscribed moves the group epoch on the next heartbeat.

- ConsumerGroupHeartbeat v0-v1: v1 adds SubscribedTopicRegex and has the client make its
  member id (KIP-848's final form); v0 lets the coordinator make one.
- ConsumerGroupDescribe v0-v1: v1 adds each member's MemberType (1: consumer protocol).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable
from typing import Any, Protocol

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8
from kio.static.protocol import Entity

from minikafka.common import TopicPartition
from minikafka.coordination import (
    ConsumerGroupHeartbeatRequest,
    GroupCoordinatorShell,
    GroupState,
)
from minikafka.net import Request, build, nested
from minikafka.security import AclOperation, ResourceType

from ._authorization import BrokerAuthorizer
from ._group_body import CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT
from ._groups import GROUP_OPERATIONS, client_host
from ._metadata_cache import INTERNAL_TOPICS, MetadataCache


class OwnedPartitions(Protocol):
    """A heartbeat's TopicPartitions entry, in either version."""

    @property
    def topic_id(self) -> uuid.UUID | None: ...

    @property
    def partitions(self) -> tuple[int, ...]: ...


__all__ = ["handle_consumer_group_describe", "handle_consumer_group_heartbeat"]

NO_THROTTLE = datetime.timedelta(0)
_MS = datetime.timedelta(milliseconds=1)
CONSUMER_MEMBER_TYPE = i8(1)
"""ConsumerGroupDescribe v1's MemberType of a consumer-protocol member."""
CLASSIC_MEMBER_TYPE = i8(0)
"""... and of a classic member of a group upgraded online (KIP-848's migration)."""


def _topics(cache: MetadataCache) -> tuple[dict[str, int], dict[str, uuid.UUID]]:
    """Every user topic's partition count and id, as this broker knows them now."""
    counts, ids = {}, {}
    for name in cache.topic_names():
        topic = cache.topic(name)
        if topic is not None and name not in INTERNAL_TOPICS:
            counts[name] = len(topic.partitions)
            ids[name] = topic.topic_id
    return counts, ids


def _owned(
    cache: MetadataCache, entries: Iterable[OwnedPartitions] | None
) -> frozenset[TopicPartition] | None:
    if entries is None:
        return None
    owned: set[TopicPartition] = set()
    for entry in entries:
        topic = None if entry.topic_id is None else cache.topic_by_id(entry.topic_id)
        if topic is None:
            continue
        owned.update(TopicPartition(topic.name, int(p)) for p in entry.partitions)
    return frozenset(owned)


def _by_topic(
    cache: MetadataCache,
    cls: type[Entity],
    partitions: Iterable[TopicPartition],
    with_name: bool,
) -> tuple[Entity, ...]:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    out = []
    for name, numbers in grouped.items():
        topic = cache.topic(name)
        if topic is None:
            continue  # deleted meanwhile: the next target drops it
        values: dict[str, object] = {
            "topic_id": topic.topic_id,
            "partitions": tuple(numbers),
        }
        if with_name:
            values["topic_name"] = name
        out.append(build(cls, **values))
    return tuple(out)


async def handle_consumer_group_heartbeat(
    request: Request, service: GroupCoordinatorShell, cache: MetadataCache
) -> None:
    body = request.body_as(CONSUMER_GROUP_HEARTBEAT)
    counts, ids = _topics(cache)
    core = ConsumerGroupHeartbeatRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=int(body.member_epoch),
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=int(body.rebalance_timeout / _MS),
        subscribed_topic_names=None
        if body.subscribed_topic_names is None
        else tuple(str(t) for t in body.subscribed_topic_names),
        subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
        server_assignor=body.server_assignor,
        owned=_owned(cache, body.topic_partitions),
        topics=counts,
        topic_ids=ids,
        metadata_version=cache.image.offset,
        client_id=request.header.client_id or "",
        client_host=client_host(request.connection_id),
        version=request.api_version,
    )
    response = await service.consumer_group_heartbeat(core)
    cls = request.response_class()
    assignment = None
    if response.assignment is not None and response.error is ErrorCode.none:
        assignment_cls = nested(cls, "assignment")
        tp_cls = nested(assignment_cls, "topic_partitions")
        assignment = build(
            assignment_cls,
            topic_partitions=_by_topic(cache, tp_cls, response.assignment, False),
        )
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=response.error,
            error_message=response.error_message,
            member_id=response.member_id,
            member_epoch=response.member_epoch,
            heartbeat_interval=response.heartbeat_interval_ms * _MS,
            assignment=assignment,
        )
    )


def _not_found(service: GroupCoordinatorShell, group_id: str) -> str:
    """Kafka's message: a classic group is not a consumer group; another id is unknown."""
    _, classic = service.describe_group(group_id)
    if classic.state is not GroupState.DEAD:
        return f"Group {group_id} is not a consumer group."
    return f"Group {group_id} not found."


async def handle_consumer_group_describe(
    request: Request,
    service: GroupCoordinatorShell,
    cache: MetadataCache,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """ConsumerGroupDescribe: each group's epochs, assignor and members with what they
    hold and their target; GROUP_ID_NOT_FOUND for a group that is not a consumer group
    (Kafka's answer for a classic one too). With an authorizer (Kafka's
    ``handleConsumerGroupDescribe``) a group needs DESCRIBE, and DESCRIBE on every topic
    its members are assigned, or it is answered GROUP_/TOPIC_AUTHORIZATION_FAILED."""
    body = request.body_as(CONSUMER_GROUP_DESCRIBE)
    cls = request.response_class()
    group_cls = nested(cls, "groups")
    member_cls = nested(group_cls, "members")
    assignment_cls = nested(member_cls, "assignment")
    tp_cls = nested(assignment_cls, "topic_partitions")
    groups = []
    for group_id in body.group_ids:
        error, group = service.consumer_group(group_id)
        if authorizer is not None and not authorizer.group_allowed(
            request, AclOperation.DESCRIBE, group_id
        ):
            error, group = ErrorCode.group_authorization_failed, None
        if group is None:
            if error is ErrorCode.none:
                error = ErrorCode.group_id_not_found
            groups.append(
                build(
                    group_cls,
                    error_code=error,
                    error_message=_not_found(service, group_id)
                    if error is ErrorCode.group_id_not_found
                    else None,
                    group_id=group_id,
                    # Kafka leaves a group it does not answer at the schema's defaults
                    group_state="",
                    group_epoch=0,
                    assignment_epoch=0,
                    assignor_name="",
                    members=(),
                )
            )
            continue
        members = []
        for member_id, member in group.members.items():
            subscription = group.subscriptions[member_id]
            info = group.info.get(member_id)
            members.append(
                build(
                    member_cls,
                    member_id=member_id,
                    instance_id=subscription.instance_id,
                    rack_id=subscription.rack_id,
                    member_epoch=member.member_epoch,
                    client_id=info.client_id if info else "",
                    client_host=info.client_host if info else "",
                    subscribed_topic_names=tuple(
                        sorted(subscription.subscribed_topic_names)
                    ),
                    subscribed_topic_regex=subscription.subscribed_topic_regex,
                    assignment=build(
                        assignment_cls,
                        topic_partitions=_by_topic(
                            cache, tp_cls, member.assigned, True
                        ),
                    ),
                    target_assignment=build(
                        assignment_cls,
                        topic_partitions=_by_topic(
                            cache, tp_cls, group.target.get(member_id, ()), True
                        ),
                    ),
                    member_type=CLASSIC_MEMBER_TYPE
                    if member_id in group.classic
                    else CONSUMER_MEMBER_TYPE,
                )
            )
        fields: dict[str, object] = {}
        if authorizer is not None:
            fields = _authorized(request, authorizer, group_id, members)
        groups.append(
            build(
                group_cls,
                error_code=ErrorCode.none,
                group_id=group_id,
                group_state=group.state.value,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.assignor,
                members=tuple(members),
                **fields,
            )
        )
    request.respond(build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups)))


def _authorized(
    request: Request,
    authorizer: BrokerAuthorizer,
    group_id: str,
    members: list[Any],
) -> dict[str, object]:
    """A described group's fields the authorizer decides: TOPIC_AUTHORIZATION_FAILED
    and no members if a member holds or is to hold a topic the principal may not
    DESCRIBE; the group's authorized operations when asked (KIP-430)."""
    names = {
        tp.topic_name
        for m in members
        for assignment in (m.assignment, m.target_assignment)
        for tp in assignment.topic_partitions
    }
    fields: dict[str, object] = {}
    if authorizer.denied_topics(request, AclOperation.DESCRIBE, names):
        fields["error_code"] = ErrorCode.topic_authorization_failed
        fields["error_message"] = (
            "The group has described topic(s) that the client is not authorized to describe."
        )
        fields["members"] = ()
    if getattr(request.body, "include_authorized_operations", False):
        fields["authorized_operations"] = authorizer.operations(
            request, ResourceType.GROUP, group_id, GROUP_OPERATIONS
        )
    return fields
