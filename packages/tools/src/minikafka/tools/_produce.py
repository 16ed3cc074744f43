"""``minikafka produce``: Kafka's ``kafka-console-producer.sh``, a loop over minikafka's producer.

Kafka's ConsoleProducer is a thin loop: it reads a line, turns it into a record
(``LineMessageReader``) and hands it to ``KafkaProducer.send``; batching, partitioning,
retries and idempotence are the producer's. This one is the same loop over
:class:`minikafka.client.AsyncProducer`: each line is one record, its value the line, or,
with ``--key-separator SEP`` (Kafka's ``parse.key=true`` and ``key.separator``), its key
the text before the first SEP and its value the rest; a line without SEP is an error that
stops the producer after what came before it is sent, as in Kafka.

The flags become the producer's configuration (:func:`producer_config`): ``--acks``,
``--compression`` (``compression.type``), ``--batch-size`` (``batch.size``),
``--linger-ms`` (ConsoleProducer's ``--timeout``, its ``linger.ms``, 1000 by default),
``--request-timeout-ms``, and any client property with ``--producer-property KEY=VALUE``,
checked by the client's configuration, which names a bad key. Keyed records go where
Kafka's partitioner sends them (murmur2), keyless ones stick to a partition per batch
(KIP-794), and with the client's defaults the producer is idempotent (with ``--acks``
other than ``all`` it is not, as Kafka's default yields). ``--sync`` waits for each
record's acknowledgement before reading the next line (Kafka's ``--sync``).

A record whose delivery fails is reported on stderr, as Kafka's ErrorLoggingCallback does,
and the tool goes on; it exits 1 if any failed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping

import attrs
import trio

from minikafka.client import AsyncProducer, KafkaException, ProducerConfig
from minikafka.client import KafkaError as ClientError
from minikafka.client import Message as ClientMessage
from minikafka.common import Acks
from minikafka.log import CompressionType

from ._connection import BrokerError, ToolError, checked, lone_errors

ACKS = {"0": Acks.NONE, "1": Acks.LEADER, "all": Acks.ALL, "-1": Acks.ALL}
COMPRESSIONS = {c.name.lower(): c for c in CompressionType}
CLIENT_ID = "minikafka-console-producer"


@attrs.frozen
class ProduceOptions:
    topic: str
    partition: int | None = None
    # ConsoleProducer's --request-required-acks default, "all"
    acks: Acks = attrs.field(default=Acks.ALL, converter=Acks)
    compression: CompressionType = CompressionType.NONE
    key_separator: str | None = None
    batch_size: int = 16384  # batch.size (ConsoleProducer's --batch-size)
    linger_ms: int = 1000  # ConsoleProducer's --timeout, its linger.ms
    timeout_ms: int = 30_000  # request.timeout.ms
    sync: bool = False
    properties: Mapping[str, str] = attrs.field(factory=dict)  # --producer-property


@attrs.define
class ProduceResult:
    sent: int = 0
    """records acknowledged (or, with acks=0, sent)"""
    failed: int = 0
    delivered: list[tuple[int, int]] = attrs.field(factory=list)
    """(partition, offset) of each acknowledged record, in report order (offset -1 with
    acks=0, which gets no answer)"""
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


def producer_config(
    bootstrap_servers: str, options: ProduceOptions
) -> dict[str, object]:
    """The producer's configuration: the flags under Kafka's keys, then the
    ``--producer-property`` pairs, which win (as in Kafka's ConsoleProducer)."""
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap_servers,
        "client.id": CLIENT_ID,
        "acks": "all" if options.acks is Acks.ALL else str(int(options.acks)),
        "compression.type": options.compression.name.lower(),
        "batch.size": options.batch_size,
        "linger.ms": options.linger_ms,
        "request.timeout.ms": options.timeout_ms,
    }
    config.update(options.properties)
    return config


def check_config(options: ProduceOptions, bootstrap_servers: str) -> dict[str, object]:
    """:func:`producer_config`, checked by the client's ProducerConfig (ToolError naming
    the key), before anything connects."""
    return checked(
        "producer",
        ProducerConfig.from_dict,
        producer_config(bootstrap_servers, options),
    )


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@attrs.define
class LineReader:
    """Kafka's LineMessageReader: (key, value) of each line, ``\\n``/``\\r\\n`` cut."""

    key_separator: str | None
    line_number: int = 0

    def parse(self, line: bytes) -> tuple[bytes | None, bytes]:
        self.line_number += 1
        line = line.removesuffix(b"\n").removesuffix(b"\r")
        if self.key_separator is None:
            return None, line
        key, found, value = line.partition(self.key_separator.encode())
        if not found:
            text = line.decode(errors="replace")
            raise ToolError(
                f"No key separator found on line number {self.line_number}: {text!r}"
            )
        return key, value


async def produce(
    bootstrap_servers: str,
    options: ProduceOptions,
    lines: AsyncIterable[bytes],
    report: Callable[[str], None] | None = None,
) -> ProduceResult:
    """Send ``lines`` to ``options.topic``: what ``minikafka produce`` does with
    stdin."""
    config = check_config(options, bootstrap_servers)
    result = ProduceResult()
    say = report or _to_stderr
    reader = LineReader(options.key_separator)

    def on_delivery(error: ClientError | None, message: ClientMessage) -> None:
        if error is None:
            result.sent += 1
            result.delivered.append((message.partition(), message.offset()))
            return
        result.failed += 1
        key = message.key()
        text = (
            f"Error when sending message to topic {message.topic()} with key: "
            f"{'null' if key is None else f'{len(key)} bytes'}, value: "
            f"{len(message.value() or b'')} bytes with error: {error.name()}: "
            f"{error.str()}"
        )
        result.errors.append(text)
        say(text)

    partition = -1 if options.partition is None else options.partition
    with lone_errors():
        async with AsyncProducer.open(config) as producer:
            try:
                async for line in lines:
                    key, value = reader.parse(line)
                    await producer.produce(
                        options.topic, value, key, partition, on_delivery=on_delivery
                    )
                    if options.sync:
                        await producer.flush()
            except KafkaException as e:
                error: ClientError = e.args[0]
                raise BrokerError(error.code(), error.str()) from None
            finally:
                # What was read before an error still goes, as Kafka's producer flushes
                # on close (a cancellation, Ctrl-C, is not waited for: flush raises it).
                await producer.flush()
    return result


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
