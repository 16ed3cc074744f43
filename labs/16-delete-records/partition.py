"""Lab 16: write where a deletion starts and what it waits for (KIP-107; the Log and
Replication chapters).

Each function is a method of minikafka's class (its first argument, ``self``), switched
in by ``make lab 16 EX=delete_on_the_leader`` (then ``low_watermark``).

- ``Partition.delete_records_on_leader(offset)``: DeleteRecords reaches the partition's
  leader with an offset; every record below it is to go (-1 means the high watermark).
  Only the leader deletes (else ``ReplicationError`` NOT_LEADER_OR_FOLLOWER), only
  where the topic's ``cleanup.policy`` includes ``delete`` (``self.log.config.delete``;
  else POLICY_VIOLATION), and only below the high watermark (an offset past it, or
  below -1, is OFFSET_OUT_OF_RANGE). Call ``self._check_online()`` first, as every
  leader operation does. The log start moves at once with
  ``self.log.maybe_increment_log_start_offset(offset, "client")``, which never moves
  it back. Return the offset asked, -1 made the high watermark: the answer waits until
  the low watermark reaches it (and a deletion below the start waits for no more).
- ``Partition.low_watermark()``: the smallest log start offset among the leader
  (``self.log.log_start_offset``) and its in-sync followers (``self.isr``; each
  follower's ``ReplicaState`` in ``self.remote_replicas`` has the ``log_start_offset``
  its last fetch said, -1 until one did). A follower outside the ISR does not count.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.labs import ExerciseNotDone
from minikafka.replication._partition import Partition
from minikafka.replication._partition_base import ReplicationError

FILE = "labs/16-delete-records/partition.py"

__all__ = ["ErrorCode", "ReplicationError", "delete_records_on_leader", "low_watermark"]


def delete_records_on_leader(self: Partition, offset: int) -> int:
    """Move the leader's log start to ``offset`` (-1: the high watermark); return the
    offset the answer waits for."""
    raise ExerciseNotDone(
        "delete_records_on_leader",
        "refuse, then maybe_increment_log_start_offset",
        FILE,
    )


def low_watermark(self: Partition) -> int:
    """The smallest log start offset among the leader and its in-sync followers."""
    raise ExerciseNotDone("low_watermark", "min over the ISR's log starts", FILE)
