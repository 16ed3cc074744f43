"""Wrong on purpose: the leader's deletion and the low watermark, each function wrong in
one way.

Each is minikafka's rule (``Partition.delete_records_on_leader``,
``Partition.low_watermark``) with one knob of :func:`delete` or :func:`lowest` turned;
mutants.toml switches one function in at a time.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.replication._partition import Partition
from minikafka.replication._partition_base import ReplicationError


def delete(
    self: Partition,
    offset: int,
    *,
    leader_only: bool = True,
    policy: bool = True,
    minus_one_is_hw: bool = True,
    refuse_past_hw: bool = True,
    extra: int = 0,
    returns_start: bool = False,
) -> int:
    """minikafka's rule, unless a knob says otherwise."""
    self._check_online()
    if leader_only and not self.is_leader:
        raise ReplicationError(ErrorCode.not_leader_or_follower, "not the leader")
    log = self.log
    if policy and not log.config.delete:
        raise ReplicationError(ErrorCode.policy_violation, "compacted")
    converted = log.high_watermark if offset == -1 and minus_one_is_hw else offset
    if not 0 <= converted <= log.high_watermark:
        if refuse_past_hw or converted < 0:
            raise ReplicationError(ErrorCode.offset_out_of_range, "out of range")
        converted = log.high_watermark
    log.maybe_increment_log_start_offset(converted + extra, "client")
    return log.log_start_offset if returns_start else converted


def deletes_one_too_many(self: Partition, offset: int) -> int:
    return delete(self, offset, extra=1)


def minus_one_deletes_nothing(self: Partition, offset: int) -> int:
    # -1 is taken as an offset: below 0, refused as out of range.
    return delete(self, offset, minus_one_is_hw=False)


def past_the_hw_clamped(self: Partition, offset: int) -> int:
    return delete(self, offset, refuse_past_hw=False)


def compacted_deleted(self: Partition, offset: int) -> int:
    return delete(self, offset, policy=False)


def follower_deletes(self: Partition, offset: int) -> int:
    return delete(self, offset, leader_only=False)


def waits_for_the_start(self: Partition, offset: int) -> int:
    return delete(self, offset, returns_start=True)


def lowest(
    self: Partition,
    *,
    followers: bool = True,
    isr_only: bool = True,
    skip_unsaid: bool = False,
) -> int:
    """minikafka's rule, unless a knob says otherwise."""
    starts = [self.log.log_start_offset]
    for replica in self.remote_replicas.values():
        if not followers or (isr_only and replica.broker_id not in self.isr):
            continue
        if skip_unsaid and replica.log_start_offset < 0:
            continue
        starts.append(replica.log_start_offset)
    return min(starts)


def leader_only(self: Partition) -> int:
    return lowest(self, followers=False)


def every_replica(self: Partition) -> int:
    return lowest(self, isr_only=False)


def skips_unsaid(self: Partition) -> int:
    return lowest(self, skip_unsaid=True)
