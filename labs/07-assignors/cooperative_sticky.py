"""Lab 7, exercise ``cooperative``: CooperativeStickyAssignor (KIP-429). Its target is
``sticky_assignment``, yours once the ``sticky`` exercise is done."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import (
    Assignment,
    RebalanceProtocol,
    Subscription,
)
from minikafka.coordination.assignors._cooperative_sticky import (
    cooperative_member_data,
    encode_cooperative_user_data,
)
from minikafka.coordination.assignors._sticky import sticky_assignment
from minikafka.labs import ExerciseNotDone

FILE = "labs/07-assignors/cooperative_sticky.py"
__all__ = ["CooperativeStickyAssignor", "sticky_assignment"]


@attrs.frozen
class CooperativeStickyAssignor:
    """KIP-429: the sticky target, except that a partition another member still owns is
    withheld from its new owner in this rebalance (the owner revokes it and rejoins,
    and the follow-up rebalance hands it over), so no partition ever has two
    consumers."""

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def target(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """The sticky assignment the two rounds converge to (given)."""
        data = {m: cooperative_member_data(s) for m, s in subscriptions.items()}
        return sticky_assignment(cluster, subscriptions, data)

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        raise ExerciseNotDone(
            "CooperativeStickyAssignor.assign",
            "the target, minus what someone else owns now",
            FILE,
        )

    @staticmethod
    def subscription_user_data(generation: int = -1) -> bytes:
        """The user data a member sends with its subscription (given)."""
        return encode_cooperative_user_data(generation)
