"""The broker's group settings (Kafka's ``group.*`` and ``offsets.*`` configs), declared in
:data:`GROUP_CONFIG` (a :class:`minikafka.common.ConfigDef`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from minikafka.common import ConfigDef, ConfigError, ConfigKey, ConfigType, at_least

__all__ = [
    "GROUP_CONFIG",
    "MAX_PROTOCOL_STRING",
    "MIGRATION_POLICIES",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "GroupConfig",
]

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a new member's JoinGroup may stay parked before the member is dropped
(Kafka's ``NewMemberJoinTimeoutMs``): its client may have given up and rejoined."""
MAX_PROTOCOL_STRING = 2**15 - 1
"""The longest string the protocol carries (int16 length): a member id must fit."""


@attrs.frozen
class GroupConfig:
    """The broker's group settings (Kafka's ``group.*`` configs)."""

    group_min_session_timeout_ms: int = attrs.field(
        default=6000, validator=attrs.validators.gt(0)
    )
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = attrs.field(
        default=3000, validator=attrs.validators.ge(0)
    )
    group_max_size: int = 2**31 - 1
    offsets_topic_num_partitions: int = attrs.field(
        default=50, validator=attrs.validators.gt(0)
    )
    offsets_retention_minutes: int = attrs.field(
        default=7 * 24 * 60, validator=attrs.validators.gt(0)
    )
    offsets_retention_check_interval_ms: int = attrs.field(
        default=600_000, validator=attrs.validators.gt(0)
    )
    offset_metadata_max_bytes: int = 4096
    # KIP-848's consumer groups (Kafka's GroupCoordinatorConfig, ``group.consumer.*``)
    group_consumer_session_timeout_ms: int = attrs.field(
        default=45_000, validator=attrs.validators.gt(0)
    )
    group_consumer_heartbeat_interval_ms: int = attrs.field(
        default=5_000, validator=attrs.validators.gt(0)
    )
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    group_consumer_max_size: int = 2**31 - 1
    # which way a live group may change protocol (``_migration.MigrationPolicy``)
    group_consumer_migration_policy: str = "bidirectional"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> GroupConfig:
        """Read the keys :data:`GROUP_CONFIG` declares; other keys are left alone."""
        config = GROUP_CONFIG.apply(cls(), props)
        if config.group_max_session_timeout_ms < config.group_min_session_timeout_ms:
            raise ConfigError(
                _MAX_SESSION.name,
                f"{config.group_max_session_timeout_ms} is below {_MIN_SESSION.name} "
                f"({config.group_min_session_timeout_ms})",
            )
        return config


_INT = ConfigType.INT
SERVER_ASSIGNOR_NAMES = ("uniform", "range")
"""The server-side assignors (KIP-848) ``group.consumer.assignors`` may list; Kafka
takes class names too, minikafka the names only."""


def _known_assignors(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, "names no assignor")
    for name in value:
        if name not in SERVER_ASSIGNOR_NAMES:
            raise ConfigError(
                key, f"{name!r} is not one of {', '.join(SERVER_ASSIGNOR_NAMES)}"
            )


MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")
"""``group.consumer.migration.policy``'s values (Kafka's ``ConsumerGroupMigrationPolicy``,
read case-insensitively)."""


def _migration_policy(key: str, value: Any) -> None:
    if str(value).lower() not in MIGRATION_POLICIES:
        raise ConfigError(
            key, f"{value!r} is not one of {', '.join(MIGRATION_POLICIES)}"
        )


_MIN_SESSION = ConfigKey(
    "group.min.session.timeout.ms",
    _INT,
    "group_min_session_timeout_ms",
    at_least(1),
    "The shortest session timeout a member may ask for.",
)
_MAX_SESSION = ConfigKey(
    "group.max.session.timeout.ms",
    _INT,
    "group_max_session_timeout_ms",
    at_least(1),
    "The longest session timeout a member may ask for.",
)

GROUP_CONFIG = ConfigDef(
    (
        _MIN_SESSION,
        _MAX_SESSION,
        ConfigKey(
            "group.initial.rebalance.delay.ms",
            _INT,
            "group_initial_rebalance_delay_ms",
            at_least(0),
            "How long the first rebalance of an empty group waits for more members.",
        ),
        ConfigKey(
            "group.max.size",
            _INT,
            "group_max_size",
            at_least(1),
            "Members a group may have.",
        ),
        ConfigKey(
            "offsets.topic.num.partitions",
            _INT,
            "offsets_topic_num_partitions",
            at_least(1),
            "Partitions of __consumer_offsets.",
        ),
        ConfigKey(
            "offsets.retention.minutes",
            _INT,
            "offsets_retention_minutes",
            at_least(1),
            "How long an empty group's committed offsets are kept.",
        ),
        ConfigKey(
            "offsets.retention.check.interval.ms",
            _INT,
            "offsets_retention_check_interval_ms",
            at_least(1),
            "How often expired offsets are looked for.",
        ),
        ConfigKey(
            "offset.metadata.max.bytes",
            _INT,
            "offset_metadata_max_bytes",
            at_least(0),
            "The longest metadata string a commit may carry.",
        ),
        ConfigKey(
            "group.consumer.session.timeout.ms",
            _INT,
            "group_consumer_session_timeout_ms",
            at_least(1),
            "How long a consumer-protocol member may go without a heartbeat.",
        ),
        ConfigKey(
            "group.consumer.heartbeat.interval.ms",
            _INT,
            "group_consumer_heartbeat_interval_ms",
            at_least(1),
            "How often a consumer-protocol member is told to heartbeat.",
        ),
        ConfigKey(
            "group.consumer.assignors",
            ConfigType.LIST,
            "group_consumer_assignors",
            _known_assignors,
            "The server-side assignors, the first being the default (uniform, range).",
        ),
        ConfigKey(
            "group.consumer.max.size",
            _INT,
            "group_consumer_max_size",
            at_least(1),
            "Members a consumer-protocol group may have.",
        ),
        ConfigKey(
            "group.consumer.migration.policy",
            ConfigType.STRING,
            "group_consumer_migration_policy",
            _migration_policy,
            "Which way a live group may change protocol: disabled, upgrade, "
            "downgrade or bidirectional.",
        ),
    )
)
"""The group coordinator's keys (Kafka's GroupCoordinatorConfig)."""
