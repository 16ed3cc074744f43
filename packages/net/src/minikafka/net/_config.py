"""The network layer's configuration, under Kafka's own key names and defaults.

``listeners`` is Kafka's ``NAME://host:port[,NAME://host:port...]``; port 0 asks the
operating system for a free port (tests use it). A bad value raises
:class:`ConfigError` naming the key, so start-up stops with a message a user can act on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import ClassVar, TypeVar

import attrs

from ._framing import DEFAULT_MAX_FRAME_BYTES


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@attrs.frozen
class Listener:
    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


_LISTENER = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>\[[^\]]*\]|[^:/]*):(?P<port>\d+)$"
)


def parse_listeners(value: str, key: str = "listeners") -> tuple[Listener, ...]:
    listeners: list[Listener] = []
    for item in (part.strip() for part in value.split(",")):
        match = _LISTENER.match(item)
        if match is None:
            raise ConfigError(key, f"{item!r} is not NAME://host:port")
        port = int(match["port"])
        if port > 65535:
            raise ConfigError(key, f"port {port} in {item!r} is out of range")
        host = match["host"].strip("[]") or "0.0.0.0"
        listeners.append(Listener(match["name"].upper(), host, port))
    names = [listener.name for listener in listeners]
    if len(set(names)) != len(names):
        raise ConfigError(key, f"listener names must be unique: {value!r}")
    return tuple(listeners)


T = TypeVar("T")


def _at_least_one(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        key = next((k for k, f in NetConfig.KEYS.items() if f == attribute.name), attribute.name)
        raise ConfigError(key, f"{value} is below the minimum 1")


@attrs.frozen
class NetConfig:
    """What the Reactor needs; each field is the Kafka key in its docstring."""

    listeners: tuple[Listener, ...] = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    """``listeners``"""
    num_network_threads: int = attrs.field(default=3, validator=_at_least_one)
    """``num.network.threads``: Processors (each owns its connections)."""
    num_io_threads: int = attrs.field(default=8, validator=_at_least_one)
    """``num.io.threads``: request handler tasks."""
    queued_max_requests: int = attrs.field(default=500, validator=_at_least_one)
    """``queued.max.requests``: RequestChannel capacity before Processors stop reading."""
    socket_request_max_bytes: int = attrs.field(
        default=DEFAULT_MAX_FRAME_BYTES, validator=_at_least_one
    )
    """``socket.request.max.bytes``"""
    connections_max_idle_ms: int = attrs.field(default=600_000, validator=_at_least_one)
    """``connections.max.idle.ms``"""
    read_chunk_bytes: int = attrs.field(default=65536, validator=_at_least_one)
    """How much one read asks the socket for (ours; Kafka sizes its buffers per receive)."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "listeners": "listeners",
        "num.network.threads": "num_network_threads",
        "num.io.threads": "num_io_threads",
        "queued.max.requests": "queued_max_requests",
        "socket.request.max.bytes": "socket_request_max_bytes",
        "connections.max.idle.ms": "connections_max_idle_ms",
    }

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NetConfig:
        """Read the keys this layer owns from ``props``; other keys are left alone."""
        values: dict[str, object] = {}
        for key, field in cls.KEYS.items():
            if key not in props:
                continue
            raw = props[key].strip()
            if field == "listeners":
                values[field] = parse_listeners(raw, key)
            else:
                values[field] = _parse(key, raw, int, minimum=1)
        return cls(**values)  # type: ignore[arg-type]


def _parse(key: str, raw: str, kind: Callable[[str], T], minimum: int | None = None) -> T:
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(
            key, f"{raw!r} is not a valid {getattr(kind, '__name__', kind)}"
        ) from None
    if minimum is not None and isinstance(value, int) and value < minimum:
        raise ConfigError(key, f"{value} is below the minimum {minimum}")
    return value
