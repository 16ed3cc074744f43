"""CreateAcls, DescribeAcls and DeleteAcls (KIP-801's ACLs in KRaft, Kafka's ``AclApis``).

A broker never decides an ACL: it forwards CreateAcls and DeleteAcls to the active
controller (as is, to a controller on another node; as the controller's request in
combined mode), which writes AccessControlEntryRecords and
RemoveAccessControlEntryRecords and answers once they are committed. DescribeAcls is
answered from this broker's metadata image. The caller needs ALTER on the cluster to
create or delete, DESCRIBE to describe (CLUSTER_AUTHORIZATION_FAILED otherwise). With
no authorizer configured (``authorizer.class.name`` empty, Kafka's default) all three
answer SECURITY_DISABLED.

v1 to v3 are served, as Kafka 4.1 serves them (KIP-896 removed v0, which knew no
pattern types); v2 is v1 made flexible (KIP-482), v3 adds the USER resource type.
librdkafka before 2.6 sends v1 only.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TypeAlias

import trio
from kio.schema.create_acls.v1 import request as create_v1
from kio.schema.create_acls.v1 import response as create_v1_response
from kio.schema.create_acls.v2 import request as create_v2
from kio.schema.create_acls.v2 import response as create_v2_response
from kio.schema.create_acls.v3 import request as create_v3
from kio.schema.create_acls.v3 import response as create_v3_response
from kio.schema.delete_acls.v1 import request as delete_v1
from kio.schema.delete_acls.v1 import response as delete_v1_response
from kio.schema.delete_acls.v2 import request as delete_v2
from kio.schema.delete_acls.v2 import response as delete_v2_response
from kio.schema.delete_acls.v3 import request as delete_v3
from kio.schema.delete_acls.v3 import response as delete_v3_response
from kio.schema.describe_acls.v1 import request as describe_v1
from kio.schema.describe_acls.v1 import response as describe_v1_response
from kio.schema.describe_acls.v2 import request as describe_v2
from kio.schema.describe_acls.v2 import response as describe_v2_response
from kio.schema.describe_acls.v3 import request as describe_v3
from kio.schema.describe_acls.v3 import response as describe_v3_response
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32Timedelta

from minikafka.controller import (
    AccessControlEntryRecord,
    AclResult,
    ControllerError,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    acl_binding,
    describe_acls,
)
from minikafka.net import Request
from minikafka.security import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    validate_filter,
)

from ._authorization import BrokerAuthorizer
from ._controller_channel import ControllerChannel, RemoteController
from ._metadata_cache import MetadataCache

ACL_API_VERSIONS = (1, 3)
"""CreateAcls, DescribeAcls and DeleteAcls: v1-v3, as Kafka 4.1 serves them."""

AclImage: TypeAlias = Mapping[uuid.UUID, AccessControlEntryRecord]
_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
_NO_AUTHORIZER = "No Authorizer is configured."
CreateAclsBody: TypeAlias = (
    create_v1.CreateAclsRequest
    | create_v2.CreateAclsRequest
    | create_v3.CreateAclsRequest
)
DeleteAclsBody: TypeAlias = (
    delete_v1.DeleteAclsRequest
    | delete_v2.DeleteAclsRequest
    | delete_v3.DeleteAclsRequest
)
DescribeAclsBody: TypeAlias = (
    describe_v1.DescribeAclsRequest
    | describe_v2.DescribeAclsRequest
    | describe_v3.DescribeAclsRequest
)
CreateAclsAnswer: TypeAlias = (
    create_v1_response.CreateAclsResponse
    | create_v2_response.CreateAclsResponse
    | create_v3_response.CreateAclsResponse
)
DeleteAclsAnswer: TypeAlias = (
    delete_v1_response.DeleteAclsResponse
    | delete_v2_response.DeleteAclsResponse
    | delete_v3_response.DeleteAclsResponse
)
_CREATE: tuple[type[CreateAclsBody], ...] = (
    create_v1.CreateAclsRequest,
    create_v2.CreateAclsRequest,
    create_v3.CreateAclsRequest,
)
_DELETE: tuple[type[DeleteAclsBody], ...] = (
    delete_v1.DeleteAclsRequest,
    delete_v2.DeleteAclsRequest,
    delete_v3.DeleteAclsRequest,
)
_DESCRIBE: tuple[type[DescribeAclsBody], ...] = (
    describe_v1.DescribeAclsRequest,
    describe_v2.DescribeAclsRequest,
    describe_v3.DescribeAclsRequest,
)
_CREATE_ANSWERS = (
    create_v1_response.CreateAclsResponse,
    create_v2_response.CreateAclsResponse,
    create_v3_response.CreateAclsResponse,
)
_DELETE_ANSWERS = (
    delete_v1_response.DeleteAclsResponse,
    delete_v2_response.DeleteAclsResponse,
    delete_v3_response.DeleteAclsResponse,
)
_CREATE_RESPONSE = {
    1: create_v1_response,
    2: create_v2_response,
    3: create_v3_response,
}
_DELETE_RESPONSE = {
    1: delete_v1_response,
    2: delete_v2_response,
    3: delete_v3_response,
}
_DESCRIBE_RESPONSE = {
    1: describe_v1_response,
    2: describe_v2_response,
    3: describe_v3_response,
}


def _code(
    kind: type[ResourceType | PatternType | AclOperation | AclPermissionType],
    value: int,
) -> int:
    """A wire code as Kafka's enum reads it: one it does not know is UNKNOWN (0)."""
    return value if value in kind._value2member_map_ else 0


def binding_of(
    creation: create_v1.AclCreation | create_v2.AclCreation | create_v3.AclCreation,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType(_code(ResourceType, creation.resource_type)),
            creation.resource_name,
            PatternType(_code(PatternType, creation.resource_pattern_type)),
        ),
        AccessControlEntry(
            creation.principal,
            creation.host,
            AclOperation(_code(AclOperation, creation.operation)),
            AclPermissionType(_code(AclPermissionType, creation.permission_type)),
        ),
    )


def filter_of(
    body: DescribeAclsBody
    | delete_v1.DeleteAclsFilter
    | delete_v2.DeleteAclsFilter
    | delete_v3.DeleteAclsFilter,
) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(
            ResourceType(_code(ResourceType, body.resource_type_filter)),
            body.resource_name_filter,
            PatternType(_code(PatternType, body.pattern_type_filter)),
        ),
        AccessControlEntryFilter(
            body.principal_filter,
            body.host_filter,
            AclOperation(_code(AclOperation, body.operation)),
            AclPermissionType(_code(AclPermissionType, body.permission_type)),
        ),
    )


def _create_response(version: int, results: tuple[AclResult, ...]) -> CreateAclsAnswer:
    schema: ModuleType = _CREATE_RESPONSE[version]
    return schema.CreateAclsResponse(  # type: ignore[no-any-return]
        throttle_time=_NO_THROTTLE,
        results=tuple(
            schema.AclCreationResult(
                error_code=r.error_code, error_message=r.error_message
            )
            for r in results
        ),
    )


def _delete_response(
    version: int, results: tuple[DeleteAclsFilterResult, ...]
) -> DeleteAclsAnswer:
    schema: ModuleType = _DELETE_RESPONSE[version]
    return schema.DeleteAclsResponse(  # type: ignore[no-any-return]
        throttle_time=_NO_THROTTLE,
        filter_results=tuple(
            schema.DeleteAclsFilterResult(
                error_code=r.error_code,
                error_message=r.error_message,
                matching_acls=tuple(
                    schema.DeleteAclsMatchingAcl(
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=i8(b.pattern.resource_type),
                        resource_name=b.pattern.name,
                        pattern_type=i8(b.pattern.pattern_type),
                        principal=b.entry.principal,
                        host=b.entry.host,
                        operation=i8(b.entry.operation),
                        permission_type=i8(b.entry.permission_type),
                    )
                    for b in r.matching
                ),
            )
            for r in results
        ),
    )


PUBLISH_WAIT = 5.0
"""Seconds a broker that forwarded CreateAcls or DeleteAcls waits, at most, for its own
image to show the change before it answers."""


async def _until_published(
    authorizer: BrokerAuthorizer, done: Callable[[AclImage], bool]
) -> None:
    """Waits until this broker's image satisfies ``done``, at most :data:`PUBLISH_WAIT`.

    The controller answers once the records are committed; the brokers replay them a
    fetch later. A client that describes the ACLs it just changed asks the broker it
    asked to change them (librdkafka sends all three APIs to the controller Metadata
    named, which is the answering broker here), so this broker answers only once it
    would describe its own change: read-your-writes, at the cost of that fetch."""
    with trio.move_on_after(PUBLISH_WAIT):
        await authorizer.cache.wait_until(lambda image: done(image.acls))


def _succeeded(results: Sequence[object]) -> set[int]:
    """The positions of the results the controller answered NONE."""
    return {
        i
        for i, result in enumerate(results)
        if getattr(result, "error_code", None) == ErrorCode.none
    }


def _all_in(bindings: list[AclBinding], acls: AclImage) -> bool:
    present = {acl_binding(record) for record in acls.values()}
    return all(b in present for b in bindings)


async def handle_create_acls(
    request: Request,
    channel: ControllerChannel,
    enabled: bool,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """A broker's CreateAcls: forwarded to the active controller; every creation gets
    the error if the controller cannot be reached or no authorizer is configured."""
    body = request.body_as(_CREATE)
    version = request.api_version
    count = len(body.creations)
    if not enabled:
        failed = AclResult(ErrorCode.security_disabled, _NO_AUTHORIZER)
        request.respond(_create_response(version, (failed,) * count))
        return
    if authorizer is not None and not authorizer.cluster_allowed(
        request, AclOperation.ALTER
    ):
        failed = AclResult(ErrorCode.cluster_authorization_failed)
        request.respond(_create_response(version, (failed,) * count))
        return
    try:
        if isinstance(channel, RemoteController):
            forwarded = await channel.forward(body)
            if not isinstance(forwarded, _CREATE_ANSWERS):
                raise ControllerError(ErrorCode.unknown_server_error)
            if authorizer is not None:
                ok = _succeeded(forwarded.results)
                asked = [binding_of(c) for c in body.creations]
                made = [b for i, b in enumerate(asked) if i in ok]
                await _until_published(authorizer, lambda acls: _all_in(made, acls))
            request.respond(forwarded)
            return
        answer = await channel.submit(
            CreateAclsRequest(tuple(binding_of(c) for c in body.creations))
        )
    except ControllerError as exc:
        request.respond(_create_response(version, (AclResult(exc.error_code),) * count))
        return
    if not isinstance(answer, CreateAclsResponse):
        code = getattr(answer, "error_code", ErrorCode.unknown_server_error)
        request.respond(_create_response(version, (AclResult(code),) * count))
        return
    request.respond(_create_response(version, answer.results))


async def handle_delete_acls(
    request: Request,
    channel: ControllerChannel,
    enabled: bool,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """A broker's DeleteAcls: forwarded to the active controller."""
    body = request.body_as(_DELETE)
    version = request.api_version
    count = len(body.filters)
    if not enabled:
        failed = DeleteAclsFilterResult(ErrorCode.security_disabled, _NO_AUTHORIZER)
        request.respond(_delete_response(version, (failed,) * count))
        return
    if authorizer is not None and not authorizer.cluster_allowed(
        request, AclOperation.ALTER
    ):
        failed = DeleteAclsFilterResult(ErrorCode.cluster_authorization_failed)
        request.respond(_delete_response(version, (failed,) * count))
        return
    try:
        if isinstance(channel, RemoteController):
            forwarded = await channel.forward(body)
            if not isinstance(forwarded, _DELETE_ANSWERS):
                raise ControllerError(ErrorCode.unknown_server_error)
            if authorizer is not None:
                ok = _succeeded(forwarded.filter_results)
                filters = [filter_of(f) for f in body.filters]
                gone = [f for i, f in enumerate(filters) if i in ok]
                await _until_published(
                    authorizer,
                    lambda acls: not any(describe_acls(acls, f) for f in gone),
                )
            request.respond(forwarded)
            return
        answer = await channel.submit(
            DeleteAclsRequest(tuple(filter_of(f) for f in body.filters))
        )
    except ControllerError as exc:
        failed = DeleteAclsFilterResult(exc.error_code)
        request.respond(_delete_response(version, (failed,) * count))
        return
    if not isinstance(answer, DeleteAclsResponse):
        code = getattr(answer, "error_code", ErrorCode.unknown_server_error)
        failed = DeleteAclsFilterResult(code)
        request.respond(_delete_response(version, (failed,) * count))
        return
    request.respond(_delete_response(version, answer.results))


def handle_describe_acls(
    request: Request,
    cache: MetadataCache,
    enabled: bool,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DescribeAcls from this broker's metadata image, grouped by resource pattern."""
    body = request.body_as(_DESCRIBE)
    schema: ModuleType = _DESCRIBE_RESPONSE[request.api_version]
    binding_filter = filter_of(body)
    error, message = ErrorCode.none, None
    if not enabled:
        error, message = ErrorCode.security_disabled, _NO_AUTHORIZER
    elif authorizer is not None and not authorizer.cluster_allowed(
        request, AclOperation.DESCRIBE
    ):
        error = ErrorCode.cluster_authorization_failed
    else:
        try:
            validate_filter(binding_filter)
        except InvalidAclError as exc:
            error, message = exc.error_code, str(exc)
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    if error is ErrorCode.none:
        for binding in describe_acls(cache.image.acls, binding_filter):
            by_pattern.setdefault(binding.pattern, []).append(binding.entry)
    request.respond(
        schema.DescribeAclsResponse(
            throttle_time=_NO_THROTTLE,
            error_code=error,
            error_message=message,
            resources=tuple(
                schema.DescribeAclsResource(
                    resource_type=i8(pattern.resource_type),
                    resource_name=pattern.name,
                    pattern_type=i8(pattern.pattern_type),
                    acls=tuple(
                        schema.AclDescription(
                            principal=e.principal,
                            host=e.host,
                            operation=i8(e.operation),
                            permission_type=i8(e.permission_type),
                        )
                        for e in entries
                    ),
                )
                for pattern, entries in by_pattern.items()
            ),
        )
    )
