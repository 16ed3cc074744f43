"""What a ZooKeeper-mode broker does with a config it reads (Kafka 2.8's
``TopicConfigHandler`` and ``BrokerConfigHandler``, and the reads ``KafkaServer`` makes
at start-up).

Two kinds of config reach a broker's partitions:

- a topic's overrides, ``/config/topics/<topic>``: read when the broker first hosts
  the topic (:meth:`ZkConfigHandlers.load_topic_configs`, before a LeaderAndIsr makes
  its replicas) and again at each of its notifications;
- the dynamic broker configs (KIP-226), ``/config/brokers/<default>`` for the whole
  cluster and ``/config/brokers/<id>`` for this broker alone: read at start-up, before
  the broker registers and so before it hosts anything
  (:meth:`ZkConfigHandlers.load_broker_configs`), and again at each of their
  notifications. Another broker's own config is none of this broker's business, as in
  Kafka.

Both are kept where KRaft mode keeps them, in the metadata image's ``configs``
(``(TOPIC, name)``, ``(BROKER, "")``, ``(BROKER, "<id>")``), which the MetadataCache
publishes: DescribeConfigs reads them there with their sources, and each partition's
settings are computed from them (a topic's overrides over this broker's own layer over
the cluster-wide layer over ``server.properties``). A topic's change reapplies that
topic's settings; a broker layer's change reapplies every topic's, so a topic without
an override takes e.g. a new ``log.retention.ms`` or ``message.max.bytes`` at once.
The controller, if this broker is it, hears of each change too.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping

import attrs
import trio
from kazoo.exceptions import ConnectionLoss

from minikafka.controller import ConfigChangeError, ConfigResourceType
from minikafka.replication import ReplicaManagerShell
from minikafka.zk import (
    NoNodeError,
    ZkClient,
    broker_config_path,
    decode_broker_config,
    decode_topic_config,
    topic_config_path,
)

from .._dynamic_config import check_broker_change
from ._controller_shell import ZkControllerShell
from ._metadata import ZkBrokerMetadata

_logger = logging.getLogger("minikafka.broker")
_ZK_RETRY_S = 0.2

ConfigKey = tuple[int, str]


@attrs.define(eq=False)
class ZkConfigHandlers:
    node_id: int
    zk: ZkClient
    metadata: ZkBrokerMetadata
    replica_manager: ReplicaManagerShell
    controller: ZkControllerShell
    publish: Callable[[], None]
    """Hands the metadata image to the MetadataCache (what DescribeConfigs and the
    partitions' settings read)."""
    retry_s: float
    """How long a read waits out a lost connection (the session timeout)."""
    _lock: trio.Lock = attrs.field(init=False, factory=trio.Lock)
    """Held while configs are read and stored, so that an older read never replaces a
    newer one (a LeaderAndIsr's first read and a notification's)."""

    # --- topics ------------------------------------------------------------------------------

    async def load_topic_configs(self, topics: set[str]) -> None:
        """The overrides of the topics this broker has not read yet."""
        key = ConfigResourceType.TOPIC
        async with self._lock:
            missing = [
                t for t in sorted(topics) if (key, t) not in self.metadata.image.configs
            ]
            if not missing:
                return
            read: dict[ConfigKey, dict[str, str]] = {}
            for topic in missing:
                read[(key, topic)] = await self._read(
                    topic_config_path(topic),
                    functools.partial(decode_topic_config, topic),
                )
            self._store(read)

    async def on_topic_config_change(self, topic: str) -> None:
        """A notification named ``topic`` (Kafka's ``TopicConfigHandler``): its
        overrides read again, kept where DescribeConfigs reads them, and handed to its
        partitions here at once (retention, segments, cleanup.policy,
        max.message.bytes, min.insync.replicas...). A topic this broker has not heard
        of yet is left alone: its config is read when it first hosts it."""
        key: ConfigKey = (ConfigResourceType.TOPIC, topic)
        async with self._lock:
            configs = await self._read(
                topic_config_path(topic), functools.partial(decode_topic_config, topic)
            )
            image = self.metadata.image
            if topic in image.topic_ids or key in image.configs:
                self._store({key: configs})
                self.replica_manager.update_topic_settings(topic)
                _logger.info("topic %s's config is now %s", topic, configs)
        self.controller.topic_config_changed(topic)

    # --- this broker's dynamic configs (KIP-226) ---------------------------------------------

    def follows(self, name: str) -> bool:
        """Whether a broker resource's change is this broker's: the cluster-wide
        default (``""``) or its own id (Kafka's ``BrokerConfigHandler`` ignores
        another broker's)."""
        return name in ("", str(self.node_id))

    async def load_broker_configs(self) -> None:
        """Both layers, at start-up: a restarted broker keeps the dynamic defaults."""
        async with self._lock:
            self._store(
                {
                    (ConfigResourceType.BROKER, name): await self._read_broker(name)
                    for name in ("", str(self.node_id))
                }
            )

    async def on_broker_config_change(self, name: str) -> None:
        """A notification named ``brokers/<default>`` or ``brokers/<id>``, ``name``
        ``""`` or the id: the layer read again and every topic's settings reapplied
        (those with an override of the key keep it). Another broker's is ignored."""
        if not self.follows(name):
            return
        async with self._lock:
            configs = await self._read_broker(name)
            self._store({(ConfigResourceType.BROKER, name): configs})
            for topic in sorted(t.name for t in self.metadata.image.topics.values()):
                self.replica_manager.update_topic_settings(topic)
            _logger.info(
                "dynamic broker config %s is now %s", name or "<default>", configs
            )
        self.controller.broker_config_changed(name)

    async def _read_broker(self, name: str) -> dict[str, str]:
        """A layer's configs, without the entries this broker cannot apply (a value
        written by another tool that its check refuses): logged and left out, as Kafka
        leaves out an invalid dynamic config rather than fail."""
        configs = await self._read(
            broker_config_path(name), functools.partial(decode_broker_config, name)
        )
        valid = {}
        for key, value in configs.items():
            try:
                check_broker_change({key: value})
            except ConfigChangeError as exc:
                _logger.warning(
                    "dynamic broker config %s=%s of %s ignored: %s",
                    key,
                    value,
                    broker_config_path(name),
                    exc,
                )
                continue
            valid[key] = value
        return valid

    # --- ZooKeeper and the image ----------------------------------------------------------------

    async def _read(
        self, path: str, decode: Callable[[bytes], dict[str, str]]
    ) -> dict[str, str]:
        """A config znode ({} if none is written), waiting out a connection loss
        (Kafka's ZooKeeper client blocks until it reconnects) for at most
        :attr:`retry_s`."""
        retry = trio.current_time() + self.retry_s
        while True:
            try:
                data, _ = await self.zk.get(path)
            except NoNodeError:
                return {}
            except ConnectionLoss:
                if trio.current_time() > retry:
                    raise
                await trio.sleep(_ZK_RETRY_S)
                continue
            return decode(data)

    def _store(self, read: Mapping[ConfigKey, dict[str, str]]) -> None:
        configs = {**self.metadata.image.configs, **read}
        self.metadata.image = attrs.evolve(self.metadata.image, configs=configs)
        self.publish()
