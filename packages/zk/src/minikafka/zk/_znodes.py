"""Kafka's znodes in ZooKeeper mode and the JSON in them (Kafka 2.8's ``ZkData``; seed 001).

Seed 001 follows a topic through these paths: the admin tool writes the assignment to
``/brokers/topics/<topic>``; the controller, watching ``/brokers/topics``, elects each
partition's first leader and writes it with the ISR to
``/brokers/topics/<topic>/partitions/<p>/state``; brokers are the ephemeral
``/brokers/ids/<id>``, gone when their session ends; the controller is whoever created
the ephemeral ``/controller`` first, and ``/controller_epoch`` counts the elections so a
deposed controller's requests can be refused.

Each value class encodes to the bytes Kafka writes (same keys, same versions) and decodes
what Kafka wrote, so a Kafka tool reading this ZooKeeper, or this code reading a Kafka's,
agree. Decoding bad bytes raises :class:`ZnodeError` naming the path.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from collections.abc import Mapping, Sequence

import attrs

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
CLUSTER_ID = "/cluster/id"
TOPIC_CONFIGS = "/config/topics"
BROKER_CONFIGS = "/config/brokers"
DEFAULT_BROKER_ENTITY = "<default>"
"""The entity name of the cluster-wide dynamic broker config (Kafka's
``ConfigEntityName.Default``): ``/config/brokers/<default>``, the resource a client
names ``""``."""
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
"""A config change notification is ``/config/changes/config_change_<10-digit sequence>``:
ZooKeeper appends the sequence number when it creates the znode (a sequential znode)."""

PERSISTENT_PATHS = (
    BROKER_IDS,
    TOPICS,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    "/config",
    TOPIC_CONFIGS,
    BROKER_CONFIGS,
    CONFIG_CHANGES,
)
"""What a Kafka broker creates at start-up if missing (``KafkaZkClient.createTopLevelPaths``)."""


class ZnodeError(ValueError):
    """A znode's bytes are not what Kafka writes there."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{TOPIC_CONFIGS}/{topic}"


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    """``/config/topics/<topic>`` (version 1): the topic's overrides of the broker defaults."""
    return _json({"version": 1, "config": dict(config)})


def decode_topic_config(topic: str, data: bytes) -> dict[str, str]:
    return decode_entity_config(topic_config_path(topic), data)


def broker_entity(resource_name: str) -> str:
    """The znode name of a broker resource's dynamic config: its id, or ``<default>``
    for the cluster-wide resource ``""``."""
    return resource_name or DEFAULT_BROKER_ENTITY


def broker_resource(entity: str) -> str:
    """The resource name (``""`` or an id) of a ``/config/brokers`` child."""
    return "" if entity == DEFAULT_BROKER_ENTITY else entity


def broker_config_path(resource_name: str) -> str:
    """``/config/brokers/<id>``, or ``/config/brokers/<default>`` for ``""`` (KIP-226)."""
    return f"{BROKER_CONFIGS}/{broker_entity(resource_name)}"


def encode_broker_config(config: Mapping[str, str]) -> bytes:
    """``/config/brokers/<entity>`` (version 1): the dynamic broker configs, in the
    same JSON as a topic's overrides."""
    return encode_topic_config(config)


def decode_broker_config(resource_name: str, data: bytes) -> dict[str, str]:
    return decode_entity_config(broker_config_path(resource_name), data)


def decode_entity_config(path: str, data: bytes) -> dict[str, str]:
    """The ``config`` object of a config znode (``/config/<type>/<entity>``)."""
    config = _parse(path, data).get("config") or {}
    if not isinstance(config, dict):
        raise ZnodeError(f"{path}: 'config' is not an object")
    return {str(k): str(v) for k, v in config.items()}


def encode_config_change(entity_type: str, entity_name: str) -> bytes:
    """A config change notification (version 2): which entity's config znode changed, as
    its path under ``/config`` (``topics/<topic>``). Kafka writes no config in it: each
    broker reads the entity's znode again."""
    return _json({"version": 2, "entity_path": f"{entity_type}/{entity_name}"})


def decode_config_change(path: str, data: bytes) -> tuple[str, str]:
    """(entity type, entity name) of a notification: version 2's ``entity_path``, or
    version 1's ``entity_type`` and ``entity_name`` (Kafka before 1.1 wrote those)."""
    obj = _parse(path, data)
    version = obj.get("version")
    if version == 1:
        kind, name = obj.get("entity_type"), obj.get("entity_name")
        if isinstance(kind, str) and isinstance(name, str):
            return kind, name
        raise ZnodeError(f"{path}: version 1 without 'entity_type' and 'entity_name'")
    if version == 2:
        entity = obj.get("entity_path")
        if isinstance(entity, str) and "/" in entity:
            kind, _, name = entity.partition("/")
            return kind, name
        raise ZnodeError(f"{path}: 'entity_path' is not '<type>/<name>': {entity!r}")
    raise ZnodeError(f"{path}: unknown notification version {version!r}")


def config_change_number(child: str, prefix: str = CONFIG_CHANGE_PREFIX) -> int | None:
    """The sequence number of ``config_change_0000000042`` (42), or of another
    notification named ``<prefix><number>``; None for a child that is not one."""
    digits = child.removeprefix(prefix)
    if digits == child or not digits.isdigit():
        return None
    return int(digits)


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: the 16 bytes in URL-safe base64, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString`` (the dashed hex form is taken too: it is unambiguous)."""
    if len(text) == 22:
        try:
            return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
        except (ValueError, binascii.Error) as exc:
            raise ValueError(f"not a Kafka Uuid: {text!r}") from exc
    return uuid.UUID(text)


def _json(data: Mapping[str, object]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _parse(path: str, data: bytes) -> dict[str, object]:
    try:
        parsed = json.loads(data)
    except ValueError as exc:
        raise ZnodeError(f"{path}: not JSON: {data[:80]!r}") from exc
    if not isinstance(parsed, dict):
        raise ZnodeError(f"{path}: not a JSON object: {data[:80]!r}")
    return parsed


def _int(path: str, obj: Mapping[str, object], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZnodeError(f"{path}: {key!r} is not a number: {value!r}")
    return value


def _ints(path: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ZnodeError(f"{path}: not a list of broker ids: {value!r}")
    return tuple(value)


@attrs.frozen
class BrokerRegistration:
    """``/brokers/ids/<id>`` (version 5): where clients and other brokers reach it."""

    broker_id: int
    endpoints: tuple[str, ...]  # "LISTENER://host:port"
    security_protocols: Mapping[str, str]  # listener name -> security protocol
    rack: str | None = None
    timestamp_ms: int = 0

    def addresses(self) -> dict[str, tuple[str, int]]:
        """Listener name -> (host, port), from the ``LISTENER://host:port`` endpoints."""
        found: dict[str, tuple[str, int]] = {}
        for endpoint in self.endpoints:
            name, _, address = endpoint.partition("://")
            host, _, port = address.rpartition(":")
            if port.isdigit():
                found[name] = (host, int(port))
        return found

    def encode(self) -> bytes:
        # The top-level host and port are the first PLAINTEXT endpoint's, for old clients.
        host, port = "", -1
        for name, (address, number) in self.addresses().items():
            if self.security_protocols.get(name) == "PLAINTEXT":
                host, port = address, number
                break
        data: dict[str, object] = {
            "version": 5,
            "host": host,
            "port": port,
            "endpoints": list(self.endpoints),
            "jmx_port": -1,
            "timestamp": str(self.timestamp_ms or int(time.time() * 1000)),
            "listener_security_protocol_map": dict(self.security_protocols),
            "features": {},
        }
        if self.rack is not None:
            data["rack"] = self.rack
        return _json(data)

    @classmethod
    def decode(cls, broker_id: int, data: bytes) -> BrokerRegistration:
        path = broker_path(broker_id)
        obj = _parse(path, data)
        endpoints = obj.get("endpoints")
        if not isinstance(endpoints, list) or not all(
            isinstance(e, str) for e in endpoints
        ):
            raise ZnodeError(f"{path}: 'endpoints' is not a list of strings")
        protocols = obj.get("listener_security_protocol_map") or {}
        if not isinstance(protocols, dict):
            raise ZnodeError(
                f"{path}: 'listener_security_protocol_map' is not an object"
            )
        rack = obj.get("rack")
        timestamp = obj.get("timestamp", "0")
        return cls(
            broker_id,
            tuple(endpoints),
            {str(k): str(v) for k, v in protocols.items()},
            rack if isinstance(rack, str) else None,
            int(timestamp) if isinstance(timestamp, str) and timestamp.isdigit() else 0,
        )


@attrs.frozen
class TopicAssignment:
    """``/brokers/topics/<topic>`` (version 3, Kafka 2.8's: with the topic id, KIP-516,
    written as Kafka's ``Uuid.toString``, URL-safe base64 without padding): each
    partition's replicas, and, during a
    reassignment (KIP-455), the replicas being added and removed."""

    partitions: Mapping[int, tuple[int, ...]]
    topic_id: uuid.UUID | None = None
    adding: Mapping[int, tuple[int, ...]] = attrs.field(factory=dict)
    removing: Mapping[int, tuple[int, ...]] = attrs.field(factory=dict)

    def encode(self) -> bytes:
        def by_partition(replicas: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
            return {str(p): list(r) for p, r in sorted(replicas.items())}

        data: dict[str, object] = {
            "version": 3,
            "partitions": by_partition(self.partitions),
            "adding_replicas": by_partition(self.adding),
            "removing_replicas": by_partition(self.removing),
        }
        if self.topic_id is not None:
            data["topic_id"] = kafka_uuid(self.topic_id)
        return _json(data)

    @classmethod
    def decode(cls, topic: str, data: bytes) -> TopicAssignment:
        path = topic_path(topic)
        obj = _parse(path, data)

        def by_partition(key: str) -> dict[int, tuple[int, ...]]:
            value = obj.get(key) or {}
            if not isinstance(value, dict):
                raise ZnodeError(f"{path}: {key!r} is not an object")
            try:
                return {int(p): _ints(path, r) for p, r in value.items()}
            except ValueError as exc:
                raise ZnodeError(
                    f"{path}: {key!r} has a partition that is no number"
                ) from exc

        topic_id = obj.get("topic_id")
        try:
            parsed_id = (
                parse_kafka_uuid(topic_id) if isinstance(topic_id, str) else None
            )
        except ValueError as exc:
            raise ZnodeError(f"{path}: 'topic_id' is no UUID: {topic_id!r}") from exc
        return cls(
            by_partition("partitions"),
            parsed_id,
            by_partition("adding_replicas"),
            by_partition("removing_replicas"),
        )


@attrs.frozen
class LeaderIsrAndControllerEpoch:
    """``/brokers/topics/<topic>/partitions/<p>/state`` (version 1): the leader, its
    epoch, the ISR, and the epoch of the controller that wrote them. The znode's version
    (not in the JSON) is what a conditional ISR update names (KIP-497)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def encode(self) -> bytes:
        return _json(
            {
                "version": 1,
                "leader": self.leader,
                "leader_epoch": self.leader_epoch,
                "controller_epoch": self.controller_epoch,
                "isr": list(self.isr),
            }
        )

    @classmethod
    def decode(
        cls, topic: str, partition: int, data: bytes
    ) -> LeaderIsrAndControllerEpoch:
        path = partition_state_path(topic, partition)
        obj = _parse(path, data)
        return cls(
            _int(path, obj, "leader"),
            _int(path, obj, "leader_epoch"),
            _ints(path, obj.get("isr")),
            _int(path, obj, "controller_epoch"),
        )


@attrs.frozen
class ControllerRegistration:
    """``/controller`` (version 1): the broker that is the controller, ephemeral: it goes
    with that broker's session, and the next broker to create it is the controller."""

    broker_id: int
    timestamp_ms: int = 0

    def encode(self) -> bytes:
        timestamp = self.timestamp_ms or int(time.time() * 1000)
        return _json(
            {"version": 1, "brokerid": self.broker_id, "timestamp": str(timestamp)}
        )

    @classmethod
    def decode(cls, data: bytes) -> ControllerRegistration:
        obj = _parse(CONTROLLER, data)
        timestamp = obj.get("timestamp", "0")
        return cls(
            _int(CONTROLLER, obj, "brokerid"),
            int(timestamp) if isinstance(timestamp, str) and timestamp.isdigit() else 0,
        )


def encode_controller_epoch(epoch: int) -> bytes:
    """``/controller_epoch``: the number alone, as text."""
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZnodeError(f"{CONTROLLER_EPOCH}: not a number: {data[:40]!r}") from exc
