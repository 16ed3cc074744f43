"""``minikafka produce``: Kafka's ``kafka-console-producer.sh`` on minikafka's client.

Each line of input is one record (Kafka's ``LineMessageReader``): the line is the value,
or, with ``--key-separator SEP`` (Kafka's ``parse.key=true`` and ``key.separator``), the
text before the first SEP is the key and the rest the value; a line without SEP is an
error that stops the producer, as in Kafka.

Lines are gathered the way the producer's RecordAccumulator gathers records: a flush
happens when ``batch_lines`` lines or ``batch_bytes`` bytes are waiting, when the first
waiting line is ``linger_ms`` old, or at the end of input. A flush builds one record batch
per partition (``minikafka.log.build_batch``, compressed with ``--compression``) and
sends one Produce request (v8) per leader. The partition is ``--partition`` if given;
otherwise a keyed record goes where Kafka's DefaultPartitioner sends it
(``murmur2(key) mod partitions``, so a Java client and this tool agree), and the unkeyed
records of one flush stick to one partition, the next flush taking the next partition
(KIP-480's sticky partitioner, turning at each batch).

``--acks 0`` sends without waiting (the broker does not answer); ``1`` and ``all`` wait
and print each partition's error under Kafka's name. The producer is not idempotent
(no InitProducerId): batches carry producer id -1.
"""

from __future__ import annotations

import datetime
import os
import random
import sys
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.produce.v8.response import ProduceResponse
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from minikafka.client import partition_for_key
from minikafka.common import Acks
from minikafka.log import CompressionType, build_batch, make_records

from ._connection import Cluster, KafkaError, ToolError, check, error_name, lone_errors

ACKS = {"0": Acks.NONE, "1": Acks.LEADER, "all": Acks.ALL, "-1": Acks.ALL}
COMPRESSIONS = {c.name.lower(): c for c in CompressionType}
_RECORD_OVERHEAD = 8  # a record's length, attributes, deltas and header count, roughly


@attrs.frozen
class ProduceOptions:
    topic: str
    partition: int | None = None
    # ConsoleProducer's --request-required-acks default, "all"
    acks: Acks = attrs.field(default=Acks.ALL, converter=Acks)
    compression: CompressionType = CompressionType.NONE
    key_separator: str | None = None
    batch_lines: int = 500
    batch_bytes: int = 16384  # batch.size
    linger_ms: int = 1000  # ConsoleProducer's --timeout, its linger.ms
    timeout_ms: int = 30_000  # the Produce request's timeout (request.timeout.ms)


@attrs.frozen
class Ack:
    """A batch the broker appended: where and at which offsets."""

    partition: int
    base_offset: int
    count: int


@attrs.define
class ProduceResult:
    sent: int = 0
    """records sent and, unless acks=0, acknowledged"""
    failed: int = 0
    acks: list[Ack] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)


def parse_acks(value: str) -> Acks:
    try:
        return ACKS[value.lower()]
    except KeyError:
        raise ToolError(f"invalid --acks {value!r}: expected 0, 1 or all") from None


def parse_compression(value: str) -> CompressionType:
    try:
        return COMPRESSIONS[value.lower()]
    except KeyError:
        names = "|".join(COMPRESSIONS)
        raise ToolError(f"invalid --compression {value!r}: expected {names}") from None


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@attrs.define(eq=False)
class ConsoleProducer:
    """Parses lines into records and sends them in batches; see the module docstring."""

    cluster: Cluster
    options: ProduceOptions
    report: Callable[[str], None] = attrs.field(default=_to_stderr)
    result: ProduceResult = attrs.field(init=False, factory=ProduceResult)
    leaders: dict[int, int] = attrs.field(init=False, factory=dict)
    _sticky: int = attrs.field(init=False, default=-1)
    _line_number: int = attrs.field(init=False, default=0)

    async def start(self) -> None:
        """Look up the topic's partitions and leaders (the producer may auto-create it).

        Like Kafka's producer, this happens at the first send: no input, no metadata.
        """
        await self._refresh()
        partition = self.options.partition
        if partition is not None and partition not in self.leaders:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition,
                f"topic {self.options.topic!r} has no partition {partition}",
            )
        self._sticky = random.randrange(len(self.leaders))

    async def _refresh(self) -> None:
        response = await self.cluster.metadata([self.options.topic], allow_auto_topic_creation=True)
        (topic,) = response.topics
        check(topic.error_code, f"topic {self.options.topic!r}")
        self.leaders = {int(p.partition_index): int(p.leader_id) for p in topic.partitions}
        if not self.leaders:
            raise KafkaError(ErrorCode.leader_not_available, f"topic {self.options.topic!r}")

    def parse_line(self, line: bytes) -> tuple[bytes | None, bytes]:
        """LineMessageReader.readMessage: (key, value) of one line, ``\\n``/``\\r\\n`` cut."""
        self._line_number += 1
        line = line.removesuffix(b"\n").removesuffix(b"\r")
        separator = self.options.key_separator
        if separator is None:
            return None, line
        key, found, value = line.partition(separator.encode())
        if not found:
            text = line.decode(errors="replace")
            raise ToolError(f"No key separator found on line number {self._line_number}: {text!r}")
        return key, value

    async def run(self, lines: AsyncIterable[bytes]) -> ProduceResult:
        """Read ``lines`` to the end, sending as the module docstring says."""
        send_lines, receive_lines = trio.open_memory_channel[bytes](self.options.batch_lines)
        with lone_errors():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, lines, send_lines)
                try:
                    await self._accumulate(receive_lines)
                finally:
                    nursery.cancel_scope.cancel()
        return self.result

    async def _accumulate(self, receive_lines: trio.MemoryReceiveChannel[bytes]) -> None:
        pending: list[tuple[bytes | None, bytes]] = []
        size = 0
        deadline = float("inf")
        while True:
            line: bytes | None = None
            with trio.move_on_at(deadline):
                try:
                    line = await receive_lines.receive()
                except trio.EndOfChannel:
                    break
            if line is not None:
                try:
                    key, value = self.parse_line(line)
                except ToolError:
                    await self.send(pending)  # what came before the bad line still goes
                    raise
                if not pending:
                    deadline = trio.current_time() + self.options.linger_ms / 1000
                pending.append((key, value))
                size += len(value) + len(key or b"") + _RECORD_OVERHEAD
                if len(pending) < self.options.batch_lines and size < self.options.batch_bytes:
                    continue
            await self.send(pending)
            pending, size, deadline = [], 0, float("inf")
        await self.send(pending)

    async def send(self, pairs: list[tuple[bytes | None, bytes]]) -> None:
        """One batch per partition of ``pairs``, one Produce request per leader."""
        if not pairs:
            return
        if not self.leaders:
            await self.start()
        by_partition: dict[int, list[tuple[bytes | None, bytes]]] = {}
        unkeyed = self._next_sticky()
        for key, value in pairs:
            by_partition.setdefault(self._partition(key, unkeyed), []).append((key, value))
        now_ms = int(time.time() * 1000)
        batches = {
            p: build_batch(
                make_records(records, timestamp_ms=now_ms), compression=self.options.compression
            )
            for p, records in by_partition.items()
        }
        by_leader: dict[int, list[int]] = {}
        for p in sorted(batches):
            by_leader.setdefault(self.leaders[p], []).append(p)
        for leader, partitions in by_leader.items():
            counts = {p: len(by_partition[p]) for p in partitions}
            try:
                await self._produce(leader, {p: batches[p] for p in partitions}, counts)
            except ToolError as e:
                # Kafka's producer reports a failed send through its callback and goes on.
                self._fail(sum(counts.values()), str(e))

    def _next_sticky(self) -> int:
        self._sticky = (self._sticky + 1) % len(self.leaders)
        return self._sticky

    def _partition(self, key: bytes | None, unkeyed: int) -> int:
        if self.options.partition is not None:
            return self.options.partition
        if key is None:
            return unkeyed
        return partition_for_key(key, len(self.leaders))

    async def _produce(
        self, leader: int, batches: dict[int, bytes], counts: dict[int, int]
    ) -> None:
        body = ProduceRequest(
            transactional_id=None,
            acks=i16(self.options.acks),
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=self.options.timeout_ms)),
            topic_data=(
                TopicProduceData(
                    name=TopicName(self.options.topic),
                    partition_data=tuple(
                        PartitionProduceData(index=i32(p), records=Records(batch))
                        for p, batch in batches.items()
                    ),
                ),
            ),
        )
        node = self.cluster.node(leader)
        if self.options.acks is Acks.NONE:
            await self.cluster.send_only(node, body)
            self.result.sent += sum(counts.values())
            return
        response = await self.cluster.request(node, body, ProduceResponse)
        retry = False
        for topic in response.responses:
            for p in topic.partition_responses:
                partition, count = int(p.index), counts.get(int(p.index), 0)
                if p.error_code == ErrorCode.none:
                    self.result.sent += count
                    self.result.acks.append(Ack(partition, int(p.base_offset), count))
                    continue
                retry |= p.error_code in _STALE_METADATA
                detail = f": {p.error_message}" if p.error_message else ""
                self._fail(
                    count,
                    f"Error when sending {count} records to topic {topic.name} partition "
                    f"{partition}: {error_name(p.error_code)}{detail}",
                )
        if retry:
            # The failed records are reported, not retried; the next flush goes to
            # whoever leads now.
            await self._refresh()

    def _fail(self, count: int, message: str) -> None:
        self.result.failed += count
        self.result.errors.append(message)
        self.report(message)


_STALE_METADATA = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.unknown_topic_or_partition,
    }
)


async def _pump(lines: AsyncIterable[bytes], channel: trio.MemorySendChannel[bytes]) -> None:
    async with channel:
        async for line in lines:
            await channel.send(line)


async def produce(
    cluster: Cluster,
    options: ProduceOptions,
    lines: AsyncIterable[bytes],
    report: Callable[[str], None] | None = None,
) -> ProduceResult:
    """Send ``lines`` to ``options.topic``: what ``minikafka produce`` does with stdin."""
    producer = ConsoleProducer(cluster, options, report or _to_stderr)
    return await producer.run(lines)


async def read_lines(fd: int, chunk: int = 65536) -> AsyncIterator[bytes]:
    """The lines of a file descriptor (stdin), read in a worker thread.

    ``abandon_on_cancel``: a Ctrl-C must not wait for a terminal that never types again.
    """
    buffer = b""
    while True:
        data = await trio.to_thread.run_sync(os.read, fd, chunk, abandon_on_cancel=True)
        if not data:
            break
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line
    if buffer:
        yield buffer
