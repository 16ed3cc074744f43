"""The Fetcher: fetch requests to the leaders, records back to ``poll`` (seed 000).

For every assigned partition with a position and nothing already buffered, the
Fetcher asks the partition's leader for records from the position: one Fetch request
per leader, and at most one in flight per leader at a time (Kafka's Fetcher waits
for a node's answer before asking it again). A request waits on the broker until
``fetch.min.bytes`` are there or ``fetch.max.wait.ms`` passes (the broker's
DelayedFetch, the fetch chapter), and takes at most ``max.partition.fetch.bytes`` per
partition and ``fetch.max.bytes`` in all. What comes back is buffered (Kafka's
``completedFetches``) and handed to the application ``max.poll.records`` at a time;
while the application works through one fetch's records, the Fetcher is already
fetching the next ones from where they end (read ahead by at most one more fetch per
partition, so the buffer stays bounded).

A fetched record set is a run of v2 batches: the first may start before the position
(the batch that holds it), the last may be cut off at the size limit. Records before
the position are skipped, a cut-off batch is fetched again from its start next time,
and control batches (transaction markers) move the position on without handing
anything out. With ``isolation.level=read_committed`` (KIP-98) nothing at or past the
last stable offset is handed out, and neither are the records of aborted transactions:
the Fetch response lists each aborted transaction of the range read (its producer id
and first offset); taken in order of first offset, a transaction is aborted from the
first batch that reaches its first offset until its producer's abort marker, and the
producer's transactional batches in between are skipped (Kafka's ``CompletedFetch``).

Errors: OFFSET_OUT_OF_RANGE resets the position by ``auto.offset.reset`` (or is
raised to the application with ``none``); a leader that moved (NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH...) refreshes the metadata and the partition is fetched from the
new leader.

A core (it keeps no time: nothing it does waits on a clock): each driving call returns
one :class:`~minikafka.common.CoreResult`, its messages the requests to send
(:class:`FetchPlan`, :class:`ListOffsetsPlan`, :class:`OffsetsForLeaderEpochPlan`), its
replies the errors for the application's next ``poll``. Records go out by :meth:`take`,
the answer to the application's ``poll``.
"""

from __future__ import annotations

import collections
import struct
from collections.abc import Mapping, Sequence
from typing import Never, TypeAlias

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, TopicPartition
from minikafka.coordination.member import SubscriptionState
from minikafka.log import (
    CorruptRecordError,
    Record,
    decode_batch,
    read_end_txn_marker,
)

from ._config import ConsumerConfig
from ._message import KafkaError
from ._metadata import ClientMetadata

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_STALE_METADATA = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.kafka_storage_error,
    }
)


@attrs.frozen
class FetchPlan:
    """One Fetch request: the leader, per partition the offset and byte limit, and the
    leader epochs the consumer knows (KIP-320: a leader that is older or newer than that
    answers FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH instead of records)."""

    node: int
    partitions: tuple[tuple[TopicPartition, int, int], ...]
    leader_epochs: tuple[int, ...] = ()  # per partition, -1 if not known


@attrs.frozen
class ListOffsetsPlan:
    """One ListOffsets request: the leader, and per partition the timestamp to look up
    (``EARLIEST`` or ``LATEST``: a position reset by ``auto.offset.reset`` or a seek)."""

    node: int
    partitions: tuple[tuple[TopicPartition, int], ...]


@attrs.frozen
class OffsetsForLeaderEpochPlan:
    """One OffsetsForLeaderEpoch request (KIP-320): the new leader, and per partition the
    leader epoch the consumer now knows and the epoch of the records its position
    follows."""

    node: int
    partitions: tuple[tuple[TopicPartition, int, int], ...]


FetcherRequest: TypeAlias = FetchPlan | ListOffsetsPlan | OffsetsForLeaderEpochPlan
FetcherResult: TypeAlias = CoreResult[Never, KafkaError, FetcherRequest]
"""What a call into the Fetcher hands back: requests to send (messages) and errors for
the application (replies)."""


@attrs.frozen
class FetchedPartition:
    """One partition's part of a Fetch response."""

    error: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    records: bytes | None = None
    # (producer id, first offset) of each aborted transaction in the range fetched
    aborted_transactions: tuple[tuple[int, int], ...] = ()
    # ``records_from``'s answer for the fetch offset, when the shell read the record set
    # already (outside the lock the application's thread takes records under).
    decoded: tuple[list[Record], list[int], int] | None = None


@attrs.define
class _Completed:
    """Records fetched for one partition and not yet handed out: ``records[index:]``."""

    topic_partition: TopicPartition
    position: int
    records: list[Record]
    epochs: list[int]  # each record's batch's leader epoch (KIP-320)
    next_position: int  # where the partition stands once every one is handed out
    index: int = 0


def records_from(
    data: bytes,
    position: int,
    stable_end: int | None,
    verify_crc: bool,
    aborted_transactions: Sequence[tuple[int, int]] = (),
) -> tuple[list[Record], list[int], int]:
    """The records at or after ``position`` (and before ``stable_end``) in a fetched
    record set, their batches' leader epochs, and the position after them. With a
    ``stable_end`` (read_committed) the batches of ``aborted_transactions`` (producer
    id, first offset) are left out."""
    records: list[Record] = []
    epochs: list[int] = []
    committed_only = stable_end is not None
    # ordered by first offset: each joins the aborted producers when a batch reaches it
    upcoming = sorted(aborted_transactions, key=lambda a: a[1], reverse=True)
    aborting: set[int] = set()  # producers whose open transaction was aborted
    at = 0
    while len(data) - at >= _OFFSET_AND_LENGTH.size:
        _, length = _OFFSET_AND_LENGTH.unpack_from(data, at)
        if len(data) - at < _OFFSET_AND_LENGTH.size + length:
            break  # cut off at the size limit: fetched again from its start
        header, batch = decode_batch(data, at, verify_crc=verify_crc)
        at += header.size
        if stable_end is not None and header.base_offset >= stable_end:
            break
        skip = False
        if committed_only and header.producer_id >= 0:
            while upcoming and upcoming[-1][1] <= header.last_offset:
                aborting.add(upcoming.pop()[0])
            if header.is_control:
                if batch and _is_abort_marker(batch[0]):
                    aborting.discard(header.producer_id)  # its aborted run ends here
            elif header.is_transactional and header.producer_id in aborting:
                skip = True
        if header.next_offset <= position:
            continue
        if not header.is_control and not skip:
            if header.base_offset < position:
                batch = [r for r in batch if r.offset >= position]
            records += batch
            epochs += [header.partition_leader_epoch] * len(batch)
        position = header.next_offset
    return records, epochs, position


def _is_abort_marker(record: Record) -> bool:
    try:
        return not read_end_txn_marker(record).commit
    except ValueError:
        return False  # another kind of control record


@attrs.define
class Fetcher:
    config: ConsumerConfig
    subscriptions: SubscriptionState
    metadata: ClientMetadata
    _in_flight: set[int] = attrs.field(factory=set)
    _resetting: set[int] = attrs.field(factory=set)
    _buffered: collections.deque[_Completed] = attrs.field(factory=collections.deque)
    _leader_epochs: dict[TopicPartition, int] = attrs.field(factory=dict)  # last seen
    _validating: set[int] = attrs.field(factory=set)

    # --- fetching -----------------------------------------------------------------

    def prepare(self) -> FetcherResult:
        """Fetch requests to send now: one per leader with none in flight."""
        buffered: dict[TopicPartition, list[_Completed]] = {}
        for completed in self._buffered:
            buffered.setdefault(completed.topic_partition, []).append(completed)
        self._note_leader_epochs()
        by_node: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        for tp in self.subscriptions.fetchable():
            waiting = buffered.get(tp, [])
            if len(waiting) > 1:
                continue  # two fetches' worth waits: enough read ahead (memory bounded)
            leader = self.metadata.leader_of(tp)
            if leader is None:
                self.metadata.request_update()
                continue
            if leader in self._in_flight:
                continue
            by_node.setdefault(leader, []).append(
                (
                    tp,
                    self._fetch_position(tp, waiting),
                    self.config.max_partition_fetch_bytes,
                )
            )
        self._in_flight.update(by_node)
        return CoreResult(
            messages=tuple(
                FetchPlan(
                    node,
                    tuple(parts),
                    tuple(self._leader_epochs.get(tp, -1) for tp, *_ in parts),
                )
                for node, parts in sorted(by_node.items())
            )
        )

    # --- KIP-320: the position checked after a leader change ------------------------

    def _note_leader_epochs(self) -> None:
        """A partition whose leader epoch went up since its position was fetched waits
        for validation: the new leader's log may not hold what the old one served
        (an unclean election, or records the old leader had not replicated)."""
        for tp, state in self.subscriptions.assignment.items():
            epoch = self.metadata.leader_epoch_of(tp)
            if epoch is None:
                continue
            known = self._leader_epochs.get(tp)
            self._leader_epochs[tp] = epoch
            if known is not None and epoch > known and state.leader_epoch is not None:
                state.awaiting_validation = True

    def prepare_validations(self) -> FetcherResult:
        """OffsetsForLeaderEpoch to send, one per leader: for each partition, the leader
        epoch the consumer now knows and the epoch of the records its position
        follows."""
        self._note_leader_epochs()
        by_node: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        for tp, state in self.subscriptions.assignment.items():
            if not state.awaiting_validation or state.leader_epoch is None:
                continue
            leader = self.metadata.leader_of(tp)
            if leader is None:
                self.metadata.request_update()
            elif leader not in self._validating:
                current = self._leader_epochs.get(tp, -1)
                by_node.setdefault(leader, []).append((tp, current, state.leader_epoch))
        self._validating.update(by_node)
        return CoreResult(
            messages=tuple(
                OffsetsForLeaderEpochPlan(node, tuple(parts))
                for node, parts in by_node.items()
            )
        )

    def on_validation(
        self, node: int, answers: Mapping[TopicPartition, tuple[int, int, int]]
    ) -> FetcherResult:
        """OffsetsForLeaderEpoch answered: (error, epoch, end offset) per partition. An
        end offset below the position means the log was truncated under the consumer:
        the position goes back to it (``auto.offset.reset`` allowing, as Kafka's
        consumer does), or the application hears of it."""
        self._validating.discard(node)
        errors: list[KafkaError] = []
        for tp, (error, _epoch, end_offset) in answers.items():
            state = self.subscriptions.assignment.get(tp)
            if state is None or not state.awaiting_validation:
                continue
            if error in _STALE_METADATA:
                self.metadata.request_update()
                continue
            state.awaiting_validation = False
            if error != ErrorCode.none:
                errors.append(KafkaError(error, f"validating the position of {tp}"))
            elif state.position is not None and 0 <= end_offset < state.position:
                if self.subscriptions.auto_offset_reset == "none":
                    errors.append(
                        KafkaError(
                            ErrorCode.offset_out_of_range,
                            f"{tp}: the log was truncated to {end_offset}, below the "
                            f"position {state.position} (auto.offset.reset=none)",
                        )
                    )
                else:
                    self.subscriptions.seek(tp, end_offset)
                self._buffered = collections.deque(
                    c for c in self._buffered if c.topic_partition != tp
                )
        return CoreResult(replies=tuple(errors))

    def on_validation_failed(self, node: int) -> None:
        self._validating.discard(node)
        self.metadata.request_update()

    def _fetch_position(self, tp: TopicPartition, waiting: Sequence[_Completed]) -> int:
        """Where the next fetch of ``tp`` starts: after what is buffered, so that the
        next records are on their way while the application works through these."""
        if waiting:
            return waiting[-1].next_position
        position = self.subscriptions.position(tp)
        assert position is not None  # fetchable
        return position

    def on_response(
        self, plan: FetchPlan, results: Mapping[TopicPartition, FetchedPartition]
    ) -> FetcherResult:
        """A Fetch answered: its records buffered for :meth:`take`, and the errors the
        application is to hear of."""
        self._in_flight.discard(plan.node)
        errors: list[KafkaError] = []
        for tp, offset, _ in plan.partitions:
            result = results.get(tp)
            state = self.subscriptions.assignment.get(tp)
            waiting = [c for c in self._buffered if c.topic_partition == tp]
            if result is None or state is None or state.position is None:
                continue  # revoked, or reset while the fetch was out
            if offset != self._fetch_position(tp, waiting):
                continue  # sought elsewhere while the fetch was out
            state.high_watermark = result.high_watermark
            if result.error == ErrorCode.none:
                try:
                    records, epochs, after = result.decoded or self.decode(
                        result, offset
                    )
                except CorruptRecordError as exc:
                    errors.append(KafkaError(ErrorCode.corrupt_message, f"{tp}: {exc}"))
                    continue
                if records:
                    self._buffered.append(
                        _Completed(tp, offset, records, epochs, after)
                    )
                elif after > offset:
                    state.position = after  # only control batches: step over them
            elif result.error == ErrorCode.offset_out_of_range:
                if not self.subscriptions.request_reset(tp):
                    errors.append(
                        KafkaError(
                            result.error,
                            f"{tp} at {offset}, and auto.offset.reset=none",
                        )
                    )
            elif result.error in _STALE_METADATA:
                self.metadata.request_update()
            else:
                errors.append(KafkaError(result.error, f"fetching {tp}"))
        return CoreResult(replies=tuple(errors))

    def decode(
        self, result: FetchedPartition, offset: int
    ) -> tuple[list[Record], list[int], int]:
        """The records of ``result`` from ``offset`` on (no state touched: the shell may
        call it before taking the lock). Raises CorruptRecordError."""
        committed_only = self.config.isolation_level == "read_committed"
        stable_end = result.last_stable_offset if committed_only else None
        return records_from(
            result.records or b"",
            offset,
            stable_end,
            self.config.check_crcs,
            result.aborted_transactions if committed_only else (),
        )

    def on_failure(self, plan: FetchPlan) -> None:
        """No answer (the connection failed): fetch again once the metadata is fresh."""
        self._in_flight.discard(plan.node)
        self.metadata.request_update()

    def take(self, max_records: int) -> list[tuple[TopicPartition, list[Record]]]:
        """Up to ``max_records`` buffered records, as runs of one partition's records in
        order, positions moved past them (no object made per record: a consumer hands
        out hundreds of thousands a second)."""
        out: list[tuple[TopicPartition, list[Record]]] = []
        count = 0
        while self._buffered and count < max_records:
            completed = self._buffered[0]
            tp = completed.topic_partition
            state = self.subscriptions.assignment.get(tp)
            if state is None or state.position != completed.position or state.paused:
                self._buffered.popleft()  # revoked, sought elsewhere, or paused: dropped
                continue
            start = completed.index
            end = min(len(completed.records), start + max_records - count)
            taken = completed.records[start:end]
            out.append((tp, taken))
            count += len(taken)
            completed.index = end
            if end == len(completed.records):
                completed.position = completed.next_position
                self._buffered.popleft()
            else:
                completed.position = taken[-1].offset + 1
            state.position = completed.position
            state.leader_epoch = completed.epochs[end - 1]
        return out

    def has_buffered(self) -> bool:
        return bool(self._buffered)

    def clear_buffer(self) -> None:
        self._buffered.clear()

    # --- resetting positions ------------------------------------------------------

    def prepare_resets(self) -> FetcherResult:
        """ListOffsets to send, one per leader: each partition's EARLIEST or LATEST."""
        by_node: dict[int, list[tuple[TopicPartition, int]]] = {}
        for tp, timestamp in self.subscriptions.awaiting_reset().items():
            leader = self.metadata.leader_of(tp)
            if leader is None:
                self.metadata.request_update()
            elif leader not in self._resetting:
                by_node.setdefault(leader, []).append((tp, timestamp))
        self._resetting.update(by_node)
        return CoreResult(
            messages=tuple(
                ListOffsetsPlan(node, tuple(parts)) for node, parts in by_node.items()
            )
        )

    def on_reset(
        self, node: int, offsets: Mapping[TopicPartition, tuple[int, int]]
    ) -> FetcherResult:
        """ListOffsets answered: (error, offset) per partition."""
        self._resetting.discard(node)
        errors: list[KafkaError] = []
        for tp, (error, offset) in offsets.items():
            if error == ErrorCode.none:
                self.subscriptions.reset_done(tp, offset)
            elif error in _STALE_METADATA:
                self.metadata.request_update()
            else:
                errors.append(KafkaError(error, f"ListOffsets for {tp}"))
        return CoreResult(replies=tuple(errors))

    def on_reset_failed(self, node: int) -> None:
        self._resetting.discard(node)
        self.metadata.request_update()
