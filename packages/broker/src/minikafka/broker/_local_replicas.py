"""Making this broker's replicas what the controller decided: one path for both modes.

A KRaft broker learns its leaderships from a metadata delta it replays; a ZooKeeper-mode
broker from a LeaderAndIsr request (and StopReplica). Either way, what follows is Kafka's
``ReplicaManager.becomeLeaderOrFollower`` and ``stopReplicas``, in this order: the fetchers
let go of every partition that changes (a log about to be deleted is nobody's to append
to), deleted replicas go, the rest lead or follow, the followers fetch from their
leaders, and the group coordinator follows the leadership of ``__consumer_offsets``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Set

from minikafka.common import TopicPartition
from minikafka.coordination import OFFSETS_TOPIC, GroupCoordinatorService
from minikafka.net import Node
from minikafka.replication import PartitionState, ReplicaManagerService

from ._replica_fetchers import ReplicaFetcherManager

_logger = logging.getLogger("minikafka.broker")

States = Mapping[TopicPartition, tuple[uuid.UUID, PartitionState]]


def apply_replica_changes(
    replica_manager: ReplicaManagerService,
    fetchers: ReplicaFetcherManager,
    groups: GroupCoordinatorService,
    *,
    leaders: States,
    followers: States,
    leader_nodes: Mapping[TopicPartition, Node],
    deleted: Set[TopicPartition] = frozenset(),
    stopped: Set[TopicPartition] = frozenset(),
) -> None:
    """``deleted``: no longer replicas here, logs deleted; ``stopped``: no longer fetched
    nor led (a ZooKeeper-mode StopReplica without delete), logs kept."""
    fetchers.remove_partitions(
        set(deleted) | set(stopped) | set(leaders) | set(followers)
    )
    if deleted:
        replica_manager.stop_replicas(deleted)
    replica_manager.become_leader_or_follower(leaders, followers)
    fetchers.add_partitions(leader_nodes)
    for tp in set(deleted) | set(stopped) | set(followers):
        if tp.topic == OFFSETS_TOPIC:
            groups.resign(tp.partition)
    for tp in leaders:
        if tp.topic == OFFSETS_TOPIC:
            loaded = groups.become_leader(tp.partition)
            if loaded:
                _logger.info("loaded %d group(s) from %s", loaded, tp)
