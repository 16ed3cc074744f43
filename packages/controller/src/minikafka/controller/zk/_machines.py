"""The ZooKeeper-mode controller's state machines and what their transitions do (seed 001
section 4; Kafka 2.8's ``ZkPartitionStateMachine`` and ``ZkReplicaStateMachine``).

The tables of :mod:`._states` say which transitions are legal; this module hangs Kafka's
side effects on them. A partition going online gets a leader (its first, or by an
election) written to its state znode and sent to its replicas with LeaderAndIsr; a
replica going offline is stopped and taken out of its partition's ISR; a replica being
deleted is sent StopReplica with delete. :class:`ZkStateMachines` holds the controller's
state (the context, both machines, and the event being processed: its cause and time,
which its trace events carry, and what it has decided so far: its writes and its
request batch); :class:`~._controller.ZkController` and
:class:`~._deletion.TopicDeletion` build on it. The elections are Kafka's
``PartitionLeaderElectionAlgorithms``, plain functions.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.trace import NullTracer, Tracer
from minikafka.zk import (
    Create,
    LeaderIsrAndControllerEpoch,
    Op,
    SetData,
    TopicAssignment,
    partition_state_path,
    topic_path,
)

from .._config import ControllerConfig
from .._events import PartitionLeaderElected
from .._requests import (
    AllocateProducerIdsResponse,
    AlterPartitionReassignmentsResponse,
    AlterPartitionResponse,
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)
from .._states import (
    PARTITION_TRANSITION_REASONS,
    REPLICA_TRANSITION_REASONS,
    PartitionAndReplica,
    PartitionState,
    PartitionStateMachine,
    ReplicaState,
    ReplicaStateMachine,
    StateChange,
    TopicPartition,
)
from ._context import ControllerContext, Leadership
from ._events import StateTransition
from ._requests import BrokerRequest, RequestBatch

_P = PartitionState
_R = ReplicaState


class IllegalStateTransitionError(Exception):
    """The controller asked a state machine for a transition its table forbids."""

    def __init__(self, changes: Sequence[StateChange[Any, Any]]) -> None:
        listed = ", ".join(
            f"{c.key}: {c.from_state.value} -> {c.to_state.value}" for c in changes
        )
        super().__init__(f"illegal state transition: {listed}")


@attrs.frozen
class ControlledShutdownResult:
    """Kafka's ControlledShutdown answer: the partitions the broker still leads (it may
    stop once this is empty, or when it gives up retrying)."""

    error_code: ErrorCode
    remaining: tuple[TopicPartition, ...] = ()


ZkResponse = (
    AlterPartitionResponse
    | ControlledShutdownResult
    | CreateTopicsResponse
    | CreatePartitionsResponse
    | DeleteTopicsResponse
    | AllocateProducerIdsResponse
    | ElectLeadersResponse
    | AlterPartitionReassignmentsResponse
    | ListPartitionReassignmentsResponse
    | None
)


ZkControllerResult: TypeAlias = CoreResult[Op, ZkResponse, BrokerRequest]
"""What one event asks the shell to do, as every core's ``CoreResult``: its records are
the ZooKeeper writes (one transaction, fenced by the controller epoch), its messages the
requests for the brokers, sent once the writes succeeded (a controller that lost its
epoch must tell nobody anything), and its reply, if any, answers the broker that sent
the event."""


# --- elections (Kafka's PartitionLeaderElectionAlgorithms) ----------------------------------


def offline_partition_leader(
    replicas: Sequence[int],
    isr: Sequence[int],
    live: Callable[[int], bool],
    unclean: bool,
) -> tuple[int, tuple[int, ...], bool] | None:
    """The first live replica in the ISR (assignment order); with ``unclean``, failing
    that, the first live replica at all, which becomes the whole ISR. None: no
    leader."""
    for replica in replicas:
        if live(replica) and replica in isr:
            return replica, tuple(b for b in isr if live(b)), False
    if unclean:
        for replica in replicas:
            if live(replica):
                return replica, (replica,), True
    return None


def preferred_leader(
    replicas: Sequence[int], isr: Sequence[int], live: Callable[[int], bool]
) -> tuple[int, tuple[int, ...]] | None:
    """The first replica, if it is live and in sync; the ISR unchanged."""
    if replicas and live(replicas[0]) and replicas[0] in isr:
        return replicas[0], tuple(isr)
    return None


def reassignment_leader(
    replicas: Sequence[int], isr: Sequence[int], live: Callable[[int], bool]
) -> tuple[int, tuple[int, ...]] | None:
    """The first target replica that is live and in sync; the ISR unchanged (the
    replicas being removed leave it right after)."""
    for replica in replicas:
        if live(replica) and replica in isr:
            return replica, tuple(isr)
    return None


def controlled_shutdown_leader(
    replicas: Sequence[int], isr: Sequence[int], live: Callable[[int], bool]
) -> tuple[int, tuple[int, ...]] | None:
    """The first replica in the ISR that is live and not shutting down; the ISR without
    the brokers shutting down (``live`` already excludes them)."""
    for replica in replicas:
        if live(replica) and replica in isr:
            return replica, tuple(b for b in isr if live(b))
    return None


@attrs.define(eq=False)
class ZkStateMachines:
    """What the controller knows and what the event in progress has decided."""

    controller_id: int
    context: ControllerContext
    config: ControllerConfig = attrs.field(factory=ControllerConfig)
    """num.partitions, default.replication.factor, unclean.leader.election.enable."""
    listener: str = "PLAINTEXT"
    """The inter-broker listener: where LeaderAndIsr tells followers to fetch from."""
    tracer: Tracer = attrs.field(factory=NullTracer)
    rng: random.Random = attrs.field(factory=random.Random)
    """Placement's random start and shift, and topic ids."""
    psm: PartitionStateMachine = attrs.field(factory=PartitionStateMachine)
    rsm: ReplicaStateMachine = attrs.field(factory=ReplicaStateMachine)
    _cause: str = attrs.field(init=False, default="")
    _now: float = attrs.field(init=False, default=0.0)
    """The time of the event being handled (its call's ``now``), beside its cause: what
    the trace events of that same call are stamped with. :meth:`_begin` sets both at the
    start of every event, so no later call ever reads an earlier one's time."""
    _deletion_started: set[str] = attrs.field(init=False, factory=set)
    _writes: list[Op] = attrs.field(init=False, factory=list)
    _batch: RequestBatch = attrs.field(init=False)
    _sent: list[BrokerRequest] = attrs.field(init=False, factory=list)
    """The event's batches already closed (:meth:`_send_batch`), in order."""

    @_batch.default
    def _new_batch(self) -> RequestBatch:
        return RequestBatch(self.controller_id)

    # --- the partition state machine's side effects --------------------------------------------

    def _partitions_to(
        self,
        partitions: Sequence[TopicPartition],
        target: PartitionState,
        election: str = "offline",
    ) -> None:
        """Kafka's ``ZkPartitionStateMachine.handleStateChanges``: to Online, a new
        partition gets its first leader and ISR (the state znode created) and the others
        an election; a partition that cannot get a leader stays where it is."""
        if not partitions:
            return
        illegal = self.psm.illegal(partitions, target)
        if illegal:
            raise IllegalStateTransitionError(illegal)
        moved = list(partitions)
        if target is _P.ONLINE:
            moved = [tp for tp in partitions if self._lead(tp, election)]
        for change in self.psm.handle_state_changes(moved, target).changed:
            self._trace_transition(
                "partition", change.key, -1, change, PARTITION_TRANSITION_REASONS
            )

    def _lead(self, tp: TopicPartition, election: str) -> bool:
        """Give ``tp`` a leader: its first one (New), or by ``election``. False:
        none."""
        context = self.context
        replicas = context.replicas(tp)
        current = context.leadership.get(tp)
        if current is None:
            live = tuple(b for b in replicas if context.is_live(b))
            if not live:
                return False
            state = LeaderIsrAndControllerEpoch(live[0], 0, live, context.epoch)
            self._writes.append(
                Create(partition_state_path(*tp), state.encode(), parents=True)
            )
            context.leadership[tp] = Leadership(state, 0)
            self._batch.add_leader_and_isr(context, live, tp, is_new=True)
            self._trace_election(tp, -1, context.leadership[tp], "new_partition")
            return True
        if election == "controlled_shutdown":
            chosen = controlled_shutdown_leader(
                replicas, current.state.isr, context.is_live
            )
            unclean = False
        elif election in ("preferred", "auto_rebalance"):
            chosen = preferred_leader(replicas, current.state.isr, context.is_live)
            unclean = False
        elif election == "reassignment":
            chosen = reassignment_leader(replicas, current.state.isr, context.is_live)
            unclean = False
        elif election == "unclean_request":
            # ElectLeaders UNCLEAN (KIP-460): the offline election, unclean allowed.
            found = offline_partition_leader(
                replicas, current.state.isr, context.is_live, True
            )
            chosen, unclean = (None, False) if found is None else (found[:2], found[2])
            election = "offline"  # traced as "unclean" unless an ISR member was live
        else:
            found = offline_partition_leader(
                replicas,
                current.state.isr,
                context.is_live,
                context.unclean_leader_election_enabled(
                    tp[0],
                    self.config.unclean_leader_election_enable,
                    self.controller_id,
                ),
            )
            chosen, unclean = (None, False) if found is None else (found[:2], found[2])
        if chosen is None:
            return False
        leader, isr = chosen
        updated = self._write(
            tp,
            LeaderIsrAndControllerEpoch(
                leader, current.state.leader_epoch + 1, isr, context.epoch
            ),
        )
        self._batch.add_leader_and_isr(
            context, [b for b in replicas if context.is_live(b)], tp
        )
        self._trace_election(
            tp, current.state.leader, updated, "unclean" if unclean else election
        )
        return True

    def _write(
        self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch
    ) -> Leadership:
        """Update ``tp``'s state znode over the version this controller knows (a
        conditional write: KIP-497), and remember the version it will have."""
        current = self.context.leadership[tp]
        state = attrs.evolve(state, controller_epoch=self.context.epoch)
        self._writes.append(
            SetData(partition_state_path(*tp), state.encode(), current.version)
        )
        updated = Leadership(state, current.version + 1)
        self.context.leadership[tp] = updated
        return updated

    # --- the replica state machine's side effects ----------------------------------------------

    def _replicas_to(
        self, replicas: Sequence[PartitionAndReplica], target: ReplicaState
    ) -> None:
        """Kafka's ``ZkReplicaStateMachine.handleStateChanges``."""
        if not replicas:
            return
        illegal = self.rsm.illegal(replicas, target)
        if illegal:
            raise IllegalStateTransitionError(illegal)
        context = self.context
        for topic, index, broker in replicas:
            tp = (topic, index)
            before = self.rsm.state((topic, index, broker))
            if target is _R.NEW_REPLICA and tp in context.leadership:
                # A replica added to a partition that exists (a reassignment) starts
                # following its leader.
                self._batch.add_leader_and_isr(context, [broker], tp, is_new=True)
            elif target is _R.ONLINE_REPLICA and before is not _R.NEW_REPLICA:
                if tp in context.leadership:
                    self._batch.add_leader_and_isr(context, [broker], tp)
            elif target is _R.OFFLINE_REPLICA:
                self._batch.add_stop_replica(broker, tp, delete=False)
                self._remove_from_isr(tp, broker)
            elif target is _R.REPLICA_DELETION_STARTED:
                self._batch.add_stop_replica(broker, tp, delete=True)
        for change in self.rsm.handle_state_changes(replicas, target).changed:
            topic, index, broker = change.key
            self._trace_transition(
                "replica", (topic, index), broker, change, REPLICA_TRANSITION_REASONS
            )

    def _remove_from_isr(self, tp: TopicPartition, broker: int) -> None:
        """An offline replica leaves the ISR (never the last member, so that it may lead
        again without loss); if it led, the partition is left without a leader."""
        context = self.context
        current = context.leadership.get(tp)
        if current is None:
            return
        state = current.state
        if broker not in state.isr and state.leader != broker:
            return
        isr = tuple(b for b in state.isr if b != broker) or state.isr
        leader = -1 if state.leader == broker else state.leader
        self._write(
            tp,
            LeaderIsrAndControllerEpoch(
                leader, state.leader_epoch + 1, isr, context.epoch
            ),
        )
        if tp[0] not in context.deleting:
            others = [
                b for b in context.replicas(tp) if b != broker and context.is_live(b)
            ]
            self._batch.add_leader_and_isr(context, others, tp)

    # --- bookkeeping ----------------------------------------------------------------------

    def _assign_topic_ids(self, topics: Mapping[str, TopicAssignment]) -> None:
        """Topics written without an id get one (KIP-516: a 2.8 controller does this for
        topics an older tool created), written back into their assignment znode."""
        for name, assignment in topics.items():
            if assignment.topic_id is None:
                assignment = attrs.evolve(
                    assignment,
                    topic_id=uuid.UUID(int=self.rng.getrandbits(128), version=4),
                )
                self.context.topics[name] = assignment
                self._writes.append(SetData(topic_path(name), assignment.encode()))

    def _replicas_of(self, topic: str | None = None) -> list[PartitionAndReplica]:
        return [
            (t, p, b)
            for t, p in self.context.partitions(topic)
            for b in self.context.replicas((t, p))
        ]

    def _begin(self, cause: str, now: float) -> None:
        self._cause = cause
        self._now = now
        self._writes = []
        self._sent = []
        self._batch = RequestBatch(self.controller_id)

    def _send_batch(self) -> None:
        """Close the batch so far (Kafka's ``sendRequestsToBrokers``): its requests
        go before any added after, whatever their kind. Within one batch each broker
        hears LeaderAndIsr, then UpdateMetadata, then StopReplica, as in Kafka."""
        self._sent.extend(self._batch.requests(self.context, self.listener))
        self._batch = RequestBatch(self.controller_id)

    def _end(self, response: ZkResponse = None) -> ZkControllerResult:
        self._send_batch()
        requests, self._sent = self._sent, []
        replies = () if response is None else (response,)
        return CoreResult(tuple(self._writes), replies, tuple(requests))

    def _trace_transition(
        self,
        machine: str,
        tp: TopicPartition,
        replica: int,
        change: StateChange[Any, Any],
        reasons: Mapping[Any, str],
    ) -> None:
        if self.tracer.enabled:
            self.tracer.emit(
                StateTransition(
                    machine,
                    tp[0],
                    tp[1],
                    replica,
                    change.from_state.value,
                    change.to_state.value,
                    self._cause,
                    reasons.get((change.from_state, change.to_state), ""),
                ),
                self._now,
            )

    def _trace_election(
        self, tp: TopicPartition, previous: int, elected: Leadership, reason: str
    ) -> None:
        if self.tracer.enabled:
            self.tracer.emit(
                PartitionLeaderElected(
                    tp[0],
                    tp[1],
                    elected.state.leader,
                    previous,
                    elected.state.leader_epoch,
                    elected.state.isr,
                    reason,
                ),
                self._now,
            )
