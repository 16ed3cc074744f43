"""ACLs as values: Kafka's ``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``, ``ResourcePattern``, ``AccessControlEntry``, ``AclBinding`` and
their filters (KIP-290's prefixed patterns, the MATCH and ANY filter types), with the
checks a new ACL must pass (KRaft's ``AclControlManager.validateNewAcl``).

An ACL binds a *resource pattern* (a type, a name and whether the name is LITERAL or a
PREFIX) to an *entry* (a principal, a host, an operation, ALLOW or DENY). Filters find
ACLs for DescribeAcls and DeleteAcls: a pattern filter of type MATCH finds every pattern
that applies to one named resource (the literal name, the wildcard ``*``, every prefix of
it); ANY finds every pattern type with exactly that name.
"""

from __future__ import annotations

import enum

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class InvalidAclError(ApiError):
    """A binding CreateAcls refuses (Kafka's ``InvalidRequestException``)."""

    error_code = ErrorCode.invalid_request


@attrs.frozen(order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@attrs.frozen(order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@attrs.frozen(order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


def validate_new_acl(binding: AclBinding) -> None:
    """Raise :class:`InvalidAclError` for a binding CreateAcls must refuse."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAclError(f"Invalid resourceType {pattern.resource_type.name}")
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid patternType {pattern.pattern_type.name}")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAclError(f"Invalid operation {entry.operation.name}")
    if entry.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        raise InvalidAclError(f"Invalid permissionType {entry.permission_type.name}")
    if not pattern.name:
        raise InvalidAclError("Resource name should not be empty")
    if ":" not in entry.principal:
        raise InvalidAclError(
            f"Could not parse principal from `{entry.principal}` (no colon is present "
            "separating the principal type from the principal name)"
        )
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidAclError(
            f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        )


@attrs.frozen
class ResourcePatternFilter:
    """Which patterns to find; ``name`` None matches any name."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        """Kafka's ``ResourcePatternFilter.matches``."""
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type not in (
            PatternType.ANY,
            PatternType.MATCH,
            pattern.pattern_type,
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type is PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False


@attrs.frozen
class AccessControlEntryFilter:
    """Which entries to find; None for principal or host matches any."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return (
            self.principal in (None, entry.principal)
            and self.host in (None, entry.host)
            and self.operation in (AclOperation.ANY, entry.operation)
            and self.permission_type in (AclPermissionType.ANY, entry.permission_type)
        )


@attrs.frozen
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(
            binding.pattern
        ) and self.entry_filter.matches(binding.entry)


def validate_filter(binding_filter: AclBindingFilter) -> None:
    """Raise :class:`InvalidAclError` for a DeleteAcls filter with an UNKNOWN part
    (KRaft's ``AclControlManager.validateFilter``)."""
    patterns = binding_filter.pattern_filter
    unknown_type = patterns.resource_type is ResourceType.UNKNOWN
    if unknown_type or patterns.pattern_type is PatternType.UNKNOWN:
        raise InvalidAclError("Unknown patternFilter.")
    entries = binding_filter.entry_filter
    if entries.operation is AclOperation.UNKNOWN or (
        entries.permission_type is AclPermissionType.UNKNOWN
    ):
        raise InvalidAclError("Unknown entryFilter.")


ANY_FILTER = AclBindingFilter()
"""Matches every binding (``AclBindingFilter.ANY``)."""
