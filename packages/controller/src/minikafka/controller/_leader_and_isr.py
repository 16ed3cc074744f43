"""Leader and ISR changes: fenced and unfenced brokers, and AlterPartition (KIP-497).

What ZooKeeper-mode Kafka did with LeaderAndIsr requests and the ISR znodes (seed 001),
the KRaft controller does with PartitionChangeRecords, each built by the
``PartitionChangeBuilder`` (which elects a leader when the current one may no longer
lead):

- a broker *fenced* (its session expired, or it asked to shut down) leaves every ISR it
  is in, and the partitions it led elect another leader (Kafka's
  ReplicationControlManager.handleBrokerFenced);
- a broker *unfenced* may lead the partitions left without a leader
  (handleBrokerUnfenced);
- a *preferred election* (ElectLeaders) gives partitions back to their first replica
  when it is in sync, as after a failover the returning broker leads nothing;
- a leader's *AlterPartition* asks to shrink or expand its ISR. It is fenced twice:
  by the broker epoch (a restarted broker's old incarnation loses), and by the leader
  epoch and partition epoch it was built on (a request built on an older view of the
  partition loses). KIP-497 replaced ZooKeeper-mode's AlterIsr with it.

``LeaderAndIsrControl`` only decides: it reads ``ReplicationState`` and returns records.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult

from ._records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataRecord,
    PartitionChangeRecord,
)
from ._replication_state import Refused, ReplicationState
from ._requests import (
    UNCLEAN_ELECTION,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    ElectionResult,
    ElectLeadersRequest,
    ElectLeadersResponse,
)


@attrs.define(eq=False)
class LeaderAndIsrControl:
    state: ReplicationState

    # --- brokers coming and going ------------------------------------------------------------

    def handle_broker_fenced(
        self, broker_id: int, reason: str = "broker_fenced"
    ) -> list[PartitionChangeRecord]:
        """Take ``broker_id`` out of every ISR and elect new leaders where it led
        (``reason``, for the trace: ``controlled_shutdown`` when it asked to stop).

        The ISR never becomes empty: if the broker was its last member it stays, so that
        when it comes back it can lead again without losing anything (leader -1
        meanwhile).
        """

        def acceptable(b: int) -> bool:
            return b != broker_id and self.state.cluster.is_unfenced(b)

        records = []
        for key, partition in self.state.partitions.items():
            if broker_id not in partition.isr:
                continue
            builder = self.state.builder(key, acceptable)
            builder.target_isr = (
                tuple(r for r in partition.isr if r != broker_id) or partition.isr
            )
            change = builder.build()
            if change is not None:
                records.append(change)
        self.state.trace_elections(records, reason)
        return records

    def handle_broker_unfenced(self, broker_id: int) -> list[PartitionChangeRecord]:
        """Elect leaders for leaderless partitions this broker can now lead."""

        def acceptable(b: int) -> bool:
            return b == broker_id or self.state.cluster.is_unfenced(b)

        records = []
        for key, partition in self.state.partitions.items():
            if partition.leader == NO_LEADER and broker_id in partition.replicas:
                change = self.state.builder(key, acceptable).build()
                if change is not None:
                    records.append(change)
        self.state.trace_elections(records, "broker_unfenced")
        return records

    # --- preferred leader election (kafka-leader-election.sh --election-type preferred) ----

    def elect_leaders(
        self, request: ElectLeadersRequest
    ) -> CoreResult[MetadataRecord, ElectLeadersResponse, Never]:
        """ElectLeaders (KIP-460), Kafka's ``electLeader`` for each partition asked.

        PREFERRED gives each partition back to its preferred leader, the first replica,
        where that replica is in sync and unfenced (PREFERRED_LEADER_NOT_AVAILABLE
        otherwise). UNCLEAN gives a leader to a partition that has none, from the ISR
        if a member is unfenced, else from any unfenced replica, which loses what only
        the ISR had (ELIGIBLE_LEADERS_NOT_AVAILABLE if no replica can lead). A partition
        that needs neither is ELECTION_NOT_NEEDED. Asked for every partition
        (``partitions`` None), the answer leaves out those that need no election, as
        Kafka's KRaft controller does: it lists what was elected or could not be."""
        unclean = request.election_type == UNCLEAN_ELECTION
        records: list[MetadataRecord] = []
        results = []
        for name, p, key in self._asked(request.partitions):
            if key is None:
                results.append(
                    ElectionResult(name, p, ErrorCode.unknown_topic_or_partition)
                )
                continue
            partition = self.state.partitions[key]
            preferred = partition.replicas[0] if partition.replicas else NO_LEADER
            if (
                (partition.leader != NO_LEADER)
                if unclean
                else (partition.leader == preferred)
            ):
                if request.partitions is not None:
                    results.append(
                        ElectionResult(name, p, ErrorCode.election_not_needed)
                    )
                continue
            builder = self.state.builder(key)
            if unclean:
                builder.unclean_election = True
            else:
                builder.elect_preferred = True
            change = builder.build()
            wanted = change is not None and (
                change.leader not in (NO_LEADER, NO_LEADER_CHANGE)
                if unclean
                else change.leader == preferred
            )
            if change is None or not wanted:
                results.append(self._not_elected(name, p, unclean, preferred))
                continue
            records.append(change)
            results.append(ElectionResult(name, p, ErrorCode.none))
        self.state.trace_elections(records, "unclean" if unclean else "preferred")
        return CoreResult(
            tuple(records), (ElectLeadersResponse(ErrorCode.none, tuple(results)),)
        )

    def _asked(
        self, partitions: tuple[tuple[str, int], ...] | None
    ) -> list[tuple[str, int, tuple[uuid.UUID, int] | None]]:
        """Each partition asked for (every one when None), with its key if it exists."""
        if partitions is None:
            return [
                (info.name, p, (topic_id, p))
                for topic_id, info in self.state.topics.items()
                for p in range(info.num_partitions)
            ]
        keys: list[tuple[str, int, tuple[uuid.UUID, int] | None]] = []
        for name, p in partitions:
            named = self.state.topic_named(name)
            key = None if named is None else (named.topic_id, p)
            keys.append((name, p, key if key in self.state.partitions else None))
        return keys

    @staticmethod
    def _not_elected(
        name: str, partition: int, unclean: bool, preferred: int
    ) -> ElectionResult:
        if unclean:
            return ElectionResult(
                name,
                partition,
                ErrorCode.eligible_leaders_not_available,
                "no replica of it is alive",
            )
        return ElectionResult(
            name,
            partition,
            ErrorCode.preferred_leader_not_available,
            f"broker {preferred} is not in sync or not available",
        )

    def rebalance_leaders(self, percentage: int) -> list[PartitionChangeRecord]:
        """auto.leader.rebalance.enable: for every broker whose share of the partitions
        it is the preferred leader of, but does not lead, exceeds ``percentage`` percent
        (``leader.imbalance.per.broker.percentage``), elect it where it is in sync."""
        preferred_of: dict[int, list[tuple[uuid.UUID, int]]] = {}
        for key, partition in self.state.partitions.items():
            if partition.replicas:
                preferred_of.setdefault(partition.replicas[0], []).append(key)
        records = []
        for broker_id in sorted(preferred_of):
            keys = preferred_of[broker_id]
            not_leading = [
                k for k in keys if self.state.partitions[k].leader != broker_id
            ]
            if len(not_leading) * 100 <= percentage * len(keys):
                continue
            if not self.state.cluster.is_unfenced(broker_id):
                continue
            for key in not_leading:
                builder = self.state.builder(key)
                builder.elect_preferred = True
                change = builder.build()
                if change is not None and change.leader == broker_id:
                    records.append(change)
        self.state.trace_elections(records, "auto_rebalance")
        return records

    # --- AlterPartition (KIP-497) ----------------------------------------------------------

    def alter_partition(
        self, request: AlterPartitionRequest
    ) -> CoreResult[MetadataRecord, AlterPartitionResponse, Never]:
        error = self.state.cluster.check_epoch(request.broker_id, request.broker_epoch)
        if error != ErrorCode.none:
            return CoreResult(replies=(AlterPartitionResponse(error),))
        records: list[MetadataRecord] = []
        results = []
        for item in request.partitions:
            try:
                change = self._alter_partition(request.broker_id, item)
            except Refused as refused:
                results.append(
                    AlterPartitionResult(
                        item.topic_id, item.partition, refused.error_code
                    )
                )
                continue
            before = self.state.partitions[(item.topic_id, item.partition)]
            after = before if change is None else before.merge(change)
            # A completed reassignment may move leadership in the same change.
            code = (
                ErrorCode.new_leader_elected
                if after.leader != request.broker_id
                else ErrorCode.none
            )
            if change is not None:
                records.append(change)
            results.append(
                AlterPartitionResult(
                    item.topic_id,
                    item.partition,
                    code,
                    after.leader,
                    after.leader_epoch,
                    after.isr,
                    after.partition_epoch,
                )
            )
        # Only a completed reassignment moves the leader here (phase B).
        self.state.trace_elections(records, "reassignment")
        return CoreResult(
            tuple(records), (AlterPartitionResponse(ErrorCode.none, tuple(results)),)
        )

    def _alter_partition(
        self, broker_id: int, item: AlterPartitionItem
    ) -> PartitionChangeRecord | None:
        key = (item.topic_id, item.partition)
        if item.topic_id not in self.state.topics:
            raise Refused(ErrorCode.unknown_topic_id, "unknown topic id")
        partition = self.state.partitions.get(key)
        if partition is None:
            raise Refused(ErrorCode.unknown_topic_or_partition, "unknown partition")
        error = isr_proposal_error(
            broker_id,
            item,
            leader=partition.leader,
            leader_epoch=partition.leader_epoch,
            partition_epoch=partition.partition_epoch,
            replicas=partition.replicas,
            eligible=self.state.cluster.is_unfenced,
        )
        if error is not None:
            raise Refused(*error)
        builder = self.state.builder(key)
        builder.target_isr = item.new_isr
        return builder.build()


def isr_proposal_error(
    broker_id: int,
    item: AlterPartitionItem,
    *,
    leader: int,
    leader_epoch: int,
    partition_epoch: int,
    replicas: Sequence[int],
    eligible: Callable[[int], bool],
) -> tuple[ErrorCode, str] | None:
    """Why a leader's ISR proposal must be refused, or None: the checks of KIP-497 that
    both controllers make (KRaft over its records, ZooKeeper mode over the state znode,
    whose version is the partition epoch)."""
    if leader != broker_id:
        return ErrorCode.not_leader_or_follower, "only the leader may alter the ISR"
    # The epochs are the fence: a request built on an older view of the partition
    # (another leader was elected, or the controller changed the ISR since) must lose.
    if item.leader_epoch < leader_epoch:
        return ErrorCode.fenced_leader_epoch, "stale leader epoch"
    if item.leader_epoch > leader_epoch:
        return ErrorCode.unknown_leader_epoch, "leader epoch from the future"
    if item.partition_epoch != partition_epoch:
        return ErrorCode.invalid_update_version, "stale partition epoch"
    if broker_id not in item.new_isr or len(set(item.new_isr)) != len(item.new_isr):
        return ErrorCode.invalid_request, "the ISR must hold the leader, once each"
    for replica in item.new_isr:
        if replica not in replicas or not eligible(replica):
            return ErrorCode.ineligible_replica, f"broker {replica} may not be in sync"
    return None
