"""ProducerIdControlManager: producer ids handed out in blocks (KIP-730).

An idempotent or transactional producer gets its producer id from a broker
(InitProducerId), and two producers must never share one, whichever broker they ask and
however often the brokers restart. So the broker does not invent ids: it asks the
controller for a block of them (AllocateProducerIds) and hands those out, one per
InitProducerId, until the block runs out. The controller writes each block it gives away
as a ProducerIdsRecord whose ``next_producer_id`` is where the following block starts. The
metadata log remembers it, a restarted or newly elected controller replays it, and the
next block begins after every id ever given.

The next id is a TimelineLong, like the other managers' state: a block written but not yet
committed is forgotten when the controller resigns, and the new leader hands out that
range again (no broker saw the answer, which waits for the commit).
"""

from __future__ import annotations

from typing import Final, Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineLong

from ._cluster_control import ClusterControlManager
from ._image import MetadataReplayError
from ._records import MetadataRecord, ProducerIdsRecord
from ._requests import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)

# Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE: how many ids one request gets.
PRODUCER_ID_BLOCK_SIZE: Final = 1000
_MAX_PRODUCER_ID: Final = 2**63 - 1  # producer ids are int64 on the wire


@attrs.define(eq=False)
class ProducerIdControlManager:
    registry: SnapshotRegistry
    cluster: ClusterControlManager
    _next_producer_id: TimelineLong = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        # a new cluster starts at 0
        self._next_producer_id = TimelineLong(self.registry)

    def next_producer_id(self, epoch: int = LATEST_EPOCH) -> int:
        """The first id of the next block to hand out."""
        return self._next_producer_id.get(epoch)

    # --- replay ------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        if not isinstance(record, ProducerIdsRecord):
            return
        current = self._next_producer_id.get()
        # Blocks only move forward: going back would give out ids a producer already has.
        if record.next_producer_id <= current:
            raise MetadataReplayError(
                f"{record} does not move next_producer_id past {current}"
            )
        self._next_producer_id.set(record.next_producer_id)

    # --- requests ----------------------------------------------------------------------

    def allocate(
        self, request: AllocateProducerIdsRequest
    ) -> CoreResult[MetadataRecord, AllocateProducerIdsResponse, Never]:
        # Only a registered broker of the current epoch gets ids: a zombie incarnation
        # must not take a block. Kafka's checkBrokerEpoch answers STALE_BROKER_EPOCH for an
        # unknown broker too; we answer BROKER_ID_NOT_REGISTERED, as this controller's
        # heartbeats and AlterPartition do.
        error = self.cluster.check_epoch(request.broker_id, request.broker_epoch)
        if error != ErrorCode.none:
            return CoreResult(replies=(AllocateProducerIdsResponse(error),))
        start = self._next_producer_id.get()
        if start > _MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
            # The next block would end past the largest int64: every id has been given.
            return CoreResult(
                replies=(AllocateProducerIdsResponse(ErrorCode.unknown_server_error),)
            )
        record = ProducerIdsRecord(
            request.broker_id, request.broker_epoch, start + PRODUCER_ID_BLOCK_SIZE
        )
        response = AllocateProducerIdsResponse(
            ErrorCode.none, start, PRODUCER_ID_BLOCK_SIZE
        )
        return CoreResult((record,), (response,))
