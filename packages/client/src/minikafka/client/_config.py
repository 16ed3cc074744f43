"""The producer's configuration: Kafka's client property names, Kafka's defaults.

A producer is configured with a dict of Kafka's own keys (``bootstrap.servers``,
``linger.ms``, ``acks``...), as the Java client and confluent-kafka are. Values may be
given as Python values or as the strings a properties file holds (``"5"``, ``"all"``,
``"true"``). An unknown key, a value of the wrong kind or out of range, and a
combination Kafka refuses (idempotence with ``acks`` other than all, more than five
requests in flight, a delivery timeout shorter than linger plus request timeout) raise
:class:`ConfigError` naming the key, before anything connects.

The defaults are Kafka 4.0's ``ProducerConfig``: idempotence on and ``acks=all`` (KIP-679),
``linger.ms=5`` (KIP-1030). ``transactional.id`` makes the producer transactional
(KIP-98), which needs idempotence: an explicit ``enable.idempotence=false``, or a setting
idempotence cannot have, is refused naming its key, as the Java client does. Keys the
Java client has and this one does not implement (interceptors, adaptive partitioning)
are refused as unknown rather than accepted and ignored. ``security.protocol`` and the
``ssl.*`` and ``sasl.*`` keys are read by ``minikafka.net``'s ``ClientSecurity``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from minikafka.common import Acks, ConfigError
from minikafka.log import CompressionType
from minikafka.net import CLIENT_SECURITY_KEYS, ClientSecurity

ROUND_ROBIN_PARTITIONER = "org.apache.kafka.clients.producer.RoundRobinPartitioner"
_PARTITIONERS = {"": "", ROUND_ROBIN_PARTITIONER: ROUND_ROBIN_PARTITIONER}
_PARTITIONERS["RoundRobinPartitioner"] = ROUND_ROBIN_PARTITIONER
_INT32_MAX = 2**31 - 1


DeliveryCallback = Callable[[Any, Any], None]
"""``on_delivery(error, message)``, as confluent-kafka calls it."""


@attrs.frozen
class ProducerConfig:
    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str = "minikafka-producer"
    acks: Acks = Acks.ALL
    enable_idempotence: bool = True
    linger_ms: int = 5
    batch_size: int = 16_384
    buffer_memory: int = 33_554_432
    max_block_ms: int = 60_000
    compression_type: CompressionType = CompressionType.NONE
    max_in_flight: int = 5
    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 120_000
    retries: int = _INT32_MAX
    retry_backoff_ms: int = 100
    max_request_size: int = 1_048_576
    metadata_max_age_ms: int = 300_000
    partitioner: str = ""  # "" is Kafka's built-in: murmur2 for keys, sticky without
    partitioner_ignore_keys: bool = False
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    on_delivery: DeliveryCallback | None = None
    security: ClientSecurity | None = None  # security.protocol, ssl.*, sasl.*

    @classmethod
    def from_dict(cls, config: Mapping[str, object]) -> ProducerConfig:
        """Parse Kafka's keys; :class:`ConfigError` names the first key refused."""
        values = _parse(config, _KEYS, "producer")
        explicit_idempotence = "enable_idempotence" in values
        parsed = cls(**values)  # type: ignore[arg-type]
        return parsed._checked(explicit_idempotence)

    def _checked(self, explicit_idempotence: bool) -> ProducerConfig:
        """Kafka's cross-key rules (ProducerConfig.postProcessAndValidateIdempotenceConfigs)."""
        if self.transactional_id is not None and not self.enable_idempotence:
            raise ConfigError(
                "enable.idempotence",
                "cannot be false with a transactional.id: transactions need idempotence",
            )
        if self.enable_idempotence:
            conflict = None
            if self.acks is not Acks.ALL:
                conflict = ("acks", "must be all (-1) with enable.idempotence=true")
            elif self.max_in_flight > 5:
                conflict = (
                    "max.in.flight.requests.per.connection",
                    "must be at most 5 with enable.idempotence=true",
                )
            elif self.retries == 0:
                conflict = ("retries", "must be above 0 with enable.idempotence=true")
            if conflict is not None:
                if explicit_idempotence or self.transactional_id is not None:
                    raise ConfigError(*conflict)
                # Idempotence on by default yields to a setting that cannot have it.
                return attrs.evolve(self, enable_idempotence=False)._checked(False)
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ConfigError(
                "delivery.timeout.ms",
                "must be at least linger.ms + request.timeout.ms "
                f"({self.linger_ms + self.request_timeout_ms})",
            )
        return self


def _parse(
    config: Mapping[str, object],
    keys: Mapping[str, Callable[[object], object]],
    kind: str,
) -> dict[str, object]:
    values: dict[str, object] = {}
    security = {k: v for k, v in config.items() if k in CLIENT_SECURITY_KEYS}
    if security:
        values["security"] = ClientSecurity.from_config(security)
    for key, raw in config.items():
        if key in CLIENT_SECURITY_KEYS:
            continue
        parse = keys.get(key)
        if parse is None:
            raise ConfigError(key, f"not a {kind} configuration key this client knows")
        try:
            values[_field(key)] = parse(raw)
        except (TypeError, ValueError) as exc:
            raise ConfigError(key, f"invalid value {raw!r}: {exc}") from None
    if "bootstrap_servers" not in values:
        raise ConfigError("bootstrap.servers", "required")
    return values


def _field(key: str) -> str:
    return _FIELDS.get(key, key.replace(".", "_"))


def _int(low: int, high: int = _INT32_MAX) -> Callable[[object], int]:
    def parse(raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise TypeError("expected an integer")
        value = int(raw)
        if not low <= value <= high:
            raise ValueError(f"must be in [{low}, {high}]")
        return value

    return parse


def _bool(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise TypeError("expected true or false")


def _acks(raw: object) -> Acks:
    text = str(raw).lower()
    if text == "all":
        return Acks.ALL
    if text in ("-1", "0", "1"):
        return Acks(int(text))
    raise ValueError("expected all, -1, 0 or 1")


def _compression(raw: object) -> CompressionType:
    names = {c.name.lower(): c for c in CompressionType}
    try:
        return names[str(raw).lower()]
    except KeyError:
        raise ValueError("expected one of " + ", ".join(names)) from None


def _bootstrap(raw: object) -> tuple[tuple[str, int], ...]:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("expected host:port[,host:port...]")
    servers = []
    for item in raw.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{item.strip()!r} is not host:port")
        servers.append((host.strip("[]"), int(port)))
    return tuple(servers)


# Kafka's two partitioners deprecated by KIP-794 (3.3), and what replaces each.
_DEPRECATED_PARTITIONERS = {
    "DefaultPartitioner": "leave partitioner.class empty: the built-in partitioner "
    "does what it did",
    "UniformStickyPartitioner": "leave partitioner.class empty and set "
    "partitioner.ignore.keys=true",
}


def _partitioner(raw: object) -> str:
    text = "" if raw is None else str(raw)
    deprecated = _DEPRECATED_PARTITIONERS.get(text.rpartition(".")[2])
    if deprecated is not None:
        raise ValueError(
            f"{text} is deprecated since Kafka 3.3 (KIP-794): {deprecated}"
        )
    if text not in _PARTITIONERS:
        raise ValueError(
            f"expected empty (the built-in partitioner) or {ROUND_ROBIN_PARTITIONER}"
        )
    return _PARTITIONERS[text]


def _client_id(raw: object) -> str:
    if not isinstance(raw, str):
        raise TypeError("expected a string")
    return raw


def _optional_string(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise TypeError("expected a non-empty string")
    return raw


def _callback(raw: object) -> DeliveryCallback:
    if not callable(raw):
        raise TypeError("expected a callable on_delivery(error, message)")
    return raw


_KEYS: dict[str, Callable[[object], object]] = {
    "bootstrap.servers": _bootstrap,
    "client.id": _client_id,
    "acks": _acks,
    "enable.idempotence": _bool,
    "linger.ms": _int(0),
    "batch.size": _int(0),
    "buffer.memory": _int(1, 2**63 - 1),
    "max.block.ms": _int(0, 2**63 - 1),
    "compression.type": _compression,
    "max.in.flight.requests.per.connection": _int(1),
    "request.timeout.ms": _int(0),
    "delivery.timeout.ms": _int(0),
    "retries": _int(0),
    "retry.backoff.ms": _int(0, 2**63 - 1),
    "max.request.size": _int(1),
    "metadata.max.age.ms": _int(0, 2**63 - 1),
    "partitioner.class": _partitioner,
    "partitioner.ignore.keys": _bool,
    "transactional.id": _optional_string,
    "transaction.timeout.ms": _int(1),
    "on_delivery": _callback,  # confluent-kafka's key for the default delivery callback
}
_FIELDS = {
    "max.in.flight.requests.per.connection": "max_in_flight",
    "partitioner.class": "partitioner",
}


# --- the consumer -------------------------------------------------------------------

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
_ASSIGNOR_CLASSES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
RebalanceCallback = Callable[[Any, list[Any]], None]
"""``on_assign(consumer, partitions)``, as confluent-kafka calls it."""


@attrs.frozen
class ConsumerConfig:
    """Kafka 4.0's ``ConsumerConfig`` keys and defaults (``group.protocol`` ``classic``,
    or ``consumer`` for KIP-848's)."""

    bootstrap_servers: tuple[tuple[str, int], ...]
    group_id: str | None = None
    group_instance_id: str | None = None
    client_id: str = "minikafka-consumer"
    # Kafka 3.0+: range first, cooperative-sticky second, so a group can move to
    # cooperative-sticky by two rolling bounces (KIP-726).
    partition_assignment_strategy: tuple[str, ...] = ("range", "cooperative-sticky")
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    auto_offset_reset: str = "latest"
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52_428_800
    max_partition_fetch_bytes: int = 1_048_576
    max_poll_records: int = 500
    isolation_level: str = "read_uncommitted"
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    metadata_max_age_ms: int = 300_000
    allow_auto_create_topics: bool = True
    check_crcs: bool = True
    exclude_internal_topics: bool = (
        True  # a pattern never matches __consumer_offsets...
    )
    # KIP-848: "consumer" has the broker assign (ConsumerGroupHeartbeat), with the
    # server-side assignor group.remote.assignor names (the broker's default if None).
    group_protocol: str = "classic"
    group_remote_assignor: str | None = None
    security: ClientSecurity | None = None  # security.protocol, ssl.*, sasl.*

    @classmethod
    def from_dict(cls, config: Mapping[str, object]) -> ConsumerConfig:
        """Parse Kafka's keys; :class:`ConfigError` names the first key refused."""
        parsed = cls(**_parse(config, _CONSUMER_KEYS, "consumer"))  # type: ignore[arg-type]
        if parsed.heartbeat_interval_ms >= parsed.session_timeout_ms:
            raise ConfigError(
                "heartbeat.interval.ms", "must be lower than session.timeout.ms"
            )
        if parsed.group_id is None and parsed.enable_auto_commit:
            if "enable.auto.commit" in config:
                raise ConfigError("enable.auto.commit", "needs a group.id")
            # Kafka's default then
            parsed = attrs.evolve(parsed, enable_auto_commit=False)
        return parsed


def _choice(*names: str) -> Callable[[object], str]:
    def parse(raw: object) -> str:
        text = str(raw).lower()
        if text not in names:
            raise ValueError("expected one of " + ", ".join(names))
        return text

    return parse


def _assignors(raw: object) -> tuple[str, ...]:
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not items:
        raise TypeError("expected a list of assignor names")
    names = []
    for item in items:
        name = _ASSIGNOR_CLASSES.get(str(item).strip(), str(item).strip().lower())
        if name not in ASSIGNORS:
            raise ValueError(f"{item!r} is not one of " + ", ".join(ASSIGNORS))
        names.append(name)
    return tuple(names)


_CONSUMER_KEYS: dict[str, Callable[[object], object]] = {
    "bootstrap.servers": _bootstrap,
    "group.id": _optional_string,
    "group.instance.id": _optional_string,
    "client.id": _client_id,
    "partition.assignment.strategy": _assignors,
    "session.timeout.ms": _int(1),
    "heartbeat.interval.ms": _int(1),
    "max.poll.interval.ms": _int(1),
    "enable.auto.commit": _bool,
    "auto.commit.interval.ms": _int(0),
    "auto.offset.reset": _choice("earliest", "latest", "none"),
    "fetch.min.bytes": _int(0),
    "fetch.max.wait.ms": _int(0),
    "fetch.max.bytes": _int(0),
    "max.partition.fetch.bytes": _int(0),
    "max.poll.records": _int(1),
    "isolation.level": _choice("read_uncommitted", "read_committed"),
    "request.timeout.ms": _int(0),
    "retry.backoff.ms": _int(0, 2**63 - 1),
    "metadata.max.age.ms": _int(0, 2**63 - 1),
    "allow.auto.create.topics": _bool,
    "check.crcs": _bool,
    "exclude.internal.topics": _bool,
    "group.protocol": _choice("classic", "consumer"),
    "group.remote.assignor": _optional_string,
}
