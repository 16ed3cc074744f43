"""``minikafka acls``'s work: kafka-acls.sh (Kafka's ``AclCommand``) on the Admin API.

The flags name resources (``--topic``, ``--group``, ``--cluster``,
``--transactional-id``, each with ``--resource-pattern-type``) and entries (each
``--allow-principal``/``--deny-principal`` with each ``--operation``, from each of its
hosts, ``*`` unless ``--allow-host``/``--deny-host`` says). ``--producer`` grants
WRITE, DESCRIBE and CREATE on the topics (and WRITE, DESCRIBE on transactional ids,
IDEMPOTENT_WRITE on the cluster with ``--idempotent``); ``--consumer`` READ and
DESCRIBE on the topics and READ on the groups. :func:`plan` turns the flags into
resource filters and their entries, checked as AclCommand checks them; :func:`add`,
:func:`remove` and :func:`list_acls` make CreateAcls, DeleteAcls and DescribeAcls
requests and return the lines the Java tool prints (``ResourcePattern(...)`` and
``(principal=..., host=..., operation=..., permissionType=...)``, Kafka's ``toString``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.create_acls.v3.response import CreateAclsResponse
from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.delete_acls.v3.response import DeleteAclsResponse
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.describe_acls.v3.response import DescribeAclsResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from minikafka.client import AsyncAdminClient, KafkaError, KafkaException
from minikafka.net import Node
from minikafka.security import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

Op = AclOperation
SUPPORTED_OPERATIONS = {
    ResourceType.TOPIC: (
        Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
        Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE),
    ResourceType.CLUSTER: (
        Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}  # fmt: skip
"""Kafka's ``AclEntry.supportedOperations`` (ALL is allowed everywhere)."""

CLUSTER_FILTER = ResourcePatternFilter(
    ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL
)


class AclCommandUsage(Exception):
    """A flag combination AclCommand refuses (``printUsageAndExit``)."""


@attrs.frozen
class AclFlags:
    """The flags of one ``acls`` command, as given."""

    pattern_type: str = "literal"
    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()
    cluster: bool = False
    operations: tuple[str, ...] = ("All",)
    allow_principals: tuple[str, ...] = ()
    deny_principals: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    list_principals: tuple[str, ...] = ()
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False


def check_args(given: set[str]) -> None:
    """AclCommandOptions' ``checkArgs`` over the options given (by name, without the
    dashes): AclCommandUsage with Kafka's message for a combination it refuses."""
    actions = given & {"add", "remove", "list"}
    if len(actions) != 1:
        raise AclCommandUsage(
            "Command must include exactly one action: --list, --add, --remove. "
        )
    invalid = {
        "list": ("producer", "consumer", "allow-host", "allow-principal", "deny-host",
                 "deny-principal"),
        "producer": ("operation", "deny-principal", "deny-host"),
        "consumer": ("operation", "deny-principal", "deny-host"),
    }  # fmt: skip
    for used, refused in invalid.items():
        for other in refused:
            if used in given and other in given:
                raise AclCommandUsage(
                    f'Option "[{used}]" can\'t be used with option "[{other}]"'
                )
    if "principal" in given and "list" not in given:
        raise AclCommandUsage(
            "The --principal option is only available if --list is set"
        )
    if "producer" in given and "topic" not in given:
        raise AclCommandUsage("With --producer you must specify a --topic")
    if "idempotent" in given and "producer" not in given:
        raise AclCommandUsage(
            "The --idempotent option is only available if --producer is set"
        )
    if "consumer" in given and (
        not {"topic", "group"} <= given
        or ("producer" not in given and given & {"cluster", "transactional-id"})
    ):
        raise AclCommandUsage(
            "With --consumer you must specify a --topic and a --group and no --cluster "
            "or --transactional-id option should be specified."
        )


def pattern_type(name: str) -> PatternType:
    """``--resource-pattern-type``: literal, prefixed, match or any (any case)."""
    try:
        found = PatternType[name.strip().upper()]
    except KeyError:
        found = PatternType.UNKNOWN
    if found is PatternType.UNKNOWN:
        raise AclCommandUsage(f"Unknown resource-pattern-type: {name}")
    return found


def operation(name: str) -> AclOperation:
    """An ``--operation`` name as ``SecurityUtils.operation`` reads it: ``Read``,
    ``IdempotentWrite``, ``DESCRIBE_CONFIGS`` alike."""
    wanted = name.strip().replace("_", "").replace("-", "").upper()
    for op in AclOperation:
        if op.name.replace("_", "") == wanted and op not in (Op.UNKNOWN, Op.ANY):
            return op
    raise AclCommandUsage(f"Unknown operation: {name}")


def principal(text: str) -> str:
    """``SecurityUtils.parseKafkaPrincipal``: ``Type:name``, checked and kept as text."""
    kind, colon, name = text.strip().partition(":")
    if not colon or not kind or not name:
        raise AclCommandUsage(
            f"expected a string in format principalType:principalName but got {text}"
        )
    return f"{kind}:{name}"


def resource_filters(flags: AclFlags, die_if_none: bool) -> list[ResourcePatternFilter]:
    """AclCommand's ``getResourceFilter``."""
    kind = pattern_type(flags.pattern_type)
    found: list[ResourcePatternFilter] = []
    for rtype, names in (
        (ResourceType.TOPIC, flags.topics),
        (ResourceType.GROUP, flags.groups),
        (ResourceType.TRANSACTIONAL_ID, flags.transactional_ids),
    ):
        found += [ResourcePatternFilter(rtype, n.strip(), kind) for n in names]
    if kind is PatternType.LITERAL and (flags.cluster or flags.idempotent):
        found.append(CLUSTER_FILTER)
    if not found and die_if_none:
        raise AclCommandUsage(
            "You must provide at least one resource: --topic <topic> or --cluster or "
            "--group <group> or --delegation-token <Delegation Token ID>"
        )
    return list(dict.fromkeys(found))


def entries(flags: AclFlags, ops: Iterable[AclOperation]) -> set[AccessControlEntry]:
    """AclCommand's ``getAcl``: each principal, operation and host; the hosts default
    to ``*`` for the principals given."""
    result: set[AccessControlEntry] = set()
    for principals, hosts, permission in (
        (flags.allow_principals, flags.allow_hosts, AclPermissionType.ALLOW),
        (flags.deny_principals, flags.deny_hosts, AclPermissionType.DENY),
    ):
        names = {principal(p) for p in principals}
        for host in {h.strip() for h in hosts} or {WILDCARD_HOST}:
            result |= {
                AccessControlEntry(name, host, op, permission)
                for name in names
                for op in ops
            }
    return result


def plan(flags: AclFlags) -> dict[ResourcePatternFilter, set[AccessControlEntry]]:
    """AclCommand's ``getResourceFilterToAcls``: the entries for each resource filter,
    the ``--producer``/``--consumer`` shorthands expanded, operations checked."""
    result: dict[ResourcePatternFilter, set[AccessControlEntry]] = {}
    filters = resource_filters(flags, die_if_none=True)
    by_type: Callable[[ResourceType], list[ResourcePatternFilter]] = lambda t: [  # noqa: E731
        f for f in filters if f.resource_type is t
    ]
    if not flags.producer and not flags.consumer:
        chosen = entries(flags, {operation(o) for o in flags.operations})
        result = {f: set(chosen) for f in filters}
    if flags.producer:
        for f in by_type(ResourceType.TOPIC):
            result[f] = entries(flags, (Op.WRITE, Op.DESCRIBE, Op.CREATE))
        for f in by_type(ResourceType.TRANSACTIONAL_ID):
            result[f] = entries(flags, (Op.WRITE, Op.DESCRIBE))
        if flags.idempotent:
            result[CLUSTER_FILTER] = entries(flags, (Op.IDEMPOTENT_WRITE,))
    if flags.consumer:
        for f in by_type(ResourceType.TOPIC):
            result.setdefault(f, set()).update(entries(flags, (Op.READ, Op.DESCRIBE)))
        for f in by_type(ResourceType.GROUP):
            result.setdefault(f, set()).update(entries(flags, (Op.READ,)))
    for f, acls in result.items():
        valid = (Op.ALL, *SUPPORTED_OPERATIONS.get(f.resource_type, ()))
        if any(acl.operation not in valid for acl in acls):
            raise AclCommandUsage(
                f"ResourceType {f.resource_type.name} only supports operations "
                f"{', '.join(op.name for op in valid)}"
            )
    return result


# --- Kafka's toString ------------------------------------------------------------


def entry_text(entry: AccessControlEntry) -> str:
    return (
        f"(principal={entry.principal}, host={entry.host}, "
        f"operation={entry.operation.name}, "
        f"permissionType={entry.permission_type.name})"
    )


def filter_text(f: ResourcePatternFilter) -> str:
    name = "<any>" if f.name is None else f.name
    return (
        f"ResourcePattern(resourceType={f.resource_type.name}, name={name}, "
        f"patternType={f.pattern_type.name})"
    )


def _entry_key(entry: AccessControlEntry) -> tuple[str, str, int, int]:
    return (entry.principal, entry.host, entry.operation, entry.permission_type)


def _lines(acls: Iterable[AccessControlEntry]) -> list[str]:
    return ["\t" + entry_text(e) for e in sorted(acls, key=_entry_key)]


# --- the requests ---------------------------------------------------------------


async def _any_broker(admin: AsyncAdminClient) -> Node:
    """Where Kafka's Admin sends the ACL requests: any broker (the least loaded)."""
    if not admin.brokers:
        await admin.metadata([])
    return next(iter(admin.brokers.values()), admin.bootstrap[0])


def _raise(code: int, message: str | None) -> None:
    if code != ErrorCode.none:
        raise KafkaException(KafkaError(code, message))


async def describe(
    admin: AsyncAdminClient,
    patterns: ResourcePatternFilter,
    entry: AccessControlEntryFilter | None = None,
) -> dict[ResourcePattern, set[AccessControlEntry]]:
    """DescribeAcls: the bindings ``patterns`` (and ``entry``) match, by resource."""
    e = entry or AccessControlEntryFilter()
    body = DescribeAclsRequest(
        resource_type_filter=i8(patterns.resource_type),
        resource_name_filter=patterns.name,
        pattern_type_filter=i8(patterns.pattern_type),
        principal_filter=e.principal,
        host_filter=e.host,
        operation=i8(e.operation),
        permission_type=i8(e.permission_type),
    )
    node = await _any_broker(admin)
    response = await admin.request(node, body, DescribeAclsResponse)
    _raise(int(response.error_code), response.error_message)
    found: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for r in response.resources:
        pattern = ResourcePattern(
            ResourceType(int(r.resource_type)),
            r.resource_name,
            PatternType(int(r.pattern_type)),
        )
        found.setdefault(pattern, set()).update(
            AccessControlEntry(
                a.principal,
                a.host,
                AclOperation(int(a.operation)),
                AclPermissionType(int(a.permission_type)),
            )
            for a in r.acls
        )
    return found


async def add(admin: AsyncAdminClient, flags: AclFlags) -> list[str]:
    """``--add``: for each resource, the entries it lacks are created; the lines."""
    if pattern_type(flags.pattern_type) not in (
        PatternType.LITERAL,
        PatternType.PREFIXED,
    ):
        raise AclCommandUsage(
            f"A '--resource-pattern-type' value of "
            f"'{pattern_type(flags.pattern_type).name}' is not valid when adding acls."
        )
    wanted = plan(flags)
    if any(not acls for acls in wanted.values()):
        raise AclCommandUsage(
            "You must specify one of: --allow-principal, --deny-principal when "
            "trying to add ACLs."
        )
    lines: list[str] = []
    for f, acls in wanted.items():
        assert f.name is not None
        pattern = ResourcePattern(f.resource_type, f.name, f.pattern_type)
        existing = (await describe(admin, f)).get(pattern, set())
        new = set()
        for acl in sorted(acls, key=_entry_key):
            if acl in existing:
                lines.append(
                    f"Acl (pattern={pattern}, entry={entry_text(acl)}) already exists."
                )
            else:
                new.add(acl)
        if not new:
            continue
        body = CreateAclsRequest(
            creations=tuple(
                AclCreation(
                    resource_type=i8(pattern.resource_type),
                    resource_name=pattern.name,
                    resource_pattern_type=i8(pattern.pattern_type),
                    principal=acl.principal,
                    host=acl.host,
                    operation=i8(acl.operation),
                    permission_type=i8(acl.permission_type),
                )
                for acl in sorted(new, key=_entry_key)
            )
        )
        added = _lines(new)
        lines += [f"Adding ACLs for resource `{pattern}`: ", " " + added[0], *added[1:]]
        lines.append("")
        response = await admin.request(
            await _any_broker(admin), body, CreateAclsResponse
        )
        for result in response.results:
            _raise(int(result.error_code), result.error_message)
    return lines


def removal_prompts(flags: AclFlags) -> list[tuple[ResourcePatternFilter, str]]:
    """``--remove``: each resource filter and the question AclCommand asks about it."""
    prompts = []
    for f, acls in plan(flags).items():
        if not acls:
            text = (
                "Are you sure you want to delete all ACLs for resource filter "
                f"`{filter_text(f)}`? (y/n)"
            )
        else:
            shown = _lines(acls)
            text = "\n".join(
                [
                    "Are you sure you want to remove ACLs: ",
                    " " + shown[0],
                    *shown[1:],
                    f" from resource filter `{filter_text(f)}`? (y/n)",
                ]
            )
        prompts.append((f, text))
    return prompts


async def remove(
    admin: AsyncAdminClient, flags: AclFlags, confirmed: Sequence[ResourcePatternFilter]
) -> None:
    """DeleteAcls for each confirmed resource filter: its entries, or all of them."""
    wanted = plan(flags)
    filters = []
    for f in confirmed:
        entry_filters = [
            AccessControlEntryFilter(
                a.principal, a.host, a.operation, a.permission_type
            )
            for a in sorted(wanted[f], key=_entry_key)
        ] or [AccessControlEntryFilter()]
        filters += [
            DeleteAclsFilter(
                resource_type_filter=i8(f.resource_type),
                resource_name_filter=f.name,
                pattern_type_filter=i8(f.pattern_type),
                principal_filter=e.principal,
                host_filter=e.host,
                operation=i8(e.operation),
                permission_type=i8(e.permission_type),
            )
            for e in entry_filters
        ]
    if not filters:
        return
    body = DeleteAclsRequest(filters=tuple(filters))
    response = await admin.request(await _any_broker(admin), body, DeleteAclsResponse)
    for result in response.filter_results:
        _raise(int(result.error_code), result.error_message)
        for matching in result.matching_acls:
            _raise(int(matching.error_code), matching.error_message)


async def list_acls(admin: AsyncAdminClient, flags: AclFlags) -> list[str]:
    """``--list``: every binding the resource filters match (all without one), by
    resource; with ``--principal``, only that principal's, under a heading each."""
    found: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for f in resource_filters(flags, die_if_none=False) or [ResourcePatternFilter()]:
        for pattern, acls in (await describe(admin, f)).items():
            found.setdefault(pattern, set()).update(acls)
    if not flags.list_principals:
        return _resource_lines(found)
    lines = []
    for name in dict.fromkeys(principal(p) for p in flags.list_principals):
        lines.append(f"ACLs for principal `{name}`")
        mine = {
            pattern: {a for a in acls if a.principal == name}
            for pattern, acls in found.items()
        }
        lines += _resource_lines({p: a for p, a in mine.items() if a})
    return lines


def _resource_lines(found: dict[ResourcePattern, set[AccessControlEntry]]) -> list[str]:
    lines = []
    for pattern in sorted(found):
        lines += [f"Current ACLs for resource `{pattern}`:", *_lines(found[pattern])]
        lines.append("")
    return lines
