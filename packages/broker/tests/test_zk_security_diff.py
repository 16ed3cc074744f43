"""ZooKeeper mode's credential and ACL changes, decided without ZooKeeper: KRaft's
checks over what the znodes hold, read back as the znodes' new contents.

Guarantees checked:

- an upsertion becomes the user's ``SCRAM-SHA-256`` entry, the same credential KRaft's
  record holds, and the user's other entries (quotas) are kept; a deletion removes
  only that entry; a deletion of a credential that does not exist is
  RESOURCE_NOT_FOUND and a credential altered twice DUPLICATE_RESOURCE, with nothing
  changed for that user and the other users' changes made;
- the image shows the znodes' credentials and ACLs as KRaft's records; an ACL's id is
  the same on every broker;
- a creation adds to the pattern's current entries; an existing ACL is accepted and
  changes nothing; an invalid one and a name no znode can hold (``a/b``) are refused
  with INVALID_REQUEST, in their place among the results, the others made;
- a deletion leaves each matched pattern its other entries; an ACL two filters match
  is listed once; an invalid filter gets INVALID_REQUEST.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.broker.zk._security_diff import (
    acl_id,
    acl_image,
    acls_created,
    acls_deleted,
    altered_user_configs,
    scram_image,
)
from minikafka.controller import (
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    DeleteAclsRequest,
    ScramDeletion,
    ScramUpsertion,
)
from minikafka.controller._scram_control import upsertion_record
from minikafka.security import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    ScramCredential,
)
from minikafka.zk import decode_scram_credential, encode_scram_credential

SHA256, SHA512 = 1, 2
UPSERT = ScramUpsertion("alice", SHA256, 4096, b"salt", b"s" * 32)
OLD = ScramCredential(b"old", b"k", b"s", 4096)
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
PREFIX = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
READ = AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW)
WRITE = AccessControlEntry("User:a", "*", AclOperation.WRITE, AclPermissionType.ALLOW)


def test_an_upsertion_is_krafts_credential_and_keeps_the_other_entries() -> None:
    configs = {"alice": {"producer_byte_rate": "1024"}}
    altered, answer = altered_user_configs(
        configs, AlterUserScramCredentialsRequest((), (UPSERT,))
    )
    assert [r.error_code for r in answer.results] == [ErrorCode.none]
    config = altered["alice"]
    assert config["producer_byte_rate"] == "1024"
    record = upsertion_record(UPSERT)
    assert decode_scram_credential(config["SCRAM-SHA-256"]) == ScramCredential(
        record.salt, record.stored_key, record.server_key, record.iterations
    )


def test_a_deletion_removes_only_that_mechanism() -> None:
    configs = {
        "alice": {
            "SCRAM-SHA-256": encode_scram_credential(OLD),
            "SCRAM-SHA-512": encode_scram_credential(OLD),
            "quota": "1",
        }
    }
    request = AlterUserScramCredentialsRequest((ScramDeletion("alice", SHA256),), ())
    altered, answer = altered_user_configs(configs, request)
    assert [r.error_code for r in answer.results] == [ErrorCode.none]
    assert altered == {
        "alice": {"SCRAM-SHA-512": encode_scram_credential(OLD), "quota": "1"}
    }


def test_kafkas_errors_change_nothing_for_that_user_only() -> None:
    bob = ScramUpsertion("bob", SHA512, 4096, b"salt", b"s" * 64)
    request = AlterUserScramCredentialsRequest(
        (ScramDeletion("carol", SHA256),), (UPSERT, UPSERT, bob)
    )
    altered, answer = altered_user_configs(
        {"alice": {}, "bob": {}, "carol": {}}, request
    )
    errors = {r.user: r.error_code for r in answer.results}
    assert errors == {
        "carol": ErrorCode.resource_not_found,
        "alice": ErrorCode.duplicate_resource,
        "bob": ErrorCode.none,
    }
    assert list(altered) == ["bob"]


def test_the_image_holds_the_znodes_as_krafts_records() -> None:
    scram = scram_image({"alice": {"SCRAM-SHA-512": OLD}})
    assert list(scram) == [("alice", SHA512)]
    assert (scram["alice", SHA512].salt, scram["alice", SHA512].iterations) == (
        b"old",
        4096,
    )
    acls = acl_image({ORDERS: frozenset({READ})})
    binding = AclBinding(ORDERS, READ)
    assert list(acls) == [acl_id(binding)]
    assert acl_id(binding) == acl_id(AclBinding(ORDERS, READ))
    assert acl_id(binding) != acl_id(AclBinding(PREFIX, READ))


def test_creations_add_to_the_pattern_and_refuse_in_place() -> None:
    invalid = AclBinding(
        ResourcePattern(ResourceType.CLUSTER, "not-the-cluster", PatternType.LITERAL),
        READ,
    )
    nested = AclBinding(
        ResourcePattern(ResourceType.GROUP, "a/b", PatternType.LITERAL), READ
    )
    request = CreateAclsRequest(
        (invalid, AclBinding(ORDERS, READ), nested, AclBinding(ORDERS, WRITE))
    )
    changed, answer = acls_created({ORDERS: frozenset({READ})}, request)
    assert [r.error_code for r in answer.results] == [
        ErrorCode.invalid_request,
        ErrorCode.none,
        ErrorCode.invalid_request,
        ErrorCode.none,
    ]
    assert changed == {ORDERS: frozenset({READ, WRITE})}


def test_an_existing_acl_is_accepted_and_changes_nothing() -> None:
    changed, answer = acls_created(
        {ORDERS: frozenset({READ})}, CreateAclsRequest((AclBinding(ORDERS, READ),))
    )
    assert [r.error_code for r in answer.results] == [ErrorCode.none]
    assert changed == {}


def _filter(
    pattern_type: PatternType, operation: AclOperation = AclOperation.ANY
) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, None, pattern_type),
        AccessControlEntryFilter("User:a", None, operation, AclPermissionType.ANY),
    )


def test_deletions_leave_each_pattern_its_other_entries() -> None:
    acls = {ORDERS: frozenset({READ, WRITE}), PREFIX: frozenset({READ})}
    reads = _filter(PatternType.ANY, AclOperation.READ)
    request = DeleteAclsRequest(
        (reads, _filter(PatternType.LITERAL, AclOperation.READ))
    )
    changed, answer = acls_deleted(acls, request)
    assert changed == {ORDERS: frozenset({WRITE}), PREFIX: frozenset()}
    first, second = answer.results
    assert sorted(first.matching) == sorted(
        [AclBinding(ORDERS, READ), AclBinding(PREFIX, READ)]
    )
    assert second.matching == ()  # already listed under the first filter


def test_an_invalid_filter_gets_invalid_request() -> None:
    bad = _filter(PatternType.UNKNOWN)
    changed, answer = acls_deleted(
        {ORDERS: frozenset({READ})}, DeleteAclsRequest((bad,))
    )
    assert [r.error_code for r in answer.results] == [ErrorCode.invalid_request]
    assert changed == {}
