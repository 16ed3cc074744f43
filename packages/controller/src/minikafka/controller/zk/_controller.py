"""The ZooKeeper-mode controller, as a core (seed 001; Kafka 2.8's ``KafkaController``).

One broker of a ZooKeeper-mode cluster is the controller: it won the ephemeral
``/controller`` znode (:mod:`minikafka.zk._election`). It then reads the cluster from
ZooKeeper into its :class:`~._context.ControllerContext` and processes one event at a
time from a single queue (Kafka's ``ControllerEventManager``): a broker came or went, a
topic appeared or grew, a topic is to be deleted, a leader asks to change its ISR, a
broker asks to shut down. Every event moves partitions and replicas through the two state
machines of :mod:`._states` (an illegal transition raises: it is a bug, not something to
skip), and the side effects of the transitions are what the event returns, one
``ZkControllerResult`` (the ``CoreResult`` every core returns):

- its **records**, the writes: the ZooKeeper operations to make, as one transaction that
  the shell guards with a check of ``/controller_epoch``'s version, so that a controller
  that lost its epoch writes nothing (Kafka's ``checkControllerAndUpdate``): the
  partition state znodes created and updated, a deleted topic's znodes removed;
- its **messages**, the requests: LeaderAndIsr, UpdateMetadata and StopReplica for each
  broker (:mod:`._requests`), to send once the writes succeeded;
- its **reply**, the response for the events that answer a broker (AlterPartition,
  ControlledShutdown).

Nothing here blocks, reads a clock or touches the network. The ZooKeeper-mode controller
has no timers of its own (the sessions that time out are ZooKeeper's), so time decides
nothing here: each event's call takes the shell's ``now`` (seconds since the epoch, as
every core's) only to stamp the trace events it emits. Its one periodic event, the
leader-imbalance check, is posted by the shell on Kafka's schedule, as Kafka's
``KafkaScheduler`` posts it into the event queue. The trio
shell (``minikafka.broker``'s ``ZkControllerShell``) turns watches into events and
carries out what they return.

The transitions and their side effects are in :mod:`._machines` (Kafka 2.8's
``ZkPartitionStateMachine``, ``ZkReplicaStateMachine`` and the elections of its
``PartitionLeaderElectionAlgorithms``), topic deletion in :mod:`._deletion`
(``TopicDeletionManager``), partition reassignment in :mod:`._reassignment`, the
elections an operator, the leader-imbalance check or a stopping broker ask for in
:mod:`._elections`; this module has the other events.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import attrs
from kio.schema.errors import ErrorCode

from minikafka.trace import NullTracer, Tracer
from minikafka.zk import (
    LiveBroker,
    TopicAssignment,
    ZkCluster,
)

from .._config import ControllerConfig
from .._leader_and_isr import isr_proposal_error
from .._requests import (
    AllocateProducerIdsRequest,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)
from .._states import (
    PartitionState,
    ReplicaState,
    TopicPartition,
)
from ._admin import (
    allocate_producer_ids,
    create_partitions,
    create_topics,
    delete_topics,
)
from ._context import ControllerContext, Leadership
from ._deletion import TopicDeletion
from ._elections import LeaderElections
from ._machines import (
    ZkControllerResult,
)
from ._reassignment import Reassignments

_P = PartitionState
_R = ReplicaState


@attrs.define(eq=False)
class ZkController(TopicDeletion, Reassignments, LeaderElections):
    """The active controller's state and its event handlers. Build it with
    :meth:`become_active`, which also returns what taking over requires."""

    @classmethod
    def become_active(
        cls,
        controller_id: int,
        epoch: int,
        cluster: ZkCluster,
        now: float,
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
        return controller, controller._on_startup(now)

    # --- events ---------------------------------------------------------------------------

    def _on_startup(self, now: float) -> ZkControllerResult:
        self._begin("Startup", now)
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
        self._batch.add_update_metadata(
            context.live_or_shutting_down(), context.partitions()
        )
        # Its own batch, before the replicas' LeaderAndIsr (Kafka's
        # onControllerFailover): a broker learns the cluster first, even when a
        # LeaderAndIsr is slow to answer.
        self._send_batch()
        # Kafka's ReplicaStateMachine.startup: every replica is told again what it is;
        # a replica whose broker is down leaves the ISRs it is still written into (its
        # broker may have died while there was no controller to take it out).
        replicas = [r for r in self._replicas_of() if r[0] not in context.deleting]
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) is _R.ONLINE_REPLICA],
            _R.ONLINE_REPLICA,
        )
        self._replicas_to(
            [r for r in replicas if self.rsm.state(r) is _R.OFFLINE_REPLICA],
            _R.OFFLINE_REPLICA,
        )
        self._trigger_online_partition_state_change()
        # Reassignments a previous controller left in phase A: finished if now in sync.
        for tp in list(context.leadership):
            self._maybe_complete_reassignment(tp)
        self._resume_deletions()
        return self._end()

    def on_broker_change(
        self, brokers: Mapping[int, LiveBroker], now: float
    ) -> ZkControllerResult:
        """``/brokers/ids`` changed: ``brokers`` is who is registered now. A broker that
        registered again (a new epoch) failed and came back (Kafka's bounced brokers)."""
        self._begin("BrokerChange", now)
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

    def on_topic_change(
        self,
        topics: Mapping[str, TopicAssignment],
        now: float,
        *,
        configs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> ZkControllerResult:
        """``/brokers/topics`` or a topic's assignment changed: ``topics`` is every topic's
        assignment now, ``configs`` the config overrides of those the shell read again.
        New topics and new partitions are created (seed 001 section 4)."""
        self._begin("TopicChange", now)
        context = self.context
        context.configs.update(configs or {})
        created: list[TopicPartition] = []
        fresh = {
            name: assignment
            for name, assignment in topics.items()
            if name not in context.deleting
            and (name not in context.topics or assignment != context.topics[name])
        }
        for name, assignment in fresh.items():
            known = context.topics.get(name)
            if known is not None:
                # Only new partitions count (Kafka's processPartitionModifications): the
                # replicas of existing ones change through reassignment, not by a rewrite.
                added = {
                    p: r
                    for p, r in assignment.partitions.items()
                    if p not in known.partitions
                }
                assignment = attrs.evolve(
                    known, partitions={**known.partitions, **added}
                )
            context.topics[name] = assignment
            before = set() if known is None else set(known.partitions)
            created.extend(
                (name, p) for p in sorted(assignment.partitions) if p not in before
            )
        for name in fresh:
            context.pending.pop(name, None)
        self._assign_topic_ids({n: context.topics[n] for n in fresh})
        if created:
            self._on_new_partition_creation(created)
        return self._end()

    def on_topic_config_change(
        self, topic: str, configs: Mapping[str, str], now: float
    ) -> ZkControllerResult:
        """A topic's overrides changed (its ``/config/changes`` notification, which the
        controller's broker follows like every broker): ``configs`` is what
        ``/config/topics/<topic>`` holds now.

        The controller keeps them for the one setting it reads,
        ``unclean.leader.election.enable`` at an election with no live in-sync replica.
        Kafka 2.8's controller reads that setting from ZooKeeper at the election itself;
        here the copy is refreshed by every notification instead, so the elections stay
        in the core, which reads nothing. The price is a window: an election between a
        config write and this event uses the setting from before the write. Enabling
        the setting cannot be missed: a partition left offline for want of it is elected
        here (Kafka's ``TopicUncleanLeaderElectionEnable`` event); disabling it takes
        effect once this event is processed, a few milliseconds after the write."""
        self._begin("TopicConfigChange", now)
        context = self.context
        if topic not in context.topics or topic in context.deleting:
            return self._end()
        context.configs[topic] = dict(configs)
        if context.unclean_leader_election_enabled(
            topic, self.config.unclean_leader_election_enable, self.controller_id
        ):
            waiting = [
                tp
                for tp in context.partitions(topic)
                if self.psm.state(tp) in (_P.NEW, _P.OFFLINE)
            ]
            self._partitions_to(waiting, _P.ONLINE)
        return self._end()

    def on_broker_config_change(
        self, name: str, configs: Mapping[str, str], now: float
    ) -> ZkControllerResult:
        """A dynamic broker config changed (KIP-226; its notification, which the
        controller's broker follows): ``name`` is ``""`` for the cluster-wide default
        or a broker's id, ``configs`` what its znode holds now.

        The controller reads ``unclean.leader.election.enable`` from them where a
        topic does not set it. When the default that way turns on, every partition
        left without a leader tries again, as Kafka 2.8's controller does when its
        broker's dynamic config enables it (``enableDefaultUncleanLeaderElection``);
        a topic that sets it off stays offline. Another broker's own config counts
        for nothing here (it would only if that broker became the controller, which
        then reads it)."""
        self._begin("BrokerConfigChange", now)
        context = self.context
        default = self.config.unclean_leader_election_enable
        before = context.unclean_leader_election_default(default, self.controller_id)
        context.broker_configs[name] = dict(configs)
        after = context.unclean_leader_election_default(default, self.controller_id)
        if after and not before:
            self._trigger_online_partition_state_change()
        return self._end()

    def on_alter_partition(
        self, request: AlterPartitionRequest, now: float
    ) -> ZkControllerResult:
        """A leader asks to shrink or expand an ISR (KIP-497's AlterPartition, 2.8's
        AlterIsr): checked like the KRaft controller's, written over the state znode's
        version, which is the partition epoch the leader must name."""
        self._begin("AlterPartition", now)
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
            elif _already_applied(request.broker_id, item, current):
                # A proposal sent again (its answer was lost) that the state already
                # holds: answered with that state, before the partition epoch fences
                # it (Kafka's equalsAllowStalePartitionEpoch), since in this mode no
                # LeaderAndIsr would follow to tell the leader.
                results.append(_answer(item, current))
                continue
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
                code = (
                    error[0]
                    if error is not None
                    else ErrorCode.unknown_topic_or_partition
                )
                results.append(
                    AlterPartitionResult(item.topic_id, item.partition, code)
                )
                continue
            # The leader epoch stays: only the ISR (and so the version) changes.
            self._write(tp, attrs.evolve(current.state, isr=item.new_isr))
            self._batch.add_update_metadata(context.live_or_shutting_down(), [tp])
            # The answer is the state just written, as Kafka's ZooKeeper-mode controller
            # answers: the leader commits the ISR it proposed. A reassignment waiting for
            # its targets to be in sync may end next and move the leadership away (the
            # LeaderAndIsr and StopReplica requests tell the leader), but the leader
            # must count the replica it added until then: that replica may be the one
            # elected.
            results.append(_answer(item, context.leadership[tp]))
            self._maybe_complete_reassignment(tp)
        return self._end(AlterPartitionResponse(ErrorCode.none, tuple(results)))

    def on_create_topics(
        self, request: CreateTopicsRequest, now: float
    ) -> ZkControllerResult:
        """Write each new topic's assignment (:mod:`._admin`); its watch then brings
        the partitions to life (:meth:`on_topic_change`)."""
        self._begin("CreateTopics", now)
        writes, response = create_topics(self.context, self.config, self.rng, request)
        self._writes.extend(writes)
        return self._end(response)

    def on_create_partitions(
        self, request: CreatePartitionsRequest, now: float
    ) -> ZkControllerResult:
        self._begin("CreatePartitions", now)
        writes, response = create_partitions(
            self.context, self.config, self.rng, request
        )
        self._writes.extend(writes)
        return self._end(response)

    def on_delete_topics(
        self, request: DeleteTopicsRequest, now: float
    ) -> ZkControllerResult:
        self._begin("DeleteTopics", now)
        writes, response = delete_topics(self.context, request)
        self._writes.extend(writes)
        return self._end(response)

    def on_allocate_producer_ids(
        self, request: AllocateProducerIdsRequest, now: float
    ) -> ZkControllerResult:
        self._begin("AllocateProducerIds", now)
        writes, response = allocate_producer_ids(self.context, self.config, request)
        self._writes.extend(writes)
        return self._end(response)

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
        self._replicas_to(
            [r for r in replicas if r[0] not in context.deleting], _R.OFFLINE_REPLICA
        )
        self._fail_deletion([r for r in replicas if r[0] in context.deleting])
        # Everyone learns that the brokers are gone, even if they hosted nothing.
        self._batch.add_update_metadata(context.live_or_shutting_down(), [])

    def _on_broker_startup(self, new: set[int]) -> None:
        context = self.context
        existing = [b for b in context.live_or_shutting_down() if b not in new]
        # Kafka's onBrokerStartup sends these two in batches of their own, before the
        # LeaderAndIsr of the new brokers' replicas: a LeaderAndIsr whose answer is
        # lost (a link cut just after it arrived) would otherwise hold the new broker's
        # first UpdateMetadata behind it on its channel, and the broker would answer
        # Metadata without the cluster until the controller moved (chaos seed 141).
        self._batch.add_update_metadata(existing, [])
        self._send_batch()
        self._batch.add_update_metadata(sorted(new), context.leadership)
        self._send_batch()
        replicas = context.replicas_on(new)
        self._replicas_to(
            [r for r in replicas if r[0] not in context.deleting], _R.ONLINE_REPLICA
        )
        self._trigger_online_partition_state_change()
        self._resume_deletions()

    def _on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        """Seed 001 section 4.3, in Kafka's four steps."""
        replicas = [
            (t, p, b) for t, p in partitions for b in self.context.replicas((t, p))
        ]
        self._partitions_to(partitions, _P.NEW)
        self._replicas_to(replicas, _R.NEW_REPLICA)
        self._partitions_to(partitions, _P.ONLINE)
        self._replicas_to(replicas, _R.ONLINE_REPLICA)

    def _trigger_online_partition_state_change(self) -> None:
        """Every partition without a leader (New or Offline) tries to elect one."""
        waiting = [
            tp
            for tp in self.context.partitions()
            if self.psm.state(tp) in (_P.NEW, _P.OFFLINE)
            and tp[0] not in self.context.deleting
        ]
        self._partitions_to(waiting, _P.ONLINE)


def _already_applied(
    broker_id: int, item: AlterPartitionItem, current: Leadership
) -> bool:
    """The proposal is what the state already holds, at this leader epoch and a
    partition epoch no newer than the state's (Kafka's
    ``LeaderAndIsr.equalsAllowStalePartitionEpoch``)."""
    state = current.state
    return (
        state.leader == broker_id
        and item.leader_epoch == state.leader_epoch
        and set(item.new_isr) == set(state.isr)
        and item.partition_epoch <= current.version
    )


def _answer(item: AlterPartitionItem, current: Leadership) -> AlterPartitionResult:
    state = current.state
    return AlterPartitionResult(
        item.topic_id,
        item.partition,
        ErrorCode.none,
        state.leader,
        state.leader_epoch,
        state.isr,
        current.version,
    )
