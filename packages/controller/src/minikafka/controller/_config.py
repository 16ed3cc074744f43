"""The controller's configuration, with Kafka's keys and defaults.

Topic-level keys a CreateTopics or IncrementalAlterConfigs request may set are the log's
(every config of Kafka's ``TopicConfig``: ``segment.bytes``, ``cleanup.policy``,
``compression.type``...; see ``minikafka.log.NO_EFFECT`` for those stored without effect)
plus the two replication ones the controller and the partition leader act on; anything
else is INVALID_CONFIG, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from minikafka.log import LOG_KEYS, TOPIC_ONLY_KEYS, ConfigError, LogConfig

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
# The leader recompresses a batch whose codec is not the topic's (the log's validator).
COMPRESSION_TYPE = "compression.type"


def parse_bool(key: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(key, f"{raw!r} is neither true nor false")
    return value == "true"


def parse_int(key: str, raw: str, minimum: int = 0, maximum: int = 2**31 - 1) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(key, f"{raw!r} is not an integer") from None
    if not minimum <= value <= maximum:
        raise ConfigError(key, f"{value} is outside [{minimum}, {maximum}]")
    return value


TOPIC_CONFIG_KEYS: frozenset[str] = frozenset(
    {setting.topic_key for setting in LOG_KEYS}
    | {setting.topic_key for setting in TOPIC_ONLY_KEYS}
    | {UNCLEAN_LEADER_ELECTION_ENABLE, MIN_INSYNC_REPLICAS}
)


def validate_topic_config(key: str, value: str) -> None:
    """Raise ConfigError naming ``key`` if a topic may not have ``key=value``."""
    if key not in TOPIC_CONFIG_KEYS:
        raise ConfigError(key, "is not a topic config")
    if key == UNCLEAN_LEADER_ELECTION_ENABLE:
        parse_bool(key, value)
    elif key == MIN_INSYNC_REPLICAS:
        parse_int(key, value, minimum=1)
    else:
        LogConfig.from_properties({key: value})


@attrs.frozen
class ControllerConfig:
    node_id: int = 1
    broker_session_timeout_ms: int = 9000
    num_partitions: int = 1
    default_replication_factor: int = 1
    unclean_leader_election_enable: bool = False
    # Write a snapshot of the image once this many bytes of records followed the last one.
    metadata_log_max_record_bytes_between_snapshots: int = 20 * 1024 * 1024

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ControllerConfig:
        """Read the keys this class knows from ``props``; other keys are left alone."""
        parsers: dict[str, tuple[str, Callable[[str, str], object]]] = {
            "node.id": ("node_id", parse_int),
            "broker.session.timeout.ms": ("broker_session_timeout_ms", _positive),
            "num.partitions": ("num_partitions", _positive),
            "default.replication.factor": ("default_replication_factor", _positive),
            UNCLEAN_LEADER_ELECTION_ENABLE: ("unclean_leader_election_enable", parse_bool),
            "metadata.log.max.record.bytes.between.snapshots": (
                "metadata_log_max_record_bytes_between_snapshots",
                _positive,
            ),
        }
        values = {
            field: parse(key, props[key]) for key, (field, parse) in parsers.items() if key in props
        }
        return cls(**values)  # type: ignore[arg-type]


def _positive(key: str, raw: str) -> int:
    return parse_int(key, raw, minimum=1)
