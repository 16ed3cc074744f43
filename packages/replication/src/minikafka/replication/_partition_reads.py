"""What a leader answers a reader: a fetch's records (consumers up to the high
watermark, followers to the log end), ListOffsets, and a follower's
OffsetsForLeaderEpoch (KIP-279).

Every read first checks that the partition is online and led here, and the leader epoch
the asker names (KIP-320): an older one is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH, so a client on stale metadata learns it at once. A new leader
whose high watermark has not yet reached the start of its epoch answers "latest" with
OFFSET_NOT_AVAILABLE (KIP-207) rather than an offset lower than the previous leader gave.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from minikafka.log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchDataInfo,
    FetchIsolation,
    OffsetOutOfRangeError,
    TimestampAndOffset,
)

from ._partition_base import PartitionBase, ReplicationError


@attrs.frozen
class LogReadResult:
    """A read for a fetch, with the offsets the response reports beside the records."""

    info: FetchDataInfo
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int


@attrs.define(eq=False)
class PartitionReads(PartitionBase):
    """A leader's answers to Fetch, ListOffsets and OffsetsForLeaderEpoch."""

    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        from_follower: bool,
        min_one_message: bool,
        current_leader_epoch: int = -1,
        read_committed: bool = False,
    ) -> LogReadResult:
        """Batches from ``fetch_offset``: read_uncommitted consumers up to the HW,
        read_committed ones up to the last stable offset, followers to the LEO."""
        self._check_leader_epoch(current_leader_epoch)
        log = self.log
        # Snapshot the offsets before reading, as Kafka does: the response must not
        # claim a HW beyond the data it carries.
        high_watermark = log.high_watermark
        last_stable_offset = log.last_stable_offset
        isolation = (
            FetchIsolation.LOG_END
            if from_follower
            else FetchIsolation.TXN_COMMITTED
            if read_committed
            else FetchIsolation.HIGH_WATERMARK
        )
        info = log.read(
            fetch_offset,
            max_bytes,
            max_offset=None if from_follower else high_watermark,
            min_one_message=min_one_message,
            isolation=isolation,
        )
        return LogReadResult(
            info,
            high_watermark=high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            last_stable_offset=last_stable_offset,
        )

    def diverging_epoch(
        self, fetch_offset: int, current_leader_epoch: int, last_fetched_epoch: int
    ) -> tuple[int, int] | None:
        """Whether a fetcher whose last record has ``last_fetched_epoch`` and who reads
        from ``fetch_offset`` holds a log that diverged from this one (Fetch v12+):
        then ``(epoch, end offset)``, the largest epoch here at most its own and where
        that ends, to truncate to; None if the logs agree. OFFSET_OUT_OF_RANGE if this
        log cannot say where that epoch ends or the offset is below the log start
        (Kafka's ``Partition.readRecords``)."""
        self._check_leader_epoch(current_leader_epoch)
        log = self.log
        epoch, end = log.leader_epoch_cache.end_offset_for(
            last_fetched_epoch, log.log_end_offset
        )
        if epoch < 0 or end < 0:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: no end offset known for the last fetched "
                f"epoch {last_fetched_epoch}"
            )
        if fetch_offset < log.log_start_offset:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: fetch offset {fetch_offset} is below the log "
                f"start offset {log.log_start_offset}"
            )
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def fetch_offset_for_timestamp(
        self,
        timestamp: int,
        current_leader_epoch: int = -1,
        read_committed: bool = False,
    ) -> TimestampAndOffset | None:
        """ListOffsets for a consumer: earliest, latest (the HW, or the last stable
        offset for read_committed) or the first at a time below it."""
        self._check_leader_epoch(current_leader_epoch)
        log = self.log
        # A read_committed consumer may read up to the LSO only (Kafka's
        # fetchOffsetForTimestamp with READ_COMMITTED): that is its "latest".
        hw = log.last_stable_offset if read_committed else log.high_watermark
        # KIP-207: a new leader learns the HW from its followers' fetches, so until the
        # HW reaches the start of its epoch, "latest" could be lower than what the
        # previous leader already answered. Kafka answers OFFSET_NOT_AVAILABLE
        # (retriable) then.
        start = self.leader_epoch_start_offset
        lagging = start is not None and start > hw
        if timestamp == LATEST_TIMESTAMP:
            if lagging:
                raise self._offset_not_available(hw)
            # A consumer may not see past the HW, so "latest" is the HW, not the LEO.
            return TimestampAndOffset(
                -1, hw, log.leader_epoch_cache.epoch_for_offset(hw)
            )
        found = log.fetch_offset_by_timestamp(timestamp)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return found
        if found is not None and found.offset >= hw:
            found = None  # nothing a consumer may read yet has such a timestamp
        if found is None and lagging:
            raise self._offset_not_available(hw)
        return found

    def _offset_not_available(self, hw: int) -> ReplicationError:
        return ReplicationError(
            ErrorCode.offset_not_available,
            f"the high watermark {hw} of {self.topic_partition} has not reached the start "
            f"{self.leader_epoch_start_offset} of leader epoch {self.leader_epoch} yet",
        )

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[int, int]:
        """OffsetsForLeaderEpoch, as the leader answers it (KIP-279): the largest epoch
        at most ``leader_epoch`` this log knows, and where it ends. The asker names the
        leader epoch it believes current, checked as in KIP-320."""
        self._check_leader_epoch(current_leader_epoch)
        return self.log.leader_epoch_cache.end_offset_for(
            leader_epoch, self.log.log_end_offset
        )

    def _check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320: a client that names a leader epoch is told when its view is off."""
        self._check_online()
        if not self.is_leader:
            raise ReplicationError(
                ErrorCode.not_leader_or_follower,
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition}",
            )
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise ReplicationError(
                ErrorCode.fenced_leader_epoch,
                f"leader epoch {current_leader_epoch} is older than {self.leader_epoch}",
            )
        if current_leader_epoch > self.leader_epoch:
            raise ReplicationError(
                ErrorCode.unknown_leader_epoch,
                f"leader epoch {current_leader_epoch} is newer than {self.leader_epoch}",
            )
