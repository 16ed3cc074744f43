"""Partition reassignment in ZooKeeper mode (KIP-236 and KIP-455; Kafka 2.8's
``KafkaController.onPartitionReassignment``).

The same three phases as the KRaft controller's (:mod:`._reassignment`), kept in the
topic's assignment znode instead of a partition record: the replica set becomes
RS = TRS + (ORS - TRS), with the replicas being added (AR = TRS - ORS) and removed
(RR = ORS - TRS) written beside it (``adding_replicas``, ``removing_replicas``).

- **phase A** (AlterPartitionReassignments): the assignment is written, every replica
  of RS hears LeaderAndIsr with a new leader epoch (the new ones start fetching), and
  the new replicas become NewReplica;
- then the controller waits until every target replica is in the ISR, which the
  leader's AlterPartition reports as they catch up;
- **phase B**: the new replicas become OnlineReplica, leadership moves if the leader is
  not a target replica (Kafka's ReassignPartitionLeaderElection), the removed replicas
  are stopped, taken out of the ISR and deleted (OfflineReplica, ReplicaDeletionStarted,
  ReplicaDeletionSuccessful, NonExistentReplica), and the assignment becomes TRS alone.

A reassignment in phase A can be cancelled (no target replicas given): the target
becomes ORS again, which was in sync all along, and the replicas it had added are
stopped and deleted. A move that would change the number of replicas is refused when
the request forbids it (KIP-860, as in KRaft mode).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.zk import SetData, topic_path

from .._reassignment import rf_change_refused
from .._requests import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponse,
    OngoingReassignment,
    ReassignablePartition,
    ReassignmentResult,
)
from .._states import PartitionState, ReplicaState, TopicPartition
from ._machines import ZkControllerResult, ZkStateMachines

_P = PartitionState
_R = ReplicaState


@attrs.define(eq=False)
class Reassignments(ZkStateMachines):
    def on_alter_partition_reassignments(
        self, request: AlterPartitionReassignmentsRequest, now: float
    ) -> ZkControllerResult:
        self._begin("AlterPartitionReassignments", now)
        results = []
        for item in request.partitions:
            error = self._reassign(item, request.allow_replication_factor_change)
            results.append(ReassignmentResult(item.topic, item.partition, *error))
        return self._end(AlterPartitionReassignmentsResponse(tuple(results)))

    def list_reassignments(self) -> ListPartitionReassignmentsResponse:
        ongoing = []
        for name, assignment in sorted(self.context.topics.items()):
            for p in sorted(set(assignment.adding) | set(assignment.removing)):
                ongoing.append(
                    OngoingReassignment(
                        name,
                        p,
                        assignment.partitions[p],
                        assignment.adding.get(p, ()),
                        assignment.removing.get(p, ()),
                    )
                )
        return ListPartitionReassignmentsResponse(tuple(ongoing))

    def _reassign(
        self, item: ReassignablePartition, allow_rf_change: bool
    ) -> tuple[ErrorCode, str | None]:
        context = self.context
        tp = (item.topic, item.partition)
        assignment = context.topics.get(item.topic)
        if (
            assignment is None
            or item.partition not in assignment.partitions
            or tp not in context.leadership
            or item.topic in context.deleting
        ):
            return ErrorCode.unknown_topic_or_partition, "no such partition"
        rs = assignment.partitions[item.partition]
        adding = assignment.adding.get(item.partition, ())
        ors = tuple(r for r in rs if r not in adding)
        if item.replicas is None:
            if not adding and not assignment.removing.get(item.partition):
                return ErrorCode.no_reassignment_in_progress, "nothing to cancel"
            trs: Sequence[int] = ors
        else:
            trs = item.replicas
            invalid = _invalid_target(trs, ors, context.brokers)
            if invalid is not None:
                return ErrorCode.invalid_replica_assignment, invalid
            if not allow_rf_change:
                removing = assignment.removing.get(item.partition, ())
                heading = [
                    r for r in rs if r not in removing
                ]  # TRS, or RS if not moving
                refused = rf_change_refused(len(heading), len(trs))
                if refused is not None:
                    return refused.error_code, refused.message
        isr = context.leadership[tp].state.isr
        new_rs = tuple(trs) + tuple(r for r in ors if r not in trs)
        if not set(isr) & set(new_rs):
            return (
                ErrorCode.invalid_replica_assignment,
                "no in-sync replica would remain",
            )
        # Replicas a previous reassignment was adding that the new one does not keep.
        unneeded = [r for r in rs if r not in new_rs]
        self._set_assignment(
            tp,
            new_rs,
            tuple(r for r in trs if r not in ors),
            tuple(r for r in ors if r not in trs),
        )
        self._delete_replicas(tp, unneeded)
        if set(trs) <= set(isr):
            self._complete_reassignment(tp)
        else:
            # Phase A: a new leader epoch tells every replica of RS, the new ones included.
            current = context.leadership[tp]
            self._write(
                tp,
                attrs.evolve(
                    current.state, leader_epoch=current.state.leader_epoch + 1
                ),
            )
            live = [r for r in new_rs if context.is_live(r)]
            self._batch.add_leader_and_isr(context, live, tp)
            new = [
                (tp[0], tp[1], r)
                for r in new_rs
                if self.rsm.state((tp[0], tp[1], r)) is _R.NON_EXISTENT_REPLICA
            ]
            self._replicas_to(new, _R.NEW_REPLICA)
        return ErrorCode.none, None

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        """After an ISR change: phase B once every target replica is in sync."""
        assignment = self.context.topics.get(tp[0])
        if assignment is None or tp[1] not in set(assignment.adding) | set(
            assignment.removing
        ):
            return
        removing = assignment.removing.get(tp[1], ())
        trs = [r for r in assignment.partitions[tp[1]] if r not in removing]
        if set(trs) <= set(self.context.leadership[tp].state.isr):
            self._complete_reassignment(tp)

    def _complete_reassignment(self, tp: TopicPartition) -> None:
        context = self.context
        assignment = context.topics[tp[0]]
        adding = assignment.adding.get(tp[1], ())
        removing = assignment.removing.get(tp[1], ())
        trs = tuple(r for r in assignment.partitions[tp[1]] if r not in removing)
        self._replicas_to(
            [
                (tp[0], tp[1], r)
                for r in adding
                if self.rsm.state((tp[0], tp[1], r)) is _R.NEW_REPLICA
            ],
            _R.ONLINE_REPLICA,
        )
        self._set_assignment(tp, trs, (), ())
        current = context.leadership[tp].state
        if current.leader not in trs or not context.is_live(current.leader):
            self._partitions_to([tp], _P.ONLINE, election="reassignment")
        else:
            self._write(
                tp, attrs.evolve(current, leader_epoch=current.leader_epoch + 1)
            )
            self._batch.add_leader_and_isr(
                context, [r for r in trs if context.is_live(r)], tp
            )
        self._delete_replicas(tp, removing)
        self._batch.add_update_metadata(context.live_or_shutting_down(), [tp])

    def _delete_replicas(self, tp: TopicPartition, brokers: Sequence[int]) -> None:
        """Stop replicas no longer assigned and have their logs deleted (Kafka does not
        wait for the answers here, as it does for a deleted topic)."""
        replicas = [(tp[0], tp[1], b) for b in brokers]
        if not replicas:
            return
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) is not _R.OFFLINE_REPLICA],
            _R.OFFLINE_REPLICA,
        )
        for target in (
            _R.REPLICA_DELETION_STARTED,
            _R.REPLICA_DELETION_SUCCESSFUL,
            _R.NON_EXISTENT_REPLICA,
        ):
            self._replicas_to(replicas, target)

    def _set_assignment(
        self,
        tp: TopicPartition,
        replicas: tuple[int, ...],
        adding: tuple[int, ...],
        removing: tuple[int, ...],
    ) -> None:
        """Write the partition's RS, AR and RR into the topic's znode (and remember them)."""
        assignment = self.context.topics[tp[0]]

        def put(
            current: dict[int, tuple[int, ...]], value: tuple[int, ...]
        ) -> dict[int, tuple[int, ...]]:
            changed = {p: r for p, r in current.items() if p != tp[1]}
            if value:
                changed[tp[1]] = value
            return changed

        updated = attrs.evolve(
            assignment,
            partitions={**assignment.partitions, tp[1]: replicas},
            adding=put(dict(assignment.adding), adding),
            removing=put(dict(assignment.removing), removing),
        )
        self.context.topics[tp[0]] = updated
        self._writes.append(SetData(topic_path(tp[0]), updated.encode()))


def _invalid_target(
    trs: Sequence[int], ors: Sequence[int], live: Collection[int]
) -> str | None:
    """Why a target replica list is refused, None if it is not (Kafka 2.8's
    ``KafkaController.validateReplicas``): empty, a broker twice, a negative id, or a
    replica to be added on a broker not registered. A replica the partition already
    has may be on a broker that is down: it catches up when that broker is back, as
    it would without the move (KRaft's controller asks only that it be registered)."""
    if not trs:
        return "Empty replica list specified in partition reassignment."
    if len(set(trs)) != len(trs):
        return (
            f"Duplicate replica ids in partition reassignment replica list: {list(trs)}"
        )
    if any(b < 0 for b in trs):
        return f"Invalid broker id in replica list: {list(trs)}"
    adding = [b for b in trs if b not in ors]
    if not set(adding) <= set(live):
        return (
            "Replica assignment has brokers that are not alive. Replica list: "
            f"{adding}, live broker list: {sorted(live)}"
        )
    return None
