"""The broker's two coordinators, which follow the leadership of their internal topics:
the group coordinator (``__consumer_offsets``) and the transaction coordinator
(``__transaction_state``, with the channel that writes its markers).

When this broker becomes the leader of a partition of either topic, that partition's
groups or transactional ids are loaded and served here; when it stops leading it, they
are dropped (their clients get NOT_COORDINATOR and look again). Each coordinator
isolates a failed load itself: that partition's ids answer NOT_COORDINATOR.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import attrs
import trio

from minikafka.common import TopicPartition
from minikafka.coordination import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    GroupCoordinatorShell,
    TransactionCoordinatorShell,
)

from ._txn_markers import TxnMarkerChannelManager
from ._txn_verify import AddPartitionsToTxnManager

__all__ = ["Coordinators"]

_logger = logging.getLogger("minikafka.broker")


@attrs.frozen
class Coordinators:
    groups: GroupCoordinatorShell
    transactions: TransactionCoordinatorShell
    markers: TxnMarkerChannelManager
    verifier: AddPartitionsToTxnManager | None = None
    """The partition leaders' questions to transaction coordinators (KIP-890), run
    beside the marker channel: both are this broker's inter-broker transaction
    traffic."""

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The coordinators' timers and the marker channel, until cancelled."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.groups.run)
            await nursery.start(self.transactions.run)
            await nursery.start(self.markers.run)
            if self.verifier is not None:
                await nursery.start(self.verifier.run)
            task_status.started()

    def shutdown(self) -> None:
        """The broker is stopping: requests parked in a coordinator are answered
        NOT_COORDINATOR now, so their clients look for the next coordinator."""
        self.groups.shutdown()
        self.transactions.shutdown()

    def follow_leadership(
        self, leading: Mapping[TopicPartition, int], resigned: Iterable[TopicPartition]
    ) -> None:
        """``leading``: the partitions this broker now leads, with their leader
        epochs (a transaction coordinator's epoch); ``resigned``: those it no longer
        leads."""
        for tp in resigned:
            if tp.topic == OFFSETS_TOPIC:
                self.groups.resign(tp.partition)
            elif tp.topic == TRANSACTION_STATE_TOPIC:
                self.transactions.resign(tp.partition)
        for tp, leader_epoch in leading.items():
            if tp.topic == OFFSETS_TOPIC:
                loaded = self.groups.become_leader(tp.partition)
                if loaded:
                    _logger.info("loaded %d group(s) from %s", loaded, tp)
            elif tp.topic == TRANSACTION_STATE_TOPIC:
                self.transactions.become_leader(tp.partition, leader_epoch)
