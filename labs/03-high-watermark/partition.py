"""Lab 3: write the leader's high watermark and the purgatory's two completions (seed
003; the Replication, Produce and Fetch chapters).

Each function is a method of minikafka's class (its first argument, ``self``), switched
in by ``make lab 3 EX=high_watermark`` (then ``delayed_produce``, ``delayed_fetch``).

- ``Partition.maybe_increment_leader_hw``: the high watermark is the smallest log end
  offset among the in-sync replicas (``self.maximal_isr``: the ISR, plus a replica
  whose addition is in flight), the leader's own LEO included. A follower in that set
  that has not fetched in this leader epoch (no entry, or LEO -1) holds it still. The
  HW never goes back (``self.log.maybe_increment_high_watermark`` says if it moved);
  trace ``HighWatermarkAdvanced`` when it did and ``self.tracer.enabled``, stamped
  with ``now`` (``self.tracer.emit(event, now)``: a core's events carry the time it
  was given).
- ``DelayedProduce.try_complete``: an acks=all produce waits until, for every partition
  in ``self.required_offsets``, ``partition.check_enough_replicas_reach_offset(required)``
  answers (None: not yet; NONE: done; an error: that partition failed). A partition that
  disappeared fails with UNKNOWN_TOPIC_OR_PARTITION. When none is left waiting,
  ``self.force_complete()`` answers (it returns True the first time only).
- ``DelayedFetch.try_complete``: a long poll completes when the partitions it reads hold
  ``self.params.min_bytes`` new bytes up to the HW (up to the LEO for a follower),
  counting at most each partition's ``max_bytes``; and at once when its answer would
  now be an error (the partition moved, the leader epoch changed) or when the data runs
  into another segment than the one the fetch started in. Positions are
  ``LogOffsetMetadata`` (offset, segment base offset, position in the segment).
"""

from __future__ import annotations

from minikafka.labs import ExerciseNotDone
from minikafka.replication._events import HighWatermarkAdvanced
from minikafka.replication._partition import Partition

FILE = "labs/03-high-watermark/partition.py"

__all__ = ["HighWatermarkAdvanced", "maybe_increment_leader_hw"]


def maybe_increment_leader_hw(self: Partition, now: float) -> bool:
    """Move the HW to the smallest LEO in the ISR; True if it moved (and only a leader
    moves it)."""
    raise ExerciseNotDone("maybe_increment_leader_hw", "min over maximal_isr", FILE)
