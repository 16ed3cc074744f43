"""What ``test_files.py`` writes to both brokers, and how it reads ``kafka-dump-log``.

The records are seeded text of many sizes (empty, 1 byte ... 10 kB, and about 1 MiB),
with and without keys and headers, in every codec. Values are drawn from letters, digits,
``-`` and ``_`` only: ``kafka-dump-log --print-data-log`` prints a value as UTF-8 text on
the record's line, so a value without spaces or newlines can be read back from it whole.

:func:`raw_batches` makes record batches with minikafka's own batch builder; they are
sent unchanged to both brokers by :func:`send_batches` (Produce requests, as a client
sends them), so each broker's files hold the same batches at the same offsets and can be
compared byte for byte. :func:`client_records` are for a real client (confluent-kafka,
librdkafka), whose batching and timestamps are its own.

:func:`parse_dump` reads what ``kafka-dump-log --files ... --deep-iteration
--print-data-log`` prints (``minikafka dump-log --deep --index`` prints the same lines):
each file's batches with their records, or its index entries. A line of another shape
raises :class:`UnexpectedOutput` with the line, so a failing test shows what the tool said.
"""

from __future__ import annotations

import datetime
import random
import re
import string
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import WireClient, request_class
from minikafka.log import CompressionType, Header, Record, build_batch
from minikafka.net import ApiKey, NetworkClient, Node, build, nested

DEADLINE = 60.0  # seconds for any one step; a shared 2-core machine may be slow
TIMESTAMP = 1_700_000_000_000  # CreateTime of the raw batches' first record
BIG = 1_000_000  # about 1 MiB: a batch of its own, under max.message.bytes (1 MiB + 12)
SIZES = (0, 1, 10, 100, 1_000, 10_000)
SEGMENT_BYTES = 1024 * 1024  # Kafka 4's smallest segment.bytes
_TEXT = (string.ascii_letters + string.digits + "-_").encode()
# each of the 256 byte values to one of the 64 characters (four bytes each)
_TO_TEXT = bytes(_TEXT[i % len(_TEXT)] for i in range(256))
# Errors a Produce may meet while a new partition's leader is being elected.
_RETRIABLE = {3, 5, 6}  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER


class UnexpectedOutput(AssertionError):
    """A dump printed a line of a shape the parser does not know."""


@attrs.frozen
class Expected:
    """One record as it was sent: what a dump must print for it."""

    key: bytes | None
    value: bytes | None
    header_keys: tuple[str, ...]


def _text(rng: random.Random, size: int) -> bytes:
    return rng.randbytes(size).translate(_TO_TEXT)


def _record(rng: random.Random, size: int) -> Expected:
    key = None if rng.random() < 0.3 else f"key-{rng.randrange(1000)}".encode()
    value = None if rng.random() < 0.05 else _text(rng, size)
    headers = tuple(f"h{i}" for i in range(rng.choice((0, 0, 1, 2))))
    return Expected(key, value, headers)


def raw_batches(seed: int) -> tuple[list[bytes], list[Expected]]:
    """About 3 MiB of batches, every codec in turn, two of them one ~1 MiB record each;
    and the records they hold, in offset order."""
    rng = random.Random(seed)
    codecs = list(CompressionType)
    batches, expected = [], []
    for i in range(60):
        big = i in (7, 31)
        count = 1 if big else rng.choice((1, 2, 5, 20, 50))
        chosen = [_record(rng, BIG if big else rng.choice(SIZES)) for _ in range(count)]
        records = [
            Record(
                j,
                TIMESTAMP + 10 * i + rng.randrange(5),  # not in order within a batch
                r.key,
                r.value,
                tuple(Header(k, b"v") for k in r.header_keys),
            )
            for j, r in enumerate(chosen)
        ]
        batches.append(build_batch(records, compression=codecs[i % len(codecs)]))
        expected += chosen
    return batches, expected


def client_records(seed: int, codec: str, count: int) -> list[Expected]:
    """``count`` records for a client producing with ``codec``; the first is ~1 MiB."""
    rng = random.Random(f"{seed}-{codec}")
    return [_record(rng, BIG if i == 0 else rng.choice(SIZES)) for i in range(count)]


def create_topic(bootstrap: str, topic: str) -> None:
    """One partition, segment.bytes 1 MiB, kept forever; returns once the partition has
    a leader. The raw batches' timestamps are from 2023: with the default seven-day
    retention.ms, the shared Kafka node's retention check (every five minutes) would
    delete them if it ran between their writing and the copy of its files."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"segment.bytes": str(SEGMENT_BYTES), "retention.ms": "-1"}
    for future in admin.create_topics([NewTopic(topic, 1, 1, config=config)]).values():
        future.result(timeout=DEADLINE)
    deadline = time.monotonic() + DEADLINE
    while not _has_leader(admin, topic):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic} has no leader on {bootstrap}")
        time.sleep(0.05)


def _has_leader(admin: AdminClient, topic: str) -> bool:
    # A new topic may be listed before its partitions are.
    found = admin.list_topics(topic, timeout=DEADLINE).topics.get(topic)
    partition = found.partitions.get(0) if found is not None else None
    return partition is not None and partition.leader >= 0


def produce(
    bootstrap: str,
    topic: str,
    codec: str,
    records: Sequence[Expected],
    *,
    idempotent: bool = False,
) -> None:
    """``records`` to partition 0 with a librdkafka producer, in order (one request in
    flight at a time; an idempotent producer keeps the order by its sequences)."""
    failed: list[KafkaError] = []

    def report(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failed.append(error)

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "enable.idempotence": idempotent,
            "max.in.flight.requests.per.connection": 5 if idempotent else 1,
            "linger.ms": 20,
            "message.max.bytes": 2 * BIG,
        }
    )
    for r in records:
        headers: list[tuple[str, str | bytes | None]] = [
            (k, b"v") for k in r.header_keys
        ]
        producer.produce(
            topic, r.value, r.key, partition=0, headers=headers, on_delivery=report
        )
        producer.poll(0)
    assert producer.flush(DEADLINE) == 0, f"undelivered records to {bootstrap}"
    assert not failed, failed


def send_batches(bootstrap: str, topic: str, batches: Sequence[bytes]) -> None:
    """Each batch in a Produce v8 request of its own (acks=1), as a producer sends it."""
    trio.run(_send_batches, bootstrap, topic, batches)


async def _send_batches(bootstrap: str, topic: str, batches: Sequence[bytes]) -> None:
    request = request_class(ApiKey.PRODUCE, 8)
    topic_cls = nested(request, "topic_data")
    partition_cls = nested(topic_cls, "partition_data")
    host, port = bootstrap.rsplit(":", 1)
    async with NetworkClient.open(client_id="test-files") as network:
        client = WireClient(network, Node(-1, host, int(port)))
        for batch in batches:
            body = build(
                request,
                transactional_id=None,
                acks=1,
                timeout=datetime.timedelta(seconds=DEADLINE),
                topic_data=(
                    build(
                        topic_cls,
                        name=topic,
                        partition_data=(build(partition_cls, index=0, records=batch),),
                    ),
                ),
            )
            with trio.fail_after(DEADLINE):
                while True:
                    response = await client.call(body)
                    answer = response.responses[0].partition_responses[0]
                    if answer.error_code not in _RETRIABLE:
                        break
                    await trio.sleep(0.05)
            assert answer.error_code == 0, f"{bootstrap} refused a batch: {answer}"


# --- reading a dump --------------------------------------------------------------------


@attrs.frozen
class DumpedRecord:
    """A record line: its fields up to headerKeys, then the key and payload if shown,
    or a control record's type and what Kafka decoded of it (``LeaderChange``, JSON)."""

    fields: dict[str, str]
    header_keys: tuple[str, ...]
    key: str | None
    payload: str | None
    control: tuple[str, str] | None = None


@attrs.frozen
class DumpedBatch:
    fields: dict[str, str]  # baseOffset, lastOffset, count, ..., crc, isvalid
    records: list[DumpedRecord] = attrs.field(factory=list)


@attrs.define
class DumpedFile:
    """One ``Dumping <path>`` section: a segment's batches or an index's entries."""

    path: Path
    batches: list[DumpedBatch] = attrs.field(factory=list)
    entries: list[tuple[int, int]] = attrs.field(factory=list)
    notes: list[str] = attrs.field(factory=list)  # "Log starting offset: 0", ...


_RECORD = re.compile(
    r"\| (?P<fields>offset: .*? headerKeys: \[(?P<headers>[^\]]*)\])"
    r"(?: key: (?P<key>\S*))?(?: payload: (?P<payload>.*))?"
    r"(?: (?P<control>LeaderChange): (?P<decoded>\{.*\}))?"
)
_INDEX_ENTRY = re.compile(
    r"(?:offset: (-?\d+) position|timestamp: (-?\d+) offset): (-?\d+)"
)
_NOTES = (re.compile(r"Log starting offset: \d+"), re.compile(r".* is empty\."))


def _pairs(text: str, line: str) -> dict[str, str]:
    words = text.split(" ")
    if len(words) % 2 or not all(w.endswith(":") for w in words[::2]):
        raise UnexpectedOutput(f"not 'name: value' pairs: {line!r}")
    return {
        name[:-1]: value for name, value in zip(words[::2], words[1::2], strict=True)
    }


def parse_dump(stdout: str) -> dict[Path, DumpedFile]:
    """Every file of a dump, by the path its ``Dumping`` line names."""
    files: dict[Path, DumpedFile] = {}
    current: DumpedFile | None = None
    for line in stdout.splitlines():
        if line.startswith("Dumping "):
            current = files[Path(line.removeprefix("Dumping "))] = DumpedFile(
                Path(line.removeprefix("Dumping "))
            )
            continue
        if current is None:
            raise UnexpectedOutput(f"a line before any 'Dumping': {line!r}")
        if line.startswith("baseOffset: "):
            current.batches.append(DumpedBatch(_pairs(line, line)))
        elif match := _RECORD.fullmatch(line):
            if not current.batches:
                raise UnexpectedOutput(f"a record line before any batch: {line!r}")
            headers = match["headers"]
            current.batches[-1].records.append(
                DumpedRecord(
                    _pairs(match["fields"], line),
                    tuple(headers.split(",")) if headers else (),
                    match["key"],
                    match["payload"],
                    (match["control"], match["decoded"]) if match["control"] else None,
                )
            )
        elif match := _INDEX_ENTRY.fullmatch(line):
            first = match[1] if match[1] is not None else match[2]
            current.entries.append((int(first), int(match[3])))
        elif any(note.fullmatch(line) for note in _NOTES):
            current.notes.append(line)
        else:
            raise UnexpectedOutput(f"a line the parser does not know: {line!r}")
    return files


def shown(data: bytes | None) -> str | None:
    """How a dump shows a key or value of this module's text: as it is."""
    return None if data is None else data.decode()
