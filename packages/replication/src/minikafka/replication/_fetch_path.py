"""The fetch path (Kafka's ``ReplicaManager.fetchMessages``): a fetch is read from the
local log as file slices, and answered at once if ``fetch.max.wait.ms`` is 0, if there
is an error, or if at least ``fetch.min.bytes`` are there; otherwise a DelayedFetch
waits, completed by the append or the high-watermark move that brings enough.

A follower's fetch is also how the leader learns what the follower has: a read that
succeeded records the follower's log end, which may move the high watermark (the
follower hears of it in the same answer) and bring the follower back into the ISR (a
proposal, among the call's messages). A follower asks here too where a leader epoch ends
(OffsetsForLeaderEpoch, KIP-101 and KIP-279) before it truncates.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.log import LogOffsetMetadata, OffsetOutOfRangeError

from ._delayed import DelayedFetch
from ._fetcher import EpochAnswer, EpochRequest
from ._manager_base import ReplicaManagerBase, ReplicaManagerResult
from ._partition_base import ReplicationError
from ._results import FetchParams, FetchPartition, FetchPartitionResult, FetchResponse


@attrs.define(eq=False)
class FetchPath(ReplicaManagerBase):
    """Reads for consumers and followers, answered now or when there is enough."""

    def fetch_messages(
        self,
        params: FetchParams,
        fetches: list[FetchPartition],
        request_id: int,
        now: float,
    ) -> ReplicaManagerResult:
        """Read each partition; answer now or park a DelayedFetch until enough data.

        As for ``append_records``: the answer to ``request_id`` is returned now, or
        by the call that completes the DelayedFetch. A follower's fetch that brings it
        back up to the HW adds it to the ISR: the proposal is among the messages.
        """
        results = self.read_from_local_log(params, fetches)
        if params.is_from_follower:
            # Only a read that succeeded says what the follower has: a fetch past the log
            # end or from a fenced epoch must not count toward the HW (Kafka updates the
            # follower's state from the read's result, after the read).
            results = [
                (
                    fetch,
                    self._update_follower_fetch_state(
                        params.replica_id, fetch, result, now
                    ),
                )
                for fetch, result in results
            ]
        total, errors = 0, False
        for _, result in results:
            total += result.size
            # An error, or a log the fetcher must truncate first, is answered at once.
            errors = errors or (
                result.error_code is not ErrorCode.none
                or result.diverging_epoch is not None
            )
        if (
            params.max_wait_ms <= 0
            or not fetches
            or total >= params.min_bytes
            or errors
        ):
            return self._result(now, FetchResponse(request_id, results))
        positions = [
            (fetch, self._fetch_position(fetch, result)) for fetch, result in results
        ]
        operation = DelayedFetch(
            now + params.max_wait_ms / 1000,
            request_id,
            params,
            positions,
            self.partitions.get,
            lambda: self.read_from_local_log(params, fetches),
            created=now,
        )
        keys = [fetch.topic_partition for fetch in fetches]
        if self.fetch_purgatory.try_complete_else_watch(operation, keys):
            return self._result(now, operation.response)
        return self._parked(now)

    def read_from_local_log(
        self, params: FetchParams, fetches: list[FetchPartition]
    ) -> list[tuple[FetchPartition, FetchPartitionResult]]:
        """Read in request order within ``max_bytes`` overall (Kafka's
        readFromLocalLog).

        The first partition that has data is read even if its first batch is larger than
        the limits (``min_one_message``), so a consumer never gets stuck behind a batch
        bigger than its ``max.partition.fetch.bytes``; after that the limits hold.
        """
        limit = params.max_bytes
        min_one_message = True
        results: list[tuple[FetchPartition, FetchPartitionResult]] = []
        for fetch in fetches:
            result = self._read(
                params, fetch, min(fetch.max_bytes, limit), min_one_message
            )
            if result.size > 0:
                min_one_message = False
            limit = max(0, limit - result.size)
            results.append((fetch, result))
        return results

    def _read(
        self,
        params: FetchParams,
        fetch: FetchPartition,
        max_bytes: int,
        min_one_message: bool,
    ) -> FetchPartitionResult:
        partition = self.partitions.get(fetch.topic_partition)
        if partition is None:
            missing = self._missing_partition_result(fetch.topic_partition)
            return FetchPartitionResult(
                missing.error_code, error_message=missing.error_message
            )
        if (
            params.is_from_follower
            and partition.is_leader
            and params.replica_id not in partition.remote_replicas
        ):
            return FetchPartitionResult(
                ErrorCode.not_leader_or_follower,
                error_message=f"broker {params.replica_id} is not a replica of "
                f"{fetch.topic_partition}",
            )
        try:
            if fetch.last_fetched_epoch >= 0:
                diverging = partition.diverging_epoch(
                    fetch.fetch_offset,
                    fetch.current_leader_epoch,
                    fetch.last_fetched_epoch,
                )
                if diverging is not None:
                    # Nothing is read: the fetcher truncates first, then fetches again.
                    log = partition.log
                    return FetchPartitionResult(
                        ErrorCode.none,
                        high_watermark=log.high_watermark,
                        last_stable_offset=log.last_stable_offset,
                        log_start_offset=log.log_start_offset,
                        diverging_epoch=diverging,
                    )
            read = partition.read_records(
                fetch.fetch_offset,
                max_bytes,
                from_follower=params.is_from_follower,
                min_one_message=min_one_message,
                current_leader_epoch=fetch.current_leader_epoch,
                read_committed=params.read_committed,
            )
        except ReplicationError as exc:
            return FetchPartitionResult(exc.error_code, error_message=str(exc))
        except (
            OSError
        ) as exc:  # a read the disk refused (EIO): Kafka takes the dir offline
            message = self.storage_failed(fetch.topic_partition, exc)
            return FetchPartitionResult(
                ErrorCode.kafka_storage_error, error_message=message
            )
        except OffsetOutOfRangeError as exc:
            log = partition.log
            return FetchPartitionResult(
                ErrorCode.offset_out_of_range,
                high_watermark=log.high_watermark,
                last_stable_offset=log.last_stable_offset,
                log_start_offset=log.log_start_offset,
                error_message=str(exc),
            )
        return FetchPartitionResult(
            ErrorCode.none,
            high_watermark=read.high_watermark,
            last_stable_offset=read.last_stable_offset,
            log_start_offset=read.log_start_offset,
            records=read.info.records,
            aborted_transactions=read.info.aborted_transactions,
        )

    def _fetch_position(
        self, fetch: FetchPartition, result: FetchPartitionResult
    ) -> LogOffsetMetadata | None:
        if result.error_code is not ErrorCode.none:
            return None
        partition = self.partitions[fetch.topic_partition]
        return partition.log.offset_metadata(fetch.fetch_offset)

    def _update_follower_fetch_state(
        self,
        replica_id: int,
        fetch: FetchPartition,
        result: FetchPartitionResult,
        now: float,
    ) -> FetchPartitionResult:
        partition = self.partitions.get(fetch.topic_partition)
        if (
            partition is None
            or result.error_code is not ErrorCode.none
            or result.diverging_epoch is not None  # its fetch offset is not its log's
        ):
            return result
        moved = partition.update_follower_fetch_state(
            replica_id, fetch.fetch_offset, now, fetch.log_start_offset
        )
        # The follower said its log start: a DeleteRecords may be answered.
        self.delayed.check_delete_records(fetch.topic_partition)
        proposal = partition.take_isr_change()
        if proposal is not None:
            self._proposals.append(proposal)  # it caught up: proposed back
        if not moved:
            return result
        self._partition_changed(fetch.topic_partition)
        # The follower hears at once of the HW its own fetch moved, as in Kafka.
        log = partition.log
        return result.with_offsets(log.high_watermark, log.last_stable_offset)

    # --- OffsetsForLeaderEpoch (KIP-101, KIP-279) ----------------------------------------

    def last_offsets_for_leader_epochs(
        self, requests: Iterable[EpochRequest]
    ) -> list[EpochAnswer]:
        """What this leader answers a follower's OffsetsForLeaderEpoch, per partition:
        where the asked epoch ends here, or why it cannot say (Kafka's
        ``ReplicaManager.lastOffsetForLeaderEpoch``)."""
        answers = []
        for request in requests:
            tp = request.topic_partition
            partition = self.partitions.get(tp)
            if partition is None:
                # As Fetch answers it: unknown here (Kafka's answer to a partition that
                # does not exist), or offline with its log dir.
                error = self._missing_partition_result(tp).error_code
                answers.append(EpochAnswer(tp, error))
                continue
            try:
                epoch, end = partition.last_offset_for_leader_epoch(
                    request.current_leader_epoch, request.leader_epoch
                )
            except ReplicationError as exc:
                answers.append(EpochAnswer(tp, exc.error_code))
            else:
                answers.append(EpochAnswer(tp, ErrorCode.none, epoch, end))
        return answers
