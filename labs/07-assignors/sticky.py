"""Lab 7, exercise ``sticky``: the sticky target both sticky assignors are built on."""

from __future__ import annotations

from collections.abc import Mapping

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import (
    Subscription,
)
from minikafka.coordination.assignors._sticky import MemberData, current_owners
from minikafka.labs import ExerciseNotDone

FILE = "labs/07-assignors/sticky.py"
__all__ = ["MemberData", "current_owners", "sticky_assignment"]


def sticky_assignment(
    cluster: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    member_data: Mapping[str, MemberData],
) -> dict[str, list[TopicPartition]]:
    """The sticky target, every member's partitions sorted: balanced first (counts
    differ by at most one where subscriptions allow), then moving as few partitions as
    possible away from ``current_owners(cluster, subscriptions, member_data)``, which
    tells what each member owns and may keep. Both StickyAssignor and
    CooperativeStickyAssignor are built on this function."""
    raise ExerciseNotDone(
        "sticky_assignment",
        "quotas first when every member wants the same topics",
        FILE,
    )
