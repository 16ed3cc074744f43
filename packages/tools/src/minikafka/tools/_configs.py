"""``minikafka configs``: Kafka's ``kafka-configs.sh`` (ConfigCommand) for topics and brokers.

ConfigCommand checks its flags, then turns them into calls of Kafka's Admin client; so
does this, on :class:`minikafka.client.AsyncAdminClient`:

- ``--describe`` is ``describe_configs`` with synonyms, keeping only the entries set at
  run time (DYNAMIC_TOPIC_CONFIG for a topic, DYNAMIC_BROKER_CONFIG for a broker,
  DYNAMIC_DEFAULT_BROKER_CONFIG for the brokers' default) unless ``--all``; no entity
  name describes every topic, or every broker and then the default.
- ``--alter`` first describes the entity's dynamic configs, because a ``--delete-config``
  of a key that has no override is refused before anything is sent ("Invalid config(s)"),
  then sends one ``incremental_alter_configs`` (KIP-339): a SET per ``--add-config`` (or
  ``--add-config-file``) key and a DELETE per ``--delete-config`` key, all or nothing,
  as Kafka 4's tool does for topics and brokers alike.

The wrong flags are refused with ConfigCommand's own messages (:class:`ConfigCommandError`,
one line on stderr, exit status 1); a broker's refusal is printed as the Java tool prints
the exception it got (:func:`failure_lines`), without the stack trace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.client import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    AlterConfigOp,
    AlterConfigOpType,
    AsyncAdminClient,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    KafkaError,
)

from ._connection import java_properties

TOPICS, BROKERS = "topics", "brokers"
# Every entity type of Kafka 4.1's tool, in the order its message lists them; minikafka
# serves topics, brokers, and users' SCRAM credentials (``_configs_users``).
KAFKA_ENTITY_TYPES = (
    "topics",
    "clients",
    "users",
    "brokers",
    "ips",
    "client-metrics",
    "groups",
    "broker-loggers",
)
SERVED = (TOPICS, BROKERS, "users")
DEFAULT_ENTITY = ""  # --entity-default: the brokers' cluster-wide default
MAX_TOPIC_NAME = 249


class ConfigCommandError(Exception):
    """A refusal ConfigCommand prints as its message alone (an IllegalArgumentException
    or InvalidConfigurationException in Kafka's tool) before it exits 1."""


class AdminCallFailed(Exception):
    """An Admin call answered with an error: printed as :func:`failure_lines`."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(error.str())
        self.error = error


@attrs.frozen
class Entity:
    """What one command is about: ``name`` None for every entity of the type, ``""``
    for the brokers' default."""

    entity_type: str
    name: str | None

    @property
    def singular(self) -> str:
        return self.entity_type[:-1]


@attrs.frozen
class Flags:
    """The command line as ConfigCommand reads it, before its checks."""

    describe: bool = False
    alter: bool = False
    entity_types: Sequence[str] = ()
    entity_names: Sequence[str] = ()
    entity_default: bool = False
    topic: str | None = None
    broker: str | None = None
    broker_defaults: bool = False
    add_config: str | None = None
    add_config_file: str | None = None
    delete_config: Sequence[str] = ()


def check_flags(flags: Flags) -> Entity:
    """ConfigCommand's ``checkArgs``, for what this tool serves: the entity, or a
    :class:`ConfigCommandError` with Kafka's message."""
    if flags.describe + flags.alter != 1:
        raise ConfigCommandError(
            "Command must include exactly one action: --describe, --alter"
        )
    given = {
        "add-config": flags.add_config is not None,
        "add-config-file": flags.add_config_file is not None,
        "delete-config": bool(flags.delete_config),
    }
    if flags.describe and any(given.values()):
        other = next(name for name, on in given.items() if on)
        raise ConfigCommandError(
            f'Option "[describe]" can\'t be used with option "[{other}]"'
        )
    specific = [TOPICS] if flags.topic is not None else []
    specific += [BROKERS] * ((flags.broker is not None) + flags.broker_defaults)
    types = [*flags.entity_types, *specific]
    duplicates = [t for i, t in enumerate(types) if t in types[:i]]
    if duplicates:
        named = ",".join(dict.fromkeys(duplicates))
        raise ConfigCommandError(f"Duplicate entity type(s) specified: {named}")
    for kind in types:
        if kind not in KAFKA_ENTITY_TYPES:
            raise ConfigCommandError(
                f"Invalid entity type {kind}, the entity type must be one of "
                f"{', '.join(KAFKA_ENTITY_TYPES)} with a --bootstrap-server or "
                "--bootstrap-controller argument"
            )
    if not types:
        raise ConfigCommandError("At least one entity type must be specified")
    if len(types) > 1:
        raise ConfigCommandError(
            "Only 'users' and 'clients' entity types may be specified together"
        )
    if specific and (flags.entity_types or flags.entity_names or flags.entity_default):
        raise ConfigCommandError(
            "--entity-{type,name,default} should not be used in conjunction with "
            "specific entity flags"
        )
    (kind,) = types
    if kind not in SERVED:
        raise ConfigCommandError(
            f"Invalid entity type {kind}: minikafka has configs for "
            f"{', '.join(SERVED)} only"
        )
    if kind == "users" and flags.entity_default:
        raise ConfigCommandError(
            "--entity-default of users names client quotas, which minikafka does not keep"
        )
    names = [*flags.entity_names, *([DEFAULT_ENTITY] * flags.entity_default)]
    names += [n for n in (flags.topic, flags.broker) if n is not None]
    names += [DEFAULT_ENTITY] * flags.broker_defaults
    has_name = any(names)
    if has_name and kind == BROKERS:
        for name in names:
            if name and not re.fullmatch(r"[+-]?\d+", name):
                raise ConfigCommandError(
                    "The entity name for brokers must be a valid integer broker id, "
                    f"but it is: {name}"
                )
    if flags.describe and kind == TOPICS and DEFAULT_ENTITY in names:
        raise ConfigCommandError(
            "--entity-default must not be specified with --describe of topics"
        )
    if flags.alter:
        if kind in (BROKERS, "users") and not names:
            raise ConfigCommandError(
                "An entity-name or default entity must be specified with --alter of "
                "users, clients, brokers or ips"
            )
        if kind == TOPICS and not has_name:
            raise ConfigCommandError(
                "An entity name must be specified with --alter of topics"
            )
        if given["add-config"] and given["add-config-file"]:
            raise ConfigCommandError(
                "Only one of --add-config or --add-config-file must be specified"
            )
        if not any(given.values()):
            raise ConfigCommandError(
                "At least one of --add-config, --add-config-file, or --delete-config "
                "must be specified with --alter"
            )
    if len(names) > 1:
        raise ConfigCommandError(
            "Exactly one entity name must be specified for every entity type"
        )
    return Entity(kind, names[0] if names else None)


# --- --add-config and --delete-config ------------------------------------------------------

# A separator (a comma, an '=') counts only outside square brackets: what follows it
# reaches an opening bracket, or the end, before any closing one.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_KEY = re.compile(r"[a-zA-Z0-9._-]*")


def parse_add_config(text: str) -> dict[str, str]:
    """``--add-config 'k1=v1,k2=[v1,v2],k3=v3'``: Kafka's syntax, brackets grouping a
    value that holds commas (a LIST config's); spaces around each ``=`` and at the ends
    of keys and values are dropped, and a later key wins over an earlier one."""
    pairs = re.split("," + _OUTSIDE_BRACKETS, text)
    while len(pairs) > 1 and pairs[-1] == "":
        pairs.pop()  # Java's split drops trailing empty strings
    configs: dict[str, str] = {}
    for pair in pairs:
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, pair)
        if len(parts) != 2:
            raise ConfigCommandError(
                "requirement failed: Invalid entity config: all configs to be added "
                'must be in the format "key=val" or  "key=[val1,val2]" to group '
                "values which contain commas."
            )
        key, value = parts
        configs[key.strip()] = value.replace("[", "").replace("]", "").strip()
    for key in configs:
        if not _KEY.fullmatch(key):
            raise ConfigCommandError(f"Invalid character found for config key: {key}")
    return configs


def parse_properties(text: str) -> dict[str, str]:
    """``--add-config-file``: a Java properties file's ``key=value`` (or ``key: value``,
    or ``key value``) lines, ``#`` and ``!`` comments, a trailing backslash continuing
    a line; Java's escapes other than that are not read. The keys are checked as
    ``--add-config``'s are."""
    configs = java_properties(text)
    for key in configs:
        if not _KEY.fullmatch(key):
            raise ConfigCommandError(f"Invalid character found for config key: {key}")
    return configs


def parse_delete_config(values: Sequence[str]) -> list[str]:
    """``--delete-config k1,k2`` (repeatable): the keys, trimmed."""
    return [key.strip() for value in values for key in value.split(",")]


def check_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``, which the tool runs before it asks the cluster."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_TOPIC_NAME:
        reason = (
            f"the length of '{name}' is longer than the max allowed length "
            f"{MAX_TOPIC_NAME}"
        )
    elif not _KEY.fullmatch(name):
        reason = (
            f"'{name}' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )
    else:
        return
    raise ConfigCommandError(f"Topic name is invalid: {reason}")


# --- the work --------------------------------------------------------------------------------


def resource_of(entity_type: str, name: str) -> tuple[ConfigResource, ConfigSource]:
    """The resource, and the source of the entries only ``--describe`` without ``--all``
    shows (what was set at run time for it)."""
    if entity_type == TOPICS:
        check_topic_name(name)
        return ConfigResource(RESOURCE_TOPIC, name), ConfigSource.DYNAMIC_TOPIC_CONFIG
    source = (
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if name == DEFAULT_ENTITY
        else ConfigSource.DYNAMIC_BROKER_CONFIG
    )
    return ConfigResource(RESOURCE_BROKER, name), source


async def resource_config(
    cluster: AsyncAdminClient,
    entity_type: str,
    name: str,
    *,
    include_synonyms: bool,
    describe_all: bool,
) -> list[ConfigEntry]:
    """ConfigCommand's ``getResourceConfig``: the entity's entries sorted by name, only
    the dynamic ones unless ``describe_all``; AdminCallFailed with the broker's error."""
    resource, dynamic = resource_of(entity_type, name)
    answer = (
        await cluster.describe_configs([resource], include_synonyms=include_synonyms)
    ).get(resource, KafkaError(ErrorCode.unknown_server_error, "no answer"))
    if isinstance(answer, KafkaError):
        raise AdminCallFailed(answer)
    return sorted(
        (e for e in answer.values() if describe_all or e.source == dynamic),
        key=lambda e: e.name,
    )


def entry_line(entry: ConfigEntry) -> str:
    """``  key=value sensitive=false synonyms={SOURCE:key=value, ...}``; a value the
    broker withholds (a sensitive one) is ``null``, as Java prints it."""
    synonyms = ", ".join(
        f"{s.source.name}:{s.name}={_java(s.value)}" for s in entry.synonyms
    )
    sensitive = "true" if entry.is_sensitive else "false"
    return (
        f"  {entry.name}={_java(entry.value)} sensitive={sensitive} "
        f"synonyms={{{synonyms}}}"
    )


def _java(value: str | None) -> str:
    return "null" if value is None else value


async def describe(
    cluster: AsyncAdminClient, entity: Entity, *, describe_all: bool
) -> list[str]:
    """``--describe``: each entity's heading and entries. A topic that does not exist is
    one line, as Kafka 4.1's tool says it (and not a failure)."""
    if entity.name is not None:
        names = [entity.name]
    elif entity.entity_type == TOPICS:
        names = sorted((await cluster.list_topics()).topics)
    else:
        await cluster.metadata([])
        names = [*(str(b) for b in sorted(cluster.brokers)), DEFAULT_ENTITY]
    lines = []
    for name in names:
        try:
            entries = await resource_config(
                cluster,
                entity.entity_type,
                name,
                include_synonyms=True,
                describe_all=describe_all,
            )
        except AdminCallFailed as e:
            if e.error.code() != ErrorCode.unknown_topic_or_partition:
                raise
            lines.append(
                f"The {entity.singular} '{name}' doesn't exist and doesn't have "
                "dynamic config."
            )
            continue
        if name == DEFAULT_ENTITY:
            lines.append(
                f"Default configs for {entity.entity_type} in the cluster are:"
            )
        else:
            kind = "All" if describe_all else "Dynamic"
            lines.append(f"{kind} configs for {entity.singular} {name} are:")
        lines += [entry_line(e) for e in entries]
    return lines


async def alter(
    cluster: AsyncAdminClient,
    entity: Entity,
    to_add: dict[str, str],
    to_delete: Sequence[str],
) -> str:
    """``--alter``: one IncrementalAlterConfigs of SETs and DELETEs; the line Kafka's tool
    prints once it is done."""
    assert entity.name is not None
    current = await resource_config(
        cluster,
        entity.entity_type,
        entity.name,
        include_synonyms=False,
        describe_all=False,
    )
    overridden = {e.name for e in current}
    missing = [key for key in to_delete if key not in overridden]
    if missing:
        raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
    resource, _ = resource_of(entity.entity_type, entity.name)
    ops = [AlterConfigOp(k, v, AlterConfigOpType.SET) for k, v in to_add.items()]
    # Kafka's tool sends a DELETE with an empty value, which the broker ignores.
    ops += [AlterConfigOp(k, "", AlterConfigOpType.DELETE) for k in to_delete]
    answer = (await cluster.incremental_alter_configs({resource: ops})).get(
        resource, KafkaError(ErrorCode.unknown_server_error, "no answer")
    )
    if answer is not None:
        raise AdminCallFailed(answer)
    if entity.name == DEFAULT_ENTITY:
        return f"Completed updating default config for {entity.entity_type} in the cluster."
    return f"Completed updating config for {entity.singular} {entity.name}."


# --- a failed call, as the Java tool prints it -------------------------------------------------

# The exception Kafka's Admin raises for each error code a config call may get
# (org.apache.kafka.common.errors); any other is named from its code.
_EXCEPTIONS = {
    ErrorCode.invalid_config: "InvalidConfigurationException",
    ErrorCode.unknown_server_error: "UnknownServerException",
    ErrorCode.request_timed_out: "TimeoutException",
    ErrorCode.cluster_authorization_failed: "ClusterAuthorizationException",
    ErrorCode.topic_authorization_failed: "TopicAuthorizationException",
}


def exception_name(code: int) -> str:
    """Kafka's exception class for an error code: ``UNKNOWN_TOPIC_OR_PARTITION`` is
    ``UnknownTopicOrPartitionException``, ``INVALID_TOPIC_EXCEPTION``
    ``InvalidTopicException``; a code Kafka does not know, UnknownServerException."""
    try:
        error = ErrorCode(code)
    except ValueError:
        return "UnknownServerException"
    known = _EXCEPTIONS.get(error)
    if known is not None:
        return known
    words = error.name.removesuffix("_exception").split("_")
    return "".join(w.capitalize() for w in words) + "Exception"


def failure_lines(args: Sequence[str], error: KafkaError) -> list[str]:
    """What Kafka's tool prints on stderr when an Admin call fails: the command, then
    the exception with the broker's message (the stack trace left out). A failure of
    the client's own (no broker answered) says what failed."""
    lines = [f"Error while executing config command with args '{' '.join(args)}'"]
    if error.name().startswith("_"):  # librdkafka's names of the client's own errors
        lines.append(error.str())
        return lines
    exception = f"org.apache.kafka.common.errors.{exception_name(error.code())}"
    message = error.str() if error.str() != error.name() else None
    cause = f"{exception}: {message}" if message else exception
    lines.append(f"java.util.concurrent.ExecutionException: {cause}")
    return lines
