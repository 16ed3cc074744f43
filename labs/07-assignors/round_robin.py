"""Lab 7, exercise ``roundrobin``: RoundRobinAssignor."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    topic_partitions,
)
from minikafka.labs import ExerciseNotDone

FILE = "labs/07-assignors/round_robin.py"
__all__ = ["RoundRobinAssignor", "TopicPartition", "topic_partitions"]


@attrs.frozen
class RoundRobinAssignor:
    """All partitions of all subscribed topics, sorted, dealt to the members in turn; a
    member not subscribed to a partition's topic is passed over."""

    name = "roundrobin"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        raise ExerciseNotDone(
            "RoundRobinAssignor.assign", "a cursor over members", FILE
        )
