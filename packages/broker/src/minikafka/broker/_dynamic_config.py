"""Broker settings that change at run time (KIP-226, Kafka's ``DynamicBrokerConfig``).

A broker's dynamic configs come in two layers, as in Kafka: the cluster-wide default
(the broker resource named ``""``) and the broker's own (the resource named by its id).
The effective value of a key is this broker's, else the cluster default's, else the
static ``server.properties`` one, else Kafka's default; Kafka merges the layers by name
and only then applies the precedence of synonyms (``log.retention.ms`` over
``log.retention.hours``), and so does :func:`effective_properties`.

The keys minikafka lets change are the broker-level defaults of the topic configs
(``log.retention.ms``, ``log.segment.bytes``, ``log.cleanup.policy``,
``message.max.bytes``, ``compression.type``, ``min.insync.replicas``,
``unclean.leader.election.enable``...), which Kafka's ``DynamicLogConfig`` makes dynamic
too: every topic without an override of its own takes the new value at once. Kafka's
other dynamic keys (thread pools, listeners, quotas, SSL) are static here, and a change
to one is refused as Kafka refuses a static key.
"""

from __future__ import annotations

from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from minikafka.common import ConfigError
from minikafka.controller import (
    MIN_INSYNC,
    REPLICATION_TOPIC_CONFIG,
    ConfigChangeError,
)
from minikafka.log import LOG_CONFIG, LogConfig

DYNAMIC_BROKER_KEYS: frozenset[str] = (
    LOG_CONFIG.synonym_names() | REPLICATION_TOPIC_CONFIG.synonym_names()
)
"""The broker keys a broker resource's dynamic config may set."""


def check_broker_change(values: Mapping[str, str]) -> None:
    """Refuse what Kafka refuses of a broker resource's new dynamic values: a key that
    cannot change at run time, or a value its type or range does not allow (both
    INVALID_REQUEST, as Kafka answers a broker resource's bad config)."""
    static = sorted(set(values) - DYNAMIC_BROKER_KEYS)
    if static:
        raise ConfigChangeError(
            ErrorCode.invalid_request,
            # Kafka's message prints the keys as a Scala Set does.
            f"Cannot update these configs dynamically: Set({', '.join(static)})",
        )
    try:
        LOG_CONFIG.parse(values)
        REPLICATION_TOPIC_CONFIG.parse(values)
    except ConfigError as exc:
        raise ConfigChangeError(ErrorCode.invalid_request, str(exc)) from None


def effective_properties(
    static: Mapping[str, str],
    cluster_default: Mapping[str, str],
    own: Mapping[str, str],
) -> dict[str, str]:
    """The broker's properties with both dynamic layers over them, by name."""
    return {**static, **cluster_default, **own}


def topic_defaults(
    static: Mapping[str, str],
    static_log: LogConfig,
    static_min_isr: int,
    cluster_default: Mapping[str, str],
    own: Mapping[str, str],
) -> tuple[LogConfig, int]:
    """What a topic without overrides gets: a LogConfig and ``min.insync.replicas``."""
    if not cluster_default and not own:
        return static_log, static_min_isr
    props = effective_properties(static, cluster_default, own)
    min_isr = props.get(MIN_INSYNC.name)
    return (
        LogConfig.from_properties(props),
        static_min_isr if min_isr is None else int(min_isr),
    )
