"""The network layer's configuration, under Kafka's own key names and defaults.

``listeners`` is Kafka's ``NAME://host:port[,NAME://host:port...]``; port 0 asks the
operating system for a free port (tests use it). Each listener name is looked up in
``listener.security.protocol.map`` (Kafka's default maps each security protocol's name
to itself) to find the protocol it speaks. Only PLAINTEXT exists here: a listener that
promises SSL, SASL_SSL or SASL_PLAINTEXT stops start-up rather than serving
unencrypted, unauthenticated Kafka under a name that says otherwise.

The connection limits are Kafka's ConnectionQuotas keys (``max.connections``, KIP-402;
``max.connections.per.ip`` and its overrides) and ``queued.max.request.bytes``, the
size of the MemoryPool requests are read into (KIP-72). A bad value raises
:class:`ConfigError` naming the key, so start-up stops with a message a user can act on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import ClassVar, TypeVar

import attrs

from ._framing import DEFAULT_MAX_FRAME_BYTES

INT_MAX = 2**31 - 1
"""Java's ``Integer.MAX_VALUE``: Kafka's default for the connection limits (no limit)."""


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


# --- listeners and their security protocols ----------------------------------------------

PLAINTEXT = "PLAINTEXT"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""Kafka's SecurityProtocol names; only PLAINTEXT is implemented."""
SECURITY_PROTOCOL_MAP_KEY = "listener.security.protocol.map"
DEFAULT_SECURITY_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
"""Kafka's default: each security protocol's name is a listener name speaking it."""


@attrs.frozen
class Listener:
    name: str
    host: str
    port: int
    security_protocol: str = PLAINTEXT
    """What ``listener.security.protocol.map`` says ``name`` speaks."""

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


_LISTENER = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>\[[^\]]*\]|[^:/]*):(?P<port>\d+)$"
)


def parse_listeners(value: str, key: str = "listeners") -> tuple[Listener, ...]:
    """The syntax of a listener list; :func:`listener_endpoints` also finds the protocols."""
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


def parse_security_protocol_map(value: str, key: str = SECURITY_PROTOCOL_MAP_KEY) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` as a dict; names upper-cased as Kafka normalises them."""
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        # The last colon splits, as Kafka's parseCsvMap does.
        name, sep, protocol = item.rpartition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(key, f"{item!r} is not LISTENER_NAME:SECURITY_PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(key, f"invalid security protocol {protocol!r} for listener {name}")
        if name in mapping:
            raise ConfigError(key, f"listener name {name} appears more than once")
        mapping[name] = protocol
    return mapping


def listener_endpoints(
    value: str, key: str, protocol_map: Mapping[str, str]
) -> tuple[Listener, ...]:
    """Parse ``value`` and give each listener the protocol its name maps to.

    One place for every key that names listeners (``listeners``, ``advertised.listeners``):
    a name the map does not know is Kafka's "No security protocol defined for listener".
    """
    resolved: list[Listener] = []
    for listener in parse_listeners(value, key):
        protocol = protocol_map.get(listener.name)
        if protocol is None:
            raise ConfigError(
                key,
                f"no security protocol defined for listener {listener.name} "
                f"(add it to {SECURITY_PROTOCOL_MAP_KEY})",
            )
        resolved.append(attrs.evolve(listener, security_protocol=protocol))
    return tuple(resolved)


def check_plaintext(listeners: tuple[Listener, ...], key: str = "listeners") -> None:
    """Refuse a listener whose name promises TLS or SASL: neither is implemented.

    Serving plaintext under such a name would look secure to whoever configured it
    and be readable and unauthenticated on the wire, so start-up stops instead.
    """
    for listener in listeners:
        if listener.security_protocol != PLAINTEXT:
            raise ConfigError(
                key,
                f"listener {listener} uses security protocol {listener.security_protocol}, "
                "but TLS and SASL are not implemented in minikafka; use PLAINTEXT",
            )


# --- per-IP connection limits -------------------------------------------------------------

# Kafka's Utils.validHostPattern: what may appear in a host name or an IP address.
_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]+")


def parse_connection_overrides(value: str, key: str) -> tuple[tuple[str, int], ...]:
    """``host:count,host:count`` (hosts as given: names are resolved when the server starts)."""
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        host, sep, raw = item.rpartition(":")
        host = host.strip()
        if not sep:
            raise ConfigError(key, f"{item!r} is not host:count")
        if not _VALID_HOST.fullmatch(host):
            raise ConfigError(key, f"contains an invalid address: {host!r}")
        overrides[host] = _parse(key, raw.strip(), int, minimum=0, maximum=INT_MAX)
    return tuple(overrides.items())


# --- the config ---------------------------------------------------------------------------

T = TypeVar("T")


def _at_least(minimum: int) -> Callable[[object, attrs.Attribute[int], int], None]:
    def check(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
        if value < minimum:
            raise ConfigError(_key_of(attribute.name), f"{value} is below the minimum {minimum}")

    return check


def _key_of(field: str) -> str:
    return next((k for k, f in NetConfig.KEYS.items() if f == field), field)


def _plaintext_only(
    instance: object, attribute: attrs.Attribute[tuple[Listener, ...]], value: tuple[Listener, ...]
) -> None:
    check_plaintext(value)


DEFAULT_LISTENER = Listener("PLAINTEXT", "127.0.0.1", 9092)
"""Ours: Kafka binds ``PLAINTEXT://:9092``, every interface; a teaching broker stays local."""


@attrs.frozen
class NetConfig:
    """What the Reactor needs; each field is the Kafka key in its docstring."""

    listeners: tuple[Listener, ...] = attrs.field(
        default=(DEFAULT_LISTENER,), validator=_plaintext_only
    )
    """``listeners``, with ``listener.security.protocol.map`` applied."""
    num_network_threads: int = attrs.field(default=3, validator=_at_least(1))
    """``num.network.threads``: Processors (each owns its connections)."""
    num_io_threads: int = attrs.field(default=8, validator=_at_least(1))
    """``num.io.threads``: request handler tasks."""
    queued_max_requests: int = attrs.field(default=500, validator=_at_least(1))
    """``queued.max.requests``: RequestChannel capacity before Processors stop reading."""
    socket_request_max_bytes: int = attrs.field(
        default=DEFAULT_MAX_FRAME_BYTES, validator=_at_least(1)
    )
    """``socket.request.max.bytes``"""
    connections_max_idle_ms: int = attrs.field(default=600_000, validator=_at_least(1))
    """``connections.max.idle.ms``"""
    queued_max_request_bytes: int = -1
    """``queued.max.request.bytes``: the MemoryPool requests are read into; <= 0 unbounded."""
    max_connections: int = attrs.field(default=INT_MAX, validator=_at_least(0))
    """``max.connections``: the Acceptor waits while the broker holds this many."""
    max_connections_per_ip: int = attrs.field(default=INT_MAX, validator=_at_least(0))
    """``max.connections.per.ip``: a connection over its address's limit is closed."""
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = ()
    """``max.connections.per.ip.overrides``: (host or address, limit), hosts as given."""
    read_chunk_bytes: int = attrs.field(default=65536, validator=_at_least(1))
    """How much one read asks the socket for (ours; Kafka sizes its buffers per receive)."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "listeners": "listeners",
        SECURITY_PROTOCOL_MAP_KEY: "listeners",
        "num.network.threads": "num_network_threads",
        "num.io.threads": "num_io_threads",
        "queued.max.requests": "queued_max_requests",
        "socket.request.max.bytes": "socket_request_max_bytes",
        "connections.max.idle.ms": "connections_max_idle_ms",
        "queued.max.request.bytes": "queued_max_request_bytes",
        "max.connections": "max_connections",
        "max.connections.per.ip": "max_connections_per_ip",
        "max.connections.per.ip.overrides": "max_connections_per_ip_overrides",
    }

    def __attrs_post_init__(self) -> None:
        # Kafka's KafkaConfig.validateValues, for the keys this layer owns.
        if 0 < self.queued_max_request_bytes < self.socket_request_max_bytes:
            # Otherwise one request could be bigger than the whole pool.
            raise ConfigError(
                "queued.max.request.bytes",
                f"{self.queued_max_request_bytes} must be at least socket.request.max.bytes "
                f"({self.socket_request_max_bytes}) when set",
            )
        if self.max_connections_per_ip == 0 and not self.max_connections_per_ip_overrides:
            raise ConfigError(
                "max.connections.per.ip",
                "can be 0 only if max.connections.per.ip.overrides is set",
            )

    @property
    def memory_pool_bytes(self) -> int | None:
        """The MemoryPool's size, or ``None``: Kafka's ``MemoryPool.NONE``."""
        return self.queued_max_request_bytes if self.queued_max_request_bytes > 0 else None

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NetConfig:
        """Read the keys this layer owns from ``props``; other keys are left alone."""
        values: dict[str, object] = {}
        for key, field in cls.KEYS.items():
            if key not in props or field == "listeners":
                continue
            raw = props[key].strip()
            if field == "max_connections_per_ip_overrides":
                values[field] = parse_connection_overrides(raw, key)
            elif field == "queued_max_request_bytes":
                values[field] = _parse(key, raw, int, minimum=-(2**63), maximum=2**63 - 1)
            elif field in ("max_connections", "max_connections_per_ip"):
                values[field] = _parse(key, raw, int, minimum=0, maximum=INT_MAX)
            else:
                values[field] = _parse(key, raw, int, minimum=1)
        raw_listeners = props.get("listeners", str(DEFAULT_LISTENER)).strip()
        listeners = listener_endpoints(raw_listeners, "listeners", security_protocol_map(props))
        # Name the key that made a listener secure: the map if it was given, else listeners.
        given_map = SECURITY_PROTOCOL_MAP_KEY in props
        check_plaintext(listeners, SECURITY_PROTOCOL_MAP_KEY if given_map else "listeners")
        values["listeners"] = listeners
        return cls(**values)  # type: ignore[arg-type]


def security_protocol_map(props: Mapping[str, str]) -> dict[str, str]:
    """``listener.security.protocol.map`` from ``props``, Kafka's default if absent.

    Without the key, KRaft's effective map also lets each of ``controller.listener.names``
    speak PLAINTEXT (so Kafka's sample ``server.properties`` reads the same here).
    """
    if SECURITY_PROTOCOL_MAP_KEY in props:
        return parse_security_protocol_map(props[SECURITY_PROTOCOL_MAP_KEY])
    mapping = parse_security_protocol_map(DEFAULT_SECURITY_PROTOCOL_MAP)
    for name in props.get("controller.listener.names", "").split(","):
        if name.strip():
            mapping.setdefault(name.strip().upper(), PLAINTEXT)
    return mapping


def _parse(
    key: str,
    raw: str,
    kind: Callable[[str], T],
    minimum: int | None = None,
    maximum: int | None = None,
) -> T:
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(
            key, f"{raw!r} is not a valid {getattr(kind, '__name__', kind)}"
        ) from None
    if minimum is not None and isinstance(value, int) and value < minimum:
        raise ConfigError(key, f"{value} is below the minimum {minimum}")
    if maximum is not None and isinstance(value, int) and value > maximum:
        raise ConfigError(key, f"{value} is above the maximum {maximum}")
    return value
