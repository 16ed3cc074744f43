"""``minikafka consume``: Kafka's ``kafka-console-consumer.sh`` on minikafka's client.

No consumer group: like ``kafka-console-consumer.sh --partition``, the consumer assigns
itself partitions (``--partition P``, or every partition of the topic) and keeps its
positions in memory. Where it starts is ``--offset``: ``earliest`` and ``latest`` are
asked of each partition's leader with ListOffsets (timestamps -2 and -1; latest is the
high watermark), a number is used as it is. A position the log no longer (or not yet)
holds gets OFFSET_OUT_OF_RANGE, and the consumer resets as ``auto.offset.reset`` says:
to the earliest offset if it started from earliest, else to the latest.

Then it fetches (Fetch v11, ``max_wait`` 500 ms, ``min_bytes`` 1) in a loop. A fetched
record set is a run of v2 batches that may start before the position (the batch holding
it) and end in a cut-off batch (``partition_max_bytes`` reached); records before the
position are skipped, the cut-off batch is fetched again next time, and control batches
are stepped over, as Kafka's Fetcher does. Each record is printed the way Kafka's
DefaultMessageFormatter prints it: ``[Partition:P<TAB>][Offset:N<TAB>][key<TAB>]value``,
with ``null`` for a missing key or value.

The consumer stops after ``--max-messages`` records, or once ``--timeout-ms`` passes
with no new record; otherwise it runs until interrupted.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import BinaryIO

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.fetch.v11.response import FetchResponse
from kio.schema.list_offsets.v5.response import ListOffsetsResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from minikafka.client import records_from
from minikafka.log import CorruptRecordError, Record

from ._connection import (
    CONSUMER_REPLICA_ID,
    READ_UNCOMMITTED,
    Cluster,
    KafkaError,
    ToolError,
    check,
    list_offsets_request,
)

EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset
LATEST_TIMESTAMP = -1  # ListOffsets: the high watermark
RETRY_BACKOFF = 0.1  # retry.backoff.ms, after an error that new metadata may fix

_STALE_METADATA = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
    }
)


@attrs.frozen
class ConsumeOptions:
    topic: str
    partition: int | None = None
    offset: str | int = "latest"
    """``earliest``, ``latest`` or an offset (ConsoleConsumer's default is latest)"""
    max_messages: int | None = None
    timeout_ms: int | None = None
    print_key: bool = False
    print_offset: bool = False
    print_partition: bool = False
    separator: str = "\t"  # DefaultMessageFormatter's key.separator
    max_wait_ms: int = 500  # fetch.max.wait.ms
    partition_max_bytes: int = 1024 * 1024  # max.partition.fetch.bytes


@attrs.frozen
class ConsumedRecord:
    partition: int
    record: Record


def parse_offset(value: str) -> str | int:
    """A ``--offset`` argument: ``earliest``, ``latest`` or a non-negative offset."""
    lowered = value.strip().lower()
    if lowered in ("earliest", "latest"):
        return lowered
    if lowered.isdigit():
        return int(lowered)
    raise ToolError(f"invalid --offset {value!r}: expected earliest, latest or an offset >= 0")


def format_record(consumed: ConsumedRecord, options: ConsumeOptions) -> bytes:
    """DefaultMessageFormatter.writeTo: the columns asked for, then the value and a newline."""
    separator = options.separator.encode()
    record = consumed.record
    columns = []
    if options.print_partition:
        columns.append(b"Partition:%d" % consumed.partition)
    if options.print_offset:
        columns.append(b"Offset:%d" % record.offset)
    if options.print_key:
        columns.append(b"null" if record.key is None else record.key)
    columns.append(b"null" if record.value is None else record.value)
    return separator.join(columns) + b"\n"


def records_after(data: bytes, position: int) -> tuple[list[Record], int]:
    """The records at or after ``position`` in a fetched record set, and the next position:
    the client's Fetcher reads it (``minikafka.client.records_from``: a cut-off batch at
    the end is left for the next fetch, a control batch moves the position on)."""
    try:
        records, _, position = records_from(data, position, None, verify_crc=True)
    except CorruptRecordError as e:
        raise ToolError(f"corrupt record set at offset {position}: {e}") from e
    return records, position


@attrs.define(eq=False)
class ConsoleConsumer:
    """Assigned partitions and their positions; :meth:`assign`, then :meth:`run`."""

    cluster: Cluster
    options: ConsumeOptions
    positions: dict[int, int] = attrs.field(init=False, factory=dict)
    leaders: dict[int, int] = attrs.field(init=False, factory=dict)
    consumed: int = attrs.field(init=False, default=0)

    async def assign(self) -> dict[int, int]:
        """Assign the partitions and find each one's starting offset; the positions."""
        await self._refresh()
        partition = self.options.partition
        if partition is None:
            assigned = sorted(self.leaders)
        elif partition in self.leaders:
            assigned = [partition]
        else:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition,
                f"topic {self.options.topic!r} has no partition {partition}",
            )
        offset = self.options.offset
        if isinstance(offset, int):
            self.positions = dict.fromkeys(assigned, offset)
        else:
            self.positions = await self.list_offsets(assigned, offset)
        return dict(self.positions)

    async def _refresh(self) -> None:
        response = await self.cluster.metadata([self.options.topic])
        (topic,) = response.topics
        check(topic.error_code, f"topic {self.options.topic!r}")
        self.leaders = {int(p.partition_index): int(p.leader_id) for p in topic.partitions}
        if not self.leaders:
            raise KafkaError(ErrorCode.leader_not_available, f"topic {self.options.topic!r}")

    async def list_offsets(self, partitions: Sequence[int], which: str) -> dict[int, int]:
        """ListOffsets for ``earliest`` or ``latest``, one request per leader."""
        timestamp = EARLIEST_TIMESTAMP if which == "earliest" else LATEST_TIMESTAMP
        offsets = {}
        for leader, group in self._by_leader(partitions).items():
            body = list_offsets_request({self.options.topic: group}, timestamp)
            response = await self.cluster.request(
                self.cluster.node(leader), body, ListOffsetsResponse
            )
            for topic in response.topics:
                for p in topic.partitions:
                    check(p.error_code, f"ListOffsets of {topic.name}-{p.partition_index}")
                    offsets[int(p.partition_index)] = int(p.offset)
        return offsets

    def _by_leader(self, partitions: Sequence[int]) -> dict[int, list[int]]:
        groups: dict[int, list[int]] = {}
        for p in partitions:
            groups.setdefault(self.leaders[p], []).append(p)
        return groups

    async def poll(self, max_wait_ms: int | None = None) -> list[ConsumedRecord]:
        """One Fetch per leader of the assigned partitions; the new records, in order."""
        wait = self.options.max_wait_ms if max_wait_ms is None else max_wait_ms
        consumed: list[ConsumedRecord] = []
        stale = False
        for leader, group in self._by_leader(sorted(self.positions)).items():
            body = FetchRequest(
                replica_id=BrokerId(CONSUMER_REPLICA_ID),
                max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=wait)),
                min_bytes=i32(1),
                isolation_level=i8(READ_UNCOMMITTED),
                topics=(
                    FetchTopic(
                        topic=TopicName(self.options.topic),
                        partitions=tuple(
                            FetchPartition(
                                partition=i32(p),
                                current_leader_epoch=i32(-1),
                                fetch_offset=i64(self.positions[p]),
                                log_start_offset=i64(-1),
                                partition_max_bytes=i32(self.options.partition_max_bytes),
                            )
                            for p in group
                        ),
                    ),
                ),
                forgotten_topics_data=(),
            )
            response = await self.cluster.request(self.cluster.node(leader), body, FetchResponse)
            check(response.error_code, "Fetch")
            for topic in response.responses:
                for data in topic.partitions:
                    p, error = int(data.partition_index), data.error_code
                    if error == ErrorCode.offset_out_of_range:
                        await self._reset(p)
                    elif error in _STALE_METADATA:
                        stale = True
                    elif error != ErrorCode.none:
                        raise KafkaError(error, f"Fetch of {topic.topic}-{p}")
                    else:
                        records, self.positions[p] = records_after(
                            data.records or b"", self.positions[p]
                        )
                        consumed += (ConsumedRecord(p, r) for r in records)
        if stale:
            # Kafka's retry.backoff.ms before asking again whom to fetch from.
            await trio.sleep(RETRY_BACKOFF)
            await self._refresh()
        return consumed

    async def _reset(self, partition: int) -> None:
        """auto.offset.reset after OFFSET_OUT_OF_RANGE: earliest if we began there."""
        which = "earliest" if self.options.offset == "earliest" else "latest"
        self.positions.update(await self.list_offsets([partition], which))

    async def run(self, out: BinaryIO) -> int:
        """Fetch and print until ``max_messages`` or ``timeout_ms`` idle; the count printed."""
        limit = self.options.max_messages
        timeout = None if self.options.timeout_ms is None else self.options.timeout_ms / 1000
        last_data = trio.current_time()
        while limit is None or self.consumed < limit:
            wait = self.options.max_wait_ms
            if timeout is not None:
                left = last_data + timeout - trio.current_time()
                if left <= 0:
                    break
                wait = min(wait, max(1, int(left * 1000)))
            records = await self.poll(wait)
            if records:
                last_data = trio.current_time()
            for consumed in records:
                if limit is not None and self.consumed >= limit:
                    break
                out.write(format_record(consumed, self.options))
                self.consumed += 1
            out.flush()
        return self.consumed


async def consume(cluster: Cluster, options: ConsumeOptions, out: BinaryIO) -> int:
    """Assign, then fetch and print: what ``minikafka consume`` does; the count printed."""
    consumer = ConsoleConsumer(cluster, options)
    await consumer.assign()
    return await consumer.run(out)
