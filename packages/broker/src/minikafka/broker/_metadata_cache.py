"""MetadataCache: what this broker tells clients about the cluster, from the metadata image.

In KRaft mode the broker does not ask anyone: it replays the committed metadata log into
a MetadataImage (the controller package does that) and answers Metadata requests, topic
lookups and configuration questions from the newest image. Replacing the image is one
assignment, so every request sees one consistent version of the cluster.

An image never changes once published (a new version is a new object), so whatever is
computed from it alone stays right until the next one: the cache keeps encoded Metadata
response bodies keyed by what else they depend on, and drops them all when the image
is replaced (a client's periodic Metadata request then costs a dictionary
lookup instead of building and encoding every topic's partitions).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Mapping

import attrs
import trio

from minikafka.controller import (
    METADATA_TOPIC,
    MIN_INSYNC_REPLICAS,
    ConfigResourceType,
    MetadataImage,
    TopicImage,
)
from minikafka.log import LOG_CONFIG, LogConfig

# Every topic config the log reads (the others are the controller's and the partition's).
_LOG_TOPIC_KEYS = LOG_CONFIG.names()
INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", METADATA_TOPIC}
)
# Distinct bodies kept for one image: a few per client kind (version, listener, topics
# asked); the bound stops clients asking for ever new topic lists from growing it.
MAX_RESPONSE_BODIES = 256


ZERO_UUID = uuid.UUID(int=0)
"""No topic id: what a request names a topic by name with, and Kafka's Uuid.ZERO_UUID."""


@attrs.frozen
class AliveBroker:
    node_id: int
    host: str
    port: int
    rack: str | None


@attrs.define(eq=False)
class MetadataCache:
    broker_id: int
    image: MetadataImage = attrs.field(factory=MetadataImage)
    controller_id: int | None = None
    """The controller clients are told of: ZooKeeper mode's, from UpdateMetadata; None in
    KRaft mode, where it is this broker (combined mode's controller is this process)."""
    # The image the bodies were computed from, compared by identity: a replaced image
    # (by update() or by assigning ``image``) empties the cache on the next lookup.
    _bodies_image: MetadataImage | None = attrs.field(
        init=False, default=None, repr=False
    )
    _bodies: dict[Hashable, bytes] = attrs.field(init=False, factory=dict, repr=False)

    # Set, and replaced, by each update(): what wait_until() waits on.
    _updated: trio.Event = attrs.field(init=False, factory=trio.Event, repr=False)

    def update(self, image: MetadataImage) -> None:
        self.image = image
        self._updated.set()
        self._updated = trio.Event()

    async def wait_until(self, done: Callable[[MetadataImage], bool]) -> None:
        """Returns once an image (this one, or one a later update() brings) satisfies
        ``done``; the caller bounds the wait."""
        while not done(self.image):
            await self._updated.wait()

    def response_body(self, key: Hashable, make: Callable[[], bytes]) -> bytes:
        """The bytes ``make()`` returns for the current image and ``key``, computed
        once.

        ``key`` must name everything the body depends on besides the image (API version,
        listener, topics asked, flags); ``make`` must read the cluster only from
        :attr:`image`.
        """
        if self._bodies_image is not self.image:
            self._bodies.clear()
            self._bodies_image = self.image
        body = self._bodies.get(key)
        if body is None:
            body = make()
            if len(self._bodies) >= MAX_RESPONSE_BODIES:
                self._bodies.clear()
            self._bodies[key] = body
        return body

    def topic(self, name: str) -> TopicImage | None:
        return self.image.topic(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self.image.topics.get(topic_id)

    def topic_names(self) -> list[str]:
        return sorted(self.image.topic_ids)

    def alive_brokers(self, listener: str) -> list[AliveBroker]:
        """Unfenced brokers with an endpoint on ``listener`` (the one the client used)."""
        brokers = []
        for broker in sorted(self.image.brokers.values(), key=lambda b: b.broker_id):
            if broker.fenced:
                continue
            for endpoint in broker.endpoints:
                if endpoint.name == listener:
                    brokers.append(
                        AliveBroker(
                            broker.broker_id, endpoint.host, endpoint.port, broker.rack
                        )
                    )
        return brokers

    def topic_config_overrides(self, topic: str) -> Mapping[str, str]:
        return self.image.configs.get((ConfigResourceType.TOPIC, topic), {})

    def broker_configs(self, name: str) -> Mapping[str, str]:
        """A broker resource's dynamic configs: ``""``, the cluster-wide default, or a
        broker's id, its own (KIP-226)."""
        return self.image.configs.get((ConfigResourceType.BROKER, name), {})

    def log_config(self, topic: str, defaults: LogConfig) -> LogConfig:
        """The topic's LogConfig: its overrides over the broker's defaults."""
        overrides = self.topic_config_overrides(topic)
        if not overrides:
            return defaults
        return LogConfig.from_properties(
            {k: v for k, v in overrides.items() if k in _LOG_TOPIC_KEYS}, defaults
        )

    def min_insync_replicas(self, topic: str, default: int) -> int:
        value = self.topic_config_overrides(topic).get(MIN_INSYNC_REPLICAS)
        return default if value is None else int(value)
