"""BrokerMetadataPublisher: how a KRaft broker acts on the metadata it replays (KIP-500's
brokers that follow the log rather than obey commands; Kafka's ``MetadataLoader`` and
``BrokerMetadataPublisher``).

:class:`~._server.BrokerServer` starts the broker and stops it; between the two, every
change of the cluster reaches it as metadata, and this is what the broker does with it.
It is apart from the server because it is one mechanism with state of its own (the
latest image, whether the first one is published yet) and faults of its own, and it
runs the same way whichever process holds the controller:

- **replaying** (Kafka's MetadataLoader): a broker-only node's copy of the metadata log
  arrives in fetched pieces (:meth:`BrokerMetadataPublisher.on_observer_update`); each
  is replayed record by record into the next image, and nothing is published until the
  copy has caught up with the controller's high watermark, so a restarting broker never
  acts on half an image. On a combined node the controller in the process replays the
  log and hands each committed delta over as it is;
- **publishing** (Kafka's BrokerMetadataPublisher): each delta updates the
  MetadataCache, then makes the local replicas match the image *declaratively* (lead,
  follow or delete each partition the delta changes here, :mod:`._local_replicas`),
  then applies changed topic configs. The first image, and a snapshot that replaced a
  broker-only node's log, are published whole, as one delta from an empty image, after
  which logs the image no longer places here are deleted as strays.

No fault in either ends the broker: each record, and each step of a delta, runs under
:attr:`BrokerMetadataPublisher.faults` (Kafka's non-fatal ``LoggingFaultHandler``), which
logs it at ERROR and counts it, and the others are applied all the same; the image
advances either way, as Kafka's MetadataLoader's does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence

import attrs
import trio

from minikafka.common import TopicPartition
from minikafka.controller import (
    ConfigResourceType,
    LocalPartition,
    MetadataDelta,
    MetadataImage,
    MetadataObserver,
    MetadataRecord,
    ObserverUpdate,
)
from minikafka.net import Node
from minikafka.replication import PartitionState, ReplicaManagerShell

from ._config import KafkaConfig
from ._coordinators import Coordinators
from ._local_replicas import LoggingFaultHandler, apply_replica_changes
from ._metadata_cache import MetadataCache
from ._replica_fetchers import ReplicaFetcherManager

_logger = logging.getLogger("minikafka.broker")


@attrs.define(eq=False)
class BrokerMetadataPublisher:
    config: KafkaConfig
    metadata_cache: MetadataCache
    replica_manager: ReplicaManagerShell
    fetchers: ReplicaFetcherManager
    coordinators: Coordinators
    observer: MetadataObserver | None = None
    """A broker-only node's copy of the metadata log; None in combined mode."""
    image: MetadataImage = attrs.field(factory=MetadataImage)
    """The latest image replayed (a broker-only node's may be ahead of the published one)."""
    faults: LoggingFaultHandler = attrs.field(
        factory=lambda: LoggingFaultHandler("metadata publishing")
    )
    """Every fault in loading and publishing metadata: logged and counted (``count``:
    Kafka's ``metadata-apply-error-count``)."""
    _published: bool = attrs.field(init=False, default=False)
    _metadata_published: trio.Event = attrs.field(init=False, factory=trio.Event)
    """Set (and replaced) at each published delta."""

    async def wait_for_next_delta(self) -> None:
        """Until the next delta is published."""
        await self._metadata_published.wait()

    def publish_whole(self, image: MetadataImage) -> None:
        """Everything ``image`` says, as one delta from an empty image: the first image,
        and a snapshot that replaced a broker-only node's log. Logs it does not place
        here are strays (their partitions were deleted or moved while this node was
        away) and are deleted. If it cannot even be replayed, a broker-only node tries
        again with the next update."""
        with self.faults.guard(
            f"Error publishing the whole metadata image at offset {image.offset}"
        ):
            delta = MetadataDelta(MetadataImage())
            for record in image.records():
                delta.replay(record)
            delta.offset = image.offset
            self.on_metadata_update(delta, delta.apply())
            self._published = True
            stray = self.replica_manager.remove_stray_logs()
            if stray:
                _logger.info(
                    "deleted %d stray log(s): %s",
                    len(stray),
                    ", ".join(map(str, stray)),
                )

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """A committed delta: update the cache, then make the local replicas match.

        Each step runs under :attr:`faults`, as Kafka's BrokerMetadataPublisher runs
        each of its own: one that raises is logged and counted, and the others, and the
        next delta, are applied all the same."""
        where = f"at offset {image.offset}"
        faults = self.faults
        old_configs = delta.image.configs
        self.image = image
        with faults.guard(f"Error publishing broker metadata {where} (the cache)"):
            self.metadata_cache.update(image)
        self._metadata_published.set()
        self._metadata_published = trio.Event()
        with faults.guard(f"Error publishing broker metadata {where} (the replicas)"):
            changes = delta.local_changes(self.config.node_id)
            if not changes.empty:
                apply_replica_changes(
                    self.replica_manager,
                    self.fetchers,
                    self.coordinators,
                    leaders=partition_states(changes.leaders),
                    followers=partition_states(changes.followers),
                    leader_nodes=self._leaders_of(changes.followers, image),
                    deleted=changes.deleted | changes.stopped,
                    faults=faults,
                    where=f"publishing broker metadata {where}",
                )
        self._reapply_topic_settings(old_configs, image, where)

    def _reapply_topic_settings(
        self,
        old_configs: Mapping[tuple[int, str], Mapping[str, str]],
        image: MetadataImage,
        where: str,
    ) -> None:
        """A topic's new overrides reach its partitions; new broker defaults (the
        cluster-wide ones, or this broker's own: KIP-226) reach every topic's."""
        defaults = [
            (ConfigResourceType.BROKER, n) for n in ("", str(self.config.node_id))
        ]
        if any(old_configs.get(key) != image.configs.get(key) for key in defaults):
            changed = {t.name for t in image.topics.values()}
        else:
            changed = {
                name
                for (kind, name), entries in image.configs.items()
                if kind == ConfigResourceType.TOPIC
                and old_configs.get((kind, name)) != entries
            }
        for name in sorted(changed):
            with self.faults.guard(
                f"Error publishing broker metadata {where} (configs of {name})"
            ):
                self.replica_manager.update_topic_settings(name)

    def _leaders_of(
        self, followers: Mapping[TopicPartition, LocalPartition], image: MetadataImage
    ) -> dict[TopicPartition, Node]:
        """Where each followed partition's leader is, on the inter-broker listener."""
        listener = self.config.roles.inter_broker_listener_name or "PLAINTEXT"
        nodes: dict[TopicPartition, Node] = {}
        for tp, local in followers.items():
            leader = image.brokers.get(local.partition.leader)
            if leader is None:
                continue  # no leader (-1) until the controller elects one
            endpoint = next((e for e in leader.endpoints if e.name == listener), None)
            if endpoint is None:
                _logger.warning(
                    "broker %d has no %s listener", leader.broker_id, listener
                )
                continue
            nodes[tp] = Node(leader.broker_id, endpoint.host, endpoint.port)
        return nodes

    def on_observer_update(self, update: ObserverUpdate) -> None:
        """A broker-only node's fetched metadata: replay it; publish once caught up."""
        replayed = self._replay(update)
        if replayed is not None:
            delta, image = replayed
            if not self._published:
                self.image = image
            elif update.reset_to_snapshot is not None:
                self.publish_whole(image)
            else:
                self.on_metadata_update(delta, image)
        observer = self.observer
        assert observer is not None
        caught_up = 0 <= observer.high_watermark <= observer.applied_offset + 1
        if not self._published and caught_up:
            self.publish_whole(self.image)

    def _replay(
        self, update: ObserverUpdate
    ) -> tuple[MetadataDelta, MetadataImage] | None:
        """The delta and the new image after ``update`` (None if it changed nothing),
        replayed record by record as Kafka's MetadataLoader does: a record that cannot
        be replayed is logged ("Error loading metadata log record from offset N"),
        counted and skipped, and the others are applied. A snapshot rebuilds the image
        from nothing before the committed records go on top."""
        faults = self.faults
        if update.reset_to_snapshot is not None:
            delta = MetadataDelta(MetadataImage())
            where = f"the snapshot ending at offset {update.snapshot_offset}"
            for record in update.reset_to_snapshot:
                with faults.guard(f"Error loading a record of {where}"):
                    delta.replay(record)
            delta.offset = update.snapshot_offset
        elif update.committed:
            delta = MetadataDelta(self.image)
        else:
            return None
        for offset, record in update.committed:
            with faults.guard(
                f"Error loading metadata log record from offset {offset}"
            ):
                delta.replay(record, offset)
        with faults.guard(f"Error loading the metadata image at offset {delta.offset}"):
            return delta, delta.apply()
        return None


def image_of(snapshot: Sequence[MetadataRecord], last_offset: int) -> MetadataImage:
    """The image a snapshot's records make (empty without a snapshot)."""
    delta = MetadataDelta(MetadataImage())
    for record in snapshot:
        delta.replay(record)
    delta.offset = last_offset
    return delta.apply()


def partition_states(
    partitions: Mapping[TopicPartition, LocalPartition],
) -> dict[TopicPartition, tuple[uuid.UUID, PartitionState]]:
    """The controller's registrations as the replication layer's partition states."""
    return {
        tp: (
            local.topic_id,
            PartitionState(
                local.partition.leader,
                local.partition.leader_epoch,
                local.partition.partition_epoch,
                tuple(local.partition.replicas),
                tuple(local.partition.isr),
            ),
        )
        for tp, local in partitions.items()
    }
