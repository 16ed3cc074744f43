"""Kafka's StandardAuthorizer semantics (KIP-801) and the ACL values (KIP-290's patterns
and filters) with CreateAcls's validation."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.security import (
    ANY_FILTER,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    InvalidAclError,
    KafkaPrincipal,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    StandardAuthorizer,
    parse_super_users,
    validate_filter,
    validate_new_acl,
)

ALICE = KafkaPrincipal("User", "alice")
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
OPS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]


def acl(
    name: str,
    op: AclOperation,
    permission: AclPermissionType = ALLOW,
    pattern: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    resource: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource, name, pattern),
        AccessControlEntry(principal, host, op, permission),
    )


def authorizer(*bindings: AclBinding, **kwargs: object) -> StandardAuthorizer:
    result = StandardAuthorizer(**kwargs)  # type: ignore[arg-type]
    for binding in bindings:
        result.add_acl(uuid.uuid4(), binding)
    return result


def allowed(
    auth: StandardAuthorizer,
    op: AclOperation,
    name: str,
    who: KafkaPrincipal = ALICE,
    host: str = "10.0.0.1",
    resource: ResourceType = TOPIC,
) -> bool:
    return auth.authorize(who, host, Action(op, resource, name)).allowed


def test_a_user_without_write_cannot_produce() -> None:
    """READ alone does not allow WRITE; with no ACL at all the default is deny."""
    auth = authorizer(acl("orders", AclOperation.READ))
    assert allowed(auth, AclOperation.READ, "orders")
    assert not allowed(auth, AclOperation.WRITE, "orders")
    assert not allowed(auth, AclOperation.READ, "other")


def test_a_prefixed_acl_grants_a_family_of_topics() -> None:
    """PREFIXED ``orders-`` covers every topic starting with it, not ``orders`` itself."""
    auth = authorizer(acl("orders-", AclOperation.WRITE, pattern=PREFIXED))
    assert allowed(auth, AclOperation.WRITE, "orders-eu")
    assert allowed(auth, AclOperation.WRITE, "orders-")
    assert not allowed(auth, AclOperation.WRITE, "orders")


def test_deny_wins_over_allow() -> None:
    """A matching DENY (here on the literal name) beats an ALLOW (on the prefix)."""
    auth = authorizer(
        acl("orders-", AclOperation.WRITE, pattern=PREFIXED),
        acl("orders-eu", AclOperation.WRITE, DENY),
    )
    assert not allowed(auth, AclOperation.WRITE, "orders-eu")
    assert allowed(auth, AclOperation.WRITE, "orders-us")


def test_super_users_pass_everything() -> None:
    """``super.users`` (semicolon-separated) are allowed even against a DENY."""
    supers = parse_super_users("User:admin; User:broker")
    assert supers == {"User:admin", "User:broker"}
    auth = authorizer(
        acl("t", AclOperation.ALL, DENY, principal="User:*"), super_users=supers
    )
    decision = auth.authorize(
        KafkaPrincipal("User", "admin"), "h", Action(AclOperation.DELETE, TOPIC, "t")
    )
    assert decision.allowed
    assert decision.rule == "SuperUser"


def test_wildcards_for_resource_principal_and_host() -> None:
    """``*`` as resource name, ``User:*`` as principal, ``*`` as host match anything."""
    auth = authorizer(acl("*", AclOperation.READ, principal="User:*"))
    assert allowed(
        auth, AclOperation.READ, "anything", who=KafkaPrincipal("User", "zed")
    )


def test_a_host_acl_applies_only_from_that_host() -> None:
    """An ACL for host 10.0.0.1 says nothing about a client from 10.0.0.2."""
    auth = authorizer(acl("t", AclOperation.READ, host="10.0.0.1"))
    assert allowed(auth, AclOperation.READ, "t", host="10.0.0.1")
    assert not allowed(auth, AclOperation.READ, "t", host="10.0.0.2")


@pytest.mark.parametrize(
    ("granted", "asked", "result"),
    [
        (AclOperation.READ, AclOperation.DESCRIBE, True),
        (AclOperation.WRITE, AclOperation.DESCRIBE, True),
        (AclOperation.DELETE, AclOperation.DESCRIBE, True),
        (AclOperation.ALTER, AclOperation.DESCRIBE, True),
        (AclOperation.CREATE, AclOperation.DESCRIBE, False),
        (AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS, True),
        (AclOperation.DESCRIBE, AclOperation.READ, False),
        (AclOperation.ALL, AclOperation.IDEMPOTENT_WRITE, True),
    ],
)
def test_implied_operations_of_allow_acls(
    granted: AclOperation, asked: AclOperation, result: bool
) -> None:
    """READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS,
    ALL implies everything; nothing else is implied."""
    assert allowed(authorizer(acl("t", granted)), asked, "t") is result


def test_a_deny_implies_nothing() -> None:
    """DENY READ does not deny DESCRIBE (implication is for ALLOW ACLs only)."""
    auth = authorizer(
        acl("t", AclOperation.READ, DENY), acl("t", AclOperation.DESCRIBE)
    )
    assert allowed(auth, AclOperation.DESCRIBE, "t")


def test_allow_everyone_applies_only_where_no_acl_names_the_resource() -> None:
    """allow.everyone.if.no.acl.found: a resource with no ACL at all is open; one with
    ACLs for someone else is not."""
    auth = authorizer(
        acl("private", AclOperation.READ, principal="User:bob"),
        allow_everyone_if_no_acl_found=True,
    )
    assert allowed(auth, AclOperation.READ, "public")
    assert (
        auth.authorize(ALICE, "h", Action(AclOperation.READ, TOPIC, "public")).rule
        == "DefaultAllow"
    )
    assert not allowed(auth, AclOperation.READ, "private")


def test_resource_types_are_separate() -> None:
    """A TOPIC ACL says nothing about a GROUP of the same name."""
    auth = authorizer(acl("x", AclOperation.READ))
    assert not allowed(auth, AclOperation.READ, "x", resource=GROUP)


def test_removing_an_acl_takes_its_grant_away() -> None:
    """remove_acl by id (RemoveAccessControlEntryRecord) undoes add_acl."""
    auth = StandardAuthorizer()
    acl_id = uuid.uuid4()
    auth.add_acl(acl_id, acl("t", AclOperation.READ))
    auth.remove_acl(acl_id)
    assert not allowed(auth, AclOperation.READ, "t")
    assert list(auth.acls(ANY_FILTER)) == []


bindings = st.builds(
    acl,
    name=st.sampled_from(["*", "a", "ab", "abc", "b"]),
    op=st.sampled_from(OPS),
    permission=st.sampled_from([ALLOW, DENY]),
    pattern=st.sampled_from([LITERAL, PREFIXED]),
    principal=st.sampled_from(["User:alice", "User:bob", "User:*"]),
    host=st.sampled_from(["*", "h1", "h2"]),
    resource=st.sampled_from([TOPIC, GROUP]),
)


def reference(
    acls: list[AclBinding], who: str, host: str, action: Action, open_default: bool
) -> bool:
    """The rules as Kafka's documentation states them, written plainly."""

    def about(b: AclBinding) -> bool:
        p = b.pattern
        if p.resource_type != action.resource_type:
            return False
        if p.pattern_type == LITERAL:
            return p.name in (action.resource_name, "*")
        return action.resource_name.startswith(p.name)

    def grants(b: AclBinding) -> bool:
        e = b.entry
        if e.principal not in (who, "User:*") or e.host not in ("*", host):
            return False
        if e.operation in (AclOperation.ALL, action.operation):
            return True
        if e.permission_type != ALLOW:
            return False
        if action.operation == AclOperation.DESCRIBE:
            return e.operation in (
                AclOperation.READ,
                AclOperation.WRITE,
                AclOperation.DELETE,
                AclOperation.ALTER,
            )
        return (
            action.operation == AclOperation.DESCRIBE_CONFIGS
            and e.operation == AclOperation.ALTER_CONFIGS
        )

    relevant = [b for b in acls if about(b)]
    matching = [b for b in relevant if grants(b)]
    if any(b.entry.permission_type == DENY for b in matching):
        return False
    if matching:
        return True
    return open_default and not relevant


@settings(max_examples=300)
@given(
    acls=st.lists(bindings, max_size=12),
    who=st.sampled_from(["User:alice", "User:bob"]),
    host=st.sampled_from(["h1", "h2"]),
    op=st.sampled_from(OPS),
    resource=st.sampled_from([TOPIC, GROUP]),
    name=st.sampled_from(["a", "ab", "abc", "abd", "b", "c"]),
    open_default=st.booleans(),
)
def test_every_decision_agrees_with_the_rules_stated_plainly(
    acls: list[AclBinding],
    who: str,
    host: str,
    op: AclOperation,
    resource: ResourceType,
    name: str,
    open_default: bool,
) -> None:
    """For any ACL set and question, the authorizer's answer is the plain model's:
    DENY first, then ALLOW, then the no-ACL default."""
    auth = authorizer(*acls, allow_everyone_if_no_acl_found=open_default)
    action = Action(op, resource, name)
    got = auth.authorize(KafkaPrincipal.from_string(who), host, action).allowed
    assert got == reference(acls, who, host, action, open_default)


@pytest.mark.parametrize(
    ("flt", "found"),
    [
        (
            ResourcePatternFilter(TOPIC, "orders-eu", PatternType.MATCH),
            {"orders-eu", "orders-", "*"},
        ),
        (ResourcePatternFilter(TOPIC, "orders-", PatternType.ANY), {"orders-"}),
        (ResourcePatternFilter(TOPIC, "orders-eu", LITERAL), {"orders-eu"}),
        (ResourcePatternFilter(TOPIC, None, PREFIXED), {"orders-", "o"}),
        (
            ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
            {"orders-eu", "orders-", "*", "o", "other", "g"},
        ),
        (ResourcePatternFilter(GROUP), {"g"}),
    ],
)
def test_pattern_filters_find_what_kafka_finds(
    flt: ResourcePatternFilter, found: set[str]
) -> None:
    """MATCH finds every pattern that applies to the name (literal, wildcard, prefixes);
    ANY and a concrete type find that exact name; a None name finds all names."""
    patterns = [
        ResourcePattern(TOPIC, "orders-eu", LITERAL),
        ResourcePattern(TOPIC, "orders-", PREFIXED),
        ResourcePattern(TOPIC, "*", LITERAL),
        ResourcePattern(TOPIC, "o", PREFIXED),
        ResourcePattern(TOPIC, "other", LITERAL),
        ResourcePattern(GROUP, "g", LITERAL),
    ]
    matched = {p.name for p in patterns if flt.matches(p)}
    if flt.pattern_type is PatternType.MATCH:
        found = found | {"o"}  # "orders-eu" starts with the prefix "o" too
    assert matched == found


def test_entry_filters_and_describe_through_the_authorizer() -> None:
    """An entry filter narrows by principal, host, operation and permission; ``acls``
    gives the matching bindings with their ids."""
    allow_read = acl("t", AclOperation.READ)
    deny_write = acl("t", AclOperation.WRITE, DENY, principal="User:bob")
    auth = authorizer(allow_read, deny_write)
    only_bob = AclBindingFilter(
        entry_filter=AccessControlEntryFilter(principal="User:bob")
    )
    assert [b for _, b in auth.acls(only_bob)] == [deny_write]
    denies = AclBindingFilter(
        entry_filter=AccessControlEntryFilter(permission_type=DENY)
    )
    assert [b for _, b in auth.acls(denies)] == [deny_write]
    assert len(list(auth.acls(ANY_FILTER))) == 2


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (acl("t", AclOperation.ANY), "Invalid operation ANY"),
        (acl("t", AclOperation.UNKNOWN), "Invalid operation UNKNOWN"),
        (
            acl("t", AclOperation.READ, AclPermissionType.ANY),
            "Invalid permissionType ANY",
        ),
        (
            acl("t", AclOperation.READ, pattern=PatternType.MATCH),
            "Invalid patternType MATCH",
        ),
        (
            acl("t", AclOperation.READ, resource=ResourceType.ANY),
            "Invalid resourceType ANY",
        ),
        (acl("", AclOperation.READ), "Resource name should not be empty"),
        (acl("t", AclOperation.READ, principal="alice"), "no colon is present"),
        (
            acl("my-cluster", AclOperation.ALTER, resource=ResourceType.CLUSTER),
            "only valid name for the CLUSTER",
        ),
    ],
)
def test_createacls_refuses_what_kafka_refuses(
    binding: AclBinding, message: str
) -> None:
    """Each refusal is INVALID_REQUEST (42) with Kafka's message."""
    with pytest.raises(InvalidAclError, match=message) as raised:
        validate_new_acl(binding)
    assert raised.value.error_code == 42


def test_a_good_binding_passes_validation() -> None:
    """A prefixed topic ACL and the cluster ACL on kafka-cluster are accepted."""
    validate_new_acl(acl("orders-", AclOperation.WRITE, pattern=PREFIXED))
    validate_new_acl(
        acl("kafka-cluster", AclOperation.CLUSTER_ACTION, resource=ResourceType.CLUSTER)
    )


def test_authorized_operations_lists_what_is_allowed() -> None:
    """KIP-430: the operations of a resource the caller may do, implied ones included."""
    auth = authorizer(acl("t", AclOperation.WRITE))
    got = auth.authorized_operations(ALICE, "h", TOPIC, "t", OPS)
    assert got == {AclOperation.WRITE, AclOperation.DESCRIBE}


@pytest.mark.parametrize(
    ("binding_filter", "message"),
    [
        (
            AclBindingFilter(ResourcePatternFilter(pattern_type=PatternType.UNKNOWN)),
            "Unknown patternFilter.",
        ),
        (
            AclBindingFilter(ResourcePatternFilter(ResourceType.UNKNOWN)),
            "Unknown patternFilter.",
        ),
        (
            AclBindingFilter(
                entry_filter=AccessControlEntryFilter(operation=AclOperation.UNKNOWN)
            ),
            "Unknown entryFilter.",
        ),
    ],
)
def test_deleteacls_refuses_a_filter_with_an_unknown_part(
    binding_filter: AclBindingFilter, message: str
) -> None:
    """A filter naming an UNKNOWN type, pattern or operation is INVALID_REQUEST; ANY
    and MATCH are fine."""
    with pytest.raises(InvalidAclError, match=message):
        validate_filter(binding_filter)
    validate_filter(ANY_FILTER)


def by_type(auth: StandardAuthorizer, op: AclOperation = AclOperation.WRITE) -> bool:
    return auth.authorize_by_resource_type(ALICE, "10.0.0.1", op, TOPIC)


def test_by_resource_type_some_allowed_topic_is_enough() -> None:
    """KIP-679: an idempotent producer needs WRITE on some topic; any LITERAL or
    PREFIXED ALLOW grants it, none (or another operation) does not."""
    assert not by_type(authorizer())
    assert not by_type(authorizer(acl("orders", AclOperation.READ)))
    assert by_type(authorizer(acl("orders", AclOperation.WRITE)))
    assert by_type(authorizer(acl("ord", AclOperation.WRITE, pattern=PREFIXED)))
    assert by_type(authorizer(acl("orders", AclOperation.ALL)))


def test_by_resource_type_a_deny_covering_every_allow_refuses() -> None:
    """A DENY of every name, of the same name, or of a prefix of an ALLOW takes the
    ALLOW away; one that covers only part of a PREFIXED ALLOW does not."""
    write = AclOperation.WRITE
    assert not by_type(
        authorizer(acl("orders", write), acl("*", write, permission=DENY))
    )
    assert not by_type(
        authorizer(acl("orders", write), acl("orders", write, permission=DENY))
    )
    assert not by_type(
        authorizer(
            acl("orders-eu", write, pattern=PREFIXED),
            acl("orders", write, permission=DENY, pattern=PREFIXED),
        )
    )
    assert by_type(
        authorizer(
            acl("orders", write, pattern=PREFIXED),
            acl("orders-eu", write, permission=DENY, pattern=PREFIXED),
        )
    )


def test_by_resource_type_super_users_and_allow_everyone_pass() -> None:
    assert by_type(authorizer(super_users={"User:alice"}))
    assert by_type(authorizer(allow_everyone_if_no_acl_found=True))
    # another principal's ALLOW grants alice nothing
    assert not by_type(
        authorizer(acl("orders", AclOperation.WRITE, principal="User:bob"))
    )
