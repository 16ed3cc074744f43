"""The network layer's configuration, under Kafka's own key names and defaults.

``listeners`` is Kafka's ``NAME://host:port[,NAME://host:port...]``; port 0 asks the
operating system for a free port (tests use it). Each listener name is looked up in
``listener.security.protocol.map`` (Kafka's default maps each security protocol's name
to itself) to find the protocol it speaks: PLAINTEXT, SSL (its ``ssl.*`` keys are read
by ``_ssl_config.py``), SASL_PLAINTEXT and SASL_SSL (their SASL keys by
``_sasl_config.py``, SASL_SSL's TLS as SSL's). A listener that speaks TLS or SASL
without the settings it needs stops start-up, naming the missing key.

The connection limits are Kafka's ConnectionQuotas keys (``max.connections``, KIP-402;
``max.connections.per.ip`` and its overrides) and ``queued.max.request.bytes``, the
size of the MemoryPool requests are read into (KIP-72). A bad value raises
:class:`ConfigError` naming the key, so start-up stops with a message a user can act on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from minikafka.common import (
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    at_least,
    between,
)

from ._framing import DEFAULT_MAX_FRAME_BYTES
from ._sasl_config import FAILED_DELAY, JAAS, SASL_LISTENER_KEYS, SaslSettings
from ._ssl_config import SSL_KEYS, SslSettings

INT_MAX = 2**31 - 1
"""Java's ``Integer.MAX_VALUE``: Kafka's default for the connection limits (no limit)."""


# --- listeners and their security protocols ----------------------------------------------

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
"""Kafka's SecurityProtocol names."""
SASL_PLAINTEXT, SASL_SSL = "SASL_PLAINTEXT", "SASL_SSL"
TLS_PROTOCOLS = (SSL, SASL_SSL)
SASL_PROTOCOLS = (SASL_PLAINTEXT, SASL_SSL)
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
INTER_BROKER_MECHANISM = "sasl.mechanism.inter.broker.protocol"
CONTROLLER_MECHANISM = "sasl.mechanism.controller.protocol"
SECURITY_PROTOCOL_MAP_KEY = "listener.security.protocol.map"
LISTENERS = "listeners"
QUEUED_MAX_REQUEST_BYTES = "queued.max.request.bytes"
SOCKET_REQUEST_MAX_BYTES = "socket.request.max.bytes"
MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
MAX_CONNECTIONS_PER_IP_OVERRIDES = "max.connections.per.ip.overrides"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"
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


def parse_listeners(value: str, key: str = LISTENERS) -> tuple[Listener, ...]:
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


def parse_security_protocol_map(
    value: str, key: str = SECURITY_PROTOCOL_MAP_KEY
) -> dict[str, str]:
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
            raise ConfigError(
                key, f"invalid security protocol {protocol!r} for listener {name}"
            )
        if name in mapping:
            raise ConfigError(key, f"listener name {name} appears more than once")
        mapping[name] = protocol
    return mapping


def listener_endpoints(
    value: str, key: str, protocol_map: Mapping[str, str]
) -> tuple[Listener, ...]:
    """Parse ``value`` and give each listener the protocol its name maps to.

    One place for every key that names listeners (``listeners``,
    ``advertised.listeners``): a name the map does not know is Kafka's "No security
    protocol defined for listener".
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
        overrides[host] = _count(key, raw.strip())
    return tuple(overrides.items())


def _count(key: str, raw: str) -> int:
    count = ConfigType.INT.parse(key, raw)
    assert isinstance(count, int)
    at_least(0)(key, count)
    return count


# --- the config ---------------------------------------------------------------------------


_OS_DEFAULT_READ_SIZE = 65_536

DEFAULT_LISTENER = Listener("PLAINTEXT", "127.0.0.1", 9092)
"""Ours: Kafka binds ``PLAINTEXT://:9092``, every interface; a teaching broker stays local."""


@attrs.frozen
class NetConfig:
    """What the Reactor needs; :data:`NET_CONFIG` declares the Kafka key of each field."""

    listeners: tuple[Listener, ...] = attrs.field(default=(DEFAULT_LISTENER,))
    listener_ssl: tuple[SslSettings, ...] = ()
    """The TLS settings of each listener that speaks SSL or SASL_SSL."""
    listener_sasl: tuple[SaslSettings, ...] = ()
    """The SASL settings of each listener that speaks SASL_PLAINTEXT or SASL_SSL."""
    num_network_threads: int = 3
    num_io_threads: int = 8
    queued_max_requests: int = 500
    socket_request_max_bytes: int = DEFAULT_MAX_FRAME_BYTES
    connections_max_idle_ms: int = 600_000
    queued_max_request_bytes: int = -1
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = ()
    socket_send_buffer_bytes: int = 102_400
    socket_receive_buffer_bytes: int = 102_400

    def __attrs_post_init__(self) -> None:
        tls = {settings.listener for settings in self.listener_ssl}
        sasl = {settings.listener for settings in self.listener_sasl}
        for listener in self.listeners:
            protocol = listener.security_protocol
            if protocol in TLS_PROTOCOLS and listener.name not in tls:
                raise ConfigError(
                    LISTENERS,
                    f"listener {listener} speaks TLS but has no ssl.* settings",
                )
            if protocol in SASL_PROTOCOLS and listener.name not in sasl:
                raise ConfigError(
                    LISTENERS, f"listener {listener} speaks SASL but has no settings"
                )
        NET_CONFIG.validate(self)  # a NetConfig built in code obeys the same bounds
        # Kafka's KafkaConfig.validateValues, for the keys this layer owns.
        if 0 < self.queued_max_request_bytes < self.socket_request_max_bytes:
            # Otherwise one request could be bigger than the whole pool.
            raise ConfigError(
                QUEUED_MAX_REQUEST_BYTES,
                f"{self.queued_max_request_bytes} must be at least {SOCKET_REQUEST_MAX_BYTES} "
                f"({self.socket_request_max_bytes}) when set",
            )
        if (
            self.max_connections_per_ip == 0
            and not self.max_connections_per_ip_overrides
        ):
            raise ConfigError(
                MAX_CONNECTIONS_PER_IP,
                f"can be 0 only if {MAX_CONNECTIONS_PER_IP_OVERRIDES} is set",
            )

    @property
    def read_size(self) -> int:
        """How much one read asks the socket for: what its receive buffer can hold
        (``socket.receive.buffer.bytes``; with the OS's default, 64 KiB). A read never
        returns more than the kernel has buffered, so a larger size would only be a
        larger allocation per read."""
        if self.socket_receive_buffer_bytes > 0:
            return self.socket_receive_buffer_bytes
        return _OS_DEFAULT_READ_SIZE

    @property
    def memory_pool_bytes(self) -> int | None:
        """The MemoryPool's size, or ``None``: Kafka's ``MemoryPool.NONE``."""
        return (
            self.queued_max_request_bytes if self.queued_max_request_bytes > 0 else None
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NetConfig:
        """Read the keys :data:`NET_CONFIG` declares from ``props``; other keys are left alone."""
        values = NET_CONFIG.parse(props)
        raw_listeners = props.get(LISTENERS, str(DEFAULT_LISTENER)).strip()
        listeners = listener_endpoints(
            raw_listeners, LISTENERS, security_protocol_map(props)
        )
        values["listeners"] = listeners
        values["listener_ssl"] = tuple(
            SslSettings.from_properties(props, listener.name)
            for listener in listeners
            if listener.security_protocol in TLS_PROTOCOLS
        )
        values["listener_sasl"] = tuple(
            SaslSettings.from_properties(props, listener.name)
            for listener in listeners
            if listener.security_protocol in SASL_PROTOCOLS
        )
        return cls(**values)  # type: ignore[arg-type]


def security_protocol_map(props: Mapping[str, str]) -> dict[str, str]:
    """``listener.security.protocol.map`` from ``props``, Kafka's default if absent.

    Without the key, KRaft's effective map also lets each of ``controller.listener.names``
    speak PLAINTEXT (so Kafka's sample ``server.properties`` reads the same here).
    """
    if SECURITY_PROTOCOL_MAP_KEY in props:
        return parse_security_protocol_map(props[SECURITY_PROTOCOL_MAP_KEY])
    mapping = parse_security_protocol_map(DEFAULT_SECURITY_PROTOCOL_MAP)
    for name in props.get(CONTROLLER_LISTENER_NAMES, "").split(","):
        if name.strip():
            mapping.setdefault(name.strip().upper(), PLAINTEXT)
    return mapping


_INT, _LONG = ConfigType.INT, ConfigType.LONG

NET_CONFIG = ConfigDef(
    (
        # Read by NetConfig.from_properties together (a listener's name needs the map).
        ConfigKey(
            LISTENERS,
            lambda k, v: parse_listeners(v, k),
            None,
            doc="NAME://host:port,... to accept on.",
        ),
        ConfigKey(
            SECURITY_PROTOCOL_MAP_KEY,
            lambda k, v: parse_security_protocol_map(v, k),
            None,
            doc="LISTENER_NAME:SECURITY_PROTOCOL,...",
        ),
        ConfigKey(
            CONTROLLER_LISTENER_NAMES,
            ConfigType.LIST,
            None,
            doc="The controllers' listener names (KRaft); they speak PLAINTEXT when the map "
            "is not given.",
        ),
        ConfigKey(
            "num.network.threads",
            _INT,
            "num_network_threads",
            at_least(1),
            "Processors (each owns its connections).",
        ),
        ConfigKey(
            "num.io.threads",
            _INT,
            "num_io_threads",
            at_least(1),
            "Request handler tasks.",
        ),
        ConfigKey(
            "queued.max.requests",
            _INT,
            "queued_max_requests",
            at_least(1),
            "RequestChannel capacity before Processors stop reading.",
        ),
        ConfigKey(
            SOCKET_REQUEST_MAX_BYTES,
            _INT,
            "socket_request_max_bytes",
            at_least(1),
            "The largest request frame accepted.",
        ),
        ConfigKey(
            "connections.max.idle.ms",
            _LONG,
            "connections_max_idle_ms",
            at_least(1),
            "An idle connection is closed after this long.",
        ),
        ConfigKey(
            QUEUED_MAX_REQUEST_BYTES,
            _LONG,
            "queued_max_request_bytes",
            doc="The MemoryPool requests are read into (KIP-72); <= 0 unbounded.",
        ),
        ConfigKey(
            "max.connections",
            _INT,
            "max_connections",
            at_least(0),
            "The Acceptor waits while the broker holds this many (KIP-402).",
        ),
        ConfigKey(
            MAX_CONNECTIONS_PER_IP,
            _INT,
            "max_connections_per_ip",
            at_least(0),
            "A connection over its address's limit is closed.",
        ),
        ConfigKey(
            MAX_CONNECTIONS_PER_IP_OVERRIDES,
            lambda k, v: parse_connection_overrides(v, k),
            "max_connections_per_ip_overrides",
            doc="host:count,... (hosts as given: names are resolved when the server starts).",
        ),
        # Kafka's SO_SNDBUF / SO_RCVBUF for client connections; -1: the OS's default
        # (Linux then grows the buffers on demand). Kafka accepts 0 and fails on it when
        # the first socket is configured; refusing it at start-up names the key instead.
        ConfigKey(
            "socket.send.buffer.bytes",
            _INT,
            "socket_send_buffer_bytes",
            between(1, INT_MAX, -1),
            "SO_SNDBUF of each accepted connection; -1 for the OS's default.",
        ),
        ConfigKey(
            "socket.receive.buffer.bytes",
            _INT,
            "socket_receive_buffer_bytes",
            between(1, INT_MAX, -1),
            "SO_RCVBUF of the listening sockets (inherited by each connection) and the "
            "size of one read; -1 for the OS's default.",
        ),
        # Read by SslSettings and SaslSettings, per listener: declared here so that
        # they are known keys.
        *(
            ConfigKey(
                key, ConfigType.STRING, None, doc="TLS listeners (_ssl_config.py)."
            )
            for key in SSL_KEYS
        ),
        *(
            ConfigKey(key, ConfigType.STRING, None, doc="SASL (_sasl_config.py).")
            for key in (*SASL_LISTENER_KEYS, FAILED_DELAY)
        ),
        # Read by ClientSecurity: the mechanism a broker's own clients use.
        *(
            ConfigKey(
                key,
                ConfigType.STRING,
                None,
                doc="The SASL mechanism of the broker's own clients "
                "(_client_security.py).",
            )
            for key in (INTER_BROKER_MECHANISM, CONTROLLER_MECHANISM)
        ),
    )
)
"""The network layer's keys (Kafka's SocketServerConfigs and listener keys)."""


_LISTENER_KEY = re.compile(r"listener\.name\.[a-z0-9_]+\.(?P<key>.+)")


def is_listener_key(key: str) -> bool:
    """Whether ``key`` is ``listener.name.<name>.<key>`` of a key a listener reads for
    itself (Kafka's listener-prefixed overrides; the name in lower case)."""
    match = _LISTENER_KEY.fullmatch(key)
    if match is None:
        return False
    own = match["key"]
    # <mechanism>.sasl.jaas.config: a mechanism's JAAS line on this listener.
    return own in SSL_KEYS or own in SASL_LISTENER_KEYS or own.endswith("." + JAAS)
