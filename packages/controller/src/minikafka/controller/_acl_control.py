"""AclControlManager: ACLs in the metadata log (KIP-801, Kafka's ``AclControlManager``).

In KRaft mode an ACL is an AccessControlEntryRecord, with a Uuid of its own; DeleteAcls
writes a RemoveAccessControlEntryRecord naming that Uuid. Brokers forward CreateAcls and
DeleteAcls to the active controller, which checks each ACL (``validate_new_acl``) and
each filter (``validate_filter``) and writes the records; every broker replays them into
its metadata image, from which its authorizer and DescribeAcls read.

Each creation and each filter has its own result: a refused one does not stop the rest.
Creating an ACL that exists already succeeds and writes nothing, as Kafka does.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Mapping
from typing import Never, TypeVar

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap
from minikafka.security import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
    validate_filter,
    validate_new_acl,
)

from ._records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RemoveAccessControlEntryRecord,
)


def acl_binding(record: AccessControlEntryRecord) -> AclBinding:
    """The binding a record stores (codes outside Kafka's enums read as UNKNOWN)."""
    return AclBinding(
        ResourcePattern(
            _enum(ResourceType, record.resource_type),
            record.resource_name,
            _enum(PatternType, record.pattern_type),
        ),
        AccessControlEntry(
            record.principal,
            record.host,
            _enum(AclOperation, record.operation),
            _enum(AclPermissionType, record.permission_type),
        ),
    )


_E = TypeVar("_E", ResourceType, PatternType, AclOperation, AclPermissionType)


def _enum(kind: type[_E], code: int) -> _E:
    try:
        return kind(code)
    except ValueError:
        return kind(0)  # UNKNOWN


def acl_record(acl_id: uuid.UUID, binding: AclBinding) -> AccessControlEntryRecord:
    pattern, entry = binding.pattern, binding.entry
    return AccessControlEntryRecord(
        id=acl_id,
        resource_type=pattern.resource_type,
        resource_name=pattern.name,
        pattern_type=pattern.pattern_type,
        principal=entry.principal,
        host=entry.host,
        operation=entry.operation,
        permission_type=entry.permission_type,
    )


@attrs.frozen
class CreateAclsRequest:
    creations: tuple[AclBinding, ...]


@attrs.frozen
class AclResult:
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None


@attrs.frozen
class CreateAclsResponse:
    results: tuple[AclResult, ...]
    """One per creation, in the request's order."""


@attrs.frozen
class DeleteAclsRequest:
    filters: tuple[AclBindingFilter, ...]


@attrs.frozen
class DeleteAclsFilterResult:
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None
    matching: tuple[AclBinding, ...] = ()


@attrs.frozen
class DeleteAclsResponse:
    results: tuple[DeleteAclsFilterResult, ...]
    """One per filter, in the request's order."""


@attrs.define(eq=False)
class AclControlManager:
    """The ACLs as of each offset, for the active controller's checks."""

    registry: SnapshotRegistry
    rng: random.Random
    acls: TimelineHashMap[uuid.UUID, AclBinding] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.acls = TimelineHashMap(self.registry)

    def replay(self, record: MetadataRecord) -> None:
        if isinstance(record, AccessControlEntryRecord):
            self.acls.put(record.id, acl_binding(record))
        elif isinstance(record, RemoveAccessControlEntryRecord):
            self.acls.remove(record.id)

    def _existing(self, epoch: int) -> Iterator[tuple[uuid.UUID, AclBinding]]:
        yield from self.acls.items(epoch)

    def create(
        self, request: CreateAclsRequest, epoch: int = LATEST_EPOCH
    ) -> CoreResult[MetadataRecord, CreateAclsResponse, Never]:
        """A record per new ACL (Kafka's ``AclControlManager.createAcls``)."""
        known = {binding for _, binding in self._existing(epoch)}
        taken = set(self.acls.keys(epoch))
        records: list[MetadataRecord] = []
        results: list[AclResult] = []
        for binding in request.creations:
            try:
                validate_new_acl(binding)
            except InvalidAclError as refused:
                results.append(AclResult(refused.error_code, str(refused)))
                continue
            if binding not in known:
                acl_id = self._new_id(taken)
                taken.add(acl_id)
                known.add(binding)
                records.append(acl_record(acl_id, binding))
            results.append(AclResult())
        return CoreResult(tuple(records), (CreateAclsResponse(tuple(results)),))

    def _new_id(self, taken: set[uuid.UUID]) -> uuid.UUID:
        """A random ACL id no ACL has (the controller's seeded rng keeps replays equal)."""
        while True:
            acl_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
            if acl_id not in taken:
                return acl_id

    def delete(
        self, request: DeleteAclsRequest, epoch: int = LATEST_EPOCH
    ) -> CoreResult[MetadataRecord, DeleteAclsResponse, Never]:
        """A removal per ACL some filter matches (Kafka's ``deleteAcls``); an ACL two
        filters match is removed once and listed under the first."""
        existing = sorted(self._existing(epoch), key=lambda item: item[1])
        removed: set[uuid.UUID] = set()
        records: list[MetadataRecord] = []
        results: list[DeleteAclsFilterResult] = []
        for binding_filter in request.filters:
            try:
                validate_filter(binding_filter)
            except InvalidAclError as refused:
                results.append(DeleteAclsFilterResult(refused.error_code, str(refused)))
                continue
            matching: list[AclBinding] = []
            for acl_id, binding in existing:
                if acl_id not in removed and binding_filter.matches(binding):
                    removed.add(acl_id)
                    matching.append(binding)
                    records.append(RemoveAccessControlEntryRecord(acl_id))
            results.append(DeleteAclsFilterResult(matching=tuple(matching)))
        return CoreResult(tuple(records), (DeleteAclsResponse(tuple(results)),))


def describe_acls(
    acls: Mapping[uuid.UUID, AccessControlEntryRecord], binding_filter: AclBindingFilter
) -> tuple[AclBinding, ...]:
    """DescribeAcls from a metadata image's ACLs: every binding the filter matches,
    in a stable order."""
    bindings = (acl_binding(record) for record in acls.values())
    return tuple(sorted(b for b in bindings if binding_filter.matches(b)))
