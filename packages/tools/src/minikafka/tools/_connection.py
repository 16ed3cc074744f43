"""What the client tools share: a connection to the cluster, and errors as Kafka's tools say them.

Kafka's command-line tools start from a bootstrap list and talk to the cluster through
Kafka's Admin client, which knows where each request goes (the controller for
CreateTopics, a group's coordinator for DescribeGroups, a partition's leader for
ListOffsets). These tools do the same through ``minikafka.client``'s
:class:`~minikafka.client.AsyncAdminClient`: :func:`connect` opens one. This module
adds only what a command line needs on top: :class:`ToolError`, printed on stderr before
the tool exits 1, and :class:`BrokerError`, a broker's error code printed under Kafka's
name (``TOPIC_ALREADY_EXISTS``); :func:`describe_failure` says the client's own
exceptions the same way.
"""

from __future__ import annotations

import re
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from contextlib import asynccontextmanager, contextmanager
from typing import TypeVar

from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v5.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from minikafka.client import AsyncAdminClient, ConfigError, KafkaException
from minikafka.client import KafkaError as ClientKafkaError

T = TypeVar("T")

DEFAULT_REQUEST_TIMEOUT_MS = 30_000  # request.timeout.ms


class ToolError(Exception):
    """What a tool reports on stderr before it exits with status 1."""


class BrokerError(ToolError):
    """A broker answered with an error code: a ToolError that prints Kafka's name of it
    (the client's own error value is :class:`minikafka.client.KafkaError`)."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        self.code = int(code)
        self.message = message
        text = error_name(code)
        super().__init__(f"{text}: {message}" if message else text)


def error_name(code: ErrorCode | int) -> str:
    """Kafka's name of an error code, as its ``Errors`` enum spells it."""
    try:
        return ErrorCode(int(code)).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE({int(code)})"


def check(code: ErrorCode | int, message: str | None = None) -> None:
    """Raise :class:`BrokerError` unless ``code`` is NONE."""
    if int(code) != ErrorCode.none:
        raise BrokerError(code, message)


def raise_for(error: ClientKafkaError | None, message: str | None = None) -> None:
    """The client's per-topic or per-group answer as the tools' error, if it is one: a
    broker's code as :class:`BrokerError`, the client's own (a connection) as ToolError."""
    if error is None:
        return
    if error.code() < 0:
        raise ToolError(error.str())
    raise BrokerError(error.code(), message or _detail(error))


async def as_tool_error(call: Awaitable[T]) -> T:
    """Await a client call, its KafkaException raised as the tools' error (:func:`raise_for`)."""
    try:
        return await call
    except KafkaException as e:
        raise_for(e.args[0])
        raise  # not reached: raise_for raised


def describe_failure(error: ClientKafkaError) -> str:
    """A client error as a tool prints it: a broker's under Kafka's name; the client's
    own (librdkafka's negative codes: a connection that failed) by what failed."""
    if error.code() < 0:
        return error.str()
    detail = _detail(error)
    return f"{error.name()}: {detail}" if detail else error.name()


def _detail(error: ClientKafkaError) -> str | None:
    text = error.str()
    return None if text == error.name() else text


def checked(
    kind: str, parse: Callable[[dict[str, object]], object], config: dict[str, object]
) -> dict[str, object]:
    """``config`` once the client's own configuration class accepts it: a bad key or value
    is a ToolError naming the key, before anything connects."""
    try:
        parse(config)
    except ConfigError as e:
        raise ToolError(f"invalid {kind} configuration: {e}") from None
    return config


def parse_bootstrap(servers: str) -> str:
    """``host:port[,host:port...]`` (IPv6 as ``[::1]:9092``) checked, as typed."""
    items = [s.strip() for s in servers.split(",")]
    for item in items:
        host, colon, port = item.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ToolError(f"invalid bootstrap server {item!r}: expected HOST:PORT")
    if not servers.strip():
        raise ToolError("no bootstrap server given")
    return ",".join(items)


CONSUMER_REPLICA_ID = -1  # a Fetch or ListOffsets from a client, not a follower
READ_UNCOMMITTED = 0


def list_offsets_request(
    topics: Mapping[str, Iterable[int]], timestamp: int
) -> ListOffsetsRequest:
    """ListOffsets v5 of ``timestamp`` (-2 earliest, -1 latest, or a time) for each
    topic's partitions, as a read_uncommitted consumer asks."""
    return ListOffsetsRequest(
        replica_id=BrokerId(CONSUMER_REPLICA_ID),
        isolation_level=i8(READ_UNCOMMITTED),
        topics=tuple(
            ListOffsetsTopic(
                name=TopicName(name),
                partitions=tuple(
                    ListOffsetsPartition(
                        partition_index=i32(p),
                        current_leader_epoch=i32(-1),
                        timestamp=i64(timestamp),
                    )
                    for p in partitions
                ),
            )
            for name, partitions in topics.items()
        ),
    )


@asynccontextmanager
async def connect(
    bootstrap_servers: str,
    *,
    client_id: str,
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    command_config: Mapping[str, str] | None = None,
) -> AsyncIterator[AsyncAdminClient]:
    """An :class:`AsyncAdminClient` for the cluster, closed on exit.

    ``command_config`` is the ``--command-config`` file's properties (its security
    keys: ``security.protocol``, ``ssl.*``, ``sasl.*``); the flags win over it, as in
    Kafka's tools. Its connections run in a nursery; a lone error leaving the block
    comes out as itself (:func:`lone_errors`), so callers can ``except ToolError``.
    """
    config: dict[str, object] = {
        **(command_config or {}),
        "bootstrap.servers": parse_bootstrap(bootstrap_servers),
        "client.id": client_id,
        "request.timeout.ms": request_timeout_ms,
    }
    with lone_errors():
        try:
            admin_context = AsyncAdminClient.open(config)
        except ConfigError as e:
            raise ToolError(f"invalid --command-config: {e}") from None
        async with admin_context as admin:
            yield admin


def load_properties(path: str) -> dict[str, str]:
    """A Java properties file (``--command-config``): ``key=value`` (or ``key: value``,
    ``key value``) lines, ``#``/``!`` comments, a trailing backslash continuing the line
    (a JAAS config written over several lines); ToolError if it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ToolError(f"cannot read {path}: {e.strerror}") from None
    return java_properties(text)


def java_properties(text: str) -> dict[str, str]:
    """The ``key=value`` pairs of a properties file's text (Java's escapes other than a
    continuing backslash are not read)."""
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = logical + raw.lstrip()
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd count of backslashes: the line goes on
            logical = line[:-1]
            continue
        logical = ""
        if not line.strip() or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]*)\s*[=:\s]\s*(.*)", line)
        key, value = (match[1], match[2]) if match else (line.strip(), "")
        props[key] = value  # trailing spaces are the value's, as in Java
    return props


@contextmanager
def lone_errors() -> Iterator[None]:
    """Let an exception group holding one exception out as that exception.

    trio's nurseries wrap whatever leaves them in an exception group; a tool that failed
    for one reason reports that reason.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


__all__ = [
    "AsyncAdminClient",
    "BrokerError",
    "KafkaException",
    "ToolError",
    "as_tool_error",
    "check",
    "connect",
    "describe_failure",
    "error_name",
    "java_properties",
    "load_properties",
    "lone_errors",
    "raise_for",
]
