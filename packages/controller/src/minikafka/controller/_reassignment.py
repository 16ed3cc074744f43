"""Partition reassignment (KIP-236, seed 000's "interruptible partition reassignment").

A reassignment moves a partition from its original replicas (ORS) to target replicas
(TRS) in three phases, all recorded in the partition itself:

- **phase U** (here, on AlterPartitionReassignments): the replica set becomes
  RS = TRS + (ORS - TRS), with the replicas being added (AR = TRS - ORS) and removed
  (RR = ORS - TRS) written down; the new replicas start fetching;
- **phase A**: wait until every replica of TRS is in the ISR, which AlterPartition from
  the leader reports as they catch up (``_leader_and_isr``);
- **phase B**: TRS becomes the replica set, RR leaves the ISR, leadership moves if the
  leader was in RR, and AR and RR are forgotten. The ``PartitionChangeBuilder`` does it
  in the same record that ends phase A.

Because AR and RR are in the partition, a reassignment can be cancelled during phase A:
the target becomes ORS again (RS minus AR), which was in sync all along. Kafka's
ReplicationControlManager.alterPartitionReassignments and listPartitionReassignments;
KIP-860's ``allow_replication_factor_change`` (v1) can forbid a move that changes the
number of replicas. ``Reassignment`` only decides: it reads ``ReplicationState`` and
returns records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult

from ._partition import PartitionRegistration
from ._placement import PlacementError, validate_manual_assignment
from ._records import MetadataRecord, PartitionChangeRecord
from ._replication_state import Refused, ReplicationState
from ._requests import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponse,
    OngoingReassignment,
    ReassignablePartition,
    ReassignmentResult,
)


def rf_change_refused(current: int, target: int) -> Refused | None:
    """KIP-860: with ``allow_replication_factor_change`` false, a move may not change how
    many replicas the partition is headed for (``current``: its TRS when a move is under
    way, else its replicas)."""
    if current == target:
        return None
    return Refused(
        ErrorCode.invalid_replication_factor,
        f"The replication factor is changed from {current} to {target}",
    )


@attrs.define(eq=False)
class Reassignment:
    state: ReplicationState

    def alter_partition_reassignments(
        self, request: AlterPartitionReassignmentsRequest
    ) -> CoreResult[MetadataRecord, AlterPartitionReassignmentsResponse, Never]:
        records: list[MetadataRecord] = []
        results = []
        for item in request.partitions:
            try:
                change = self._reassign(item, request.allow_replication_factor_change)
            except Refused as refused:
                results.append(
                    ReassignmentResult(
                        item.topic, item.partition, refused.error_code, refused.message
                    )
                )
                continue
            if change is not None:
                records.append(change)
            results.append(
                ReassignmentResult(item.topic, item.partition, ErrorCode.none)
            )
        self.state.trace_elections(records, "reassignment")
        return CoreResult(
            tuple(records), (AlterPartitionReassignmentsResponse(tuple(results)),)
        )

    def _reassign(
        self, item: ReassignablePartition, allow_rf_change: bool
    ) -> PartitionChangeRecord | None:
        topic = self.state.topic_named(item.topic)
        key = None if topic is None else (topic.topic_id, item.partition)
        partition = None if key is None else self.state.partitions.get(key)
        if key is None or partition is None:
            raise Refused(ErrorCode.unknown_topic_or_partition, "no such partition")
        builder = self.state.builder(key)
        ors = partition.original_replicas
        if item.replicas is None:
            # Cancelling: whatever phase A reached, go back to ORS, which was in sync.
            if not partition.is_reassigning:
                raise Refused(
                    ErrorCode.no_reassignment_in_progress, "nothing to cancel"
                )
            trs: Sequence[int] = ors
        else:
            trs = item.replicas
            self._check_target(partition, trs, allow_rf_change)
        # Phase U: record RS = TRS + (ORS - TRS), AR = TRS - ORS, RR = ORS - TRS.
        replicas = tuple(trs) + tuple(r for r in ors if r not in trs)
        builder.target_replicas = replicas
        builder.target_adding = tuple(r for r in trs if r not in ors)
        builder.target_removing = tuple(r for r in ors if r not in trs)
        builder.target_isr = tuple(r for r in partition.isr if r in replicas)
        if not builder.target_isr:
            # Only replicas being dropped are in sync: going on would need an unclean
            # election (Kafka: PartitionReassignmentRevert.unclean), and an ISR outside
            # RS.
            raise Refused(
                ErrorCode.invalid_replica_assignment, "no in-sync replica would remain"
            )
        # The builder ends phase A at once when TRS is already in sync (phase B follows
        # in the same record); otherwise AlterPartition from the leader ends it later.
        return builder.build()

    def _check_target(
        self,
        partition: PartitionRegistration,
        trs: Sequence[int],
        allow_rf_change: bool,
    ) -> None:
        """Brokers that exist, none twice; and, when the request says so (KIP-860), as
        many as the partition is headed for."""
        try:
            validate_manual_assignment({0: trs}, list(self.state.cluster.brokers))
        except PlacementError as exc:
            raise Refused(exc.error_code, exc.message) from None
        if not allow_rf_change:
            refused = rf_change_refused(len(partition.target_replicas), len(trs))
            if refused is not None:
                raise refused

    def list_partition_reassignments(
        self, epoch: int
    ) -> ListPartitionReassignmentsResponse:
        ongoing = []
        for (topic_id, partition_id), p in sorted(
            self.state.partitions.items(epoch), key=lambda kv: (str(kv[0][0]), kv[0][1])
        ):
            if p.is_reassigning:
                topic = self.state.topics.get(topic_id, epoch)
                assert topic is not None
                ongoing.append(
                    OngoingReassignment(
                        topic.name,
                        partition_id,
                        p.replicas,
                        p.adding_replicas,
                        p.removing_replicas,
                    )
                )
        return ListPartitionReassignmentsResponse(
            tuple(sorted(ongoing, key=lambda o: (o.topic, o.partition)))
        )
