"""The admin APIs: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs.

A KRaft broker decides none of these itself. It translates the request into the
controller's request type, submits it to the QuorumController (in this process, in
combined mode; Kafka forwards it over the network otherwise) and answers once the
controller's records are committed, by which time this broker's MetadataCache has
replayed them too. DescribeConfigs is read from the metadata image.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

import attrs
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from minikafka.controller import (
    ConfigResourceType,
    ControllerError,
    ControllerServer,
)
from minikafka.controller import CreatableTopic as ControllerCreatableTopic
from minikafka.controller import CreatePartitionsRequest as ControllerCreatePartitions
from minikafka.controller import CreatePartitionsResponse as ControllerCreatePartitionsResponse
from minikafka.controller import CreatePartitionsTopic as ControllerCreatePartitionsTopic
from minikafka.controller import CreateTopicsRequest as ControllerCreateTopics
from minikafka.controller import CreateTopicsResponse as ControllerCreateTopicsResponse
from minikafka.controller import DeleteTopicsRequest as ControllerDeleteTopics
from minikafka.controller import DeleteTopicsResponse as ControllerDeleteTopicsResponse
from minikafka.log import LOG_KEYS, NO_EFFECT, TOPIC_ONLY_KEYS, LogConfig
from minikafka.net import Request, build, nested, response_schema

from ._body import request_body
from ._config import KafkaConfig, unit_keys
from ._metadata_cache import MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE, MetadataCache

CREATE_TOPICS_KEY = 19
DELETE_TOPICS_KEY = 20
DESCRIBE_CONFIGS_KEY = 32
CREATE_PARTITIONS_KEY = 37
NO_THROTTLE = datetime.timedelta(0)

# DescribeConfigs' config_source values (KIP-226)
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


def _response_class(request: Request) -> type[ResponsePayload]:
    cls = response_schema(request.api_key, request.api_version)
    assert cls is not None
    return cls


async def _submit(controller: ControllerServer, request: object) -> object | ErrorCode:
    try:
        return await controller.submit(request)  # type: ignore[arg-type]
    except ControllerError as exc:
        return exc.error_code


def _failure(answer: object) -> ErrorCode:
    """The error for every item of a request the controller did not answer as asked."""
    return answer if isinstance(answer, ErrorCode) else ErrorCode.unknown_server_error


async def handle_create_topics(request: Request, controller: ControllerServer) -> None:
    body = request_body(request)
    topics = tuple(
        ControllerCreatableTopic(
            name=t.name,
            num_partitions=int(t.num_partitions),
            replication_factor=int(t.replication_factor),
            assignments=tuple(
                tuple(int(b) for b in a.broker_ids)
                for a in sorted(t.assignments, key=lambda a: int(a.partition_index))
            ),
            configs=tuple((c.name, c.value) for c in t.configs if c.value is not None),
        )
        for t in body.topics
    )
    answer = await _submit(
        controller,
        ControllerCreateTopics(topics, validate_only=bool(getattr(body, "validate_only", False))),
    )
    cls = _response_class(request)
    result_cls = nested(cls, "topics")
    if isinstance(answer, ControllerCreateTopicsResponse):
        results = [
            build(result_cls, name=r.name, error_code=r.error_code, error_message=r.error_message)
            for r in answer.topics
        ]
    else:
        code = _failure(answer)
        results = [
            build(result_cls, name=t.name, error_code=code, error_message=None) for t in topics
        ]
    request.respond(build(cls, throttle_time=NO_THROTTLE, topics=tuple(results)))


async def handle_delete_topics(request: Request, controller: ControllerServer) -> None:
    body = request_body(request)
    names = tuple(str(n) for n in body.topic_names)
    answer = await _submit(controller, ControllerDeleteTopics(names=names))
    cls = _response_class(request)
    result_cls = nested(cls, "responses")
    if isinstance(answer, ControllerDeleteTopicsResponse):
        codes = {r.name: r.error_code for r in answer.topics}
    else:
        codes = dict.fromkeys(names, _failure(answer))
    results = tuple(
        build(result_cls, name=n, error_code=codes.get(n, ErrorCode.unknown_server_error))
        for n in names
    )
    request.respond(build(cls, throttle_time=NO_THROTTLE, responses=results))


async def handle_create_partitions(request: Request, controller: ControllerServer) -> None:
    body = request_body(request)
    topics = tuple(
        ControllerCreatePartitionsTopic(
            name=t.name,
            count=int(t.count),
            assignments=tuple(tuple(int(b) for b in a.broker_ids) for a in (t.assignments or ())),
        )
        for t in body.topics
    )
    answer = await _submit(
        controller,
        ControllerCreatePartitions(topics, validate_only=bool(body.validate_only)),
    )
    cls = _response_class(request)
    result_cls = nested(cls, "results")
    if isinstance(answer, ControllerCreatePartitionsResponse):
        results = [
            build(result_cls, name=r.name, error_code=r.error_code, error_message=r.error_message)
            for r in answer.topics
        ]
    else:
        code = _failure(answer)
        results = [build(result_cls, name=t.name, error_code=code) for t in topics]
    request.respond(build(cls, throttle_time=NO_THROTTLE, results=tuple(results)))


# --- DescribeConfigs ---------------------------------------------------------------------


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
    topic: str, cache: MetadataCache, config: KafkaConfig
) -> list[ConfigEntry]:
    """Every topic-level key, as Kafka lists them for a topic.

    A key the topic overrides is DYNAMIC_TOPIC_CONFIG; otherwise the value is the
    broker's effective default (``config.log``, which already turned
    ``log.retention.hours`` into milliseconds), STATIC_BROKER_CONFIG if the broker's
    configuration set it in any unit, DEFAULT_CONFIG if not. A key with no broker-level
    default in Kafka (``remote.storage.enable``...) has only its DEFAULT_CONFIG synonym.
    """
    overrides = cache.topic_config_overrides(topic)
    # topic key -> (broker key or None, the broker's effective value, Kafka's default)
    keys: dict[str, tuple[str | None, str, str]] = {
        setting.topic_key: (
            setting.broker_key,
            _render(getattr(config.log, setting.field)),
            _render(getattr(_KAFKA_DEFAULTS, setting.field)),
        )
        for setting in LOG_KEYS
    }
    for topic_only in TOPIC_ONLY_KEYS:
        default = _render(getattr(_KAFKA_DEFAULTS, topic_only.field))
        keys[topic_only.topic_key] = (None, default, default)
    keys[MIN_INSYNC_REPLICAS] = (MIN_INSYNC_REPLICAS, str(config.broker.min_insync_replicas), "1")
    unclean = _render(config.controller.unclean_leader_election_enable)
    keys[UNCLEAN_LEADER_ELECTION_ENABLE] = (UNCLEAN_LEADER_ELECTION_ENABLE, unclean, "false")
    entries = []
    for key, (broker_key, effective, default) in sorted(keys.items()):
        synonyms: list[tuple[str, str, int]] = []
        if broker_key is not None:
            given = [k for k in (broker_key, *unit_keys(broker_key)) if k in config.properties]
            synonyms = [(k, config.properties[k], STATIC_BROKER_CONFIG) for k in given]
        synonyms.append((broker_key or key, default, DEFAULT_CONFIG))
        if key in overrides:
            synonyms.insert(0, (key, overrides[key], DYNAMIC_TOPIC_CONFIG))
            entries.append(ConfigEntry(key, overrides[key], DYNAMIC_TOPIC_CONFIG, tuple(synonyms)))
        else:
            entries.append(ConfigEntry(key, effective, synonyms[0][2], tuple(synonyms)))
    return entries


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


def handle_describe_configs(request: Request, cache: MetadataCache, config: KafkaConfig) -> None:
    body = request_body(request)
    cls = _response_class(request)
    result_cls = nested(cls, "results")
    entry_cls = nested(result_cls, "configs")
    synonym_cls = nested(entry_cls, "synonyms")
    results = []
    for resource in body.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        error, message, entries = _describe(kind, name, cache, config)
        wanted = resource.configuration_keys
        if wanted is not None:
            entries = [e for e in entries if e.name in set(wanted)]
        with_synonyms = bool(getattr(body, "include_synonyms", False))
        configs = tuple(
            build(
                entry_cls,
                name=e.name,
                value=e.value,
                # Topic configs can be altered; the broker's static ones cannot.
                read_only=kind != ConfigResourceType.TOPIC,
                is_default=e.source == DEFAULT_CONFIG,
                config_source=e.source,
                is_sensitive=False,
                synonyms=tuple(
                    build(synonym_cls, name=n, value=v, source=src) for n, v, src in e.synonyms
                )
                if with_synonyms
                else (),
                config_type=0,
                documentation=_documentation(e.name) if kind == ConfigResourceType.TOPIC else None,
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
            return ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist", []
        return ErrorCode.none, None, topic_config_entries(name, cache, config)
    if kind == ConfigResourceType.BROKER:
        if name not in ("", str(config.node_id)):
            return ErrorCode.invalid_request, f"this is broker {config.node_id}, not {name}", []
        return ErrorCode.none, None, _broker_entries(config.properties)
    return ErrorCode.invalid_request, f"resource type {kind} cannot be described", []


def _broker_entries(properties: Mapping[str, str]) -> list[ConfigEntry]:
    """The broker's configuration as given (its static keys; defaults are not listed)."""
    return [
        ConfigEntry(k, v, STATIC_BROKER_CONFIG, ((k, v, STATIC_BROKER_CONFIG),))
        for k, v in sorted(properties.items())
    ]
