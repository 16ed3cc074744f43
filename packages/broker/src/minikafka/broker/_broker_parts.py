"""What every broker is made of, whichever controller it obeys (KRaft or ZooKeeper mode).

The ReplicaManager (its topic settings from the MetadataCache, its ISR proposals sent to
the controller as AlterPartition), the replica fetchers, the group coordinator over
``__consumer_offsets`` and the producer id blocks taken from the controller: built here
once, so that :class:`~._server.BrokerServer` and :class:`~.zk.ZkBrokerServer`
differ only in how they learn the metadata and reach their controller.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    ControllerError,
)
from minikafka.coordination import (
    TRANSACTION_STATE_TOPIC,
    GroupCoordinator,
    GroupCoordinatorShell,
    TransactionCoordinator,
    TransactionCoordinatorShell,
    TransactionStateManager,
    partition_for,
)
from minikafka.log import LogConfig, LogManager
from minikafka.replication import (
    IsrChangeAnswer,
    IsrChangeProposal,
    ReplicaManager,
    ReplicaManagerShell,
    TopicSettings,
)
from minikafka.trace import Tracer

from ._config import KafkaConfig
from ._controller_channel import ControllerChannel
from ._coordinators import Coordinators
from ._dynamic_config import topic_defaults
from ._metadata_cache import MetadataCache
from ._offsets_topic import ReplicaInternalTopic
from ._producer_ids import ProducerIdManager
from ._replica_fetchers import ReplicaFetchConfig, ReplicaFetcherManager
from ._transactions import TXN_APPEND_TIMEOUT_MS
from ._txn_markers import TxnMarkerChannelManager
from ._txn_verify import AddPartitionsToTxnManager


@attrs.frozen
class BrokerParts:
    replica_manager: ReplicaManagerShell
    fetchers: ReplicaFetcherManager
    coordinators: Coordinators
    producer_ids: ProducerIdManager

    @property
    def groups(self) -> GroupCoordinatorShell:
        return self.coordinators.groups


def broker_parts(
    config: KafkaConfig,
    log_manager: LogManager,
    cache: MetadataCache,
    channel: ControllerChannel,
    broker_epoch: Callable[[], int],
    tracer: Tracer,
    rng: random.Random | None = None,
) -> BrokerParts:
    """``broker_epoch`` says this broker's epoch when a request to the controller needs
    it (it is known only once the broker has registered)."""
    node_id, settings = config.node_id, config.broker

    defaults: dict[object, tuple[LogConfig, int]] = {}

    def topic_settings(topic: str) -> TopicSettings:
        # The broker's defaults as its dynamic configs make them (KIP-226), computed
        # once per change of either layer rather than once per partition.
        layers = (cache.broker_configs(""), cache.broker_configs(str(node_id)))
        key = tuple(tuple(sorted(layer.items())) for layer in layers)
        if key not in defaults:
            defaults.clear()
            defaults[key] = topic_defaults(
                config.properties, config.log, settings.min_insync_replicas, *layers
            )
        log, min_isr = defaults[key]
        return TopicSettings(
            cache.log_config(topic, log), cache.min_insync_replicas(topic, min_isr)
        )

    async def alter_partition(
        proposals: list[IsrChangeProposal],
    ) -> list[IsrChangeAnswer]:
        return await send_isr_proposals(channel, node_id, broker_epoch(), proposals)

    async def allocate_block() -> AllocateProducerIdsResponse:
        request = AllocateProducerIdsRequest(node_id, broker_epoch())
        try:
            response = await channel.submit(request)
        except ControllerError as exc:
            return AllocateProducerIdsResponse(exc.error_code)
        assert isinstance(response, AllocateProducerIdsResponse)
        return response

    txn = config.transaction
    inter_broker = config.roles.inter_broker_listener_name or "PLAINTEXT"
    verifier = AddPartitionsToTxnManager(
        node_id,
        cache,
        inter_broker,
        security=config.channels.inter_broker,
        partition_for=functools.partial(
            partition_for, num_partitions=txn.transaction_state_log_num_partitions
        ),
        enabled=txn.transaction_partition_verification_enable,
    )
    replica_manager = ReplicaManagerShell(
        ReplicaManager(node_id, log_manager, topic_settings, tracer=tracer),
        settings.replica_high_watermark_checkpoint_interval_ms,
        replica_lag_time_max_ms=settings.replica_lag_time_max_ms,
        alter_partition=alter_partition,
        txn_verifier=verifier,
    )
    fetchers = ReplicaFetcherManager(
        node_id,
        replica_manager,
        ReplicaFetchConfig(
            settings.num_replica_fetchers,
            settings.replica_fetch_max_bytes,
            settings.replica_fetch_response_max_bytes,
            settings.replica_fetch_wait_max_ms,
            settings.replica_fetch_min_bytes,
            settings.replica_fetch_backoff_ms,
        ),
        security=config.channels.inter_broker,
    )
    groups = GroupCoordinatorShell(
        GroupCoordinator(config.group, rng or random.Random(), tracer=tracer),
        ReplicaInternalTopic(
            replica_manager, settings.offsets_commit_timeout_ms, verifier=verifier
        ),
    )
    producer_ids = ProducerIdManager(allocate_block)
    markers = TxnMarkerChannelManager(
        node_id, cache, inter_broker, security=config.channels.inter_broker
    )
    transactions = TransactionCoordinatorShell(
        TransactionCoordinator(
            TransactionStateManager(txn.transaction_state_log_num_partitions),
            producer_ids.take,
            txn,
            tracer=tracer,
        ),
        ReplicaInternalTopic(
            replica_manager, TXN_APPEND_TIMEOUT_MS, TRANSACTION_STATE_TOPIC
        ),
        markers,
    )
    return BrokerParts(
        replica_manager,
        fetchers,
        Coordinators(groups, transactions, markers, verifier),
        producer_ids,
    )


async def send_isr_proposals(
    controller: ControllerChannel,
    broker_id: int,
    broker_epoch: int,
    proposals: list[IsrChangeProposal],
) -> list[IsrChangeAnswer]:
    """The leader's ISR proposals as one AlterPartition to the controller (KIP-497)."""
    items = tuple(
        AlterPartitionItem(
            p.topic_id,
            p.topic_partition.partition,
            p.leader_epoch,
            p.new_isr,
            p.partition_epoch,
        )
        for p in proposals
    )
    try:
        response = await controller.submit(
            AlterPartitionRequest(broker_id, broker_epoch, items)
        )
    except ControllerError as exc:
        return [IsrChangeAnswer(p.topic_partition, exc.error_code) for p in proposals]
    assert isinstance(response, AlterPartitionResponse)
    by_partition = {(r.topic_id, r.partition): r for r in response.partitions}
    answers = []
    for p in proposals:
        result = by_partition.get((p.topic_id, p.topic_partition.partition))
        if response.error_code is not ErrorCode.none or result is None:
            error = response.error_code if result is None else result.error_code
            answers.append(IsrChangeAnswer(p.topic_partition, error))
            continue
        answers.append(
            IsrChangeAnswer(
                p.topic_partition,
                result.error_code,
                result.isr,
                result.leader_epoch,
                result.partition_epoch,
            )
        )
    return answers
