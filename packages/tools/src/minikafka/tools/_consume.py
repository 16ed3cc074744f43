"""``minikafka consume``: Kafka's ``kafka-console-consumer.sh``, a loop over minikafka's consumer.

Kafka's ConsoleConsumer polls a ``KafkaConsumer`` and prints each record; fetching,
positions and offset resets are the consumer's. This one is the same loop over
:class:`minikafka.client.AsyncConsumer`, in two ways, as Kafka's:

- with ``--group G`` it subscribes to the topic as a member of group G: the group's
  coordinator assigns it partitions (shared with any other member), it starts from the
  group's committed offsets (``auto.offset.reset`` where there are none: earliest with
  ``--from-beginning``, else latest) and commits as it goes (``enable.auto.commit``);
- without a group it assigns itself ``--partition P``, or every partition of the topic
  (``partitions_for``), and keeps its positions in memory. Where it starts is ``--offset``:
  ``earliest`` and ``latest`` are the consumer's OFFSET_BEGINNING and OFFSET_END (it asks
  the leader with ListOffsets; latest is the high watermark), a number is used as it is.

A position the log no longer (or not yet) holds gets OFFSET_OUT_OF_RANGE and the consumer
resets it as ``auto.offset.reset`` says: earliest if it started from earliest, else latest.
Each record is printed the way Kafka's DefaultMessageFormatter prints it:
``[Partition:P<TAB>][Offset:N<TAB>][key<TAB>]value``, with ``null`` for a missing key or
value. The consumer stops after ``--max-messages`` records, or once ``--timeout-ms``
passes with no new record; otherwise it runs until interrupted. ``--consumer-property
KEY=VALUE`` sets any consumer configuration key (checked, naming a bad key).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import BinaryIO

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.client import (
    OFFSET_BEGINNING,
    OFFSET_END,
    AsyncConsumer,
    ConsumerConfig,
    KafkaException,
    Message,
    TopicPartition,
)
from minikafka.client import KafkaError as ClientError

from ._connection import BrokerError, ToolError, checked, lone_errors

CLIENT_ID = "minikafka-console-consumer"


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
    group: str | None = None
    properties: Mapping[str, str] = attrs.field(factory=dict)  # --consumer-property


def parse_offset(value: str) -> str | int:
    """A ``--offset`` argument: ``earliest``, ``latest`` or a non-negative offset."""
    lowered = value.strip().lower()
    if lowered in ("earliest", "latest"):
        return lowered
    if lowered.isdigit():
        return int(lowered)
    raise ToolError(
        f"invalid --offset {value!r}: expected earliest, latest or an offset >= 0"
    )


def consumer_config(
    bootstrap_servers: str, options: ConsumeOptions
) -> dict[str, object]:
    """The consumer's configuration: the flags under Kafka's keys, then the
    ``--consumer-property`` pairs, which win."""
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap_servers,
        "client.id": CLIENT_ID,
        "auto.offset.reset": "earliest" if options.offset == "earliest" else "latest",
        # A tool that only reads must not create the topic it was asked to read.
        "allow.auto.create.topics": "false",
    }
    if options.group is not None:
        config["group.id"] = options.group
    config.update(options.properties)
    return config


def check_config(options: ConsumeOptions, bootstrap_servers: str) -> dict[str, object]:
    """:func:`consumer_config`, checked by the client's ConsumerConfig (ToolError naming
    the key), before anything connects."""
    return checked(
        "consumer",
        ConsumerConfig.from_dict,
        consumer_config(bootstrap_servers, options),
    )


def format_record(message: Message, options: ConsumeOptions) -> bytes:
    """DefaultMessageFormatter.writeTo: the columns asked for, then the value and a newline."""
    separator = options.separator.encode()
    columns = []
    if options.print_partition:
        columns.append(b"Partition:%d" % message.partition())
    if options.print_offset:
        columns.append(b"Offset:%d" % message.offset())
    if options.print_key:
        key = message.key()
        columns.append(b"null" if key is None else key)
    value = message.value()
    columns.append(b"null" if value is None else value)
    return separator.join(columns) + b"\n"


@attrs.define(eq=False)
class ConsoleConsumer:
    """The loop of ``minikafka consume`` over an open :class:`AsyncConsumer`:
    :meth:`start`, then :meth:`run` (or :meth:`poll` a batch at a time)."""

    consumer: AsyncConsumer
    options: ConsumeOptions
    consumed: int = attrs.field(init=False, default=0)

    async def start(self) -> list[TopicPartition]:
        """Subscribe (with a group) or assign the partitions; those assigned (none yet
        with a group: its coordinator decides)."""
        topic = self.options.topic
        if self.options.group is not None:
            self.consumer.subscribe([topic])
            return []
        known = await self.consumer.partitions_for(topic)
        partition = self.options.partition
        if partition is not None:
            if partition >= len(known):
                raise BrokerError(
                    ErrorCode.unknown_topic_or_partition,
                    f"topic {topic!r} has no partition {partition}",
                )
            known = [TopicPartition(topic, partition)]
        offset = self.options.offset
        start = (
            OFFSET_BEGINNING
            if offset == "earliest"
            else OFFSET_END
            if offset == "latest"
            else offset
        )
        assert isinstance(start, int)
        assigned = [TopicPartition(topic, p.partition, start) for p in known]
        self.consumer.assign(assigned)
        return assigned

    async def poll(
        self, wait_s: float, max_records: int | None = None
    ) -> list[Message]:
        """The records fetched within ``wait_s`` seconds (none if nothing came)."""
        with trio.move_on_after(wait_s):
            try:
                return await self.consumer.getmany(max_records)
            except KafkaException as e:
                error: ClientError = e.args[0]
                raise BrokerError(error.code(), error.str()) from None
        return []

    async def run(self, out: BinaryIO) -> int:
        """Print records until ``max_messages`` or ``timeout_ms`` idle; the count printed."""
        limit = self.options.max_messages
        timeout = (
            None if self.options.timeout_ms is None else self.options.timeout_ms / 1000
        )
        last_data = trio.current_time()
        while limit is None or self.consumed < limit:
            wait = 1.0
            if timeout is not None:
                left = last_data + timeout - trio.current_time()
                if left <= 0:
                    break
                wait = min(wait, left)
            messages = await self.poll(
                wait, None if limit is None else limit - self.consumed
            )
            if messages:
                last_data = trio.current_time()
            for message in messages:
                out.write(format_record(message, self.options))
                self.consumed += 1
            out.flush()
        return self.consumed


@asynccontextmanager
async def console_consumer(
    bootstrap_servers: str, options: ConsumeOptions
) -> AsyncIterator[ConsoleConsumer]:
    """A started :class:`ConsoleConsumer`; on the way out a group member commits its
    positions (with auto-commit) and leaves the group."""
    config = check_config(options, bootstrap_servers)
    with lone_errors():
        async with AsyncConsumer.open(config) as consumer:
            try:
                console = ConsoleConsumer(consumer, options)
                await console.start()
            except KafkaException as e:
                error: ClientError = e.args[0]
                raise BrokerError(error.code(), error.str()) from None
            yield console


async def consume(
    bootstrap_servers: str, options: ConsumeOptions, out: BinaryIO
) -> int:
    """Start, then fetch and print: what ``minikafka consume`` does; the count printed."""
    async with console_consumer(bootstrap_servers, options) as console:
        return await console.run(out)
