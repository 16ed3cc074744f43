"""Wrong on purpose: minikafka's ``CooperativeStickyAssignor``, each variant below wrong in one way
(mutants.toml switches one in at a time, in place of minikafka's)."""

from __future__ import annotations

from collections.abc import Mapping

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import Assignment, Subscription
from minikafka.coordination.assignors._cooperative_sticky import (
    CooperativeStickyAssignor,
    _owners,
)
from minikafka.coordination.assignors._round_robin import RoundRobinAssignor

Cluster = Mapping[str, int]
Subscriptions = Mapping[str, Subscription]


def _dealt(
    cluster: Cluster, subscriptions: Subscriptions
) -> dict[str, list[TopicPartition]]:
    result = RoundRobinAssignor().assign(cluster, subscriptions)
    return {m: sorted(a.partitions) for m, a in result.items()}


class CooperativeGivesOwnedAway(CooperativeStickyAssignor):
    """The sticky target as it is: a partition goes to its new owner while its old
    owner still holds it."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        target = self.target(cluster, subscriptions)
        return {m: Assignment(tps) for m, tps in target.items()}


class CooperativeWithholdsFree(CooperativeStickyAssignor):
    """A partition new to its member is withheld even when nobody owns it."""

    def assign(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, Assignment]:
        owners = _owners(subscriptions)
        result = {}
        for member, tps in self.target(cluster, subscriptions).items():
            result[member] = Assignment(
                tp for tp in tps if member in owners.get(tp, set()) or not owners
            )
        return result


class CooperativeDealtTarget(CooperativeStickyAssignor):
    """Withholds correctly, but its target is dealt afresh, not the sticky one."""

    def target(
        self, cluster: Cluster, subscriptions: Subscriptions
    ) -> dict[str, list[TopicPartition]]:
        return _dealt(cluster, subscriptions)
