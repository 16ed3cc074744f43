"""ACLs in the metadata log (KIP-801): what the controller writes for CreateAcls and
DeleteAcls, what it refuses with Kafka's errors, and what a broker's image holds after
replaying the records (and after a snapshot of that image)."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from minikafka.controller import (
    AccessControlEntryRecord,
    AclResult,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    MetadataDelta,
    MetadataImage,
    MetadataRecord,
    RemoveAccessControlEntryRecord,
    acl_binding,
    acl_record,
    describe_acls,
)
from minikafka.controller.testing import ControllerHarness
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
)


def _acl(
    topic: str = "orders",
    principal: str = "User:alice",
    operation: AclOperation = AclOperation.WRITE,
    pattern_type: PatternType = PatternType.LITERAL,
    resource_type: ResourceType = ResourceType.TOPIC,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource_type, topic, pattern_type),
        AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW),
    )


def _create(
    harness: ControllerHarness, *bindings: AclBinding
) -> tuple[CreateAclsResponse, list[MetadataRecord]]:
    before = len(harness.log)
    response = harness.request(CreateAclsRequest(bindings))
    assert isinstance(response, CreateAclsResponse)
    return response, [record for _, record in harness.log[before:]]


def _delete(
    harness: ControllerHarness, *filters: AclBindingFilter
) -> tuple[DeleteAclsResponse, list[MetadataRecord]]:
    before = len(harness.log)
    response = harness.request(DeleteAclsRequest(filters))
    assert isinstance(response, DeleteAclsResponse)
    return response, [record for _, record in harness.log[before:]]


def test_a_created_acl_is_one_record_with_an_id_and_an_existing_one_writes_nothing() -> (
    None
):
    harness = ControllerHarness.start()
    response, records = _create(harness, _acl(), _acl())
    assert response.results == (AclResult(), AclResult())
    assert len(records) == 1
    (record,) = records
    assert isinstance(record, AccessControlEntryRecord)
    assert record.id.version == 4
    assert acl_binding(record) == _acl()
    again, more = _create(harness, _acl())
    assert again.results == (AclResult(),)
    assert more == []


def test_a_bad_acl_is_refused_with_invalid_request_and_the_others_are_written() -> None:
    harness = ControllerHarness.start()
    bad = [
        _acl(resource_type=ResourceType.ANY),
        _acl(pattern_type=PatternType.MATCH),
        _acl(operation=AclOperation.ANY),
        _acl(principal="alice"),
        _acl(topic="other", resource_type=ResourceType.CLUSTER),
    ]
    response, records = _create(harness, *bad, _acl())
    codes = [result.error_code for result in response.results]
    assert codes == [ErrorCode.invalid_request] * len(bad) + [ErrorCode.none]
    assert all(result.error_message for result in response.results[:-1])
    assert len(records) == 1


def test_delete_removes_each_matching_acl_once_and_lists_it_under_its_filter() -> None:
    harness = ControllerHarness.start()
    _create(harness, _acl("orders"), _acl("payments"), _acl("orders-", "User:bob"))
    alice = AclBindingFilter(entry_filter=AccessControlEntryFilter("User:alice"))
    orders = AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "orders"))
    response, records = _delete(harness, alice, orders)
    first, second = response.results
    assert first.error_code is ErrorCode.none
    assert set(first.matching) == {_acl("orders"), _acl("payments")}
    assert second.matching == ()  # already removed by the first filter
    assert len(records) == 2
    assert all(isinstance(r, RemoveAccessControlEntryRecord) for r in records)
    left = harness.controller.acls.acls.items()
    assert [binding for _, binding in left] == [_acl("orders-", "User:bob")]


def test_a_filter_with_an_unknown_part_is_refused_and_deletes_nothing() -> None:
    harness = ControllerHarness.start()
    _create(harness, _acl())
    unknown = AclBindingFilter(
        ResourcePatternFilter(ResourceType.UNKNOWN, None, PatternType.ANY)
    )
    response, records = _delete(harness, unknown)
    assert response.results[0].error_code is ErrorCode.invalid_request
    assert records == []


def test_the_image_holds_acls_replayed_and_survives_a_snapshot() -> None:
    first = acl_record(uuid.uuid4(), _acl())
    second = acl_record(
        uuid.uuid4(), _acl("orders-", pattern_type=PatternType.PREFIXED)
    )
    delta = MetadataDelta(MetadataImage())
    delta.replay(first, 0)
    delta.replay(second, 1)
    image = delta.apply()
    assert image.acls == {first.id: first, second.id: second}
    rebuilt = MetadataDelta(MetadataImage())
    for snapshot_record in image.records():
        rebuilt.replay(snapshot_record, image.offset)
    assert rebuilt.apply().acls == image.acls
    removal = MetadataDelta(image)
    removal.replay(RemoveAccessControlEntryRecord(first.id), 2)
    assert set(removal.apply().acls) == {second.id}


def test_describe_from_the_image_matches_literal_wildcard_and_prefixed_acls() -> None:
    acls = {
        r.id: r
        for r in (
            acl_record(uuid.uuid4(), _acl("orders")),
            acl_record(uuid.uuid4(), _acl("*")),
            acl_record(uuid.uuid4(), _acl("ord", pattern_type=PatternType.PREFIXED)),
            acl_record(uuid.uuid4(), _acl("payments")),
        )
    }
    match = AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.MATCH)
    )
    assert {b.pattern.name for b in describe_acls(acls, match)} == {
        "orders",
        "*",
        "ord",
    }
    assert len(describe_acls(acls, AclBindingFilter())) == 4
