"""The leader elections the ZooKeeper-mode controller is asked for (seed 001; Kafka
2.8's ``KafkaController``): ElectLeaders from an operator (``onReplicaElection``, KIP-460),
the leader-imbalance check that gives partitions back to their preferred replicas
(``checkAndTriggerAutoLeaderRebalance``), and a broker's ControlledShutdown
(``doControlledShutdown``). Each moves partitions OnlinePartition -> OnlinePartition
with the election of :mod:`._machines` that fits it.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from .._records import NO_LEADER
from .._requests import (
    UNCLEAN_ELECTION,
    ElectionResult,
    ElectLeadersRequest,
    ElectLeadersResponse,
)
from .._states import PartitionState, ReplicaState, TopicPartition
from ._machines import (
    ControlledShutdownResult,
    ZkControllerResult,
    ZkStateMachines,
    preferred_leader,
)

_P = PartitionState
_R = ReplicaState


@attrs.define(eq=False)
class LeaderElections(ZkStateMachines):
    def on_elect_leaders(
        self, request: ElectLeadersRequest, now: float
    ) -> ZkControllerResult:
        """ElectLeaders (KIP-460). PREFERRED gives each partition back to its first
        replica where that one is live and in sync (Kafka's
        PreferredReplicaPartitionLeaderElection, an OnlinePartition -> OnlinePartition
        transition). UNCLEAN gives a leader to each partition that has none, from the
        ISR if a member is live, else from any live replica (the offline election with
        unclean election forced on, as Kafka 2.8's ``onReplicaElection`` does for
        ElectionType.UNCLEAN)."""
        self._begin("ElectLeaders", now)
        context = self.context
        unclean = request.election_type == UNCLEAN_ELECTION
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
                results.append(
                    ElectionResult(*tp, ErrorCode.unknown_topic_or_partition)
                )
            elif unclean:
                if current.state.leader != NO_LEADER and context.is_live(
                    current.state.leader
                ):
                    results.append(ElectionResult(*tp, ErrorCode.election_not_needed))
                elif not any(context.is_live(b) for b in replicas):
                    results.append(
                        ElectionResult(
                            *tp,
                            ErrorCode.eligible_leaders_not_available,
                            "no replica of it is alive",
                        )
                    )
                else:
                    electable.append(tp)
                    results.append(ElectionResult(*tp, ErrorCode.none))
            elif current.state.leader == replicas[0]:
                results.append(ElectionResult(*tp, ErrorCode.election_not_needed))
            elif preferred_leader(replicas, current.state.isr, context.is_live) is None:
                why = f"broker {replicas[0]} is not in sync or not available"
                results.append(
                    ElectionResult(*tp, ErrorCode.preferred_leader_not_available, why)
                )
            else:
                electable.append(tp)
                results.append(ElectionResult(*tp, ErrorCode.none))
        self._partitions_to(
            electable, _P.ONLINE, election="unclean_request" if unclean else "preferred"
        )
        return self._end(ElectLeadersResponse(ErrorCode.none, tuple(results)))

    def on_auto_leader_rebalance(self, now: float) -> ZkControllerResult:
        """``auto.leader.rebalance.enable`` (Kafka's
        ``AutoPreferredReplicaLeaderElection`` event, which the shell posts every
        ``leader.imbalance.check.interval.seconds``).

        For each broker, the partitions it is the preferred (first) replica of: if more
        than ``leader.imbalance.per.broker.percentage`` percent of them are led by
        another broker, each of those goes back to it where it is live and in sync.
        Nothing moves while a reassignment is in progress or for a topic being deleted
        (Kafka's ``checkAndTriggerAutoLeaderRebalance``): a broker that came back after
        a failure leads again without anyone asking."""
        self._begin("AutoPreferredReplicaLeaderElection", now)
        context = self.context
        if any(a.adding or a.removing for a in context.topics.values()):
            return self._end()
        preferred_of: dict[int, list[TopicPartition]] = {}
        for tp in context.partitions():
            replicas = context.replicas(tp)
            if replicas and tp in context.leadership and tp[0] not in context.deleting:
                preferred_of.setdefault(replicas[0], []).append(tp)
        electable = []
        percentage = self.config.leader_imbalance_per_broker_percentage
        for broker, partitions in sorted(preferred_of.items()):
            led_by_others = [
                tp for tp in partitions if context.leadership[tp].state.leader != broker
            ]
            if len(led_by_others) * 100 <= percentage * len(partitions):
                continue  # within the imbalance allowed
            electable += [
                tp
                for tp in led_by_others
                if preferred_leader(
                    context.replicas(tp),
                    context.leadership[tp].state.isr,
                    context.is_live,
                )
                is not None
            ]
        self._partitions_to(electable, _P.ONLINE, election="auto_rebalance")
        return self._end()

    def on_controlled_shutdown(
        self, broker_id: int, broker_epoch: int, now: float
    ) -> ZkControllerResult:
        """A broker asks to stop (Kafka's ``doControlledShutdown``): it leaves every ISR,
        the partitions it leads move to another in-sync replica, and the answer lists
        those it still leads (no other replica in sync to take them)."""
        self._begin("ControlledShutdown", now)
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
        led = [
            tp for tp in acted_on if context.leadership[tp].state.leader == broker_id
        ]
        followed = [(tp[0], tp[1], broker_id) for tp in acted_on if tp not in led]
        self._partitions_to(led, _P.ONLINE, election="controlled_shutdown")
        self._replicas_to(followed, _R.OFFLINE_REPLICA)
        remaining = tuple(
            tp for tp in acted_on if context.leadership[tp].state.leader == broker_id
        )
        return self._end(ControlledShutdownResult(ErrorCode.none, remaining))
