"""Lab 7, exercise ``range``: RangeAssignor (see ``make lab 7``; the lab's page says
what an assignor is and the rules every one keeps)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    sorted_members,
)
from minikafka.labs import ExerciseNotDone

FILE = "labs/07-assignors/range.py"
__all__ = ["Assignment", "RangeAssignor", "TopicPartition", "sorted_members"]


@attrs.frozen
class RangeAssignor:
    """Each topic on its own: its partitions cut into contiguous ranges, one per member
    subscribed to it, the first members taking one more when it does not divide."""

    name = "range"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, cluster: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        raise ExerciseNotDone("RangeAssignor.assign", "divmod per topic", FILE)
