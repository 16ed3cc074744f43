"""Helpers other packages' tests (and the simulator) reuse: a coordinator that serves
every group at once, and an in-memory ``__consumer_offsets`` that completes its writes."""

from __future__ import annotations

import random

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import NullTracer, Tracer

from .group._config import GroupConfig
from .group._coordinator import GroupCoordinator
from .group._group_metadata_manager import StoredRecord
from .group._results import CoordinatorWrite, GroupReply, GroupResult

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

    partitions: dict[int, list[StoredRecord]] = attrs.field(factory=dict)
    fail_with: ErrorCode = ErrorCode.none

    pending: list[CoordinatorWrite] = attrs.field(factory=list)
    """Writes appended and not yet reported to the coordinator (:meth:`flush` does)."""

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
                    self.partitions.setdefault(write.partition, []).extend(
                        write.records
                    )
                completed = coordinator.complete_write(
                    write.write_id, self.fail_with, now
                )
                replies += self.take(completed)
        return replies

    def carry_out(
        self, coordinator: GroupCoordinator, result: GroupResult, now: float
    ) -> list[GroupReply]:
        """Carry ``result`` out whole: its replies, then those its writes complete."""
        return [*self.take(result), *self.flush(coordinator, now)]
