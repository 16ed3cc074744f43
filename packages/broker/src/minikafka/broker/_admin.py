"""The admin APIs: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs.

A KRaft broker decides none of these itself. It translates the request into the
controller's request type, submits it to the QuorumController (in this process, in
combined mode; Kafka forwards it over the network otherwise) and answers once the
controller's records are committed, by which time this broker's MetadataCache has
replayed them too. DescribeConfigs is read from the metadata image.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, ResponsePayload

from minikafka.controller import (
    MIN_INSYNC_REPLICAS,
    UNCLEAN_LEADER_ELECTION_ENABLE,
    ConfigResourceType,
    ControllerError,
    ControllerRequest,
)
from minikafka.controller import CreatableTopic as ControllerCreatableTopic
from minikafka.controller import CreatePartitionsRequest as ControllerCreatePartitions
from minikafka.controller import (
    CreatePartitionsResponse as ControllerCreatePartitionsResponse,
)
from minikafka.controller import (
    CreatePartitionsTopic as ControllerCreatePartitionsTopic,
)
from minikafka.controller import CreateTopicsRequest as ControllerCreateTopics
from minikafka.controller import CreateTopicsResponse as ControllerCreateTopicsResponse
from minikafka.controller import DeleteTopicsRequest as ControllerDeleteTopics
from minikafka.controller import DeleteTopicsResponse as ControllerDeleteTopicsResponse
from minikafka.log import LOG_CONFIG, NO_EFFECT, LogConfig
from minikafka.net import Request, build, nested, response_schema

from ._body import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS
from ._config import KafkaConfig
from ._controller_channel import ControllerChannel
from ._metadata_cache import INTERNAL_TOPICS, MetadataCache

NO_THROTTLE = datetime.timedelta(0)

# DescribeConfigs' config_source values (KIP-226)
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


def _response_class(request: Request) -> type[ResponsePayload]:
    cls = response_schema(request.api_key, request.api_version)
    assert cls is not None
    return cls


async def _submit(
    controller: ControllerChannel, request: ControllerRequest
) -> object | ErrorCode:
    try:
        return await controller.submit(request)
    except ControllerError as exc:
        return exc.error_code


def _failure(answer: object) -> ErrorCode:
    """The error for every item of a request the controller did not answer as asked."""
    return answer if isinstance(answer, ErrorCode) else ErrorCode.unknown_server_error


def _internal_refusal(name: str, verb: str) -> str | None:
    """Why a client may not ``verb`` ``name``, if it is an internal topic.

    ``__consumer_offsets`` is created by the group coordinator with its own settings
    (compacted, ``offsets.topic.num.partitions`` partitions): created by a client with one
    partition and ``cleanup.policy=delete``, no group could find its coordinator again;
    deleted, every group's offsets would go; given more partitions, groups would hash onto
    partitions the coordinator never loads. Kafka guards these topics with ACLs and
    refuses ``__cluster_metadata`` outright (ControllerApis); this broker has no
    authorizer, so it refuses every internal topic the way Kafka refuses that one.
    """
    if name in INTERNAL_TOPICS:
        return f"{verb} of internal topic {name} is prohibited."
    return None


class _TopicResult(Protocol):
    """The controller's answer for one topic it created, deleted or grew."""

    @property
    def name(self) -> str | None: ...
    @property
    def error_code(self) -> ErrorCode: ...
    @property
    def error_message(self) -> str | None: ...


class _ControllerAnswer(Protocol):
    """The controller's response to a CreateTopics, DeleteTopics or CreatePartitions."""

    @property
    def topics(self) -> Sequence[_TopicResult]: ...


@attrs.define
class _TopicAnswers:
    """One answer per topic name of an admin request, in the order the names first appear.

    Kafka answers a name listed twice once (with INVALID_REQUEST, as the controller
    does), so the answers are keyed by name; None marks a name still waiting for the
    controller.
    """

    request: Request
    field: str
    """The response's array of per-topic results: topics, responses or results."""
    guard_internal: bool = True
    """Refuse internal topics (a client's request); off on the controller's listener,
    where a broker creates ``__consumer_offsets`` for its group coordinator."""
    response_cls: type[ResponsePayload] = attrs.field(init=False)
    result_cls: type[Entity] = attrs.field(init=False)
    answers: dict[str, object] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        self.response_cls = _response_class(self.request)
        self.result_cls = nested(self.response_cls, self.field)

    def refused(self, name: str, verb: str) -> bool:
        """Answer ``name`` with INVALID_REQUEST if it is internal; False if it goes on."""
        refusal = _internal_refusal(name, verb) if self.guard_internal else None
        if refusal is None:
            self.answers.setdefault(name, None)
            return False
        self.answers[name] = build(
            self.result_cls,
            name=name,
            error_code=ErrorCode.invalid_request,
            error_message=refusal,
        )
        return True

    async def submit(
        self,
        controller: ControllerChannel,
        request: ControllerRequest,
        response_type: type[_ControllerAnswer],
        names: Sequence[str],
    ) -> None:
        """Submit ``request`` about ``names``; keep the controller's answers, or its one
        error for every name submitted."""
        answer = await _submit(controller, request)
        if not isinstance(answer, response_type):
            code = _failure(answer)
            for name in names:
                self.answers[name] = build(
                    self.result_cls, name=name, error_code=code, error_message=None
                )
            return
        for r in answer.topics:
            if r.name is not None:  # a topic named by its id only (KIP-516) has no name
                self.answers[r.name] = build(
                    self.result_cls,
                    name=r.name,
                    error_code=r.error_code,
                    error_message=r.error_message,
                )

    def respond(self) -> None:
        """Answer every name in the order it first appeared; a name the controller left
        unanswered (it never does) is UNKNOWN_SERVER_ERROR rather than silently dropped."""
        results = tuple(
            build(self.result_cls, name=n, error_code=ErrorCode.unknown_server_error)
            if a is None
            else a
            for n, a in self.answers.items()
        )
        self.request.respond(
            build(self.response_cls, throttle_time=NO_THROTTLE, **{self.field: results})
        )


async def handle_create_topics(
    request: Request, controller: ControllerChannel, *, guard_internal: bool = True
) -> None:
    body = request.body_as(CREATE_TOPICS)
    answers = _TopicAnswers(request, "topics", guard_internal)
    submitted = tuple(
        ControllerCreatableTopic(
            name=t.name,
            num_partitions=int(t.num_partitions),
            replication_factor=int(t.replication_factor),
            # As given, partition_index and all: the controller refuses a gap or a
            # repeat instead of this handler renumbering them.
            assignments=tuple(
                tuple(int(b) for b in a.broker_ids) for a in t.assignments
            ),
            partition_ids=tuple(int(a.partition_index) for a in t.assignments),
            configs=tuple((c.name, c.value) for c in t.configs),
        )
        for t in body.topics
        if not answers.refused(t.name, "Creation")
    )
    if submitted:
        validate_only = bool(body.validate_only)  # v1+
        await answers.submit(
            controller,
            ControllerCreateTopics(submitted, validate_only),
            ControllerCreateTopicsResponse,
            [c.name for c in submitted],
        )
    answers.respond()


async def handle_delete_topics(
    request: Request, controller: ControllerChannel, *, guard_internal: bool = True
) -> None:
    body = request.body_as(DELETE_TOPICS)
    answers = _TopicAnswers(request, "responses", guard_internal)
    deletable = [
        str(n) for n in body.topic_names if not answers.refused(str(n), "Deletion")
    ]
    if deletable:
        await answers.submit(
            controller,
            ControllerDeleteTopics(names=tuple(deletable)),
            ControllerDeleteTopicsResponse,
            deletable,
        )
    answers.respond()


async def handle_create_partitions(
    request: Request, controller: ControllerChannel, *, guard_internal: bool = True
) -> None:
    body = request.body_as(CREATE_PARTITIONS)
    answers = _TopicAnswers(request, "results", guard_internal)
    submitted = tuple(
        ControllerCreatePartitionsTopic(
            name=t.name,
            count=int(t.count),
            assignments=tuple(
                tuple(int(b) for b in a.broker_ids) for a in (t.assignments or ())
            ),
        )
        for t in body.topics
        if not answers.refused(t.name, "Adding partitions")
    )
    if submitted:
        await answers.submit(
            controller,
            ControllerCreatePartitions(
                submitted, validate_only=bool(body.validate_only)
            ),
            ControllerCreatePartitionsResponse,
            [g.name for g in submitted],
        )
    answers.respond()


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
    # topic key -> (its broker-level synonyms, the broker's effective value, Kafka's default)
    keys: dict[str, tuple[tuple[str, ...], str, str]] = {}
    for log_key in LOG_CONFIG:
        assert log_key.field is not None
        effective = _render(getattr(config.log, log_key.field))
        default = _render(getattr(_KAFKA_DEFAULTS, log_key.field))
        # A key with no broker-level default in Kafka has only its DEFAULT_CONFIG synonym.
        synonyms_of = log_key.synonym_names()
        keys[log_key.name] = (
            synonyms_of,
            effective if synonyms_of else default,
            default,
        )
    keys[MIN_INSYNC_REPLICAS] = (
        (MIN_INSYNC_REPLICAS,),
        str(config.broker.min_insync_replicas),
        "1",
    )
    unclean = _render(config.controller.unclean_leader_election_enable)
    keys[UNCLEAN_LEADER_ELECTION_ENABLE] = (
        (UNCLEAN_LEADER_ELECTION_ENABLE,),
        unclean,
        "false",
    )
    entries = []
    for key, (broker_keys, effective, default) in sorted(keys.items()):
        given = [k for k in broker_keys if k in config.properties]
        synonyms = [(k, config.properties[k], STATIC_BROKER_CONFIG) for k in given]
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


# KIP-569's config_type (DescribeConfigs v3+) of each topic key, as Kafka defines the
# key: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7; UNKNOWN (0) for any other.
_BOOLEAN, _STRING, _INT, _LONG, _DOUBLE, _LIST = 1, 2, 3, 5, 6, 7
CONFIG_TYPES: Mapping[str, int] = {
    "cleanup.policy": _LIST,
    "compression.gzip.level": _INT,
    "compression.lz4.level": _INT,
    "compression.type": _STRING,
    "compression.zstd.level": _INT,
    "delete.retention.ms": _LONG,
    "file.delete.delay.ms": _LONG,
    "flush.messages": _LONG,
    "flush.ms": _LONG,
    "follower.replication.throttled.replicas": _LIST,
    "index.interval.bytes": _INT,
    "leader.replication.throttled.replicas": _LIST,
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
    request: Request, cache: MetadataCache, config: KafkaConfig
) -> None:
    body = request.body_as(DESCRIBE_CONFIGS)
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
        with_synonyms = bool(body.include_synonyms)  # v1+
        # v3+: documentation only when asked for (Kafka leaves it null otherwise).
        with_docs = bool(getattr(body, "include_documentation", False))
        configs = tuple(
            build(
                entry_cls,
                name=e.name,
                value=e.value,
                # Topic configs can be altered; the broker's static ones cannot.
                read_only=kind != ConfigResourceType.TOPIC,
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
        if name not in ("", str(config.node_id)):
            return (
                ErrorCode.invalid_request,
                f"this is broker {config.node_id}, not {name}",
                [],
            )
        return ErrorCode.none, None, _broker_entries(config.properties)
    return ErrorCode.invalid_request, f"resource type {kind} cannot be described", []


def _broker_entries(properties: Mapping[str, str]) -> list[ConfigEntry]:
    """The broker's configuration as given (its static keys; defaults are not listed)."""
    return [
        ConfigEntry(k, v, STATIC_BROKER_CONFIG, ((k, v, STATIC_BROKER_CONFIG),))
        for k, v in sorted(properties.items())
    ]
