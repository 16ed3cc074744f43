"""SCRAM credentials and ACLs in ZooKeeper mode, the decisions (sans-IO): what a
client's AlterUserScramCredentials, CreateAcls or DeleteAcls changes in the znodes, and
what the broker's image holds for what the znodes hold.

The checks and the answers are KRaft's, from the controller's own cores (Kafka's
``ScramControlManager`` and ``AclControlManager``), run over what ZooKeeper holds now:
the same request gets the same errors in both modes. Their records are then read back
as znode contents: a user's new config entries, a pattern's new set of entries.

The broker's image keeps credentials and ACLs as KRaft's records
(:func:`scram_image`, :func:`acl_image`), so that the SASL listeners, the authorizer and
the Describe APIs read one shape in both modes. An ACL in ZooKeeper has no Uuid: its id
in the image is derived from the binding (:func:`acl_id`), the same on every broker.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from minikafka.common.timeline import SnapshotRegistry
from minikafka.controller import (
    MECHANISMS_BY_TYPE,
    AccessControlEntryRecord,
    AclControlManager,
    AclResult,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    RemoveAccessControlEntryRecord,
    RemoveUserScramCredentialRecord,
    ScramControlManager,
    UserScramCredentialRecord,
    acl_binding,
    acl_record,
)
from minikafka.security import (
    SCRAM_MECHANISMS,
    AccessControlEntry,
    AclBinding,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
    ScramCredential,
    validate_new_acl,
)
from minikafka.zk import encode_scram_credential, scram_credentials

PatternEntries = Mapping[ResourcePattern, frozenset[AccessControlEntry]]

_ACL_NAMESPACE = uuid.UUID("6b61666b-612d-6163-6c2d-7a6b2d6d6f64")


def acl_id(binding: AclBinding) -> uuid.UUID:
    """The image's id of an ACL read from ZooKeeper: a name-based Uuid of the binding."""
    p, e = binding.pattern, binding.entry
    name = (
        f"{int(p.resource_type)}|{int(p.pattern_type)}|{p.name}|{e.principal}|"
        f"{e.host}|{int(e.operation)}|{int(e.permission_type)}"
    )
    return uuid.uuid5(_ACL_NAMESPACE, name)


def acl_image(acls: PatternEntries) -> dict[uuid.UUID, AccessControlEntryRecord]:
    """The ACLs of the znodes as the image's records."""
    image: dict[uuid.UUID, AccessControlEntryRecord] = {}
    for pattern, entries in acls.items():
        for entry in entries:
            binding = AclBinding(pattern, entry)
            image[acl_id(binding)] = acl_record(acl_id(binding), binding)
    return image


def scram_image(
    users: Mapping[str, Mapping[str, ScramCredential]],
) -> dict[tuple[str, int], UserScramCredentialRecord]:
    """The credentials of the ``/config/users`` znodes as the image's records."""
    image: dict[tuple[str, int], UserScramCredentialRecord] = {}
    for user, credentials in users.items():
        for name, credential in credentials.items():
            mechanism = SCRAM_MECHANISMS[name].type
            image[(user, mechanism)] = UserScramCredentialRecord(
                name=user,
                mechanism=mechanism,
                salt=credential.salt,
                stored_key=credential.stored_key,
                server_key=credential.server_key,
                iterations=credential.iterations,
            )
    return image


def altered_user_configs(
    configs: Mapping[str, Mapping[str, str]], request: AlterUserScramCredentialsRequest
) -> tuple[dict[str, dict[str, str]], AlterUserScramCredentialsResponse]:
    """The new config entries of each user the request changes (its other entries, its
    quotas, kept), and the answer. ``configs`` holds the current entries of every user
    the request names (empty for one without a znode)."""
    manager = ScramControlManager(SnapshotRegistry())
    current = {user: scram_credentials(config) for user, config in configs.items()}
    for existing in scram_image(current).values():
        manager.replay(existing)
    result = manager.alter(request)
    altered: dict[str, dict[str, str]] = {}
    for record in result.records:
        if isinstance(record, UserScramCredentialRecord):
            config = altered.setdefault(record.name, dict(configs.get(record.name, {})))
            credential = ScramCredential(
                record.salt, record.stored_key, record.server_key, record.iterations
            )
            name = MECHANISMS_BY_TYPE[record.mechanism].mechanism_name
            config[name] = encode_scram_credential(credential)
        elif isinstance(record, RemoveUserScramCredentialRecord):
            config = altered.setdefault(record.name, dict(configs.get(record.name, {})))
            config.pop(MECHANISMS_BY_TYPE[record.mechanism].mechanism_name, None)
    (response,) = result.replies
    return altered, response


def _acl_manager(
    acls: PatternEntries,
) -> tuple[AclControlManager, dict[uuid.UUID, AccessControlEntryRecord]]:
    manager = AclControlManager(SnapshotRegistry(), random.Random(0))
    image = acl_image(acls)
    for record in image.values():
        manager.replay(record)
    return manager, image


def storable(pattern: ResourcePattern) -> bool:
    """Whether a pattern has a znode: a literal or prefixed pattern of a known resource
    type whose name is one znode name (no ``/``, neither ``.`` nor ``..``)."""
    return (
        pattern.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED)
        and pattern.resource_type not in (ResourceType.UNKNOWN, ResourceType.ANY)
        and "/" not in pattern.name
        and pattern.name not in ("", ".", "..")
    )


def _unstorable(binding: AclBinding) -> bool:
    """A binding KRaft would accept whose name no znode can have."""
    try:
        validate_new_acl(binding)
    except InvalidAclError:
        return False  # refused by the checks, with their error
    return not storable(binding.pattern)


def acls_created(
    acls: PatternEntries, request: CreateAclsRequest
) -> tuple[dict[ResourcePattern, frozenset[AccessControlEntry]], CreateAclsResponse]:
    """The new entries of each pattern the creations add to, and the answer (an ACL that
    exists already is accepted and changes nothing). ``acls`` holds at least the
    current entries of every storable pattern the request names. A name ZooKeeper
    cannot hold as one znode (``a/b``) is refused with INVALID_REQUEST."""
    manager, _ = _acl_manager(acls)
    kept = tuple(b for b in request.creations if not _unstorable(b))
    result = manager.create(CreateAclsRequest(kept))
    changed: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for record in result.records:
        if isinstance(record, AccessControlEntryRecord):
            binding = acl_binding(record)
            entries = changed.setdefault(
                binding.pattern, set(acls.get(binding.pattern, ()))
            )
            entries.add(binding.entry)
    (response,) = result.replies
    answers = iter(response.results)
    results = tuple(
        AclResult(ErrorCode.invalid_request, f"{b.pattern.name!r} is not a znode name")
        if _unstorable(b)
        else next(answers)
        for b in request.creations
    )
    return {p: frozenset(e) for p, e in changed.items()}, CreateAclsResponse(results)


def acls_deleted(
    acls: PatternEntries, request: DeleteAclsRequest
) -> tuple[dict[ResourcePattern, frozenset[AccessControlEntry]], DeleteAclsResponse]:
    """The entries left of each pattern the filters match in, and the answer.
    ``acls`` holds every stored pattern's entries."""
    manager, image = _acl_manager(acls)
    result = manager.delete(request)
    changed: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for record in result.records:
        if isinstance(record, RemoveAccessControlEntryRecord):
            binding = acl_binding(image[record.id])
            entries = changed.setdefault(
                binding.pattern, set(acls.get(binding.pattern, ()))
            )
            entries.discard(binding.entry)
    (response,) = result.replies
    return {p: frozenset(e) for p, e in changed.items()}, response
