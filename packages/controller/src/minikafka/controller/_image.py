"""MetadataImage and MetadataDelta: the cluster as a broker sees it (seed 004 §2.2).

A broker does not receive commands from the KRaft controller. It replays the metadata log
into a ``MetadataDelta`` on top of its current ``MetadataImage``; when a batch has been
replayed it publishes ``delta.apply()``, a new immutable image, and acts on what changed
*for it*: ``delta.local_changes(broker_id)`` says which partitions it now leads, which it
follows, which it no longer hosts, and which topics were deleted. The broker turns that
into actions (open a log and become leader, start fetching, delete a log), the
declarative style of seed 004: the log says what should be true, each broker makes it so.

Images are immutable, so a request handler can keep using the image it started with while
the next one is built; unchanged topics are shared between successive images.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TypeVar

import attrs

from minikafka.common import TopicPartition

from ._partition import PartitionRegistration
from ._records import (
    AccessControlEntryRecord,
    BrokerEndpoint,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)


class MetadataReplayError(ValueError):
    """A record that cannot follow the ones before it: the metadata log is inconsistent."""


K = TypeVar("K")
V = TypeVar("V")


def _frozen(mapping: Mapping[K, V]) -> Mapping[K, V]:
    return MappingProxyType(dict(mapping))


@attrs.frozen
class BrokerRegistration:
    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool

    @classmethod
    def from_record(cls, record: RegisterBrokerRecord) -> BrokerRegistration:
        return cls(
            record.broker_id,
            record.broker_epoch,
            record.incarnation_id,
            record.endpoints,
            record.rack,
            record.fenced,
        )

    def to_record(self) -> RegisterBrokerRecord:
        return RegisterBrokerRecord(
            self.broker_id,
            self.incarnation_id,
            self.epoch,
            self.endpoints,
            self.rack,
            self.fenced,
        )


@attrs.frozen
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]


@attrs.frozen
class MetadataImage:
    """Everything the metadata log says, up to and including ``offset``."""

    offset: int = -1
    features: Mapping[str, int] = attrs.field(factory=lambda: MappingProxyType({}))
    brokers: Mapping[int, BrokerRegistration] = attrs.field(
        factory=lambda: MappingProxyType({})
    )
    topics: Mapping[uuid.UUID, TopicImage] = attrs.field(
        factory=lambda: MappingProxyType({})
    )
    topic_ids: Mapping[str, uuid.UUID] = attrs.field(
        factory=lambda: MappingProxyType({})
    )
    configs: Mapping[tuple[int, str], Mapping[str, str]] = attrs.field(
        factory=lambda: MappingProxyType({})
    )
    # The first producer id of the next block the controller hands out (Kafka's
    # ProducerIdsImage); every id below it belongs to a block already given to a broker.
    next_producer_id: int = 0
    # Each user's SCRAM credentials (KIP-554), keyed by (user, mechanism code): what
    # every broker's SCRAM server checks a client's proof against (Kafka's ScramImage).
    scram: Mapping[tuple[str, int], UserScramCredentialRecord] = attrs.field(
        factory=lambda: MappingProxyType({})
    )
    # Every ACL by its id (KIP-801, Kafka's AclsImage): what the broker's authorizer
    # holds and DescribeAcls lists.
    acls: Mapping[uuid.UUID, AccessControlEntryRecord] = attrs.field(
        factory=lambda: MappingProxyType({})
    )

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids.get(name)
        return None if topic_id is None else self.topics[topic_id]

    def records(self) -> Iterator[MetadataRecord]:
        """Records that rebuild this image from nothing: what a snapshot holds."""
        for name, level in sorted(self.features.items()):
            yield FeatureLevelRecord(name, level)
        for broker_id in sorted(self.brokers):
            yield self.brokers[broker_id].to_record()
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            yield TopicRecord(topic.name, topic.topic_id)
            for partition_id in sorted(topic.partitions):
                yield topic.partitions[partition_id].to_record(
                    topic.topic_id, partition_id
                )
        for (resource_type, resource_name), entries in sorted(self.configs.items()):
            for name, value in sorted(entries.items()):
                yield ConfigRecord(resource_type, resource_name, name, value)
        if self.next_producer_id != 0:
            # One record stands for every block handed out; no broker asked for it.
            yield ProducerIdsRecord(-1, -1, self.next_producer_id)
        for key in sorted(self.scram):
            yield self.scram[key]
        for acl_id in sorted(self.acls):
            yield self.acls[acl_id]

    def describe(self) -> str:
        """A human-readable dump, as ``python -m minikafka.controller replay`` prints it."""
        lines = [f"metadata image at offset {self.offset}"]
        lines += [
            f"feature {name}={level}" for name, level in sorted(self.features.items())
        ]
        for broker in (self.brokers[b] for b in sorted(self.brokers)):
            where = ", ".join(f"{e.name}://{e.host}:{e.port}" for e in broker.endpoints)
            state = "fenced" if broker.fenced else "unfenced"
            rack = f" rack={broker.rack}" if broker.rack else ""
            lines.append(
                f"broker {broker.broker_id} epoch={broker.epoch} {state}{rack} {where}"
            )
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            lines.append(
                f"topic {topic.name} id={topic.topic_id} partitions={len(topic.partitions)}"
            )
            for partition_id, p in sorted(topic.partitions.items()):
                moving = (
                    f" adding={list(p.adding_replicas)} removing={list(p.removing_replicas)}"
                    if p.is_reassigning
                    else ""
                )
                lines.append(
                    f"  {topic.name}-{partition_id} leader={p.leader} "
                    f"leader_epoch={p.leader_epoch} partition_epoch={p.partition_epoch} "
                    f"replicas={list(p.replicas)} isr={list(p.isr)}{moving}"
                )
        for (resource_type, resource_name), entries in sorted(self.configs.items()):
            for name, value in sorted(entries.items()):
                lines.append(f"config {resource_type}:{resource_name} {name}={value}")
        lines.append(f"producer ids next_producer_id={self.next_producer_id}")
        for (user, mechanism), credential in sorted(self.scram.items()):
            lines.append(
                f"scram user={user} mechanism={mechanism}"
                f" iterations={credential.iterations}"
            )
        for acl_id, acl in sorted(self.acls.items()):
            lines.append(
                f"acl id={acl_id} resource={acl.resource_type}:{acl.pattern_type}:"
                f"{acl.resource_name} principal={acl.principal} host={acl.host} "
                f"operation={acl.operation} permission={acl.permission_type}"
            )
        return "\n".join(lines)


@attrs.frozen
class LocalPartition:
    """One partition this broker hosts, as the new image describes it."""

    topic_id: uuid.UUID
    partition: PartitionRegistration


@attrs.frozen
class LocalReplicaChanges:
    """What one broker must do after a delta (Kafka's LocalReplicaChanges)."""

    leaders: Mapping[TopicPartition, LocalPartition]
    followers: Mapping[TopicPartition, LocalPartition]
    stopped: frozenset[
        TopicPartition
    ]  # no longer a replica here: stop and delete the log
    deleted: frozenset[TopicPartition]  # its topic was deleted: delete the log

    @property
    def empty(self) -> bool:
        return not (self.leaders or self.followers or self.stopped or self.deleted)


@attrs.define(eq=False)
class _TopicDelta:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionRegistration]
    changed: set[int] = attrs.field(factory=set)


@attrs.define(eq=False)
class MetadataDelta:
    """Records replayed on top of ``image``, not yet published."""

    image: MetadataImage
    offset: int = attrs.field(init=False)
    _features: dict[str, int] = attrs.field(init=False, factory=dict)
    _brokers: dict[int, BrokerRegistration | None] = attrs.field(
        init=False, factory=dict
    )
    _topics: dict[uuid.UUID, _TopicDelta] = attrs.field(init=False, factory=dict)
    _deleted: dict[uuid.UUID, TopicImage] = attrs.field(init=False, factory=dict)
    _configs: dict[tuple[int, str], dict[str, str]] = attrs.field(
        init=False, factory=dict
    )
    _next_producer_id: int = attrs.field(init=False)
    # (user, mechanism) -> its new credential, or None: removed
    _scram: dict[tuple[str, int], UserScramCredentialRecord | None] = attrs.field(
        init=False, factory=dict
    )
    # ACL id -> the ACL, or None: removed
    _acls: dict[uuid.UUID, AccessControlEntryRecord | None] = attrs.field(
        init=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        self.offset = self.image.offset
        self._next_producer_id = self.image.next_producer_id

    # --- replay ----------------------------------------------------------------------

    def replay(self, record: MetadataRecord, offset: int | None = None) -> None:
        if offset is not None:
            self.offset = offset
        match record:
            case RegisterBrokerRecord():
                self._brokers[record.broker_id] = BrokerRegistration.from_record(record)
            case UnregisterBrokerRecord():
                self._brokers[record.broker_id] = None
            case FenceBrokerRecord() | UnfenceBrokerRecord():
                self._set_fenced(record)
            case TopicRecord():
                if self._name_taken(record.name) or self._id_taken(record.topic_id):
                    raise MetadataReplayError(
                        f"topic {record.name} ({record.topic_id}) exists"
                    )
                self._topics[record.topic_id] = _TopicDelta(
                    record.name, record.topic_id, {}
                )
            case PartitionRecord():
                topic = self._topic_delta(record.topic_id)
                topic.partitions[record.partition_id] = (
                    PartitionRegistration.from_record(record)
                )
                topic.changed.add(record.partition_id)
            case PartitionChangeRecord():
                topic = self._topic_delta(record.topic_id)
                current = topic.partitions.get(record.partition_id)
                if current is None:
                    raise MetadataReplayError(f"change to unknown partition {record}")
                topic.partitions[record.partition_id] = current.merge(record)
                topic.changed.add(record.partition_id)
            case RemoveTopicRecord():
                self._remove_topic(record.topic_id)
            case ConfigRecord():
                entries = self._config_entries(
                    (record.resource_type, record.resource_name)
                )
                if record.value is None:
                    entries.pop(record.name, None)
                else:
                    entries[record.name] = record.value
            case FeatureLevelRecord():
                self._features[record.name] = record.feature_level
            case ProducerIdsRecord():
                # Each block starts where the last one ended: a record that does not move
                # the next id forward would hand out ids that are already taken.
                if record.next_producer_id <= self._next_producer_id:
                    raise MetadataReplayError(
                        f"{record} does not move next_producer_id past {self._next_producer_id}"
                    )
                self._next_producer_id = record.next_producer_id
            case UserScramCredentialRecord():
                self._scram[(record.name, record.mechanism)] = record
            case RemoveUserScramCredentialRecord():
                self._scram[(record.name, record.mechanism)] = None
            case AccessControlEntryRecord():
                self._acls[record.id] = record
            case RemoveAccessControlEntryRecord():
                self._acls[record.id] = None

    def _id_taken(self, topic_id: uuid.UUID) -> bool:
        if topic_id in self.image.topics and topic_id not in self._deleted:
            return True
        return topic_id in self._topics

    def _name_taken(self, name: str) -> bool:
        old_id = self.image.topic_ids.get(name)
        if old_id is not None and old_id not in self._deleted:
            return True
        return any(t.name == name for t in self._topics.values())

    def _set_fenced(self, record: FenceBrokerRecord | UnfenceBrokerRecord) -> None:
        current = self._brokers.get(
            record.broker_id, self.image.brokers.get(record.broker_id)
        )
        if current is None or current.epoch != record.broker_epoch:
            raise MetadataReplayError(
                f"{record} names no registered broker of that epoch"
            )
        fenced = isinstance(record, FenceBrokerRecord)
        self._brokers[record.broker_id] = attrs.evolve(current, fenced=fenced)

    def _topic_delta(self, topic_id: uuid.UUID) -> _TopicDelta:
        delta = self._topics.get(topic_id)
        if delta is None:
            topic = self.image.topics.get(topic_id)
            if topic is None or topic_id in self._deleted:
                raise MetadataReplayError(f"record for unknown topic id {topic_id}")
            delta = _TopicDelta(topic.name, topic_id, dict(topic.partitions))
            self._topics[topic_id] = delta
        return delta

    def _remove_topic(self, topic_id: uuid.UUID) -> None:
        created = self._topics.pop(topic_id, None)
        # A topic of the image removed earlier in this delta is gone: removing it twice is
        # as inconsistent as removing a topic that never was.
        old = None if topic_id in self._deleted else self.image.topics.get(topic_id)
        if old is not None:
            self._deleted[topic_id] = old
        elif created is None:
            raise MetadataReplayError(f"removal of unknown topic id {topic_id}")
        name = old.name if old is not None else created.name if created else ""
        self._config_entries((2, name)).clear()  # a deleted topic's configs go with it

    def _config_entries(self, resource: tuple[int, str]) -> dict[str, str]:
        entries = self._configs.get(resource)
        if entries is None:
            entries = dict(self.image.configs.get(resource, {}))
            self._configs[resource] = entries
        return entries

    # --- publishing -----------------------------------------------------------------

    def apply(self) -> MetadataImage:
        image = self.image
        features = dict(image.features)
        for name, level in self._features.items():
            if level == 0:
                features.pop(name, None)  # level 0 means "not finalized"
            else:
                features[name] = level
        brokers = dict(image.brokers)
        for broker_id, registration in self._brokers.items():
            if registration is None:
                brokers.pop(broker_id, None)
            else:
                brokers[broker_id] = registration
        topics = {k: v for k, v in image.topics.items() if k not in self._deleted}
        for topic_id, delta in self._topics.items():
            topics[topic_id] = TopicImage(
                delta.name, topic_id, _frozen(delta.partitions)
            )
        configs = {k: v for k, v in image.configs.items() if k not in self._configs}
        configs.update({k: _frozen(v) for k, v in self._configs.items() if v})
        return MetadataImage(
            offset=self.offset,
            features=MappingProxyType(features),
            brokers=MappingProxyType(brokers),
            topics=MappingProxyType(topics),
            topic_ids=MappingProxyType({t.name: t.topic_id for t in topics.values()}),
            configs=MappingProxyType(configs),
            next_producer_id=self._next_producer_id,
            scram=MappingProxyType(self._applied_scram()),
            # the same mapping while no ACL changes: the broker's authorizer rebuilds
            # its index only when the image brings other ACLs
            acls=MappingProxyType(self._applied_acls()) if self._acls else image.acls,
        )

    def _applied_acls(self) -> dict[uuid.UUID, AccessControlEntryRecord]:
        acls = dict(self.image.acls)
        for acl_id, acl in self._acls.items():
            if acl is None:
                acls.pop(acl_id, None)
            else:
                acls[acl_id] = acl
        return acls

    def _applied_scram(self) -> dict[tuple[str, int], UserScramCredentialRecord]:
        scram = dict(self.image.scram)
        for key, credential in self._scram.items():
            if credential is None:
                scram.pop(key, None)
            else:
                scram[key] = credential
        return scram

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        """Kafka's TopicsDelta.localChanges: what ``broker_id`` must now lead, follow,
        drop."""
        leaders: dict[TopicPartition, LocalPartition] = {}
        followers: dict[TopicPartition, LocalPartition] = {}
        stopped: set[TopicPartition] = set()
        deleted: set[TopicPartition] = set()
        for topic in self._deleted.values():
            for partition_id, p in topic.partitions.items():
                if broker_id in p.replicas:
                    deleted.add(TopicPartition(topic.name, partition_id))
        for delta in self._topics.values():
            old_topic = self.image.topics.get(delta.topic_id)
            for partition_id in delta.changed:
                tp = TopicPartition(delta.name, partition_id)
                new = delta.partitions[partition_id]
                old = old_topic.partitions.get(partition_id) if old_topic else None
                if broker_id in new.replicas:
                    target = leaders if new.leader == broker_id else followers
                    target[tp] = LocalPartition(delta.topic_id, new)
                elif old is not None and broker_id in old.replicas:
                    stopped.add(tp)
        return LocalReplicaChanges(
            MappingProxyType(leaders),
            MappingProxyType(followers),
            frozenset(stopped),
            frozenset(deleted),
        )
