"""Wrong on purpose: the leader's high watermark, each function wrong in one way.

Each is minikafka's rule (``Partition.maybe_increment_leader_hw``) with one knob of
:func:`leader_hw` turned; mutants.toml switches one function in at a time.
"""

from __future__ import annotations

from minikafka.replication._events import HighWatermarkAdvanced
from minikafka.replication._partition import Partition


def leader_hw(
    self: Partition,
    now: float,
    *,
    members: frozenset[int] | None = None,
    skip_unfetched: bool = False,
    followers: bool = True,
    backwards: bool = False,
    trace: bool = True,
    moved_always: bool = False,
) -> bool:
    """minikafka's rule, unless a knob says otherwise."""
    if not self.is_leader:
        return False
    new_hw = self.log.log_end_offset
    for broker_id in self.maximal_isr if members is None else members:
        if broker_id == self.local_broker_id or not followers:
            continue
        replica = self.remote_replicas.get(broker_id)
        leo = replica.log_end_offset if replica else -1
        if leo < 0 and skip_unfetched:
            continue
        new_hw = min(new_hw, leo)
    if new_hw < 0:
        return False
    previous = self.log.high_watermark
    if backwards:
        moved = self.log.update_high_watermark(new_hw) != previous
    else:
        moved = self.log.maybe_increment_high_watermark(new_hw)
    if moved and trace and self.tracer.enabled:
        tp = self.topic_partition
        self.tracer.emit(
            HighWatermarkAdvanced(
                tp.topic,
                tp.partition,
                previous,
                self.log.high_watermark,
                self.leader_epoch,
            ),
            now,
        )
    return moved or moved_always


def leader_only(self: Partition, now: float) -> bool:
    """The leader's log end alone: acks=all is answered before a follower has it."""
    return leader_hw(self, now, followers=False)


def every_replica(self: Partition, now: float) -> bool:
    """Every replica, in the ISR or not: one out of the ISR holds the HW back."""
    return leader_hw(
        self, now, members=frozenset(self.remote_replicas) | {self.local_broker_id}
    )


def committed_isr_only(self: Partition, now: float) -> bool:
    """The committed ISR only: a replica whose joining is in flight does not count."""
    return leader_hw(self, now, members=self.isr)


def skips_unfetched(self: Partition, now: float) -> bool:
    """A follower that has not fetched in this epoch does not hold the HW."""
    return leader_hw(self, now, skip_unfetched=True)


def goes_back(self: Partition, now: float) -> bool:
    """The HW is set, not raised: it goes back when a follower fetches again from
    an older offset."""
    return leader_hw(self, now, backwards=True)


def no_trace(self: Partition, now: float) -> bool:
    """The HW moves but no HighWatermarkAdvanced is traced."""
    return leader_hw(self, now, trace=False)


def says_moved_always(self: Partition, now: float) -> bool:
    """Says the HW moved when it did not."""
    return leader_hw(self, now, moved_always=True)
