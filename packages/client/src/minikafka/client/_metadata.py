"""The client's view of the cluster: brokers, and each topic's partitions and leaders.

A producer learns where to send from Metadata responses (seed 000: "the client asks any
broker for metadata, then talks to each partition's leader"). It asks for the topics it
produces to, when it first meets a topic, when a response says the leader moved
(NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION...), when a batch waits for a
partition without a leader, and every ``metadata.max.age.ms`` in any case. A consumer
subscribed by pattern under the classic protocol asks for every topic instead
(:attr:`ClientMetadata.all_topics`, Kafka's ``MetadataRequest.Builder.allTopics``) to
match its pattern against (:meth:`ClientMetadata.cluster_topics`). Kafka's
producer lets a Metadata request create a topic it does not know
(``allow.auto.create.topics``, on by default); the broker decides
(``auto.create.topics.enable``).

A partition's leader epoch only grows (KIP-320): an answer naming an older epoch than the
client has seen comes from a broker behind the cluster (one cut off from the
controller keeps answering from its old image, itself still the leader) and is not
taken for that partition, as Kafka's ``Metadata.updateLatestMetadata`` does not take it.
Kafka's client trusts the epochs of Metadata v9 and later, and forgets a partition's
epoch when its topic's id changes (a topic deleted and created again starts from
epoch 0): the loop asks with v12, whose answers carry the ids.

A core: :meth:`ClientMetadata.update` takes the decoded response and the time.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Collection, Iterable

import attrs
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.response import MetadataResponse as MetadataResponseV8
from kio.schema.metadata.v12.response import MetadataResponse, MetadataResponseTopic
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from minikafka.common import TopicPartition
from minikafka.net import Node


def bootstrap_nodes(servers: tuple[tuple[str, int], ...]) -> tuple[Node, ...]:
    """``bootstrap.servers`` as nodes -1, -2, ...: unknown ids until the metadata names
    them, as in Kafka's ``ClientUtils``."""
    return tuple(Node(-1 - i, host, port) for i, (host, port) in enumerate(servers))


@attrs.frozen
class TopicInfo:
    error: int  # ErrorCode of the topic in the last response
    leaders: tuple[int, ...]  # per partition, -1 without a leader
    leader_epochs: tuple[int, ...] = ()  # per partition (KIP-320), when the broker says
    # The partitions with a leader, worked out once: every keyless record asks.
    available: tuple[int, ...] = attrs.field(init=False)

    @available.default
    def _available(self) -> tuple[int, ...]:
        return tuple(p for p, leader in enumerate(self.leaders) if leader >= 0)


@attrs.define
class ClientMetadata:
    bootstrap: tuple[Node, ...]
    max_age_ms: int = 300_000
    nodes: dict[int, Node] = attrs.field(factory=dict)
    topics: dict[str, TopicInfo] = attrs.field(factory=dict)
    wanted: set[str] = attrs.field(factory=set)
    updated_at: float = -math.inf
    authentication_error: tuple[int, str] | None = None
    """(Kafka's error code, message) of the last refusal at authentication (Kafka's
    ``AuthenticationException``: retrying with the same credentials cannot help, so the
    application hears of it at once); None once a Metadata request gets through."""
    all_topics: bool = False  # ask for every topic (a classic pattern subscription)
    exclude_internal: bool = True  # exclude.internal.topics: not offered to a pattern
    topic_ids: dict[str, uuid.UUID] = attrs.field(factory=dict)
    """Each topic's id, as the last answer that gave one said (Metadata v10+)."""
    _listed: frozenset[str] | None = None  # every topic, by the last all-topics answer
    _needs_update: bool = True

    def ask_all_topics(self, wanted: bool) -> None:
        """Ask for every topic from the next request on (or no longer)."""
        if wanted and not self.all_topics:
            self._needs_update = True
        self.all_topics = wanted

    def want(self, topic: str) -> bool:
        """Track ``topic``; True if it was new (a Metadata request is due)."""
        if topic in self.wanted:
            return False
        self.wanted.add(topic)
        self._needs_update = True
        return True

    def request_update(self) -> None:
        self._needs_update = True

    def update_due(self, now: float) -> bool:
        return self._needs_update or (now - self.updated_at) * 1000 >= self.max_age_ms

    def update(
        self,
        response: MetadataResponse | MetadataResponseV8,
        now: float,
        all_topics: bool = False,
    ) -> bool:
        """Takes ``response`` in, for every topic if ``all_topics``: then the topics it
        does not name are gone (deleted). False if it names no broker, and is ignored.

        A broker answers so while it knows no live broker: in ZooKeeper mode before the
        controller's first UpdateMetadata reaches it (just restarted, cut off from the
        controller), in KRaft mode while its image has every broker fenced (itself
        included, after a partition from the controllers). Kafka's ``NetworkClient``
        ignores such an answer (``handleSuccessfulResponse``: "Ignoring empty metadata
        response") and asks again: taking it would forget every broker and leader the
        client knew. The brokers and leaders stay, and another request is due.

        A partition whose answer names an older leader epoch than the one known keeps
        its leader and epoch (:meth:`_newest`), from a v12 answer; a v8 answer is taken
        as it is (Kafka's client does not trust the epochs before v9).
        """
        if not response.brokers:
            self._needs_update = True
            return False
        previous = self.topics
        if all_topics:
            self.topics = {}
            self._listed = frozenset(
                str(t.name)
                for t in response.topics
                if t.error_code == ErrorCode.none
                and not (t.is_internal and self.exclude_internal)
            )
        self.nodes = {
            int(b.node_id): Node(int(b.node_id), b.host, int(b.port))
            for b in response.brokers
        }
        for topic in response.topics:
            error = int(topic.error_code)
            if error != ErrorCode.none and not topic.partitions:
                self.topics[str(topic.name)] = TopicInfo(error, ())
                continue
            if isinstance(topic, MetadataResponseTopic):  # v12: its epochs are trusted
                topic = self._newest(topic, previous.get(str(topic.name)))
            count = (
                max((int(p.partition_index) for p in topic.partitions), default=-1) + 1
            )
            leaders = [-1] * count
            epochs = [-1] * count
            for p in topic.partitions:
                leader = int(p.leader_id)
                leaders[int(p.partition_index)] = leader if leader in self.nodes else -1
                epochs[int(p.partition_index)] = int(p.leader_epoch)
            self.topics[str(topic.name)] = TopicInfo(
                error, tuple(leaders), tuple(epochs)
            )
        self.updated_at = now
        # Ask again soon while a wanted topic has no partitions or a partition no leader.
        self._needs_update = any(
            t not in self.topics
            or not self.topics[t].leaders
            or -1 in self.topics[t].leaders
            for t in self.wanted
        )
        return True

    def _newest(
        self, topic: MetadataResponseTopic, before: TopicInfo | None
    ) -> MetadataResponseTopic:
        """Kafka's ``Metadata.updateLatestMetadata`` over one topic of an answer: a
        partition whose leader epoch is older than the one ``before`` knew keeps the
        known leader and epoch, unless the topic's id changed (another topic of the same
        name, whose epochs start again) or the answer names no epoch (-1); an equal or
        newer epoch is taken as it is."""
        name = str(topic.name)
        topic_id = _topic_id(topic.topic_id)
        known_id = self.topic_ids.get(name)
        if topic_id is not None:
            self.topic_ids[name] = topic_id
        if before is None or (topic_id is not None and topic_id != known_id):
            return topic
        partitions = []
        for p in topic.partitions:
            index, epoch = int(p.partition_index), int(p.leader_epoch)
            epochs = before.leader_epochs
            known = (
                epochs[index] if index < min(len(epochs), len(before.leaders)) else -1
            )
            if 0 <= epoch < known:
                p = dataclasses.replace(
                    p,
                    leader_id=BrokerId(before.leaders[index]),
                    leader_epoch=i32(known),
                )
            partitions.append(p)
        return dataclasses.replace(topic, partitions=tuple(partitions))

    def cluster_topics(self) -> Collection[str] | None:
        """The cluster's topics as the last all-topics answer listed them (internal
        ones left out with ``exclude.internal.topics``, as Kafka's consumer leaves them
        out of a pattern's reach); None before such an answer."""
        return self._listed

    def partitions(self, topic: str) -> TopicInfo | None:
        info = self.topics.get(topic)
        return info if info is not None and info.leaders else None

    def leader_of(self, tp: TopicPartition) -> int | None:
        info = self.topics.get(tp.topic)
        if info is None or tp.partition >= len(info.leaders):
            return None
        leader = info.leaders[tp.partition]
        return leader if leader >= 0 else None

    def leader_epoch_of(self, tp: TopicPartition) -> int | None:
        info = self.topics.get(tp.topic)
        if info is None or tp.partition >= len(info.leader_epochs):
            return None
        epoch = info.leader_epochs[tp.partition]
        return epoch if epoch >= 0 else None

    def node(self, node_id: int) -> Node | None:
        return self.nodes.get(node_id)

    def led_by(
        self, node_id: int, partitions: Iterable[TopicPartition]
    ) -> list[TopicPartition]:
        return [tp for tp in partitions if self.leader_of(tp) == node_id]

    def known_nodes(self) -> list[Node]:
        """The brokers to ask what any broker can answer, by id: the known ones, else
        the bootstrap servers."""
        return sorted(self.nodes.values(), key=lambda n: n.node_id) or list(
            self.bootstrap
        )

    def any_node(self, index: int) -> Node:
        """A broker to ask for metadata: the ``index``-th known one, in turn."""
        known = self.known_nodes()
        return known[index % len(known)]


def _topic_id(value: uuid.UUID | None) -> uuid.UUID | None:
    """A topic's id as an answer gives it: None where the broker has none (all zeros)."""
    return value if value is not None and value.int != 0 else None
