"""What a change to a resource's dynamic configs leaves it with (KIP-133's AlterConfigs,
KIP-339's IncrementalAlterConfigs).

In KRaft mode the controller computes it (Kafka's ``ConfigurationControlManager``) and
writes one ConfigRecord per key that changed; in ZooKeeper mode the broker that got the
request computes it (Kafka 2.8's ``ZkAdminManager``) and writes the resource's whole
znode. Both call these functions, over the overrides the resource has now:

- IncrementalAlterConfigs changes only the keys it names: SET a value, DELETE the
  override (the key falls back to the broker's default), APPEND to or SUBTRACT from a
  LIST key such as ``cleanup.policy`` (starting from the key's default when it is not
  overridden);
- the legacy AlterConfigs replaces the resource's whole set: a key it does not name is
  deleted.

Either way a resource's change is all or nothing: one bad entry refuses the resource,
with Kafka's error, and nothing of it is written. Which keys a *broker* may change at
run time is the broker's business (it checks before it asks); here a broker resource
is any key with a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kio.schema.errors import ErrorCode

from minikafka.common import ApiError, ConfigError
from minikafka.log import LogConfig

from ._config import TOPIC_CONFIG, validate_topic_config
from ._records import ConfigResourceType
from ._requests import AlterableConfig, AlterConfigOp

LIST_TOPIC_CONFIGS: frozenset[str] = frozenset(
    {
        "cleanup.policy",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
    }
)
"""The topic keys whose type is LIST in Kafka: the only ones APPEND and SUBTRACT take."""


class ConfigChangeError(ApiError):
    """A resource's change refused, with the error code its answer carries."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def incrementally_altered(
    resource_type: int, current: Mapping[str, str], ops: Sequence[AlterableConfig]
) -> dict[str, str]:
    """The overrides after applying ``ops`` in order to ``current``; checked."""
    configs = dict(current)
    for entry in ops:
        name = entry.name
        if entry.op == AlterConfigOp.DELETE:
            configs.pop(name, None)
            continue
        if entry.value is None:
            raise ConfigChangeError(
                ErrorCode.invalid_config, f"Null value not supported for: {name}"
            )
        if entry.op == AlterConfigOp.SET:
            configs[name] = entry.value
            continue
        if resource_type != ConfigResourceType.TOPIC or name not in LIST_TOPIC_CONFIGS:
            raise ConfigChangeError(
                ErrorCode.invalid_config,
                f"Can't {entry.op.name} to key {name} because its type is not LIST.",
            )
        parts = _parts(configs[name] if name in configs else _default(name))
        given = entry.value.split(",")
        if entry.op == AlterConfigOp.APPEND:
            parts += [p for p in dict.fromkeys(given) if p and p not in parts]
        else:
            parts = [p for p in parts if p not in given]
        configs[name] = ",".join(parts)
    check_configs(resource_type, configs)
    return configs


def replaced(
    resource_type: int, entries: Iterable[tuple[str, str | None]]
) -> dict[str, str]:
    """The legacy AlterConfigs' new set: exactly ``entries``; checked."""
    configs: dict[str, str] = {}
    for name, value in entries:
        if value is None:
            raise ConfigChangeError(
                ErrorCode.invalid_config, f"Null value not supported for: {name}"
            )
        configs[name] = value
    check_configs(resource_type, configs)
    return configs


def check_configs(resource_type: int, configs: Mapping[str, str]) -> None:
    """Refuse a topic's set of overrides that Kafka's ``LogConfig.validate`` refuses:
    a key that is not a topic config, or a value its type or range does not allow."""
    if resource_type != ConfigResourceType.TOPIC:
        return
    for name, value in configs.items():
        # Kafka's LogConfig messages, which its tools print as they are.
        if name not in TOPIC_CONFIG:
            raise ConfigChangeError(
                ErrorCode.invalid_config, f"Unknown topic config name: {name}"
            )
        try:
            validate_topic_config(name, value)
        except ConfigError as exc:
            reason = str(exc).removeprefix(f"{name}: ")
            raise ConfigChangeError(
                ErrorCode.invalid_config,
                f"Invalid value {value} for configuration {name}: {reason}",
            ) from None


def changes(
    current: Mapping[str, str], altered: Mapping[str, str]
) -> list[tuple[str, str | None]]:
    """What turns ``current`` into ``altered``: each key set to a new value, then each
    key deleted (None), in a stable order."""
    set_ = [(k, v) for k, v in altered.items() if current.get(k) != v]
    deleted: list[tuple[str, str | None]] = [
        (k, None) for k in current if k not in altered
    ]
    return [*set_, *deleted]


def _parts(value: str) -> list[str]:
    return [part for part in value.split(",") if part]


def _default(name: str) -> str:
    """The key's default as Kafka's schema gives it (not the broker's setting)."""
    field = TOPIC_CONFIG[name].field
    assert field is not None
    value = getattr(LogConfig(), field)
    if isinstance(value, frozenset):
        return ",".join(sorted(value))
    return str(value)
