"""KafkaConfig: ``server.properties`` plus ``--override key=value``, Kafka's names and defaults.

Every layer reads the keys it owns (the network layer's ``NetConfig``, the log's
``LogConfig`` and ``LogManagerSchedule``, the controller's ``ControllerConfig``); this
module adds the broker's own keys and checks the whole set: a key no layer knows, or a
value a layer cannot use, stops start-up with a :class:`ConfigError` naming the key.

Only KRaft combined mode on one node exists so far, so ``process.roles`` must be
``broker,controller`` and ``controller.quorum.voters`` may name only this node. Both
default to exactly that, so ``listeners`` and ``log.dirs`` are all a single node needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from minikafka.controller import ControllerConfig, parse_bool, parse_int
from minikafka.coordination import GroupConfig
from minikafka.log import LOG_KEYS, LogConfig, LogManagerSchedule
from minikafka.net import (
    ConfigError,
    Listener,
    NetConfig,
    listener_endpoints,
    parse_listeners,
    security_protocol_map,
)

_HOURS = 3600 * 1000
_MINUTES = 60 * 1000


@attrs.frozen
class BrokerSettings:
    """The broker's own keys (the layers' keys live in their own config classes)."""

    node_id: int = 1
    process_roles: tuple[str, ...] = ("broker", "controller")
    controller_quorum_voters: str = ""  # "" means: this node alone
    log_dirs: tuple[Path, ...] = (Path("/tmp/kraft-combined-logs"),)
    metadata_log_dir: Path | None = None  # None: the first of log.dirs, as in Kafka
    advertised_listeners: tuple[Listener, ...] = ()  # (): the listeners themselves
    auto_create_topics_enable: bool = True
    min_insync_replicas: int = 1
    broker_heartbeat_interval_ms: int = 2000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    controlled_shutdown_timeout_ms: int = 30_000  # how long in-flight requests may finish
    # Kafka's default is 3, and its sample server.properties sets 1 for one node; minikafka
    # runs on one node unless told otherwise, so groups work out of the box.
    offsets_topic_replication_factor: int = 1
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_commit_timeout_ms: int = 5000


@attrs.frozen
class KafkaConfig:
    """The whole configuration of one broker process."""

    broker: BrokerSettings
    net: NetConfig
    log: LogConfig
    schedule: LogManagerSchedule
    controller: ControllerConfig
    group: GroupConfig
    properties: Mapping[str, str]
    """Every key as given (``server.properties`` with the overrides applied)."""

    @property
    def node_id(self) -> int:
        return self.broker.node_id

    @property
    def metadata_log_dir(self) -> Path:
        return self.broker.metadata_log_dir or self.broker.log_dirs[0]

    @property
    def advertised_listeners(self) -> tuple[Listener, ...]:
        return self.broker.advertised_listeners or self.net.listeners

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> KafkaConfig:
        props = {key.strip(): value.strip() for key, value in props.items()}
        unknown = sorted(set(props) - known_keys())
        if unknown:
            raise ConfigError(unknown[0], "unknown configuration key")
        broker = _broker_settings(props)
        net = NetConfig.from_properties(props)
        log = LogConfig.from_properties(_with_retention_units(props))
        schedule = _schedule(props)
        controller = ControllerConfig.from_properties(props)
        group = _group_config(props)
        _check_roles(broker)
        _check_advertised_listeners(broker, net)
        return cls(broker, net, log, schedule, controller, group, dict(props))

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
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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

_BROKER_KEYS: dict[str, Callable[[str, str], object]] = {
    "node.id": lambda k, v: parse_int(k, v),
    "process.roles": lambda k, v: tuple(p.strip() for p in v.split(",") if p.strip()),
    "controller.quorum.voters": lambda k, v: v,
    "log.dirs": lambda k, v: _paths(k, v),
    "log.dir": lambda k, v: _paths(k, v),
    "metadata.log.dir": lambda k, v: _path(k, v),
    # Parsed again in _broker_settings with listener.security.protocol.map.
    "advertised.listeners": lambda k, v: parse_listeners(v, k),
    "auto.create.topics.enable": parse_bool,
    "min.insync.replicas": lambda k, v: parse_int(k, v, minimum=1),
    "broker.heartbeat.interval.ms": lambda k, v: parse_int(k, v, minimum=1),
    "replica.high.watermark.checkpoint.interval.ms": lambda k, v: parse_int(k, v, minimum=1),
    "controlled.shutdown.timeout.ms": lambda k, v: parse_int(k, v, minimum=0),
    "offsets.topic.replication.factor": lambda k, v: parse_int(k, v, minimum=1, maximum=32767),
    "offsets.topic.segment.bytes": lambda k, v: parse_int(k, v, minimum=1, maximum=2**31 - 1),
    "offsets.commit.timeout.ms": lambda k, v: parse_int(k, v, minimum=1),
}
_FIELDS = {
    "node.id": "node_id",
    "process.roles": "process_roles",
    "controller.quorum.voters": "controller_quorum_voters",
    "log.dirs": "log_dirs",
    "log.dir": "log_dirs",
    "metadata.log.dir": "metadata_log_dir",
    "advertised.listeners": "advertised_listeners",
    "auto.create.topics.enable": "auto_create_topics_enable",
    "min.insync.replicas": "min_insync_replicas",
    "broker.heartbeat.interval.ms": "broker_heartbeat_interval_ms",
    "replica.high.watermark.checkpoint.interval.ms": (
        "replica_high_watermark_checkpoint_interval_ms"
    ),
    "controlled.shutdown.timeout.ms": "controlled_shutdown_timeout_ms",
    "offsets.topic.replication.factor": "offsets_topic_replication_factor",
    "offsets.topic.segment.bytes": "offsets_topic_segment_bytes",
    "offsets.commit.timeout.ms": "offsets_commit_timeout_ms",
}
# Keys Kafka's sample server.properties sets that only have one possible value here.
_FIXED_KEYS: dict[str, Callable[[str], bool]] = {
    "controller.listener.names": lambda v: True,  # no separate controller listener yet
    "inter.broker.listener.name": lambda v: True,
    "num.recovery.threads.per.data.dir": lambda v: v.isdigit() and int(v) >= 1,
    "socket.send.buffer.bytes": lambda v: bool(re.fullmatch(r"-?\d+", v)),
    "socket.receive.buffer.bytes": lambda v: bool(re.fullmatch(r"-?\d+", v)),
    "transaction.state.log.replication.factor": lambda v: v.isdigit() and int(v) >= 1,
    "transaction.state.log.min.isr": lambda v: v.isdigit() and int(v) >= 1,
}
_SCHEDULE_KEYS = {
    "log.retention.check.interval.ms": "retention_check_interval_ms",
    "log.flush.scheduler.interval.ms": "flush_check_interval_ms",
    "log.flush.offset.checkpoint.interval.ms": "recovery_point_checkpoint_interval_ms",
    "log.flush.start.offset.checkpoint.interval.ms": "start_offset_checkpoint_interval_ms",
    "log.cleaner.backoff.ms": "cleaner_backoff_ms",
    "log.cleaner.enable": "cleaner_enable",
}
_RETENTION_UNITS = {
    # Kafka's precedence: .ms over .minutes over .hours (and log.roll.ms over .hours).
    # Each entry: the unit key, its factor in ms, its smallest value (-1: keep forever).
    "log.retention.ms": (
        ("log.retention.minutes", _MINUTES, -1),
        ("log.retention.hours", _HOURS, -1),
    ),
    "log.roll.ms": (("log.roll.hours", _HOURS, 1),),
}
# The group coordinator's keys: Kafka's name -> (GroupConfig field, smallest value).
_GROUP_KEYS = {
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", 1),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", 1),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", 0),
    "group.max.size": ("group_max_size", 1),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", 1),
    "offsets.retention.minutes": ("offsets_retention_minutes", 1),
    "offsets.retention.check.interval.ms": ("offsets_retention_check_interval_ms", 1),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", 0),
}
_CONTROLLER_KEYS = {
    "broker.session.timeout.ms",
    "num.partitions",
    "default.replication.factor",
    "unclean.leader.election.enable",
    "metadata.log.max.record.bytes.between.snapshots",
}


def known_keys() -> set[str]:
    keys = set(_BROKER_KEYS) | set(_FIXED_KEYS) | set(_SCHEDULE_KEYS) | _CONTROLLER_KEYS
    keys |= set(_GROUP_KEYS)
    keys |= set(NetConfig.KEYS)
    keys |= {setting.broker_key for setting in LOG_KEYS}
    for units in _RETENTION_UNITS.values():
        keys |= {key for key, _, _ in units}
    return keys


def unit_keys(ms_key: str) -> tuple[str, ...]:
    """The keys that set ``ms_key`` in other units (``log.retention.hours``...)."""
    return tuple(key for key, _, _ in _RETENTION_UNITS.get(ms_key, ()))


def _path(key: str, value: str) -> Path:
    if not value.strip():
        raise ConfigError(key, "names no directory")
    return Path(value.strip())


def _paths(key: str, value: str) -> tuple[Path, ...]:
    paths = tuple(Path(p.strip()) for p in value.split(",") if p.strip())
    if not paths:
        raise ConfigError(key, "names no directory")
    return paths


def _broker_settings(props: Mapping[str, str]) -> BrokerSettings:
    values: dict[str, object] = {}
    for key, parse in _BROKER_KEYS.items():
        if key in props and not (key == "log.dir" and "log.dirs" in props):
            values[_FIELDS[key]] = parse(key, props[key])
    if "advertised.listeners" in props:
        # The same parsing as listeners (minikafka.net), names checked against the map.
        values["advertised_listeners"] = listener_endpoints(
            props["advertised.listeners"], "advertised.listeners", security_protocol_map(props)
        )
    for key, check in _FIXED_KEYS.items():
        if key in props and not check(props[key]):
            raise ConfigError(key, f"{props[key]!r} is not supported by minikafka")
    return BrokerSettings(**values)  # type: ignore[arg-type]


def _with_retention_units(props: Mapping[str, str]) -> dict[str, str]:
    """Turn ``log.retention.hours`` and friends into the ``.ms`` key the log reads.

    Every unit key given is checked, and named in the error, even when a more precise
    one wins, as Kafka checks every key it is given.
    """
    result = dict(props)
    for ms_key, units in _RETENTION_UNITS.items():
        for key, factor, minimum in units:
            if key not in props:
                continue
            value = parse_int(key, props[key], minimum=minimum)
            if ms_key not in result:  # the first unit given, in order of precedence, wins
                result[ms_key] = str(-1 if value == -1 else value * factor)
    return result


def _schedule(props: Mapping[str, str]) -> LogManagerSchedule:
    values: dict[str, object] = {}
    for key, field in _SCHEDULE_KEYS.items():
        if key not in props:
            continue
        if field == "cleaner_enable":
            values[field] = parse_bool(key, props[key])
        else:
            values[field] = parse_int(key, props[key], minimum=1, maximum=2**63 - 1)
    return LogManagerSchedule(**values)  # type: ignore[arg-type]


def _group_config(props: Mapping[str, str]) -> GroupConfig:
    values = {
        field: parse_int(key, props[key], minimum=minimum, maximum=2**31 - 1)
        for key, (field, minimum) in _GROUP_KEYS.items()
        if key in props
    }
    config = GroupConfig(**values)
    if config.group_max_session_timeout_ms < config.group_min_session_timeout_ms:
        raise ConfigError(
            "group.max.session.timeout.ms",
            f"{config.group_max_session_timeout_ms} is below group.min.session.timeout.ms "
            f"({config.group_min_session_timeout_ms})",
        )
    return config


def _check_advertised_listeners(broker: BrokerSettings, net: NetConfig) -> None:
    """Kafka's rule: advertise only listeners this broker has."""
    names = {listener.name for listener in net.listeners}
    for listener in broker.advertised_listeners:
        if listener.name not in names:
            raise ConfigError(
                "advertised.listeners",
                f"listener {listener.name} is not one of the listeners "
                f"({', '.join(sorted(names))})",
            )


def _check_roles(broker: BrokerSettings) -> None:
    if set(broker.process_roles) != {"broker", "controller"}:
        raise ConfigError(
            "process.roles",
            f"{','.join(broker.process_roles)!r}: only combined mode (broker,controller) "
            "on one node is implemented",
        )
    voters = broker.controller_quorum_voters
    if voters:
        for voter in voters.split(","):
            match = re.fullmatch(r"\s*(\d+)@([^:]+|\[[^\]]+\]):(\d+)\s*", voter)
            if match is None:
                raise ConfigError("controller.quorum.voters", f"{voter!r} is not id@host:port")
            if int(match[1]) != broker.node_id:
                raise ConfigError(
                    "controller.quorum.voters",
                    f"voter {match[1]} is not this node ({broker.node_id}): only a "
                    "single-voter quorum is implemented",
                )
