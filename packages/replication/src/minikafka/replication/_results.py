"""What the ReplicaManager is asked and what it answers, per partition (Kafka's names).

Plain values, so KafkaApis can turn them into any version of the Produce and Fetch
responses and tests can compare them.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.log import AbortedTxn, FileSlice


@attrs.frozen
class ProducePartitionResult:
    """Kafka's ``PartitionResponse`` for one partition of a produce request."""

    error_code: ErrorCode
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: tuple[tuple[int, str], ...] = ()
    """``(index in the batch, why)`` per refused record (KIP-467, Produce v8)."""


@attrs.frozen
class FetchParams:
    """The request-level settings of a fetch (Kafka's ``FetchParams``)."""

    replica_id: int  # -1 for a consumer, the broker id for a follower
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    read_committed: bool = False
    """A consumer with ``isolation.level=read_committed``: reads stop at the last
    stable offset and name the aborted transactions they cover (KIP-98)."""

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0


@attrs.frozen
class FetchPartition:
    """What one partition of a fetch asks for (Kafka's ``PartitionData``)."""

    topic_partition: TopicPartition
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    """A follower's own log start offset (Fetch v5+), for the leader's low watermark;
    -1 from a consumer."""
    last_fetched_epoch: int = -1
    """Fetch v12+: the epoch of the last record the fetcher holds (-1: none named); the
    leader answers a log that diverged there with ``diverging_epoch``."""


@attrs.frozen
class FetchPartitionResult:
    """Kafka's ``FetchPartitionData``: the records as a file slice, and the offsets."""

    error_code: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: FileSlice | None = None
    error_message: str | None = None
    diverging_epoch: tuple[int, int] | None = None
    """``(epoch, end offset)``: the fetcher's last fetched epoch is not this log's at its
    fetch offset; it should truncate to where this epoch ends here (no records sent)."""
    aborted_transactions: tuple[AbortedTxn, ...] | None = None
    """A read_committed read's aborted transactions the records overlap (None for any
    other read)."""

    @property
    def size(self) -> int:
        return self.records.length if self.records is not None else 0

    def with_offsets(
        self, high_watermark: int, last_stable_offset: int
    ) -> FetchPartitionResult:
        """This result with the high watermark and LSO a follower's own fetch moved: run
        on most follower fetches, so built directly rather than by ``attrs.evolve``,
        which looks the class's fields up on every call. Every other field is copied:
        a field added to the class is added here too (a test compares the two)."""
        return FetchPartitionResult(
            error_code=self.error_code,
            high_watermark=high_watermark,
            last_stable_offset=last_stable_offset,
            log_start_offset=self.log_start_offset,
            records=self.records,
            error_message=self.error_message,
            diverging_epoch=self.diverging_epoch,
            aborted_transactions=self.aborted_transactions,
        )


@attrs.frozen
class ProduceResponse:
    """The per-partition answer to the produce request the caller numbered ``request_id``.

    The core hands these back as values; its shell sends them (Kafka's ``responseCallback``
    is called here by the shell, never by the core).
    """

    request_id: int
    results: dict[TopicPartition, ProducePartitionResult]


@attrs.frozen
class FetchResponse:
    """The per-partition answer to the fetch the caller numbered ``request_id``, in the
    request's order."""

    request_id: int
    results: list[tuple[FetchPartition, FetchPartitionResult]]


@attrs.frozen
class DeleteRecordsPartitionResult:
    """One partition's answer to DeleteRecords (KIP-107): the low watermark reached."""

    error_code: ErrorCode
    low_watermark: int = -1
    error_message: str | None = None


@attrs.frozen
class DeleteRecordsResponse:
    """The per-partition answer to the DeleteRecords numbered ``request_id``."""

    request_id: int
    results: dict[TopicPartition, DeleteRecordsPartitionResult]


Response = ProduceResponse | FetchResponse | DeleteRecordsResponse
"""What a ReplicaManager call answers: its own request, or requests it completed."""
