"""The broker's authorizer: KRaft's StandardAuthorizer (KIP-801) over the ACLs of the
metadata image, asked at Kafka's points (``KafkaApis``' ``authHelper`` calls).

The decisions are the security package's sans-IO core; this shell only keeps the core's
ACLs equal to the image's (rebuilt when a new image brings other ACLs, which is rare)
and turns a request into the core's questions: who (``request.principal``), from where
(the client's address in the connection id) and what.

A broker with no ``authorizer.class.name`` builds no ``BrokerAuthorizer`` at all: its
handlers test one attribute for None and ask nothing, so the unauthenticated path costs
nothing more.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.controller import AccessControlEntryRecord, acl_binding
from minikafka.net import Request
from minikafka.replication import EpochAnswer
from minikafka.security import (
    CLUSTER_NAME,
    AclOperation,
    Action,
    ResourceType,
    StandardAuthorizer,
)

from ._authorizer_config import AuthorizerSettings
from ._metadata_cache import MetadataCache

# KIP-430: asked for, a bit field of AclOperation codes. Without an authorizer Kafka
# lists every operation the resource type supports (AclEntry.supportedOperations):
# a topic READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
# ALTER_CONFIGS 11; the cluster CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def client_host(connection_id: str) -> str:
    """The client's address in a ``local-remote-processor-index`` connection id (an
    ACL's host is an address, as Kafka's ``RequestContext.clientAddress``)."""
    parts = connection_id.split("-")
    return parts[1].rpartition(":")[0] if len(parts) == 4 else connection_id


@attrs.define(eq=False)
class BrokerAuthorizer:
    """The StandardAuthorizer of one broker, following its metadata image."""

    settings: AuthorizerSettings
    cache: MetadataCache
    _acls: Mapping[uuid.UUID, AccessControlEntryRecord] | None = attrs.field(
        init=False, default=None
    )
    _core: StandardAuthorizer = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._core = self._build({})

    def _build(
        self, acls: Mapping[uuid.UUID, AccessControlEntryRecord]
    ) -> StandardAuthorizer:
        core = StandardAuthorizer(
            self.settings.super_users, self.settings.allow_everyone_if_no_acl_found
        )
        for record in acls.values():
            core.add_acl(record.id, acl_binding(record))
        return core

    @property
    def core(self) -> StandardAuthorizer:
        acls = self.cache.image.acls
        if acls is not self._acls:
            self._core = self._build(acls)
            self._acls = acls
        return self._core

    def allowed(
        self,
        request: Request,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        action = Action(operation, resource_type, name)
        host = client_host(request.connection_id)
        return self.core.authorize(request.principal, host, action).allowed

    def cluster_allowed(self, request: Request, operation: AclOperation) -> bool:
        return self.allowed(request, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def group_allowed(
        self, request: Request, operation: AclOperation, group_id: str
    ) -> bool:
        return self.allowed(request, operation, ResourceType.GROUP, group_id)

    def txn_allowed(
        self, request: Request, operation: AclOperation, transactional_id: str
    ) -> bool:
        return self.allowed(
            request, operation, ResourceType.TRANSACTIONAL_ID, transactional_id
        )

    def any_topic_allowed(self, request: Request, operation: AclOperation) -> bool:
        """KIP-679's ``authorizeByResourceType``: may it ``operation`` some topic."""
        host = client_host(request.connection_id)
        return self.core.authorize_by_resource_type(
            request.principal, host, operation, ResourceType.TOPIC
        )

    def operations(
        self, request: Request, resource_type: ResourceType, name: str, supported: int
    ) -> int:
        """KIP-430's authorized operations: the bits of ``supported`` (a bit per
        AclOperation) the principal is allowed on the resource."""
        return sum(
            1 << op
            for op in AclOperation
            if supported & (1 << op) and self.allowed(request, op, resource_type, name)
        )

    def topic_check(
        self, request: Request, operation: AclOperation = AclOperation.DESCRIBE
    ) -> Callable[[str], bool]:
        """Whether the principal may ``operation`` a topic, as a one-argument test."""
        return lambda name: self.allowed(request, operation, ResourceType.TOPIC, name)

    def denied_topics(
        self, request: Request, operation: AclOperation, names: Iterable[str]
    ) -> frozenset[str]:
        """The topics of ``names`` the request's principal may not ``operation``."""
        return frozenset(
            name
            for name in set(names)
            if not self.allowed(request, operation, ResourceType.TOPIC, name)
        )


def broker_authorizer(
    settings: AuthorizerSettings, cache: MetadataCache
) -> BrokerAuthorizer | None:
    """The broker's authorizer, or None when ``authorizer.class.name`` is empty."""
    return BrokerAuthorizer(settings, cache) if settings.enabled else None


def authorize_metadata(
    request: Request,
    authorizer: BrokerAuthorizer,
    cache: MetadataCache,
    names: list[str] | None,
    auto_create: bool,
) -> tuple[list[str], dict[str, ErrorCode]]:
    """Kafka's ``handleTopicMetadataRequest`` checks: asked for every topic, the
    principal sees only those it may DESCRIBE; a named topic it may not describe is
    TOPIC_AUTHORIZATION_FAILED, and so is a missing one it would auto-create without
    CREATE on the cluster or the topic. Returns the names to answer and their errors."""
    if names is None:
        visible = cache.topic_names()
        denied = authorizer.denied_topics(request, AclOperation.DESCRIBE, visible)
        return [n for n in visible if n not in denied], {}
    errors = dict.fromkeys(
        authorizer.denied_topics(request, AclOperation.DESCRIBE, names),
        ErrorCode.topic_authorization_failed,
    )
    missing = [n for n in names if n not in errors and cache.topic(n) is None]
    if (
        missing
        and auto_create
        and not authorizer.cluster_allowed(request, AclOperation.CREATE)
    ):
        for name in authorizer.denied_topics(request, AclOperation.CREATE, missing):
            errors[name] = ErrorCode.topic_authorization_failed
    return names, errors


def refused_epochs(body: Any, refused: Mapping[str, ErrorCode]) -> list[EpochAnswer]:
    """The answers of the partitions of ``refused`` topics, each with its error."""
    return [
        EpochAnswer(TopicPartition(t.topic, int(p.partition)), refused[t.topic])
        for t in body.topics
        if t.topic in refused
        for p in t.partitions
    ]


AUTHORIZATION_MESSAGES = {
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
}
"""Kafka's ``Errors`` default messages, which the configs APIs answer with."""

_TOPIC_CONFIGS, _BROKER_CONFIGS, _LOGGER_CONFIGS = 2, 4, 8
_CLIENT_METRICS_CONFIGS, _GROUP_CONFIGS = 16, 32


def config_refusal(
    request: Request,
    authorizer: BrokerAuthorizer,
    kind: int,
    name: str,
    operation: AclOperation,
) -> tuple[ErrorCode, str] | None:
    """DescribeConfigs' DESCRIBE_CONFIGS or the AlterConfigs' ALTER_CONFIGS on a config
    resource (Kafka's ``ConfigHelper``/``ControllerApis``): a topic's on the topic, a
    group's on the group, a broker's, a broker logger's or client metrics' on the
    cluster. The error and its message, or None when allowed."""
    if kind == _TOPIC_CONFIGS:
        allowed = authorizer.allowed(request, operation, ResourceType.TOPIC, name)
        error = ErrorCode.topic_authorization_failed
    elif kind == _GROUP_CONFIGS:
        allowed = authorizer.group_allowed(request, operation, name)
        error = ErrorCode.group_authorization_failed
    elif kind in (_BROKER_CONFIGS, _LOGGER_CONFIGS, _CLIENT_METRICS_CONFIGS):
        allowed = authorizer.cluster_allowed(request, operation)
        error = ErrorCode.cluster_authorization_failed
    else:
        return None  # an unknown type: the handler's own INVALID_REQUEST
    return None if allowed else (error, AUTHORIZATION_MESSAGES[error])


def cluster_operations(request: Request, authorizer: BrokerAuthorizer) -> int:
    """The cluster's authorized operations (KIP-430) as Kafka's DescribeCluster and
    Metadata compute them: none without DESCRIBE, else the allowed ones."""
    if not authorizer.cluster_allowed(request, AclOperation.DESCRIBE):
        return 0
    return authorizer.operations(
        request, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS
    )


def topic_operations(request: Request, authorizer: BrokerAuthorizer, name: str) -> int:
    """A topic's authorized operations (KIP-430)."""
    return authorizer.operations(request, ResourceType.TOPIC, name, TOPIC_OPERATIONS)
