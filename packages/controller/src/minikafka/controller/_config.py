"""The controller's configuration, with Kafka's keys and defaults (declared in a ConfigDef).

Topic-level keys a CreateTopics or IncrementalAlterConfigs request may set are the log's
(every config of Kafka's ``TopicConfig``: ``segment.bytes``, ``cleanup.policy``,
``compression.type``...; see ``minikafka.log.NO_EFFECT`` for those stored without effect)
plus the two replication ones the controller and the partition leader act on
(:data:`REPLICATION_TOPIC_CONFIG`); anything else is INVALID_CONFIG, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import (
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    Synonym,
    at_least,
)
from minikafka.log import LOG_CONFIG

_SAME = (Synonym(),)  # the broker's default is spelled like the topic config

UNCLEAN_LEADER_ELECTION = ConfigKey(
    "unclean.leader.election.enable",
    ConfigType.BOOLEAN,
    "unclean_leader_election_enable",
    doc="Whether a replica outside the ISR may become leader (losing committed records).",
    synonyms=_SAME,
)
MIN_INSYNC = ConfigKey(
    "min.insync.replicas",
    ConfigType.INT,
    "min_insync_replicas",
    at_least(1),
    "How many in-sync replicas an acks=all produce needs.",
    synonyms=_SAME,
)
UNCLEAN_LEADER_ELECTION_ENABLE = UNCLEAN_LEADER_ELECTION.name
MIN_INSYNC_REPLICAS = MIN_INSYNC.name

REPLICATION_TOPIC_CONFIG = ConfigDef((UNCLEAN_LEADER_ELECTION, MIN_INSYNC))
"""The topic configs that are not the log's: the controller and the partition act on them."""
TOPIC_CONFIG = LOG_CONFIG + REPLICATION_TOPIC_CONFIG
"""Every topic config a topic may set."""
TOPIC_CONFIG_KEYS: frozenset[str] = TOPIC_CONFIG.names()


def validate_topic_config(key: str, value: str) -> None:
    """Raise ConfigError naming ``key`` if a topic may not have ``key=value``."""
    if key not in TOPIC_CONFIG:
        raise ConfigError(key, "is not a topic config")
    TOPIC_CONFIG[key].parse(value)


@attrs.frozen
class ControllerConfig:
    """The controller's settings; :data:`CONTROLLER_CONFIG` declares their keys."""

    node_id: int = 1
    broker_session_timeout_ms: int = 9000
    num_partitions: int = 1
    default_replication_factor: int = 1
    unclean_leader_election_enable: bool = False
    metadata_log_max_record_bytes_between_snapshots: int = 20 * 1024 * 1024
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ControllerConfig:
        """Read the keys :data:`CONTROLLER_CONFIG` declares; other keys are left alone."""
        return CONTROLLER_CONFIG.apply(cls(), props)


_INT = ConfigType.INT

CONTROLLER_CONFIG = ConfigDef(
    (
        ConfigKey(
            "node.id",
            _INT,
            "node_id",
            at_least(0),
            "This node's id (KRaft); broker.id, ZooKeeper mode's name for it, also sets it.",
            synonyms=(Synonym("broker.id"),),
        ),
        ConfigKey(
            "broker.session.timeout.ms",
            _INT,
            "broker_session_timeout_ms",
            at_least(1),
            "A broker that sends no heartbeat for this long is fenced.",
        ),
        ConfigKey(
            "num.partitions",
            _INT,
            "num_partitions",
            at_least(1),
            "Partitions of a topic created without a count.",
        ),
        ConfigKey(
            "default.replication.factor",
            _INT,
            "default_replication_factor",
            at_least(1),
            "Replicas of a topic created without a replication factor.",
        ),
        UNCLEAN_LEADER_ELECTION,  # the broker-level default of the topic config
        ConfigKey(
            "metadata.log.max.record.bytes.between.snapshots",
            _INT,
            "metadata_log_max_record_bytes_between_snapshots",
            at_least(1),
            "Write a snapshot of the image once this many bytes of records followed the last.",
        ),
        ConfigKey(
            "auto.leader.rebalance.enable",
            ConfigType.BOOLEAN,
            "auto_leader_rebalance_enable",
            doc="Move leadership back to preferred replicas when a broker's imbalance is high.",
        ),
        ConfigKey(
            "leader.imbalance.check.interval.seconds",
            ConfigType.LONG,
            "leader_imbalance_check_interval_seconds",
            at_least(1),
            "How often the controller checks the leader imbalance.",
        ),
        ConfigKey(
            "leader.imbalance.per.broker.percentage",
            _INT,
            "leader_imbalance_per_broker_percentage",
            at_least(0),
            "A broker leading fewer than this percent of its preferred partitions is rebalanced.",
        ),
    )
)
"""The controller's broker keys (Kafka's KRaftConfigs and ReplicationConfigs)."""
