"""KafkaConfig: ``server.properties`` plus ``--override key=value``, Kafka's names and defaults.

Every package declares the keys it owns in a :class:`~minikafka.common.ConfigDef` (the
network layer's ``NET_CONFIG``, the log's ``LOG_CONFIG`` and ``LOG_MANAGER_CONFIG``, the
controller's ``CONTROLLER_CONFIG``, the group coordinator's ``GROUP_CONFIG``); this module
declares the broker's own (:data:`BROKER_CONFIG`) and assembles ``KafkaConfig`` from all
of them: a key none declares, or a value a package cannot use, stops start-up with a
:class:`ConfigError` naming the key.

The KRaft roles (``process.roles``, ``controller.quorum.voters``, the controller and
inter-broker listeners) are checked together by :mod:`._roles`, as Kafka does. They
default to minikafka's single node, combined mode and the only voter, so ``listeners``
and ``log.dirs`` are all a single node needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import attrs

from minikafka.common import (
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    Synonym,
    at_least,
)
from minikafka.controller import (
    CONTROLLER_CONFIG,
    MIN_INSYNC,
    REPLICATION_TOPIC_CONFIG,
    ControllerConfig,
)
from minikafka.coordination import GROUP_CONFIG, TXN_CONFIG, GroupConfig, TxnConfig
from minikafka.log import LOG_CONFIG, LOG_MANAGER_CONFIG, LogConfig, LogManagerSchedule
from minikafka.net import (
    NET_CONFIG,
    Listener,
    NetConfig,
    is_listener_key,
    listener_endpoints,
    parse_listeners,
    security_protocol_map,
)
from minikafka.raft import QUORUM_CONFIG, RaftConfig

from ._authorizer_config import AUTHORIZER_CONFIG, AuthorizerSettings
from ._roles import (
    ADVERTISED_LISTENERS,
    CONTROLLER_LISTENER_NAMES,
    INTER_BROKER_LISTENER_NAME,
    PROCESS_ROLES,
    QUORUM_VOTERS,
    QuorumVoter,
    Roles,
    check_roles,
    check_zookeeper_mode,
    parse_roles,
    parse_voters,
)
from ._security_channels import (
    SECURITY_INTER_BROKER_PROTOCOL,
    ChannelSecurity,
    inter_broker_listener_name,
)

_HOURS = 3600 * 1000
_MINUTES = 60 * 1000


@attrs.frozen
class BrokerSettings:
    """The broker's own keys (:data:`BROKER_CONFIG`; the packages' keys live in their own
    config classes). ``node_id`` is the controller's ``node.id``, copied here."""

    node_id: int = 1
    process_roles: tuple[str, ...] = ("broker", "controller")
    controller_quorum_voters: tuple[QuorumVoter, ...] = ()  # (): this node alone
    inter_broker_listener_name: str | None = None  # None: PLAINTEXT, as in Kafka
    log_dirs: tuple[Path, ...] = (Path("/tmp/kraft-combined-logs"),)
    metadata_log_dir: Path | None = None  # None: the first of log.dirs, as in Kafka
    advertised_listeners: tuple[Listener, ...] = ()  # (): the listeners themselves
    broker_rack: str | None = None  # where the broker stands, for rack-aware placement
    auto_create_topics_enable: bool = True
    min_insync_replicas: int = 1
    broker_heartbeat_interval_ms: int = 2000
    initial_broker_registration_timeout_ms: int = 60_000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    replica_lag_time_max_ms: int = 30_000
    num_replica_fetchers: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000
    max_incremental_fetch_session_cache_slots: int = 1000
    # how long in-flight requests may finish
    controlled_shutdown_timeout_ms: int = 30_000
    controlled_shutdown_max_retries: int = 3  # ZooKeeper mode's ControlledShutdown
    controlled_shutdown_retry_backoff_ms: int = 5000
    # Kafka's default is 3, and its sample server.properties sets 1 for one node; minikafka
    # runs on one node unless told otherwise, so groups work out of the box.
    offsets_topic_replication_factor: int = 1
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_commit_timeout_ms: int = 5000
    zookeeper_connect: str | None = None  # set: ZooKeeper mode (no process.roles)
    zookeeper_session_timeout_ms: int = 18_000
    zookeeper_connection_timeout_ms: int | None = None  # None: the session timeout


@attrs.frozen
class KafkaConfig:
    """The whole configuration of one broker process."""

    broker: BrokerSettings
    net: NetConfig
    log: LogConfig
    schedule: LogManagerSchedule
    controller: ControllerConfig
    group: GroupConfig
    transaction: TxnConfig
    raft: RaftConfig
    """The ``quorum.*`` timings of a quorum of several controllers (KIP-595)."""
    roles: Roles
    """process.roles and the listeners each role needs, checked together (:mod:`._roles`)."""
    properties: Mapping[str, str]
    """Every key as given (``server.properties`` with the overrides applied)."""
    channels: ChannelSecurity = attrs.field(factory=ChannelSecurity)
    """TLS and SASL of this node's own clients, to brokers and to controllers."""

    @property
    def node_id(self) -> int:
        return self.broker.node_id

    @property
    def zookeeper_mode(self) -> bool:
        """``zookeeper.connect`` is set: the brokers and their controller meet in
        ZooKeeper, not in a KRaft quorum."""
        return self.broker.zookeeper_connect is not None

    @property
    def metadata_log_dir(self) -> Path:
        return self.broker.metadata_log_dir or self.broker.log_dirs[0]

    @property
    def authorizer(self) -> AuthorizerSettings:
        """``authorizer.class.name``, ``super.users``, ``allow.everyone.if.no.acl.found``."""
        return AuthorizerSettings.from_properties(self.properties)

    @property
    def advertised_listeners(self) -> tuple[Listener, ...]:
        """What clients are told: ``advertised.listeners``, else the listeners that are
        not the controller's (none on a controller-only node)."""
        return self.roles.advertised_listeners

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> KafkaConfig:
        props = {key.strip(): value.strip() for key, value in props.items()}
        unknown = sorted(
            key for key in set(props) - known_keys() if not is_listener_key(key)
        )
        if unknown:
            raise ConfigError(unknown[0], "unknown configuration key")
        controller = ControllerConfig.from_properties(props)
        broker = _broker_settings(props, controller.node_id)
        net = NetConfig.from_properties(props)
        log = LogConfig.from_properties(props)  # the broker-level names, units included
        schedule = LOG_MANAGER_CONFIG.apply(LogManagerSchedule(), props)
        group = GroupConfig.from_properties(props)
        transaction = TxnConfig.from_properties(props)
        raft = RaftConfig.from_properties(props)
        AuthorizerSettings.from_properties(props)  # a bad value stops start-up here
        sections = (broker, net, log, schedule, controller, group, transaction, raft)
        _check_advertised_listeners(broker, net)
        if broker.zookeeper_connect is not None:
            roles = check_zookeeper_mode(
                props,
                broker.node_id,
                broker.inter_broker_listener_name,
                net.listeners,
                broker.advertised_listeners,
            )
            channels = ChannelSecurity.from_properties(props, roles)
            return cls(*sections, roles, dict(props), channels)
        roles = check_roles(
            broker.process_roles,
            broker.node_id,
            broker.controller_quorum_voters,
            props.get(CONTROLLER_LISTENER_NAMES, "").split(","),
            broker.inter_broker_listener_name,
            net.listeners,
            broker.advertised_listeners,
        )
        channels = ChannelSecurity.from_properties(props, roles)
        return cls(*sections, roles, dict(props), channels)

    @classmethod
    def load(cls, path: Path | None, overrides: Mapping[str, str]) -> KafkaConfig:
        """Read ``path`` (a Java properties file) if given, then apply ``overrides``."""
        props: dict[str, str] = {}
        if path is not None:
            props.update(read_properties(path))
        props.update(overrides)
        return cls.from_properties(props)


def read_properties(path: Path) -> dict[str, str]:
    """The ``key=value`` lines of a properties file (``#``/``!`` comments, ``:`` too)."""
    props: dict[str, str] = {}
    for number, raw in enumerate(
        path.read_text(encoding="utf-8").splitlines(), start=1
    ):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            raise ConfigError(line, f"{path}:{number}: expected key=value")
        props[match[1]] = match[2]
    return props


def parse_override(item: str) -> tuple[str, str]:
    """``key=value`` from the command line."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(item, "an override must be key=value")
    return key.strip(), value.strip()


# --- the keys ---------------------------------------------------------------------------


def _path(key: str, value: str) -> Path:
    if not value.strip():
        raise ConfigError(key, "names no directory")
    return Path(value.strip())


def _paths(key: str, value: str) -> tuple[Path, ...]:
    paths = tuple(Path(p.strip()) for p in value.split(",") if p.strip())
    if not paths:
        raise ConfigError(key, "names no directory")
    return paths


_INT = ConfigType.INT
ZOOKEEPER_CONNECT = "zookeeper.connect"
_ZOOKEEPER_HOST = re.compile(r"[A-Za-z0-9.\-\[\]:]+:\d+")


def _zookeeper_connect(key: str, value: str) -> str:
    """Kafka's (ZooKeeper's) connect string: host:port pairs, then an optional chroot."""
    hosts, slash, chroot = value.strip().partition("/")
    if not hosts or not all(
        _ZOOKEEPER_HOST.fullmatch(h.strip()) for h in hosts.split(",")
    ):
        raise ConfigError(key, f"{value!r} is not host:port[,host:port...][/chroot]")
    return hosts.replace(" ", "") + (
        slash + chroot.rstrip("/") if chroot.strip("/") else ""
    )


def _rack(key: str, value: str) -> str | None:
    """Kafka's ``broker.rack``: any name, or unset; a blank value is a mistake."""
    if not value.strip():
        raise ConfigError(key, "is empty: leave it out, or name the broker's rack")
    return value.strip()


BROKER_CONFIG = ConfigDef(
    (
        ConfigKey(
            PROCESS_ROLES,
            parse_roles,
            "process_roles",
            doc="broker, controller or both.",
        ),
        ConfigKey(
            QUORUM_VOTERS,
            parse_voters,
            "controller_quorum_voters",
            doc="id@host:port,...; empty: this node alone (combined mode only).",
        ),
        ConfigKey(
            ZOOKEEPER_CONNECT,
            _zookeeper_connect,
            "zookeeper_connect",
            doc="host:port[,host:port...][/chroot]: ZooKeeper mode's ensemble.",
        ),
        ConfigKey(
            "zookeeper.session.timeout.ms",
            _INT,
            "zookeeper_session_timeout_ms",
            at_least(1),
            "How long ZooKeeper keeps this broker's session (and its znodes) without news.",
        ),
        ConfigKey(
            "zookeeper.connection.timeout.ms",
            _INT,
            "zookeeper_connection_timeout_ms",
            at_least(1),
            "How long start-up waits to connect to ZooKeeper; default: the session timeout.",
        ),
        ConfigKey(
            INTER_BROKER_LISTENER_NAME,
            ConfigType.STRING,
            "inter_broker_listener_name",
            doc="The listener brokers reach each other on; default PLAINTEXT.",
        ),
        ConfigKey(
            SECURITY_INTER_BROKER_PROTOCOL,
            ConfigType.STRING,
            None,  # read with inter.broker.listener.name (_security_channels.py)
            doc="The protocol (and listener name) brokers reach each other on, when "
            "inter.broker.listener.name is not set.",
        ),
        ConfigKey(
            "log.dirs",
            _paths,
            "log_dirs",
            doc="Where the partitions' directories live.",
            synonyms=(Synonym("log.dir"),),
        ),
        ConfigKey(
            "metadata.log.dir",
            _path,
            "metadata_log_dir",
            doc="Where the KRaft metadata log lives; default: the first of log.dirs.",
        ),
        # Parsed again in _broker_settings with listener.security.protocol.map.
        ConfigKey(
            ADVERTISED_LISTENERS,
            lambda k, v: parse_listeners(v, k),
            "advertised_listeners",
            doc="What clients are told to connect to; default: the listeners.",
        ),
        ConfigKey(
            "broker.rack",
            _rack,
            "broker_rack",
            doc="The broker's rack: placement puts a partition's replicas on different "
            "racks.",
        ),
        ConfigKey(
            "auto.create.topics.enable",
            ConfigType.BOOLEAN,
            "auto_create_topics_enable",
            doc="A Metadata request for an unknown topic creates it.",
        ),
        MIN_INSYNC,  # the broker-level default of the topic config (min_insync_replicas)
        ConfigKey(
            "broker.heartbeat.interval.ms",
            _INT,
            "broker_heartbeat_interval_ms",
            at_least(1),
            "How often the broker heartbeats to the controller.",
        ),
        ConfigKey(
            "initial.broker.registration.timeout.ms",
            _INT,
            "initial_broker_registration_timeout_ms",
            at_least(1),
            "How long a KRaft broker tries to register with the controller quorum "
            "before it gives up and exits.",
        ),
        ConfigKey(
            "replica.high.watermark.checkpoint.interval.ms",
            _INT,
            "replica_high_watermark_checkpoint_interval_ms",
            at_least(1),
            "How often replication-offset-checkpoint is written.",
        ),
        ConfigKey(
            "replica.lag.time.max.ms",
            _INT,
            "replica_lag_time_max_ms",
            at_least(1),
            "A follower not caught up for this long leaves the ISR (KIP-497's AlterPartition).",
        ),
        ConfigKey(
            "num.replica.fetchers",
            _INT,
            "num_replica_fetchers",
            at_least(1),
            "Fetcher tasks per leader broker a follower fetches from.",
        ),
        ConfigKey(
            "replica.fetch.max.bytes",
            _INT,
            "replica_fetch_max_bytes",
            at_least(0),
            "A follower's fetch size per partition.",
        ),
        ConfigKey(
            "replica.fetch.response.max.bytes",
            _INT,
            "replica_fetch_response_max_bytes",
            at_least(0),
            "A follower's fetch size per request.",
        ),
        ConfigKey(
            "replica.fetch.wait.max.ms",
            _INT,
            "replica_fetch_wait_max_ms",
            at_least(0),
            "How long a follower's fetch waits at the leader for replica.fetch.min.bytes.",
        ),
        ConfigKey(
            "replica.fetch.min.bytes",
            _INT,
            "replica_fetch_min_bytes",
            at_least(1),
            "What a follower's fetch waits for at the leader.",
        ),
        ConfigKey(
            "replica.fetch.backoff.ms",
            _INT,
            "replica_fetch_backoff_ms",
            at_least(0),
            "A follower's pause after a failed fetch.",
        ),
        ConfigKey(
            "max.incremental.fetch.session.cache.slots",
            _INT,
            "max_incremental_fetch_session_cache_slots",
            at_least(0),
            "How many fetch sessions (KIP-227) the broker keeps at most.",
        ),
        ConfigKey(
            "controlled.shutdown.timeout.ms",
            _INT,
            "controlled_shutdown_timeout_ms",
            at_least(0),
            "How long in-flight requests may finish at shutdown.",
        ),
        ConfigKey(
            "controlled.shutdown.max.retries",
            _INT,
            "controlled_shutdown_max_retries",
            at_least(0),
            "ZooKeeper mode: how many times a stopping broker asks again while it still "
            "leads partitions the controller could not move.",
        ),
        ConfigKey(
            "controlled.shutdown.retry.backoff.ms",
            _INT,
            "controlled_shutdown_retry_backoff_ms",
            at_least(0),
            "ZooKeeper mode: the pause between those attempts.",
        ),
        ConfigKey(
            "offsets.topic.replication.factor",
            ConfigType.SHORT,
            "offsets_topic_replication_factor",
            at_least(1),
            "Replicas of __consumer_offsets.",
        ),
        ConfigKey(
            "offsets.topic.segment.bytes",
            _INT,
            "offsets_topic_segment_bytes",
            at_least(1),
            "segment.bytes of __consumer_offsets.",
        ),
        ConfigKey(
            "offsets.commit.timeout.ms",
            _INT,
            "offsets_commit_timeout_ms",
            at_least(1),
            "How long an offset commit waits for its record to be replicated.",
        ),
    )
)
"""The broker's own keys (Kafka's ServerConfigs, KRaftConfigs and the offsets topic's)."""


def known_keys() -> frozenset[str]:
    """Every key some package declares: the names ``server.properties`` may set.

    The topic configs' broker-level names are their synonyms (``log.segment.bytes``, not
    ``segment.bytes``, which only a topic sets).
    """
    return (
        BROKER_CONFIG.names()
        | BROKER_CONFIG.synonym_names()
        | NET_CONFIG.names()
        | LOG_CONFIG.synonym_names()
        | LOG_MANAGER_CONFIG.names()
        | CONTROLLER_CONFIG.names()
        | CONTROLLER_CONFIG.synonym_names()
        | REPLICATION_TOPIC_CONFIG.synonym_names()
        | GROUP_CONFIG.names()
        | TXN_CONFIG.names()
        | QUORUM_CONFIG.names()
        | AUTHORIZER_CONFIG.names()
    )


def _broker_settings(props: Mapping[str, str], node_id: int) -> BrokerSettings:
    settings = BROKER_CONFIG.apply(BrokerSettings(node_id=node_id), props)
    settings = attrs.evolve(
        settings, inter_broker_listener_name=inter_broker_listener_name(props)
    )
    if ADVERTISED_LISTENERS in props:
        # The same parsing as listeners (minikafka.net), names checked against the map.
        advertised = listener_endpoints(
            props[ADVERTISED_LISTENERS],
            ADVERTISED_LISTENERS,
            security_protocol_map(props),
        )
        settings = attrs.evolve(settings, advertised_listeners=advertised)
    return settings


def _check_advertised_listeners(broker: BrokerSettings, net: NetConfig) -> None:
    """Kafka's rule: advertise only listeners this broker has."""
    names = {listener.name for listener in net.listeners}
    for listener in broker.advertised_listeners:
        if listener.name not in names:
            raise ConfigError(
                ADVERTISED_LISTENERS,
                f"listener {listener.name} is not one of the listeners "
                f"({', '.join(sorted(names))})",
            )
