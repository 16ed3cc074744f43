"""Kafka's ``StandardAuthorizer`` (KIP-801) over an in-memory set of ACLs.

Whether a principal, from a host, may do an operation on a resource, decided in Kafka's
order (``StandardAuthorizerData.authorize``):

1. a super user (``super.users``, ``User:admin;User:broker``) may do anything;
2. the ACLs that apply to the resource are those of its type whose pattern is the
   LITERAL name, the LITERAL wildcard ``*``, or a PREFIXED pattern the name starts with;
3. of those, an ACL *matches* when its principal is the caller or ``User:*``, its host is
   the caller's or ``*``, and its operation is the one asked, or ALL, or, for an ALLOW
   ACL only, one that implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE;
   ALTER_CONFIGS implies DESCRIBE_CONFIGS);
4. a matching DENY wins over any ALLOW; else a matching ALLOW allows;
5. with no match: if no ACL applies to the resource at all, the answer is
   ``allow.everyone.if.no.acl.found`` (false by default); otherwise it is denied.

The ACL set changes only through :meth:`StandardAuthorizer.add_acl` and
:meth:`remove_acl`, what replaying AccessControlEntryRecords will call.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Iterator

import attrs

from ._acl import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from ._principal import WILDCARD_PRINCIPAL, KafkaPrincipal

IMPLIES_DESCRIBE = frozenset(
    {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    }
)
IMPLIES_DESCRIBE_CONFIGS = frozenset(
    {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
)


class AuthorizationResult(enum.Enum):
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"


@attrs.frozen
class Action:
    """One question: ``operation`` on a resource (a LITERAL pattern, its name)."""

    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


@attrs.frozen
class Decision:
    """The answer and the rule it came from, for the audit log: ``SuperUser``,
    ``DefaultAllow``/``DefaultDeny``, or the matching ACL."""

    result: AuthorizationResult
    rule: str
    acl: AclBinding | None = None

    @property
    def allowed(self) -> bool:
        return self.result is AuthorizationResult.ALLOWED


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: principals separated by semicolons."""
    return frozenset(p.strip() for p in text.split(";") if p.strip())


def _acl_result(
    binding: AclBinding, principals: frozenset[str], host: str, operation: AclOperation
) -> AuthorizationResult | None:
    """What one ACL of the resource says, or None when it does not match
    (``StandardAuthorizerData.findResult``)."""
    entry = binding.entry
    if entry.principal not in principals:
        return None
    if entry.host not in (WILDCARD_HOST, host):
        return None
    allow = entry.permission_type is AclPermissionType.ALLOW
    if entry.operation is not AclOperation.ALL:
        if allow and operation is AclOperation.DESCRIBE:
            if entry.operation not in IMPLIES_DESCRIBE:
                return None
        elif allow and operation is AclOperation.DESCRIBE_CONFIGS:
            if entry.operation not in IMPLIES_DESCRIBE_CONFIGS:
                return None
        elif entry.operation is not operation:
            return None
    return AuthorizationResult.ALLOWED if allow else AuthorizationResult.DENIED


def applies_to(
    pattern: ResourcePattern, resource_type: ResourceType, name: str
) -> bool:
    """Whether an ACL on ``pattern`` is about the named resource."""
    if pattern.resource_type is not resource_type:
        return False
    if pattern.pattern_type is PatternType.LITERAL:
        return pattern.name in (name, WILDCARD_RESOURCE)
    return pattern.pattern_type is PatternType.PREFIXED and name.startswith(
        pattern.name
    )


class StandardAuthorizer:
    """The ACLs, ``super.users`` and ``allow.everyone.if.no.acl.found``; a value-only
    core: it reads no clock and answers each question from what it holds."""

    def __init__(
        self,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: dict[uuid.UUID, AclBinding] = {}
        # By resource type, so a question reads only the ACLs of its own type.
        self._by_type: dict[ResourceType, dict[uuid.UUID, AclBinding]] = {}

    def add_acl(self, acl_id: uuid.UUID, binding: AclBinding) -> None:
        """Add an ACL under its id (the AccessControlEntryRecord's ``id``)."""
        self._acls[acl_id] = binding
        self._by_type.setdefault(binding.pattern.resource_type, {})[acl_id] = binding

    def remove_acl(self, acl_id: uuid.UUID) -> None:
        """Remove an ACL (RemoveAccessControlEntryRecord); an unknown id is an error,
        as in Kafka, since the log said it existed."""
        binding = self._acls.pop(acl_id)
        del self._by_type[binding.pattern.resource_type][acl_id]

    def acls(self, filter: AclBindingFilter) -> Iterator[tuple[uuid.UUID, AclBinding]]:
        """The ACLs a DescribeAcls or DeleteAcls filter finds, with their ids."""
        for acl_id, binding in sorted(self._acls.items(), key=lambda kv: kv[1]):
            if filter.matches(binding):
                yield acl_id, binding

    def authorize(
        self, principal: KafkaPrincipal, host: str, action: Action
    ) -> Decision:
        if str(principal) in self.super_users:
            return Decision(AuthorizationResult.ALLOWED, "SuperUser")
        principals = frozenset({str(principal), str(WILDCARD_PRINCIPAL)})
        allow: AclBinding | None = None
        has_resource_acls = False
        for binding in self._by_type.get(action.resource_type, {}).values():
            if not applies_to(
                binding.pattern, action.resource_type, action.resource_name
            ):
                continue
            has_resource_acls = True
            result = _acl_result(binding, principals, host, action.operation)
            if result is AuthorizationResult.DENIED:
                return Decision(result, f"MatchingAcl(acl={binding})", binding)
            if result is AuthorizationResult.ALLOWED:
                allow = binding
        if allow is not None:
            return Decision(
                AuthorizationResult.ALLOWED, f"MatchingAcl(acl={allow})", allow
            )
        if not has_resource_acls and self.allow_everyone_if_no_acl_found:
            return Decision(AuthorizationResult.ALLOWED, "DefaultAllow")
        return Decision(AuthorizationResult.DENIED, "DefaultDeny")

    def authorized_operations(
        self,
        principal: KafkaPrincipal,
        host: str,
        resource_type: ResourceType,
        resource_name: str,
        operations: Iterable[AclOperation],
    ) -> frozenset[AclOperation]:
        """Which of ``operations`` are allowed (KIP-430's authorized operations, as
        Metadata and DescribeGroups report them)."""
        return frozenset(
            op
            for op in operations
            if self.authorize(
                principal, host, Action(op, resource_type, resource_name)
            ).allowed
        )

    def authorize_by_resource_type(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        rtype: ResourceType,
    ) -> bool:
        """Whether the principal may ``operation`` at least one resource of ``rtype``
        (KIP-679's ``Authorizer.authorizeByResourceType``, as an idempotent producer
        without IDEMPOTENT_WRITE needs WRITE on some topic).

        A name no ACL names decides first (a super user, a LITERAL ``*`` ALLOW, or
        ``allow.everyone.if.no.acl.found`` with no ACL of the type pass); then a DENY of
        every name (LITERAL ``*``) refuses, and an ALLOW passes unless a DENY covers
        what it grants: a LITERAL name denied by name or by a prefix of it, a PREFIXED
        pattern denied by a prefix of it."""
        probe = Action(operation, rtype, "hardcode")
        if self.authorize(principal, host, probe).allowed:
            return True
        principals = frozenset({str(principal), str(WILDCARD_PRINCIPAL)})
        allowed: list[ResourcePattern] = []
        denied_literal: set[str] = set()
        denied_prefixes: list[str] = []
        for binding in self._by_type.get(rtype, {}).values():
            result = _acl_result(binding, principals, host, operation)
            pattern = binding.pattern
            if result is AuthorizationResult.ALLOWED:
                allowed.append(pattern)
            elif result is AuthorizationResult.DENIED:
                if pattern.pattern_type is PatternType.LITERAL:
                    denied_literal.add(pattern.name)
                else:
                    denied_prefixes.append(pattern.name)
        if WILDCARD_RESOURCE in denied_literal:
            return False
        for pattern in allowed:
            if any(pattern.name.startswith(p) for p in denied_prefixes):
                continue
            if pattern.pattern_type is PatternType.PREFIXED or (
                pattern.name not in denied_literal
            ):
                return True
        return False
