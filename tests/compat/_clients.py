"""The produce and consume scenarios, written once and run against every client.

Two families of clients are driven here, each through what it has in common:

- librdkafka's two faces, kcat and confluent-kafka, cannot tell a test what they put on
  the wire: which codec a batch was compressed with, which producer id and sequences it
  carries. Both tests read the batch headers in the broker's segment files directly
  (:func:`stored_batches`, record batch v2, KIP-98) and ask the same questions of them
  (:func:`assert_codec_stored`, :func:`assert_one_idempotent_producer`).
- kafka-python and aiokafka share the Java client's API: a producer that sends records
  to a partition and answers with their metadata, a consumer that ``assign``s,
  ``seek``s and polls. Each ``test_<client>.py`` supplies a small adapter, a
  :class:`Client` (aiokafka's runs its coroutines on an :class:`AsyncioThread`), and the
  scenarios below drive either one. The test modules keep their ``compat`` marks (the
  COMPAT.md's matrix names them) and each client's quirks, with the reasons, in its adapter.

What is read back is compared with what was written, byte for byte: keys, values,
headers, timestamps, offsets and the order within each partition. Every wait has a
deadline.
"""

from __future__ import annotations

import asyncio
import random
import struct
import threading
import time
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import attrs

from minikafka.broker import KafkaApis
from minikafka.broker.testing import BrokerProcess
from minikafka.net import ApiKey

T = TypeVar("T")

WAIT = 20.0  # seconds a test waits for something that normally takes milliseconds
CODECS = {
    "none": 0,
    "gzip": 1,
    "snappy": 2,
    "lz4": 3,
    "zstd": 4,
}  # batch attributes & 7

# (key, value, headers) of one record, as produced and as read back.
Record = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]
Stamps = Sequence[int] | None  # the records' timestamps (ms), or the producer's clock


# --- librdkafka: what its batches look like on disk ----------------------------------------


@attrs.frozen
class StoredBatch:
    """The fields of a record batch v2 header these tests look at."""

    base_offset: int
    last_offset: int
    codec: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int


def stored_batches(data_dir: Path, topic: str, partition: int = 0) -> list[StoredBatch]:
    """The batch headers in the partition's segment files, read without the broker."""
    batches = []
    for segment in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position + 61 <= len(data):
            base_offset, length = struct.unpack_from(">qi", data, position)
            attributes, last_delta = struct.unpack_from(">hi", data, position + 21)
            producer_id, epoch, sequence, count = struct.unpack_from(
                ">qhii", data, position + 43
            )
            batches.append(
                StoredBatch(
                    base_offset,
                    base_offset + last_delta,
                    attributes & 0x7,
                    producer_id,
                    epoch,
                    sequence,
                    count,
                )
            )
            position += 12 + length
    return batches


def stored_codec(codec: str, librdkafka: tuple[int, ...]) -> str:
    """The codec on disk when librdkafka of version ``librdkafka`` is told to use ``codec``.

    librdkafka decides from the broker's ApiVersions and quietly sends a batch
    uncompressed ("Broker does not support compression type X: not compressing batch")
    when it concludes the broker cannot read the codec:

    - lz4 only for a broker that advertises FindCoordinator, its proxy for Kafka >= 0.8.2
      (src/rdkafka_feature.c); this broker does since consumer groups arrived;
    - before librdkafka 2.11.1 (#5130), gzip, snappy and lz4 also need Produce v0 in the
      advertised range, and this broker starts at Produce v3, as Kafka 4.0 does (KIP-896).
    """
    advertised = KafkaApis.SUPPORTED
    if codec == "lz4" and ApiKey.FIND_COORDINATOR not in advertised:
        return "none"
    if (
        codec in ("gzip", "snappy", "lz4")
        and librdkafka < (2, 11, 1)
        and advertised[0][0] > 0
    ):
        return "none"
    return codec


def assert_codec_stored(
    broker: BrokerProcess,
    topic: str,
    count: int,
    codec: str,
    librdkafka: tuple[int, ...],
) -> None:
    """The partition holds ``count`` records, and its batches the codec librdkafka used."""
    batches = stored_batches(broker.data_dir, topic)
    assert sum(b.count for b in batches) == count
    # librdkafka sends a batch uncompressed when compressing does not make it smaller, as
    # may happen to a batch of one record; batches of several must carry the codec.
    several = [b for b in batches if b.count > 1]
    assert several, batches
    assert {b.codec for b in several} == {CODECS[stored_codec(codec, librdkafka)]}


def assert_one_idempotent_producer(batches: Sequence[StoredBatch]) -> None:
    """One producer id (with one epoch) wrote ``batches``, its sequences from 0 on."""
    assert len({(b.producer_id, b.producer_epoch) for b in batches}) == 1
    assert batches[0].producer_id >= 0
    # Sequences run on from batch to batch, starting at 0 (KIP-98).
    assert [b.base_sequence for b in batches] == [b.base_offset for b in batches]


# --- kafka-python and aiokafka: the adapter ------------------------------------------------


class AsyncioThread:
    """An asyncio event loop running in a thread of its own until ``close()``: the
    repository runs pytest under trio, so aiokafka's coroutines run here and the
    scenarios, plain functions, wait for their answers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def start(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        """Run ``coroutine`` on the loop; its result, or its exception."""
        return self.start(coroutine).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)
        self.loop.close()

    def __enter__(self) -> AsyncioThread:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Producer(Protocol):
    def send_all(
        self,
        topic: str,
        records: Sequence[Record],
        partition: int | None = 0,
        at: Stamps = None,
    ) -> list[Any]:
        """Send ``records`` in order (to ``partition``, or where the partitioner puts
        them), wait for every answer; their RecordMetadata, in order. An error the
        broker answered is raised."""
        ...

    def producer_id(self) -> int:
        """The id InitProducerId gave the idempotent producer (client internals)."""
        ...


class Consumer(Protocol):
    """A consumer without a group: ``assign`` and no commits."""

    def assign(self, tps: Sequence[Any]) -> None: ...

    def seek(self, tp: Any, offset: int) -> None: ...

    def seek_to_beginning(self, *tps: Any) -> None: ...

    def seek_to_end(self, tp: Any) -> None: ...

    def position(self, tp: Any) -> int: ...

    def poll_once(self, timeout_ms: int) -> dict[Any, list[Any]]: ...

    def records(self, count: int) -> list[Any]:
        """Poll until ``count`` records arrived (fail at the deadline); them in order."""
        ...

    def fails_out_of_range(self) -> bool:
        """Fetch until the client raises its OffsetOutOfRange error (True) or the
        deadline passes (False)."""
        ...

    def beginning_offsets(self, tps: Sequence[Any]) -> dict[Any, int]: ...

    def end_offsets(self, tps: Sequence[Any]) -> dict[Any, int]: ...

    def offsets_for_times(self, times: Mapping[Any, int]) -> dict[Any, Any]: ...

    def highwater(self, tp: Any) -> int | None: ...

    def last_stable_offset(self, tp: Any) -> int | None:
        """What the last Fetch response said (where the client keeps it)."""
        ...


class Client(Protocol):
    """One client, as the scenarios use it."""

    prefix: str  # of its topics' names
    too_large: type[Exception]  # the error the broker's MESSAGE_TOO_LARGE becomes
    keeps_last_stable_offset: bool  # whether its consumer shows what Fetch answered

    def tp(self, topic: str, partition: int) -> Any: ...

    def create_topic(
        self, name: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> None:
        """Create ``name`` and wait until each partition has a leader."""
        ...

    def producer(self, **config: Any) -> AbstractContextManager[Producer]: ...

    def consumer(self, **config: Any) -> AbstractContextManager[Consumer]:
        """A consumer that does not reset its position on its own unless told."""
        ...

    # The configuration a scenario asks for, in the client's own keys.
    def acks_config(self, acks: int | str) -> dict[str, Any]: ...

    def batch_config(self, codec: str | None, batch_bytes: int) -> dict[str, Any]: ...

    def too_large_config(self) -> dict[str, Any]: ...

    def reconnect_config(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The producer's and the consumer's, to live through a broker restart."""
        ...


def seeded_records(rng: random.Random, count: int, prefix: str) -> list[Record]:
    """Seeded records: keys, values of varied size (some compressible), headers."""
    records: list[Record] = []
    for i in range(count):
        size = rng.choice([0, 1, 17, 300, 2000])
        if i % 2:
            value = rng.randbytes(size)
        else:
            value = (f"{prefix}-{i}-".encode() * (size // 8 + 1))[:size]
        headers = (("seq", str(i).encode()), ("src", prefix.encode()))[: i % 3]
        records.append((f"{prefix}-key-{i}".encode(), value, headers))
    return records


def content(records: Iterable[Any]) -> list[Record]:
    """(key, value, headers) of what a consumer returned."""
    return [(r.key, r.value, tuple(r.headers)) for r in records]


def fill(
    client: Client, topic: str, records: Sequence[Record], partition: int = 0
) -> list[Any]:
    with client.producer(linger_ms=5) as producer:
        return producer.send_all(topic, records, partition)


def seeded_partition(client: Client, name: str, count: int) -> tuple[Any, list[Record]]:
    """Partition 0 of the topic ``<prefix>-<name>``, filled with ``count`` records seeded
    with ``name``; the partition and its records."""
    topic = f"{client.prefix}-{name}"
    records = seeded_records(random.Random(name), count, topic)
    fill(client, topic, records)
    return client.tp(topic, 0), records


def read(client: Client, tp: Any, start: int, count: int, **config: Any) -> list[Any]:
    """A fresh consumer's ``count`` records from ``start``: exactly those, nothing past."""
    with client.consumer(**config) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, start)
        records = consumer.records(count)
        assert [r.offset for r in records] == list(range(start, start + count))
        assert consumer.end_offsets([tp])[tp] == start + count
        # The high watermark the Fetch response carried.
        assert consumer.highwater(tp) == start + count
        return records


def wait_for_end_offset(client: Client, tp: Any, end: int) -> None:
    """Until the partition's end offset is ``end`` (records sent with acks=0 were only
    written to the socket)."""
    with client.consumer() as consumer:
        deadline = time.monotonic() + WAIT
        while consumer.end_offsets([tp])[tp] < end:
            assert time.monotonic() < deadline, f"{tp} never reached offset {end}"
            time.sleep(0.05)


# --- produce -------------------------------------------------------------------------------


def produce_with_acks(client: Client, acks: int | str) -> None:
    topic = f"{client.prefix}-acks-{acks}"
    records = seeded_records(random.Random(f"acks-{acks}"), 50, topic)
    with client.producer(linger_ms=5, **client.acks_config(acks)) as producer:
        sent = producer.send_all(topic, records)
    if acks != 0:  # acks=0 gets no response, so no offsets
        assert [m.offset for m in sent] == list(range(50))
    tp = client.tp(topic, 0)
    wait_for_end_offset(client, tp, 50)
    assert content(read(client, tp, 0, 50)) == records


def produce_compressed(client: Client, codec: str | None) -> list[Record]:
    """200 records in compressed batches, read back whole and from inside a batch; the
    records, for a client that adds more."""
    topic = f"{client.prefix}-codec-{codec or 'none'}"
    records = seeded_records(random.Random(f"codec-{codec}"), 200, topic)
    # Lingering packs many records into each (compressed) batch.
    with client.producer(
        linger_ms=50, **client.batch_config(codec, 16 * 1024)
    ) as producer:
        sent = producer.send_all(topic, records)
    assert [m.offset for m in sent] == list(range(200))
    tp = client.tp(topic, 0)
    assert content(read(client, tp, 0, 200)) == records
    # From the middle of a batch: the broker hands the whole batch, the client skips.
    assert content(read(client, tp, 137, 63)) == records[137:]
    return records


def idempotent_producer(client: Client) -> None:
    topic = f"{client.prefix}-idempotent"
    records = seeded_records(random.Random("idempotent"), 100, topic)
    with client.producer(enable_idempotence=True, linger_ms=5) as producer:
        sent = producer.send_all(topic, records)
        # InitProducerId gave the producer an id; its batches carry it and sequences.
        producer_id = producer.producer_id()
        assert producer_id >= 0
    assert [m.offset for m in sent] == list(range(100))
    # A second producer gets another id.
    with client.producer(enable_idempotence=True) as other:
        other.send_all(topic, [(b"second", b"producer", ())])
        assert other.producer_id() != producer_id
    got = content(read(client, client.tp(topic, 0), 0, 101))
    assert got == [*records, (b"second", b"producer", ())]


def keyed_records_keep_partition_and_order(client: Client) -> None:
    topic = f"{client.prefix}-keyed"
    client.create_topic(topic, partitions=4)
    rng = random.Random("keyed")
    keys = [f"key-{i}".encode() for i in range(10)]
    sent_order = [
        (key, f"{key.decode()}#{i}".encode(), ())
        for i, key in enumerate(rng.choices(keys, k=300))
    ]
    with client.producer(linger_ms=5) as producer:
        placed = producer.send_all(topic, sent_order, partition=None)
    partition_of: dict[bytes | None, int] = {}
    for (key, _, _), metadata in zip(sent_order, placed, strict=True):
        assert partition_of.setdefault(key, metadata.partition) == metadata.partition
    assert len(set(partition_of.values())) > 1  # ten keys spread over four partitions

    with client.consumer() as consumer:
        consumer.assign([client.tp(topic, p) for p in range(4)])
        consumer.seek_to_beginning()
        got = consumer.records(300)
    for p in range(4):
        in_partition = [(r.key, r.value) for r in got if r.partition == p]
        expected = [(k, v) for k, v, _ in sent_order if partition_of[k] == p]
        assert in_partition == expected
        assert [r.offset for r in got if r.partition == p] == list(range(len(expected)))


def record_too_large(client: Client) -> None:
    topic = f"{client.prefix}-too-large"
    tp = client.tp(topic, 0)
    with client.producer(**client.too_large_config()) as producer:
        try:
            producer.send_all(topic, [(b"big", b"x" * 2_000_000, ())])
        except client.too_large:
            pass
        else:
            raise AssertionError("the broker took a record over max.message.bytes")
        (fits,) = producer.send_all(topic, [(b"ok", b"y" * 900_000, ())])
    assert fits.offset == 0  # the rejected batch took no offset
    (record,) = read(client, tp, 0, 1)
    assert (record.key, record.value) == (b"ok", b"y" * 900_000)


def log_append_time(client: Client, codec: str | None) -> list[Any]:
    """message.timestamp.type=LogAppendTime: the broker stamps the batches it appends.
    What the producer was told, for a client that says more."""
    topic = f"{client.prefix}-log-append-time-{codec or 'none'}"
    client.create_topic(topic, configs={"message.timestamp.type": "LogAppendTime"})
    records: list[Record] = [(b"%d" % i, b"v%d" % i, ()) for i in range(10)]
    with client.producer(compression_type=codec, linger_ms=20) as producer:
        before = int(time.time() * 1000)
        sent = producer.send_all(topic, records, at=[1000 + i for i in range(10)])
        after = int(time.time() * 1000)
    # The Produce response carries the append time; the producer's own stamps are gone.
    for metadata in sent:
        assert before - 1000 <= metadata.timestamp <= after + 1000
    got = read(client, client.tp(topic, 0), 0, 10)
    assert [(r.key, r.value) for r in got] == [(k, v) for k, v, _ in records]
    assert [r.timestamp for r in got] == [m.timestamp for m in sent]
    assert all(r.timestamp_type == 1 for r in got)  # LogAppendTime
    return sent


# --- consume by assign ---------------------------------------------------------------------


def consume_from_earliest(client: Client) -> None:
    tp, records = seeded_partition(client, "earliest", 60)
    with client.consumer() as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert consumer.position(tp) == 0
        got = consumer.records(60)
    assert [r.offset for r in got] == list(range(60))
    assert content(got) == records
    assert all(r.topic == tp.topic and r.partition == 0 for r in got)


def consume_from_latest(client: Client) -> None:
    topic = f"{client.prefix}-latest"
    old = seeded_records(random.Random("latest-old"), 20, "old")
    new = seeded_records(random.Random("latest-new"), 5, "new")
    fill(client, topic, old)
    tp = client.tp(topic, 0)
    # A long fetch.max.wait: the broker must answer when data arrives, not at the timeout.
    # (Kept short: a broker stopping later waits out a pending long poll, see
    # test_kafka_python.py's test_stop_with_pending_long_poll.)
    with client.consumer(fetch_max_wait_ms=5000) as consumer:
        consumer.assign([tp])
        consumer.seek_to_end(tp)
        assert consumer.position(tp) == 20
        started = time.monotonic()  # the first fetch goes out in this poll
        assert consumer.poll_once(200) == {}
        fill(client, topic, new)
        got = consumer.records(5)
        waited = time.monotonic() - started
    assert [r.offset for r in got] == list(range(20, 25))
    assert content(got) == new
    assert waited < 4.0, f"fetch waited {waited:.1f}s although records had arrived"


def consume_from_offset(client: Client) -> None:
    tp, records = seeded_partition(client, "offset", 40)
    with client.consumer() as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 25)
        got = consumer.records(15)
        assert [r.offset for r in got] == list(range(25, 40))
        assert content(got) == records[25:]
        # Seek back: the same records again.
        consumer.seek(tp, 3)
        again = consumer.records(37)
    assert content(again) == records[3:]


def consume_from_timestamp(client: Client) -> None:
    topic = f"{client.prefix}-timestamp"
    base = 1_700_000_000_000
    records: list[Record] = [(b"%d" % i, b"at %d" % i, ()) for i in range(10)]
    with client.producer(linger_ms=5) as producer:
        producer.send_all(topic, records, at=[base + 1000 * i for i in range(10)])
    tp = client.tp(topic, 0)
    with client.consumer() as consumer:
        found = consumer.offsets_for_times({tp: base + 4500})[tp]
        assert (found.offset, found.timestamp) == (5, base + 5000)
        exact = consumer.offsets_for_times({tp: base + 3000})[tp]
        assert (exact.offset, exact.timestamp) == (3, base + 3000)
        first = consumer.offsets_for_times({tp: 0})[tp]
        assert (first.offset, first.timestamp) == (0, base)
        assert consumer.offsets_for_times({tp: base + 60_000}) == {tp: None}
        consumer.assign([tp])
        consumer.seek(tp, found.offset)
        got = consumer.records(5)
    assert [(r.offset, r.timestamp, r.value) for r in got] == [
        (i, base + 1000 * i, b"at %d" % i) for i in range(5, 10)
    ]
    assert all(r.timestamp_type == 0 for r in got)  # CreateTime


def read_committed(client: Client) -> None:
    """isolation_level=read_committed: without transactions everything is committed."""
    tp, records = seeded_partition(client, "read-committed", 30)
    with client.consumer(isolation_level="read_committed") as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = consumer.records(30)
        assert [r.offset for r in got] == list(range(30))
        assert consumer.highwater(tp) == 30
        if client.keeps_last_stable_offset:
            # The last stable offset the Fetch response carried: the high watermark.
            assert consumer.last_stable_offset(tp) == 30
        assert consumer.end_offsets([tp]) == {tp: 30}
    assert content(got) == records


def beginning_and_end_offsets(client: Client) -> None:
    topic = f"{client.prefix}-offsets"
    client.create_topic(topic, partitions=3)
    with client.producer(linger_ms=5) as producer:
        for partition, count in [(0, 7), (2, 13)]:
            producer.send_all(topic, [(b"k", b"v", ())] * count, partition=partition)
    tps = [client.tp(topic, p) for p in range(3)]
    with client.consumer() as consumer:
        assert consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
        assert consumer.end_offsets(tps) == dict(zip(tps, [7, 0, 13], strict=True))


def fetch_returns_record_larger_than_fetch_size(client: Client) -> None:
    # KIP-74: a record batch bigger than the fetch limits still comes back (alone).
    topic = f"{client.prefix}-fetch-size"
    records: list[Record] = [(b"%d" % i, bytes([i]) * 5000, ()) for i in range(30)]
    fill(client, topic, records)
    limits = {"max_partition_fetch_bytes": 1024, "fetch_max_bytes": 2048}
    assert content(read(client, client.tp(topic, 0), 0, 30, **limits)) == records


def fetch_out_of_range(client: Client) -> None:
    tp, records = seeded_partition(client, "out-of-range", 5)
    with client.consumer() as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        assert consumer.fails_out_of_range(), "no OffsetOutOfRange within the deadline"
    # With a reset policy the client falls back to the earliest offset.
    with client.consumer(auto_offset_reset="earliest") as resetting:
        resetting.assign([tp])
        resetting.seek(tp, 1000)
        got = resetting.records(5)
    assert content(got) == records


# --- across a broker restart ---------------------------------------------------------------


def bounce(broker: BrokerProcess, how: str) -> None:
    """Restart the broker cleanly (``stop``) or after a SIGKILL (``kill``)."""
    if how == "stop":
        broker.restart()
    else:
        broker.kill()
        broker.start()


def read_back_across_restart(client: Client, broker: BrokerProcess, how: str) -> None:
    """Acknowledged records survive a clean restart and a SIGKILL; clients reconnect."""
    topic = f"{client.prefix}-restart"
    before = seeded_records(random.Random("restart-before"), 80, "before")
    after = seeded_records(random.Random("restart-after"), 20, "after")
    tp = client.tp(topic, 0)
    producer_config, consumer_config = client.reconnect_config()
    # The same producer and consumer live through the restart and reconnect.
    with (
        client.producer(
            enable_idempotence=True, linger_ms=5, **producer_config
        ) as producer,
        client.consumer(**consumer_config) as consumer,
    ):
        producer.send_all(topic, before)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert content(consumer.records(80)) == before

        bounce(broker, how)

        # The idempotent producer carries on with its producer id and sequences.
        sent = producer.send_all(topic, after)
        assert [m.offset for m in sent] == list(range(80, 100))
        assert content(consumer.records(20)) == after
    # A fresh consumer after the restart reads it all, in order.
    assert content(read(client, tp, 0, 100)) == before + after
