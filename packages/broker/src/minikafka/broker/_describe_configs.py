"""DescribeConfigs: a topic's or a broker's configs in force, and where each comes from.

A KRaft broker reads a topic's overrides and the dynamic broker configs from its
metadata image (ConfigRecords the controller wrote), a ZooKeeper-mode broker from the
``/config`` znodes it follows; the static ``server.properties`` and Kafka's defaults
fill in the rest. Each entry names its source and, when asked (KIP-226), its synonyms:
every layer that sets the key, the one in force first.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

import attrs
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    LIST_TOPIC_CONFIGS,
    MIN_INSYNC_REPLICAS,
    UNCLEAN_LEADER_ELECTION_ENABLE,
    ConfigResourceType,
)
from minikafka.log import LOG_CONFIG, NO_EFFECT, LogConfig
from minikafka.net import Request, build, nested
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer, config_refusal
from ._body import DESCRIBE_CONFIGS
from ._config import KafkaConfig
from ._dynamic_config import DYNAMIC_BROKER_KEYS, topic_defaults
from ._metadata_cache import MetadataCache

NO_THROTTLE = datetime.timedelta(0)

# DescribeConfigs' config_source values (KIP-226)
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


@attrs.frozen
class ConfigEntry:
    """One DescribeConfigs entry: the value in force, where it comes from, and why.

    ``synonyms`` lists every place that sets the key, the one in force first (KIP-226):
    the topic's override, the broker's key as given, the default.
    """

    name: str
    value: str
    source: int
    synonyms: tuple[tuple[str, str, int], ...] = ()


def topic_config_entries(
    topic: str,
    cache: MetadataCache,
    config: KafkaConfig,
    overrides: Mapping[str, str] | None = None,
) -> list[ConfigEntry]:
    """Every topic-level key, as Kafka lists them for a topic.

    A key the topic overrides is DYNAMIC_TOPIC_CONFIG; otherwise the value is the
    broker's effective default: this broker's dynamic config (DYNAMIC_BROKER_CONFIG),
    else the cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), else its
    static properties in any unit (STATIC_BROKER_CONFIG; ``config.log`` already turned
    ``log.retention.hours`` into milliseconds), else Kafka's default (DEFAULT_CONFIG).
    The synonyms list each of those that sets the key, in that order (KIP-226). A key
    with no broker-level default in Kafka (``remote.storage.enable``...) has only its
    DEFAULT_CONFIG synonym. ``overrides``: the topic's own configs when the metadata
    does not hold them yet (a topic just created), else read from it.
    """
    if overrides is None:
        overrides = cache.topic_config_overrides(topic)
    layers = _broker_layers(cache, config)
    log, min_isr = topic_defaults(
        config.properties, config.log, config.broker.min_insync_replicas,
        layers[1][1], layers[0][1],  # the cluster-wide default, then its own
    )  # fmt: skip
    # topic key -> (its broker-level synonyms, the broker's effective value, Kafka's default)
    keys: dict[str, tuple[tuple[str, ...], str, str]] = {}
    for log_key in LOG_CONFIG:
        assert log_key.field is not None
        effective = _render(getattr(log, log_key.field))
        default = _render(getattr(_KAFKA_DEFAULTS, log_key.field))
        # A key with no broker-level default in Kafka has only its DEFAULT_CONFIG synonym.
        synonyms_of = log_key.synonym_names()
        keys[log_key.name] = (
            synonyms_of,
            effective if synonyms_of else default,
            default,
        )
    keys[MIN_INSYNC_REPLICAS] = ((MIN_INSYNC_REPLICAS,), str(min_isr), "1")
    unclean = _render(config.controller.unclean_leader_election_enable)
    for _, layer in reversed(layers):
        unclean = layer.get(UNCLEAN_LEADER_ELECTION_ENABLE, unclean)
    keys[UNCLEAN_LEADER_ELECTION_ENABLE] = (
        (UNCLEAN_LEADER_ELECTION_ENABLE,),
        unclean,
        "false",
    )
    entries = []
    for key, (broker_keys, effective, default) in sorted(keys.items()):
        synonyms = [
            (k, layer[k], source)
            for source, layer in (*layers, (STATIC_BROKER_CONFIG, config.properties))
            for k in broker_keys
            if k in layer
        ]
        synonyms.append(
            (broker_keys[0] if broker_keys else key, default, DEFAULT_CONFIG)
        )
        if key in overrides:
            synonyms.insert(0, (key, overrides[key], DYNAMIC_TOPIC_CONFIG))
            entries.append(
                ConfigEntry(key, overrides[key], DYNAMIC_TOPIC_CONFIG, tuple(synonyms))
            )
        else:
            entries.append(ConfigEntry(key, effective, synonyms[0][2], tuple(synonyms)))
    return entries


def _broker_layers(
    cache: MetadataCache, config: KafkaConfig
) -> tuple[tuple[int, Mapping[str, str]], tuple[int, Mapping[str, str]]]:
    """This broker's dynamic configs and the cluster-wide default ones, with their
    sources, highest precedence first."""
    return (
        (DYNAMIC_BROKER_CONFIG, cache.broker_configs(str(config.node_id))),
        (DYNAMIC_DEFAULT_BROKER_CONFIG, cache.broker_configs("")),
    )


# KIP-569's config_type (DescribeConfigs v3+) of each topic key, as Kafka defines the
# key: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7; UNKNOWN (0) for any other.
_BOOLEAN, _STRING, _INT, _LONG, _DOUBLE, _LIST = 1, 2, 3, 5, 6, 7
CONFIG_TYPES: Mapping[str, int] = {
    "compression.gzip.level": _INT,
    "compression.lz4.level": _INT,
    "compression.type": _STRING,
    "compression.zstd.level": _INT,
    "delete.retention.ms": _LONG,
    "file.delete.delay.ms": _LONG,
    "flush.messages": _LONG,
    "flush.ms": _LONG,
    "index.interval.bytes": _INT,
    "local.retention.bytes": _LONG,
    "local.retention.ms": _LONG,
    "max.compaction.lag.ms": _LONG,
    "max.message.bytes": _INT,
    "message.timestamp.after.max.ms": _LONG,
    "message.timestamp.before.max.ms": _LONG,
    "message.timestamp.type": _STRING,
    "min.cleanable.dirty.ratio": _DOUBLE,
    "min.compaction.lag.ms": _LONG,
    "min.insync.replicas": _INT,
    "preallocate": _BOOLEAN,
    "remote.log.copy.disable": _BOOLEAN,
    "remote.log.delete.on.disable": _BOOLEAN,
    "remote.storage.enable": _BOOLEAN,
    "retention.bytes": _LONG,
    "retention.ms": _LONG,
    "segment.bytes": _INT,
    "segment.index.bytes": _INT,
    "segment.jitter.ms": _LONG,
    "segment.ms": _LONG,
    "unclean.leader.election.enable": _BOOLEAN,
    # The keys APPEND and SUBTRACT take: the controller's list, not a second one.
    **dict.fromkeys(LIST_TOPIC_CONFIGS, _LIST),
}


def _documentation(name: str) -> str | None:
    """DescribeConfigs' documentation (KIP-569): why a stored config does nothing here."""
    reason = NO_EFFECT.get(name)
    return None if reason is None else f"Stored, no effect in minikafka: {reason}."


_KAFKA_DEFAULTS = LogConfig()


def _render(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, frozenset):
        return ",".join(sorted(value))
    return str(value)


def handle_describe_configs(
    request: Request,
    cache: MetadataCache,
    config: KafkaConfig,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DescribeConfigs v1-4; with an authorizer a resource needs DESCRIBE_CONFIGS
    (``config_refusal``): a refused one is answered its error and no configs."""
    body = request.body_as(DESCRIBE_CONFIGS)
    cls = request.response_class()
    result_cls = nested(cls, "results")
    entry_cls = nested(result_cls, "configs")
    synonym_cls = nested(entry_cls, "synonyms")
    results = []
    for resource in body.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        refusal = (
            None
            if authorizer is None
            else config_refusal(
                request, authorizer, kind, name, AclOperation.DESCRIBE_CONFIGS
            )
        )
        error, message, entries = (
            (*refusal, [])
            if refusal is not None
            else _describe(kind, name, cache, config)
        )
        wanted = resource.configuration_keys
        if wanted is not None:
            entries = [e for e in entries if e.name in set(wanted)]
        with_synonyms = bool(body.include_synonyms)  # v1+
        # v3+: documentation only when asked for (Kafka leaves it null otherwise).
        with_docs = bool(getattr(body, "include_documentation", False))
        configs = tuple(
            build(
                entry_cls,
                name=e.name,
                value=e.value,
                # Topic configs can be altered; a broker's only where dynamic.
                read_only=kind != ConfigResourceType.TOPIC
                and e.name not in DYNAMIC_BROKER_KEYS,
                config_source=e.source,
                is_sensitive=False,
                synonyms=tuple(
                    build(synonym_cls, name=n, value=v, source=src)
                    for n, v, src in e.synonyms
                )
                if with_synonyms
                else (),
                config_type=CONFIG_TYPES.get(e.name, 0),
                documentation=_documentation(e.name)
                if with_docs and kind == ConfigResourceType.TOPIC
                else None,
            )
            for e in entries
        )
        results.append(
            build(
                result_cls,
                error_code=error,
                error_message=message,
                resource_type=kind,
                resource_name=name,
                configs=configs,
            )
        )
    request.respond(build(cls, throttle_time=NO_THROTTLE, results=tuple(results)))


def _describe(
    kind: int, name: str, cache: MetadataCache, config: KafkaConfig
) -> tuple[ErrorCode, str | None, list[ConfigEntry]]:
    if kind == ConfigResourceType.TOPIC:
        if cache.topic(name) is None:
            return (
                ErrorCode.unknown_topic_or_partition,
                f"topic {name!r} does not exist",
                [],
            )
        return ErrorCode.none, None, topic_config_entries(name, cache, config)
    if kind == ConfigResourceType.BROKER:
        if name == "":
            # The cluster-wide default resource lists its dynamic configs only.
            default = cache.broker_configs("")
            return ErrorCode.none, None, _dynamic_entries(default, name)
        if name != str(config.node_id):
            return (
                ErrorCode.invalid_request,
                f"this is broker {config.node_id}, not {name}",
                [],
            )
        return ErrorCode.none, None, _broker_entries(cache, config)
    return ErrorCode.invalid_request, f"resource type {kind} cannot be described", []


def _dynamic_entries(configs: Mapping[str, str], name: str) -> list[ConfigEntry]:
    source = DYNAMIC_BROKER_CONFIG if name else DYNAMIC_DEFAULT_BROKER_CONFIG
    return [
        ConfigEntry(k, v, source, ((k, v, source),)) for k, v in sorted(configs.items())
    ]


def _broker_entries(cache: MetadataCache, config: KafkaConfig) -> list[ConfigEntry]:
    """The broker's configuration as given: its dynamic keys (its own, then the
    cluster-wide default) over its static ones (defaults are not listed)."""
    layers = (*_broker_layers(cache, config), (STATIC_BROKER_CONFIG, config.properties))
    keys = sorted({k for _, layer in layers for k in layer})
    entries = []
    for key in keys:
        synonyms = tuple(
            (key, layer[key], src) for src, layer in layers if key in layer
        )
        entries.append(ConfigEntry(key, synonyms[0][1], synonyms[0][2], synonyms))
    return entries
