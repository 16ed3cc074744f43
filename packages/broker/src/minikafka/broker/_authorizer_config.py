"""The authorizer's keys (Kafka's ``authorizer.class.name``, KIP-801's StandardAuthorizer
options): whether requests are authorized at all, and by whom.

``authorizer.class.name`` is empty by default, as in Kafka: no authorizer, every request
allowed and the ACL APIs answer SECURITY_DISABLED. The classes minikafka builds are
KRaft's ``org.apache.kafka.metadata.authorizer.StandardAuthorizer`` and ZooKeeper mode's
``kafka.security.authorizer.AclAuthorizer`` (Kafka 3.x), which decide alike; they differ
in where the ACLs are kept, the metadata log or ZooKeeper, and a broker reads them from
where its mode keeps them. Any other name stops start-up naming the key, as a class
Kafka cannot load does.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import ConfigDef, ConfigError, ConfigKey, ConfigType
from minikafka.security import parse_super_users

AUTHORIZER_CLASS_NAME = "authorizer.class.name"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
"""ZooKeeper mode's authorizer in Kafka 3.x (ACLs under ``/kafka-acl``)."""
AUTHORIZERS = (STANDARD_AUTHORIZER, ACL_AUTHORIZER)


def _authorizer_class(key: str, value: str) -> str:
    name = value.strip()
    if name not in ("", *AUTHORIZERS):
        raise ConfigError(
            key,
            f"class {name} is not available (only {' and '.join(AUTHORIZERS)} are built)",
        )
    return name


def _super_users(key: str, value: str) -> frozenset[str]:
    users = parse_super_users(value)
    for user in users:
        if ":" not in user:
            raise ConfigError(key, f"{user} is not a principal (Type:name)")
    return users


@attrs.frozen
class AuthorizerSettings:
    authorizer_class_name: str = ""
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @property
    def enabled(self) -> bool:
        return self.authorizer_class_name in AUTHORIZERS

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> AuthorizerSettings:
        return AUTHORIZER_CONFIG.apply(cls(), props)


AUTHORIZER_CONFIG = ConfigDef(
    (
        ConfigKey(
            AUTHORIZER_CLASS_NAME,
            _authorizer_class,
            "authorizer_class_name",
            doc="Empty: no authorizer. "
            + " or ".join(AUTHORIZERS)
            + ": ACLs are checked.",
        ),
        ConfigKey(
            "super.users",
            _super_users,
            "super_users",
            doc="Principals (User:name) separated by semicolons, allowed everything.",
        ),
        ConfigKey(
            "allow.everyone.if.no.acl.found",
            ConfigType.BOOLEAN,
            "allow_everyone_if_no_acl_found",
            doc="Whether a resource no ACL names is open to everyone.",
        ),
    )
)
