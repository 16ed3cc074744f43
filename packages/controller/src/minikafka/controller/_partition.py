"""A partition's registration and the changes the controller makes to it.

``PartitionRegistration`` is one partition as the metadata log describes it: replicas,
ISR, leader, leader epoch and partition epoch, plus the adding and removing replicas of a
reassignment in flight (KIP-236, seed 000's "interruptible partition reassignment").

``PartitionChangeBuilder`` turns what a manager wants (a new ISR, a fenced leader, a
reassignment target) into one ``PartitionChangeRecord``, or none when nothing changes.
It holds the two rules every change passes through, in Kafka's order:

1. *Complete a reassignment* when every target replica is in the ISR (the end of
   phase A): the replica set becomes the target set, the ISR loses the removing
   replicas, and phase B (moving leadership, dropping RR) happens in the same record.
2. *Elect a leader* when the current one may no longer lead: the first replica, in
   replica order, that is in the ISR and acceptable (registered and unfenced). Only if
   there is none and ``unclean.leader.election.enable`` is true may an out-of-sync
   replica lead, and then the ISR is just that replica: the records it never received
   are lost, which is why unclean election is off by default.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import attrs

from ._records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    PartitionChangeRecord,
    PartitionRecord,
)


def _given(target: tuple[int, ...] | None, current: tuple[int, ...]) -> tuple[int, ...]:
    """A builder's target, or the partition's current value when none was set."""
    return current if target is None else target


def _without(replicas: Sequence[int], removed: Sequence[int]) -> tuple[int, ...]:
    return tuple(r for r in replicas if r not in removed)


@attrs.frozen
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        return cls(
            replicas=record.replicas,
            isr=record.isr,
            removing_replicas=record.removing_replicas,
            adding_replicas=record.adding_replicas,
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
        )

    def to_record(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRecord:
        return PartitionRecord(
            partition_id=partition_id,
            topic_id=topic_id,
            replicas=self.replicas,
            isr=self.isr,
            removing_replicas=self.removing_replicas,
            adding_replicas=self.adding_replicas,
            leader=self.leader,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
        )

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        """The registration after ``change``: every change bumps the partition epoch.

        The leader epoch fences the old leader's followers and producers, so it moves
        when the leader changes and when replicas leave the replica set (a removed
        replica must not keep fetching under the old epoch).
        """
        replicas = self.replicas if change.replicas is None else change.replicas
        leader = self.leader if change.leader == NO_LEADER_CHANGE else change.leader
        removed_replicas = any(r not in replicas for r in self.replicas)
        bump = leader != self.leader or removed_replicas
        return PartitionRegistration(
            replicas=replicas,
            isr=self.isr if change.isr is None else change.isr,
            removing_replicas=(
                self.removing_replicas
                if change.removing_replicas is None
                else change.removing_replicas
            ),
            adding_replicas=(
                self.adding_replicas
                if change.adding_replicas is None
                else change.adding_replicas
            ),
            leader=leader,
            leader_epoch=self.leader_epoch + 1 if bump else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
        )

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """ORS: the replicas before the reassignment began (RS minus AR)."""
        return _without(self.replicas, self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """TRS: the replicas after it ends (RS minus RR)."""
        return _without(self.replicas, self.removing_replicas)


@attrs.define(eq=False)
class PartitionChangeBuilder:
    """Build the one record that moves ``partition`` to what a manager asked for."""

    partition: PartitionRegistration
    topic_id: uuid.UUID
    partition_id: int
    is_acceptable_leader: Callable[[int], bool]
    unclean_election: bool = False
    target_isr: tuple[int, ...] | None = None
    target_replicas: tuple[int, ...] | None = None
    target_adding: tuple[int, ...] | None = None
    target_removing: tuple[int, ...] | None = None
    elect_preferred: bool = False
    """Move leadership to the first replica (the preferred leader) if it may lead:
    ElectLeaders with the PREFERRED election type (Kafka's ``Election.PREFERRED``)."""

    def build(self) -> PartitionChangeRecord | None:
        part = self.partition
        replicas = _given(self.target_replicas, part.replicas)
        isr = _given(self.target_isr, part.isr)
        adding = _given(self.target_adding, part.adding_replicas)
        removing = _given(self.target_removing, part.removing_replicas)
        # Rule 1: phase A is over once every target replica is in sync (Kafka's
        # PartitionReassignmentReplicas.maybeCompleteReassignment), not just the added
        # ones: completing earlier would drop in-sync removing replicas for out-of-sync
        # targets.
        if adding or removing:
            target = _without(replicas, removing)
            if target and all(r in isr for r in target):
                replicas, isr = target, _without(isr, removing)
                adding = removing = ()
        # Rule 2: the leader must be in the replica set, in the ISR, and acceptable.
        leader = part.leader
        placed = leader in replicas and leader in isr
        if not placed or not self.is_acceptable_leader(leader):
            leader, isr = self._elect(replicas, isr)
        # Rule 3: a preferred election moves a healthy leadership to the first replica,
        # only if that replica is in sync and may lead (never an unclean move).
        preferred = replicas[0] if replicas else NO_LEADER
        if (
            self.elect_preferred
            and leader != preferred
            and preferred in isr
            and self.is_acceptable_leader(preferred)
        ):
            leader = preferred
        return self._record(replicas, isr, adding, removing, leader)

    def _elect(
        self, replicas: Sequence[int], isr: tuple[int, ...]
    ) -> tuple[int, tuple[int, ...]]:
        for replica in replicas:
            if replica in isr and self.is_acceptable_leader(replica):
                return replica, isr
        if self.unclean_election:
            for replica in replicas:
                if self.is_acceptable_leader(replica):
                    return replica, (replica,)
        return NO_LEADER, isr

    def _record(
        self,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        adding: tuple[int, ...],
        removing: tuple[int, ...],
        leader: int,
    ) -> PartitionChangeRecord | None:
        old = self.partition
        change = PartitionChangeRecord(
            partition_id=self.partition_id,
            topic_id=self.topic_id,
            isr=None if isr == old.isr else isr,
            leader=NO_LEADER_CHANGE if leader == old.leader else leader,
            replicas=None if replicas == old.replicas else replicas,
            removing_replicas=None if removing == old.removing_replicas else removing,
            adding_replicas=None if adding == old.adding_replicas else adding,
        )
        unchanged = PartitionChangeRecord(
            partition_id=self.partition_id, topic_id=self.topic_id
        )
        return None if change == unchanged else change
