"""SCRAM credentials and ACLs as ZooKeeper mode keeps them (Kafka 3.x's ``ZkData``:
``ConfigEntityZNode`` for users, ``ZkAclStore``, ``ZkAclChangeStore``); sans-IO.

- A user's SCRAM credentials are entries of its config znode,
  ``/config/users/<sanitized user>`` (``{"version":1,"config":{...}}``): the key is the
  mechanism's name, the value Kafka's ``ScramCredentialUtils.credentialToString``,
  ``salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>``. The same
  znode may hold the user's quotas, which are kept as they are. A change is announced
  as any config change is, ``/config/changes/config_change_<n>`` naming
  ``users/<sanitized user>``.
- A resource pattern's ACLs are one znode, ``/kafka-acl/<ResourceType>/<name>`` for a
  literal pattern and ``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` for a
  prefixed one, holding ``{"version":1,"acls":[{"principal","permissionType",
  "operation","host"}]}`` with Kafka's names (``Topic``, ``Allow``, ``IdempotentWrite``).
  A change is announced by a sequential znode naming the pattern:
  ``/kafka-acl-changes/acl_changes_<n>`` holds ``TOPIC:<name>`` for a literal pattern,
  ``/kafka-acl-extended-changes/acl_changes_<n>`` a JSON event for a prefixed one.
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import TypeVar

from minikafka.security import (
    SCRAM_MECHANISMS,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    ScramCredential,
)

from ._znodes import ZnodeError

USER_CONFIGS = "/config/users"
USERS_ENTITY = "users"
"""The entity type of a user's config (``/config/users``), as notifications name it."""
LITERAL_ACLS = "/kafka-acl"
EXTENDED_ACLS = "/kafka-acl-extended"
LITERAL_ACL_CHANGES = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGES = (LITERAL_ACL_CHANGES, EXTENDED_ACL_CHANGES)
ACL_CHANGE_PREFIX = "acl_changes_"
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)
STORED_RESOURCE_TYPES = tuple(
    t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY)
)


def sanitize(name: str) -> str:
    """A user name as a znode name (Kafka's ``Sanitizer.sanitize``: URL-encoded, with
    ``*`` as ``%2A``, a space as ``%20``, ``~`` left as it is)."""
    return urllib.parse.quote(name, safe="-_.~")


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


def user_config_path(user: str) -> str:
    return f"{USER_CONFIGS}/{sanitize(user)}"


def encode_scram_credential(credential: ScramCredential) -> str:
    """Kafka's ``ScramCredentialUtils.credentialToString``."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return (
        f"salt={b64(credential.salt)},stored_key={b64(credential.stored_key)},"
        f"server_key={b64(credential.server_key)},iterations={credential.iterations}"
    )


def decode_scram_credential(text: str) -> ScramCredential:
    """Kafka's ``credentialFromString``; ValueError if a field is missing or bad."""
    fields = dict(part.partition("=")[::2] for part in text.split(","))
    try:
        return ScramCredential(
            base64.b64decode(fields["salt"], validate=True),
            base64.b64decode(fields["stored_key"], validate=True),
            base64.b64decode(fields["server_key"], validate=True),
            int(fields["iterations"]),
        )
    except (KeyError, binascii.Error) as exc:
        raise ValueError(f"not a SCRAM credential: {exc}") from None


def scram_credentials(config: Mapping[str, str]) -> dict[str, ScramCredential]:
    """The SCRAM credentials among a user's config entries (mechanism name ->
    credential); an entry that does not parse is left out, as Kafka's credential
    cache leaves it."""
    found: dict[str, ScramCredential] = {}
    for mechanism in SCRAM_MECHANISMS:
        text = config.get(mechanism)
        if text is None:
            continue
        try:
            found[mechanism] = decode_scram_credential(text)
        except ValueError:
            continue
    return found


# --- ACLs -------------------------------------------------------------------------------


def _kafka_name(member: ResourceType | AclOperation | AclPermissionType) -> str:
    """Kafka's ``SecurityUtils`` names: ``TRANSACTIONAL_ID`` -> ``TransactionalId``."""
    return "".join(word.capitalize() for word in member.name.split("_"))


_E = TypeVar("_E", ResourceType, AclOperation, AclPermissionType, PatternType)


def _parse_name(kind: type[_E], text: object) -> _E:
    """A name Kafka wrote, in either spelling (``IdempotentWrite``, ``IDEMPOTENT_WRITE``:
    Kafka's ``fromString`` ignores case); ValueError if it names nothing known."""
    if isinstance(text, str):
        wanted = text.replace("_", "").lower()
        for member in kind:
            if member.name.replace("_", "").lower() == wanted and member.value > 1:
                return member
    raise ValueError(f"unknown {kind.__name__}: {text!r}")


def acl_path(pattern: ResourcePattern) -> str:
    """The znode of a literal or prefixed pattern's ACLs."""
    kind = _kafka_name(pattern.resource_type)
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{LITERAL_ACLS}/{kind}/{pattern.name}"
    if pattern.pattern_type is PatternType.PREFIXED:
        return f"{EXTENDED_ACLS}/prefixed/{kind}/{pattern.name}"
    raise ValueError(f"no znode for {pattern.pattern_type.name} patterns")


def acl_type_paths() -> list[tuple[PatternType, ResourceType, str]]:
    """Every ``<store>/<ResourceType>`` znode whose children are ACL znodes."""
    roots = {
        PatternType.LITERAL: LITERAL_ACLS,
        PatternType.PREFIXED: f"{EXTENDED_ACLS}/prefixed",
    }
    return [
        (pattern_type, kind, f"{roots[pattern_type]}/{_kafka_name(kind)}")
        for pattern_type in STORED_PATTERN_TYPES
        for kind in STORED_RESOURCE_TYPES
    ]


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """A pattern's ACL znode (version 1), entries in a stable order."""
    acls = [
        {
            "principal": e.principal,
            "permissionType": _kafka_name(e.permission_type),
            "operation": _kafka_name(e.operation),
            "host": e.host,
        }
        for e in sorted(entries)
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls(path: str, data: bytes) -> frozenset[AccessControlEntry]:
    """The entries of an ACL znode (empty data: none, as Kafka reads it)."""
    if not data:
        return frozenset()
    try:
        obj = json.loads(data)
        entries = obj["acls"]
        return frozenset(
            AccessControlEntry(
                str(e["principal"]),
                str(e["host"]),
                _parse_name(AclOperation, e["operation"]),
                _parse_name(AclPermissionType, e["permissionType"]),
            )
            for e in entries
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ZnodeError(f"{path}: not an ACL znode: {exc}") from None


def acl_change_parent(pattern: ResourcePattern) -> str:
    literal = pattern.pattern_type is PatternType.LITERAL
    return LITERAL_ACL_CHANGES if literal else EXTENDED_ACL_CHANGES


def encode_acl_change(pattern: ResourcePattern) -> bytes:
    """The notification naming a pattern whose ACLs changed: ``TOPIC:<name>`` for a
    literal pattern (Kafka's legacy form: the enum's own name), a version 1 JSON event
    for any other."""
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    event = {
        "version": 1,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return json.dumps(event, separators=(",", ":")).encode()


def decode_acl_change(parent: str, data: bytes) -> ResourcePattern:
    """The pattern a notification under ``parent`` names; ValueError if it names none."""
    text = data.decode(errors="replace")
    if parent == LITERAL_ACL_CHANGES:
        kind, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected ResourceType:ResourceName, got {text!r}")
        return ResourcePattern(
            _parse_name(ResourceType, kind), name, PatternType.LITERAL
        )
    try:
        event = json.loads(text)
        if int(event["version"]) > 1:
            raise ValueError(f"ACL change event version {event['version']}")
        return ResourcePattern(
            _parse_name(ResourceType, event["resourceType"]),
            str(event["name"]),
            _parse_name(PatternType, event["patternType"]),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not an ACL change event: {text!r}") from exc
