"""Lab 3, exercises ``delayed_produce`` and ``delayed_fetch``: the purgatory's two
completions (what they must do is in partition.py's docstring, with the high
watermark they wait on)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.labs import ExerciseNotDone
from minikafka.replication._delayed import DelayedFetch, DelayedProduce
from minikafka.replication._results import ProducePartitionResult

FILE = "labs/03-high-watermark/delayed.py"

__all__ = [
    "ErrorCode",
    "ProducePartitionResult",
    "delayed_fetch_try_complete",
    "delayed_produce_try_complete",
]


def delayed_produce_try_complete(self: DelayedProduce) -> bool:
    """Complete the produce once no partition waits for its replicas."""
    raise ExerciseNotDone(
        "delayed_produce_try_complete", "check_enough_replicas_reach_offset", FILE
    )


def delayed_fetch_try_complete(self: DelayedFetch) -> bool:
    """Complete the long poll once min_bytes are there, or its answer changed."""
    raise ExerciseNotDone("delayed_fetch_try_complete", "count bytes to the HW", FILE)
