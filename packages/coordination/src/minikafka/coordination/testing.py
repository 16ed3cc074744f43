"""Helpers other packages' tests (and the simulator) reuse: a coordinator that serves
every group at once, and an in-memory ``__consumer_offsets`` that completes its writes."""

from __future__ import annotations

import random
from collections.abc import Iterable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import NullTracer, Tracer

from .group._config import GroupConfig
from .group._coordinator import GroupCoordinator
from .group._group_metadata_manager import LoadedRecord, StoredRecord
from .group._results import CoordinatorWrite, GroupReply, GroupResult
from .group._txn_offsets import TxnMarkerRecord, TxnStoredRecord

__all__ = ["InMemoryOffsetsTopic", "serving_coordinator"]


def serving_coordinator(
    config: GroupConfig | None = None,
    rng: random.Random | None = None,
    now: float = 0.0,
    tracer: Tracer | None = None,
) -> GroupCoordinator:
    """A coordinator that leads every ``__consumer_offsets`` partition, all empty; its
    events go to ``tracer`` (none by default)."""
    coordinator = GroupCoordinator(
        config or GroupConfig(), rng or random.Random(0), tracer=tracer or NullTracer()
    )
    for partition in range(coordinator.config.offsets_topic_num_partitions):
        coordinator.begin_loading(partition)
        coordinator.load_partition(partition, [], now)
    return coordinator


@attrs.define
class InMemoryOffsetsTopic:
    """The partitions of ``__consumer_offsets`` as lists: every write is appended and
    committed at once (or fails with ``fail_with``), so a test can replay what was written."""

    partitions: dict[int, list[LoadedRecord]] = attrs.field(factory=dict)
    fail_with: ErrorCode = ErrorCode.none

    pending: list[CoordinatorWrite] = attrs.field(factory=list)
    """Writes appended and not yet reported to the coordinator (:meth:`flush` does)."""

    def plain(self, partition: int) -> list[StoredRecord]:
        """The partition's records written outside transactions, in order."""
        return [r for r in self.partitions.get(partition, []) if isinstance(r, tuple)]

    def take(self, result: GroupResult) -> list[GroupReply]:
        """Append ``result``'s writes (reported at the next :meth:`flush`); its replies."""
        self.pending.extend(result.records)
        return list(result.replies)

    def flush(self, coordinator: GroupCoordinator, now: float) -> list[GroupReply]:
        """Report every pending write (and those their completions make): the replies."""
        replies: list[GroupReply] = []
        while self.pending:
            writes, self.pending = self.pending, []
            for write in writes:
                if self.fail_with is ErrorCode.none:
                    log = self.partitions.setdefault(write.partition, [])
                    if write.producer is None:
                        log.extend(write.records)
                    else:  # a transactional batch of the producer
                        producer_id = write.producer[0]
                        log.extend(
                            TxnStoredRecord(producer_id, key, value)
                            for key, value in write.records
                        )
                completed = coordinator.complete_write(
                    write.write_id, self.fail_with, now
                )
                replies += self.take(completed)
        return replies

    def write_marker(
        self,
        coordinator: GroupCoordinator,
        producer_id: int,
        partitions: Iterable[int],
        commit: bool,
        now: float,
    ) -> None:
        """Append the producer's transaction marker to ``partitions`` and tell the
        coordinator, as the broker's WriteTxnMarkers does once the marker is committed."""
        wanted = list(partitions)
        for partition in wanted:
            marker = TxnMarkerRecord(producer_id, commit)
            self.partitions.setdefault(partition, []).append(marker)
        result = coordinator.complete_transaction(producer_id, wanted, commit, now)
        assert result.records == ()  # the marker is the record: nothing to write
        assert result.replies == ()

    def carry_out(
        self, coordinator: GroupCoordinator, result: GroupResult, now: float
    ) -> list[GroupReply]:
        """Carry ``result`` out whole: its replies, then those its writes complete."""
        return [*self.take(result), *self.flush(coordinator, now)]
