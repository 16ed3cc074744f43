"""The ZooKeeper-mode controller, as a core (seed 001; Kafka 2.8's ``KafkaController``).

One broker of a ZooKeeper-mode cluster is the controller: it won the ephemeral
``/controller`` znode (:mod:`minikafka.zk._election`). It then reads the cluster from
ZooKeeper into its :class:`~._zk_context.ControllerContext` and processes one event at a
time from a single queue (Kafka's ``ControllerEventManager``): a broker came or went, a
topic appeared or grew, a topic is to be deleted, a leader asks to change its ISR, a
broker asks to shut down. Every event moves partitions and replicas through the two state
machines of :mod:`._states` (an illegal transition raises: it is a bug, not something to
skip), and the side effects of the transitions are what the event returns:

- **writes**: the ZooKeeper operations to make, as one transaction that the shell guards
  with a check of ``/controller_epoch``'s version, so that a controller that lost its
  epoch writes nothing (Kafka's ``checkControllerAndUpdate``): the partition state znodes
  created and updated, a deleted topic's znodes removed;
- **requests**: LeaderAndIsr, UpdateMetadata and StopReplica for each broker
  (:mod:`._zk_requests`), to send once the writes succeeded;
- a **response** for the events that answer a broker (AlterPartition, ControlledShutdown).

Nothing here blocks, reads a clock or touches the network: the ZooKeeper-mode controller
has no timers of its own (the sessions that time out are ZooKeeper's), so its calls take
no ``now``. The trio shell (``minikafka.broker``'s ``ZkControllerShell``) turns watches
into events and carries out what they return.

The transitions and their side effects follow Kafka 2.8's ``ZkPartitionStateMachine``,
``ZkReplicaStateMachine`` and ``TopicDeletionManager``; the elections its
``PartitionLeaderElectionAlgorithms``. Partition reassignment and preferred-leader
elections are not here yet.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import NullTracer, Tracer
from minikafka.zk import (
    Create,
    Delete,
    LiveBroker,
    Op,
    SetData,
    TopicAssignment,
    ZkCluster,
    delete_topic_path,
    partition_state_path,
    topic_config_path,
    topic_path,
)
from minikafka.zk import PartitionState as ZkPartitionState

from ._config import ControllerConfig
from ._events import PartitionLeaderElected
from ._leader_and_isr import isr_proposal_error
from ._requests import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ElectionResult,
    ElectLeadersRequest,
    ElectLeadersResponse,
)
from ._states import (
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
from ._zk_admin import allocate_producer_ids, create_partitions, create_topics, delete_topics
from ._zk_context import ControllerContext, Leadership
from ._zk_events import StateTransition
from ._zk_requests import BrokerRequest, RequestBatch

_P = PartitionState
_R = ReplicaState


class IllegalStateTransitionError(Exception):
    """The controller asked a state machine for a transition its table forbids."""

    def __init__(self, changes: Sequence[StateChange[Any, Any]]) -> None:
        listed = ", ".join(f"{c.key}: {c.from_state.value} -> {c.to_state.value}" for c in changes)
        super().__init__(f"illegal state transition: {listed}")


@attrs.frozen
class ZkControllerResult:
    """What one event asks the shell to do, in order: the writes (one transaction), then
    the requests; ``response`` answers the broker that sent the event, if one did."""

    writes: tuple[Op, ...] = ()
    requests: tuple[BrokerRequest, ...] = ()
    response: ZkResponse = None


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
    | None
)


# --- elections (Kafka's PartitionLeaderElectionAlgorithms) ----------------------------------


def offline_partition_leader(
    replicas: Sequence[int], isr: Sequence[int], live: Callable[[int], bool], unclean: bool
) -> tuple[int, tuple[int, ...], bool] | None:
    """The first live replica in the ISR (assignment order); with ``unclean``, failing
    that, the first live replica at all, which becomes the whole ISR. None: no leader."""
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
class ZkController:
    """The active controller's state and its event handlers. Build it with
    :meth:`become_active`, which also returns what taking over requires."""

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
    _deletion_started: set[str] = attrs.field(init=False, factory=set)
    _writes: list[Op] = attrs.field(init=False, factory=list)
    _batch: RequestBatch = attrs.field(init=False)

    @_batch.default
    def _new_batch(self) -> RequestBatch:
        return RequestBatch(self.controller_id)

    @classmethod
    def become_active(
        cls,
        controller_id: int,
        epoch: int,
        cluster: ZkCluster,
        *,
        config: ControllerConfig | None = None,
        listener: str = "PLAINTEXT",
        tracer: Tracer | None = None,
        rng: random.Random | None = None,
        producer_id_block: tuple[int, int] | None = None,
    ) -> tuple[ZkController, ZkControllerResult]:
        """Take over (Kafka's ``onControllerFailover``): load the context, set each
        partition's and replica's state from what ZooKeeper says, tell every broker the
        whole cluster, and bring every partition without a leader online."""
        controller = cls(
            controller_id,
            ControllerContext.load(epoch, cluster, producer_id_block),
            config or ControllerConfig(),
            listener,
            tracer or NullTracer(),
            rng or random.Random(),
        )
        return controller, controller._on_startup()

    # --- events ---------------------------------------------------------------------------

    def _on_startup(self) -> ZkControllerResult:
        self._begin("Startup")
        context = self.context
        self._assign_topic_ids(context.topics)
        for tp in context.partitions():
            current = context.leadership.get(tp)
            if current is None:
                self.psm.initialize(tp, _P.NEW)
            elif context.is_live(current.state.leader):
                self.psm.initialize(tp, _P.ONLINE)
            else:
                self.psm.initialize(tp, _P.OFFLINE)
            for replica in context.replicas(tp):
                if context.is_live(replica):
                    state = _R.ONLINE_REPLICA
                elif tp[0] in context.deleting:
                    state = _R.REPLICA_DELETION_INELIGIBLE
                else:
                    state = _R.OFFLINE_REPLICA
                self.rsm.initialize((tp[0], tp[1], replica), state)
        self._batch.add_update_metadata(context.live_or_shutting_down(), context.partitions())
        # Kafka's ReplicaStateMachine.startup: every replica is told again what it is;
        # a replica whose broker is down leaves the ISRs it is still written into (its
        # broker may have died while there was no controller to take it out).
        replicas = [r for r in self._replicas_of() if r[0] not in context.deleting]
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) is _R.ONLINE_REPLICA], _R.ONLINE_REPLICA
        )
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) is _R.OFFLINE_REPLICA], _R.OFFLINE_REPLICA
        )
        self._trigger_online_partition_state_change()
        self._resume_deletions()
        return self._end()

    def on_broker_change(self, brokers: Mapping[int, LiveBroker]) -> ZkControllerResult:
        """``/brokers/ids`` changed: ``brokers`` is who is registered now. A broker that
        registered again (a new epoch) failed and came back (Kafka's bounced brokers)."""
        self._begin("BrokerChange")
        context = self.context
        old = context.brokers
        dead = {b for b in old if b not in brokers or brokers[b].epoch != old[b].epoch}
        new = {b for b in brokers if b not in old or b in dead}
        if dead:
            for broker in dead:
                del context.brokers[broker]
            context.shutting_down -= dead
            self._on_broker_failure(dead)
        if new:
            for broker in new:
                context.brokers[broker] = brokers[broker]
            self._on_broker_startup(new)
        return self._end()

    def on_topic_change(self, topics: Mapping[str, TopicAssignment]) -> ZkControllerResult:
        """``/brokers/topics`` or a topic's assignment changed: ``topics`` is every topic's
        assignment now. New topics and new partitions are created (seed 001 section 4)."""
        self._begin("TopicChange")
        context = self.context
        created: list[TopicPartition] = []
        fresh = {
            name: assignment
            for name, assignment in topics.items()
            if name not in context.deleting
            and (name not in context.topics or assignment != context.topics[name])
        }
        for name, assignment in fresh.items():
            known = context.topics.get(name)
            before = set() if known is None else set(known.partitions)
            if known is not None and assignment.topic_id is None:
                assignment = attrs.evolve(assignment, topic_id=known.topic_id)
            context.topics[name] = assignment
            created.extend((name, p) for p in sorted(assignment.partitions) if p not in before)
        for name in fresh:
            context.pending.pop(name, None)
        self._assign_topic_ids({n: context.topics[n] for n in fresh})
        if created:
            self._on_new_partition_creation(created)
        return self._end()

    def on_topic_deletion(self, topics: Iterable[str]) -> ZkControllerResult:
        """``/admin/delete_topics`` lists ``topics``: delete them (Kafka's
        ``TopicDeletionManager``). A name that is no topic is just unlisted."""
        self._begin("TopicDeletion")
        for name in sorted(set(topics)):
            self.context.pending_deletion.discard(name)
            if name not in self.context.topics:
                self._writes.append(Delete(delete_topic_path(name)))
            else:
                self.context.deleting.add(name)
        self._resume_deletions()
        return self._end()

    def on_stop_replica_response(
        self, broker_id: int, errors: Mapping[TopicPartition, ErrorCode]
    ) -> ZkControllerResult:
        """A broker answered StopReplica: replicas being deleted are now deleted, or their
        deletion failed and will be retried."""
        self._begin("TopicDeletionStopReplicaResponseReceived")
        done: list[PartitionAndReplica] = []
        failed: list[PartitionAndReplica] = []
        for tp, error in errors.items():
            replica = (tp[0], tp[1], broker_id)
            if self.rsm.state(replica) is _R.REPLICA_DELETION_STARTED:
                (done if error == ErrorCode.none else failed).append(replica)
        self._replicas_to(done, _R.REPLICA_DELETION_SUCCESSFUL)
        self._fail_deletion(failed)
        self._resume_deletions()
        return self._end()

    def on_alter_partition(self, request: AlterPartitionRequest) -> ZkControllerResult:
        """A leader asks to shrink or expand an ISR (KIP-497's AlterPartition, 2.8's
        AlterIsr): checked like the KRaft controller's, written over the state znode's
        version, which is the partition epoch the leader must name."""
        self._begin("AlterPartition")
        context = self.context
        live = context.brokers.get(request.broker_id)
        if live is None or live.epoch != request.broker_epoch:
            return self._end(AlterPartitionResponse(ErrorCode.stale_broker_epoch))
        results = []
        for item in request.partitions:
            topic = context.topic_of_id(item.topic_id)
            tp = (topic or "", item.partition)
            current = context.leadership.get(tp)
            if topic is None:
                error: tuple[ErrorCode, str] | None = (ErrorCode.unknown_topic_id, "")
            elif current is None or topic in context.deleting:
                error = (ErrorCode.unknown_topic_or_partition, "")
            else:
                error = isr_proposal_error(
                    request.broker_id,
                    item,
                    leader=current.state.leader,
                    leader_epoch=current.state.leader_epoch,
                    partition_epoch=current.version,
                    replicas=context.replicas(tp),
                    eligible=context.is_live,
                )
            if error is not None or current is None:
                code = error[0] if error is not None else ErrorCode.unknown_topic_or_partition
                results.append(AlterPartitionResult(item.topic_id, item.partition, code))
                continue
            # The leader epoch stays: only the ISR (and so the version) changes.
            updated = self._write(tp, attrs.evolve(current.state, isr=item.new_isr))
            self._batch.add_update_metadata(context.live_or_shutting_down(), [tp])
            results.append(
                AlterPartitionResult(
                    item.topic_id,
                    item.partition,
                    ErrorCode.none,
                    updated.state.leader,
                    updated.state.leader_epoch,
                    updated.state.isr,
                    updated.version,
                )
            )
        return self._end(AlterPartitionResponse(ErrorCode.none, tuple(results)))

    def on_create_topics(self, request: CreateTopicsRequest) -> ZkControllerResult:
        """Write each new topic's assignment (:mod:`._zk_admin`); its watch then brings
        the partitions to life (:meth:`on_topic_change`)."""
        self._begin("CreateTopics")
        writes, response = create_topics(self.context, self.config, self.rng, request)
        self._writes.extend(writes)
        return self._end(response)

    def on_create_partitions(self, request: CreatePartitionsRequest) -> ZkControllerResult:
        self._begin("CreatePartitions")
        writes, response = create_partitions(self.context, self.config, self.rng, request)
        self._writes.extend(writes)
        return self._end(response)

    def on_delete_topics(self, request: DeleteTopicsRequest) -> ZkControllerResult:
        self._begin("DeleteTopics")
        writes, response = delete_topics(self.context, request)
        self._writes.extend(writes)
        return self._end(response)

    def on_allocate_producer_ids(self, request: AllocateProducerIdsRequest) -> ZkControllerResult:
        self._begin("AllocateProducerIds")
        writes, response = allocate_producer_ids(self.context, self.config, request)
        self._writes.extend(writes)
        return self._end(response)

    def on_elect_leaders(self, request: ElectLeadersRequest) -> ZkControllerResult:
        """ElectLeaders (preferred): give each partition back to its first replica where
        that one is live and in sync (Kafka's PreferredReplicaPartitionLeaderElection,
        an OnlinePartition -> OnlinePartition transition)."""
        self._begin("ElectLeaders")
        context = self.context
        if request.partitions is None:
            asked = [tp for tp in context.partitions() if tp[0] not in context.deleting]
        else:
            asked = list(request.partitions)
        results = []
        electable = []
        for tp in asked:
            current = context.leadership.get(tp)
            replicas = context.replicas(tp)
            if current is None or not replicas or tp[0] in context.deleting:
                results.append(ElectionResult(*tp, ErrorCode.unknown_topic_or_partition))
            elif current.state.leader == replicas[0]:
                results.append(ElectionResult(*tp, ErrorCode.election_not_needed))
            elif preferred_leader(replicas, current.state.isr, context.is_live) is None:
                why = f"broker {replicas[0]} is not in sync or not available"
                results.append(ElectionResult(*tp, ErrorCode.preferred_leader_not_available, why))
            else:
                electable.append(tp)
                results.append(ElectionResult(*tp, ErrorCode.none))
        self._partitions_to(electable, _P.ONLINE, election="preferred")
        return self._end(ElectLeadersResponse(ErrorCode.none, tuple(results)))

    def on_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ZkControllerResult:
        """A broker asks to stop (Kafka's ``doControlledShutdown``): it leaves every ISR,
        the partitions it leads move to another in-sync replica, and the answer lists
        those it still leads (no other replica in sync to take them)."""
        self._begin("ControlledShutdown")
        context = self.context
        live = context.brokers.get(broker_id)
        if live is None:
            return self._end(ControlledShutdownResult(ErrorCode.broker_not_available))
        if live.epoch != broker_epoch:
            return self._end(ControlledShutdownResult(ErrorCode.stale_broker_epoch))
        context.shutting_down.add(broker_id)
        acted_on = [
            tp
            for tp in context.partitions_on({broker_id})
            if len(context.replicas(tp)) > 1
            and tp in context.leadership
            and tp[0] not in context.deleting
        ]
        led = [tp for tp in acted_on if context.leadership[tp].state.leader == broker_id]
        followed = [(tp[0], tp[1], broker_id) for tp in acted_on if tp not in led]
        self._partitions_to(led, _P.ONLINE, election="controlled_shutdown")
        self._replicas_to(followed, _R.OFFLINE_REPLICA)
        remaining = tuple(tp for tp in acted_on if context.leadership[tp].state.leader == broker_id)
        return self._end(ControlledShutdownResult(ErrorCode.none, remaining))

    # --- what broker changes do (onBrokerFailure, onBrokerStartup) -------------------------

    def _on_broker_failure(self, dead: set[int]) -> None:
        context = self.context
        leaderless = [
            tp
            for tp, current in context.leadership.items()
            if current.state.leader in dead and tp[0] not in context.deleting
        ]
        self._partitions_to(leaderless, _P.OFFLINE)
        self._trigger_online_partition_state_change()
        replicas = context.replicas_on(dead)
        self._replicas_to([r for r in replicas if r[0] not in context.deleting], _R.OFFLINE_REPLICA)
        self._fail_deletion([r for r in replicas if r[0] in context.deleting])
        # Everyone learns that the brokers are gone, even if they hosted nothing.
        self._batch.add_update_metadata(context.live_or_shutting_down(), [])

    def _on_broker_startup(self, new: set[int]) -> None:
        context = self.context
        existing = [b for b in context.live_or_shutting_down() if b not in new]
        self._batch.add_update_metadata(existing, [])
        self._batch.add_update_metadata(sorted(new), context.leadership)
        replicas = context.replicas_on(new)
        self._replicas_to([r for r in replicas if r[0] not in context.deleting], _R.ONLINE_REPLICA)
        self._trigger_online_partition_state_change()
        self._resume_deletions()

    def _on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        """Seed 001 section 4.3, in Kafka's four steps."""
        replicas = [(t, p, b) for t, p in partitions for b in self.context.replicas((t, p))]
        self._partitions_to(partitions, _P.NEW)
        self._replicas_to(replicas, _R.NEW_REPLICA)
        self._partitions_to(partitions, _P.ONLINE)
        self._replicas_to(replicas, _R.ONLINE_REPLICA)

    def _trigger_online_partition_state_change(self) -> None:
        """Every partition without a leader (New or Offline) tries to elect one."""
        waiting = [
            tp
            for tp in self.context.partitions()
            if self.psm.state(tp) in (_P.NEW, _P.OFFLINE) and tp[0] not in self.context.deleting
        ]
        self._partitions_to(waiting, _P.ONLINE)

    # --- topic deletion (TopicDeletionManager) -----------------------------------------------

    def _resume_deletions(self) -> None:
        """Move every topic being deleted as far as it can go now."""
        for topic in sorted(self.context.deleting):
            replicas = self._replicas_of(topic)
            states = {self.rsm.state(r) for r in replicas}
            if states <= {_R.REPLICA_DELETION_SUCCESSFUL}:
                self._complete_deletion(topic, replicas)
            elif _R.REPLICA_DELETION_STARTED in states:
                continue  # waiting for the brokers' StopReplica answers
            elif any(not self.context.is_live(r[2]) for r in replicas):
                # A replica's broker is down: the topic waits for it (ineligible).
                self._fail_deletion([r for r in replicas if not self.context.is_live(r[2])])
            else:
                self._start_deletion(topic, replicas)

    def _start_deletion(self, topic: str, replicas: list[PartitionAndReplica]) -> None:
        """The first time, the partitions go (Offline, then NonExistent) and every broker
        hears that the topic is being deleted (leader -2); then each replica not yet
        deleted is stopped and its broker asked to delete it."""
        partitions = list(self.context.partitions(topic))
        if topic not in self._deletion_started:
            self._deletion_started.add(topic)
            self._partitions_to(
                [tp for tp in partitions if self.psm.state(tp) is not _P.OFFLINE], _P.OFFLINE
            )
            self._partitions_to(partitions, _P.NON_EXISTENT)
        self._batch.add_update_metadata(self.context.live_or_shutting_down(), partitions)
        pending = [r for r in replicas if self.rsm.state(r) is not _R.REPLICA_DELETION_SUCCESSFUL]
        self._replicas_to(
            [r for r in pending if self.rsm.state(r) is not _R.OFFLINE_REPLICA], _R.OFFLINE_REPLICA
        )
        self._replicas_to(pending, _R.REPLICA_DELETION_STARTED)

    def _fail_deletion(self, replicas: Sequence[PartitionAndReplica]) -> None:
        """Replicas that cannot be deleted now (their broker is down, or it answered with
        an error) become ineligible until the broker is back."""
        live_states = (_R.NEW_REPLICA, _R.ONLINE_REPLICA)
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) in live_states], _R.OFFLINE_REPLICA
        )
        failing = (_R.OFFLINE_REPLICA, _R.REPLICA_DELETION_STARTED)
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) in failing], _R.REPLICA_DELETION_INELIGIBLE
        )

    def _complete_deletion(self, topic: str, replicas: list[PartitionAndReplica]) -> None:
        """Every replica is deleted: forget them and remove the topic's znodes."""
        self._replicas_to(replicas, _R.NON_EXISTENT_REPLICA)
        self._writes.append(Delete(topic_path(topic), recursive=True))
        self._writes.append(Delete(topic_config_path(topic), must_exist=False))
        self._writes.append(Delete(delete_topic_path(topic)))
        for tp in self.context.partitions(topic):
            self.context.leadership.pop(tp, None)
            self.psm.initialize(tp, _P.NON_EXISTENT)
        del self.context.topics[topic]
        self.context.deleting.discard(topic)
        self._deletion_started.discard(topic)

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
        """Give ``tp`` a leader: its first one (New), or by ``election``. False: none."""
        context = self.context
        replicas = context.replicas(tp)
        current = context.leadership.get(tp)
        if current is None:
            live = tuple(b for b in replicas if context.is_live(b))
            if not live:
                return False
            state = ZkPartitionState(live[0], 0, live, context.epoch)
            self._writes.append(Create(partition_state_path(*tp), state.encode(), parents=True))
            context.leadership[tp] = Leadership(state, 0)
            self._batch.add_leader_and_isr(context, live, tp, is_new=True)
            self._trace_election(tp, -1, context.leadership[tp], "new_partition")
            return True
        if election == "controlled_shutdown":
            chosen = controlled_shutdown_leader(replicas, current.state.isr, context.is_live)
            unclean = False
        elif election == "preferred":
            chosen = preferred_leader(replicas, current.state.isr, context.is_live)
            unclean = False
        else:
            found = offline_partition_leader(
                replicas,
                current.state.isr,
                context.is_live,
                self.config.unclean_leader_election_enable,
            )
            chosen, unclean = (None, False) if found is None else (found[:2], found[2])
        if chosen is None:
            return False
        leader, isr = chosen
        updated = self._write(
            tp,
            ZkPartitionState(leader, current.state.leader_epoch + 1, isr, context.epoch),
        )
        self._batch.add_leader_and_isr(context, [b for b in replicas if context.is_live(b)], tp)
        self._trace_election(tp, current.state.leader, updated, "unclean" if unclean else election)
        return True

    def _write(self, tp: TopicPartition, state: ZkPartitionState) -> Leadership:
        """Update ``tp``'s state znode over the version this controller knows (a
        conditional write: KIP-497), and remember the version it will have."""
        current = self.context.leadership[tp]
        state = attrs.evolve(state, controller_epoch=self.context.epoch)
        self._writes.append(SetData(partition_state_path(*tp), state.encode(), current.version))
        updated = Leadership(state, current.version + 1)
        self.context.leadership[tp] = updated
        return updated

    # --- the replica state machine's side effects ----------------------------------------------

    def _replicas_to(self, replicas: Sequence[PartitionAndReplica], target: ReplicaState) -> None:
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
            if target is _R.ONLINE_REPLICA and before is not _R.NEW_REPLICA:
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
        self._write(tp, ZkPartitionState(leader, state.leader_epoch + 1, isr, context.epoch))
        if tp[0] not in context.deleting:
            others = [b for b in context.replicas(tp) if b != broker and context.is_live(b)]
            self._batch.add_leader_and_isr(context, others, tp)

    # --- bookkeeping ----------------------------------------------------------------------

    def _assign_topic_ids(self, topics: Mapping[str, TopicAssignment]) -> None:
        """Topics written without an id get one (KIP-516: a 2.8 controller does this for
        topics an older tool created), written back into their assignment znode."""
        for name, assignment in topics.items():
            if assignment.topic_id is None:
                assignment = attrs.evolve(
                    assignment, topic_id=uuid.UUID(int=self.rng.getrandbits(128), version=4)
                )
                self.context.topics[name] = assignment
                self._writes.append(SetData(topic_path(name), assignment.encode()))

    def _replicas_of(self, topic: str | None = None) -> list[PartitionAndReplica]:
        return [
            (t, p, b)
            for t, p in self.context.partitions(topic)
            for b in self.context.replicas((t, p))
        ]

    def _begin(self, cause: str) -> None:
        self._cause = cause
        self._writes = []
        self._batch = RequestBatch(self.controller_id)

    def _end(self, response: ZkResponse = None) -> ZkControllerResult:
        requests = self._batch.requests(self.context, self.listener)
        return ZkControllerResult(tuple(self._writes), tuple(requests), response)

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
                )
            )

    def _trace_election(
        self, tp: TopicPartition, previous: int, now: Leadership, reason: str
    ) -> None:
        if self.tracer.enabled:
            self.tracer.emit(
                PartitionLeaderElected(
                    tp[0],
                    tp[1],
                    now.state.leader,
                    previous,
                    now.state.leader_epoch,
                    now.state.isr,
                    reason,
                )
            )
