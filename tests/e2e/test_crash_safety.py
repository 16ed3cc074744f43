"""Crash safety (ARCHITECTURE.md, "Tests"): kill -9 during produce, nothing acknowledged
lost.

Real clients (confluent-kafka and kafka-python) produce with ``acks=all`` and
idempotence to a real broker process while the test SIGKILLs it and restarts it on the
same port and data directory. A record the broker acknowledged was appended to the log (a
single-node ISR); SIGKILL loses the process's memory, not the page cache, so after log
recovery every acknowledged record must be back at the offset it was acknowledged at. The
producers retry what was in flight across the restart, and the idempotent producer state
the broker rebuilds from the log must recognise the retries of batches it already holds:
no record may appear twice. A :class:`Gate` between the clients and the broker arranges
how the log ends at each kill: in records no producer was told about (so the retries are
of written batches) or in acknowledged ones (so recovery must keep the very last batch).
At the end the broker stops cleanly and ``python -m minikafka.log verify`` checks every
partition's segments (length, magic, CRC-32C and offsets of every batch).

Everything the test chooses (records, keys, the kill points and kinds) comes from a seeded
``random.Random``; where a real process is involved (the broker, a client's threads) the
test waits for conditions with deadlines, never for a fixed time.
"""

from __future__ import annotations

import contextlib
import random
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs
import kafka
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

# what confluent_kafka.admin re-exports, typed
from confluent_kafka.cimpl import NewTopic

from minikafka.broker.testing import BrokerProcess
from minikafka.log import CorruptRecordError, iter_batches

# A normal run takes seconds; the deadlines below add up to more than the default 120 s.
pytestmark = pytest.mark.timeout(300)

SEED = 20_05
PARTITIONS = 3
KILLS = 4  # half with the responses held back, half with the requests
LEAD = 400  # records one producer may send ahead of the other
PHASE_TIMEOUT = 45.0  # seconds; each wait below has its own deadline of at most this
# Long enough that a record in flight when the broker dies is retried after the restart
# rather than failed: the producers never give up on a record within the test.
DELIVERY_TIMEOUT_MS = 60_000

_POLL = 0.01  # seconds between looks at a socket or file that has no event to wait on

# What the clients print while the broker is down is expected; keep it short.
_QUIET_LIBRDKAFKA = {"log_level": 3, "reconnect.backoff.max.ms": 250}


@attrs.frozen
class Acked:
    """A record its producer was told was written: where, and what."""

    producer: str
    index: int
    partition: int
    offset: int
    value: bytes = attrs.field(repr=False)  # producer and index say which


@attrs.frozen
class ProducedRecord:
    key: bytes
    value: bytes


@attrs.define(eq=False)
class Ledger:
    """What every producer sent and was told, shared between their threads.

    ``streaming`` names the producers still sending; none of them gets more than ``lead``
    records ahead of another. Without that, the client that holds the GIL longer (the
    pure-Python one) sends most records and the other barely moves between kills.
    """

    streaming: set[str]
    lead: int
    _cond: threading.Condition = attrs.field(init=False, factory=threading.Condition)
    acked: list[Acked] = attrs.field(init=False, factory=list)
    failed: list[str] = attrs.field(init=False, factory=list)
    sent: Counter[str] = attrs.field(init=False, factory=Counter)
    settled: Counter[str] = attrs.field(init=False, factory=Counter)  # acked or failed
    acked_by: Counter[str] = attrs.field(init=False, factory=Counter)

    def may_send(self, producer: str, window: int) -> bool:
        """Whether ``producer`` has room in its window and is not ``lead`` ahead."""
        with self._cond:
            return self.sent[producer] - self.settled[producer] < window and all(
                self.sent[producer] - self.sent[other] < self.lead
                for other in self.streaming
            )

    def wait_to_send(self, producer: str, window: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.may_send(producer, window), timeout)

    def send(self, producer: str) -> None:
        with self._cond:
            self.sent[producer] += 1
            self._cond.notify_all()

    def finished(self, producer: str) -> None:
        with self._cond:
            self.streaming.discard(producer)
            self._cond.notify_all()

    def ack(self, record: Acked) -> None:
        with self._cond:
            self.acked.append(record)
            self.acked_by[record.producer] += 1
            self.settled[record.producer] += 1
            self._cond.notify_all()

    def fail(self, producer: str, what: str, *, record: bool = True) -> None:
        """A record's delivery failed (or, with ``record=False``, the producer did)."""
        with self._cond:
            self.failed.append(f"{producer}: {what}")
            self.settled[producer] += record
            self._cond.notify_all()

    def acked_count(self) -> int:
        with self._cond:
            return len(self.acked)

    def in_flight(self) -> dict[str, int]:
        """Per producer, the records sent without a delivery report yet."""
        with self._cond:
            return {name: self.sent[name] - self.settled[name] for name in self.sent}

    def wait_for_acks(
        self, targets: Mapping[str, int], timeout: float
    ) -> dict[str, int]:
        """Wait until each producer has its target of acknowledgements (or one failed)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._cond.wait_for(
                lambda: (
                    self.failed
                    or all(self.acked_by[p] >= n for p, n in targets.items())
                ),
                max(0.0, deadline - time.monotonic()),
            )
            return {p: self.acked_by[p] for p in targets}


def make_records(producer: str, count: int, seed: int) -> list[ProducedRecord]:
    """``count`` records with unique keys and values, the rest of each seeded noise."""
    rng = random.Random(f"{seed}-{producer}")
    records = []
    for index in range(count):
        noise = rng.getrandbits(64)
        key = f"{producer}-key-{index:06d}-{noise & 0xFFFF:04x}".encode()
        value = f"{producer}:{index:06d}:{noise:016x}:".encode() + rng.randbytes(
            rng.randrange(64)
        )
        records.append(ProducedRecord(key, value))
    return records


def index_of(value: bytes) -> tuple[str, int]:
    producer, index, _ = value.split(b":", 2)
    return producer.decode(), int(index)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET_LIBRDKAFKA})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)])
    futures[topic].result(timeout=PHASE_TIMEOUT)


@attrs.frozen
class Stream:
    """What one producer sends: ``records`` in order, at most ``window`` unreported.

    It stops early when ``stop`` is set.
    """

    name: str
    records: Sequence[ProducedRecord]
    window: int
    stop: threading.Event = attrs.field(factory=threading.Event)


def produce_with_confluent(
    bootstrap: str, topic: str, stream: Stream, ledger: Ledger
) -> None:
    """librdkafka's idempotent producer; its delivery reports are served by poll() here."""
    name = stream.name
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": DELIVERY_TIMEOUT_MS,
            "request.timeout.ms": 10_000,
            "retry.backoff.ms": 50,
            "retry.backoff.max.ms": 250,
            **_QUIET_LIBRDKAFKA,
        }
    )
    deadline = time.monotonic() + DELIVERY_TIMEOUT_MS / 1000 + PHASE_TIMEOUT

    def report(err: KafkaError | None, msg: Message) -> None:
        value = msg.value()
        assert isinstance(value, bytes)
        _, index = index_of(value)
        if err is not None:
            ledger.fail(name, f"record {index}: {err}")
            return
        partition, offset = msg.partition(), msg.offset()
        assert partition is not None
        assert offset is not None
        ledger.ack(Acked(name, index, partition, offset, value))

    try:
        for record in stream.records:
            if stream.stop.is_set():
                break
            # While the broker is down (or the gate holds) the window fills and the
            # producer waits here serving delivery reports, its records in flight, to be
            # retried once the broker is back.
            while not ledger.may_send(name, stream.window):
                assert time.monotonic() < deadline, (
                    f"{name}: could not send for too long"
                )
                producer.poll(0.05)
            ledger.send(name)
            # No poll() per record: each one hands the GIL over (the other client's
            # thread is pure Python), so reports are served only while waiting.
            producer.produce(
                topic, key=record.key, value=record.value, on_delivery=report
            )
    finally:
        ledger.finished(name)
    left = producer.flush(max(0.0, deadline - time.monotonic()))
    assert left == 0, f"{name}: {left} records still unreported at the deadline"


def produce_with_kafka_python(
    bootstrap: str, topic: str, stream: Stream, ledger: Ledger
) -> None:
    """kafka-python's idempotent producer; its callbacks run on its I/O thread."""
    name = stream.name
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
        request_timeout_ms=10_000,
        retry_backoff_ms=50,
        reconnect_backoff_max_ms=250,
    )
    try:
        for record in stream.records:
            if stream.stop.is_set():
                break
            may_send = ledger.wait_to_send(name, stream.window, PHASE_TIMEOUT)
            assert may_send, f"{name}: could not send for {PHASE_TIMEOUT:.0f}s"
            ledger.send(name)
            index = index_of(record.value)[1]
            future = producer.send(topic, key=record.key, value=record.value)
            future.add_callback(_on_kafka_python_ack(ledger, name, index, record.value))
            future.add_errback(_on_kafka_python_error(ledger, name, index))
        producer.flush(timeout=DELIVERY_TIMEOUT_MS / 1000 + PHASE_TIMEOUT)
    finally:
        ledger.finished(name)
        producer.close(timeout=10)


def _on_kafka_python_ack(
    ledger: Ledger, name: str, index: int, value: bytes
) -> Callable[[object], None]:
    def on_ack(metadata: object) -> None:
        partition = getattr(metadata, "partition")  # noqa: B009 (kafka-python is untyped)
        offset = getattr(metadata, "offset")  # noqa: B009
        ledger.ack(Acked(name, index, int(partition), int(offset), value))

    return on_ack


def _on_kafka_python_error(
    ledger: Ledger, name: str, index: int
) -> Callable[[object], None]:
    def on_error(error: object) -> None:
        ledger.fail(name, f"record {index}: {error!r}")

    return on_error


@attrs.define(eq=False)
class ProducerThread:
    """A producer function in a daemon thread; ``join`` re-raises what it raised."""

    name: str
    target: Callable[[], None]
    ledger: Ledger  # told at once, so the test stops waiting for this producer's acks
    _error: BaseException | None = attrs.field(init=False, default=None)
    _thread: threading.Thread | None = attrs.field(init=False, default=None)

    def start(self) -> None:
        def run() -> None:
            try:
                self.target()
            except BaseException as e:
                self._error = e
                self.ledger.fail(self.name, f"stopped: {e!r}", record=False)

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), (
            f"{self.name} did not finish in {timeout:.0f}s"
        )
        if self._error is not None:
            raise AssertionError(
                f"{self.name} failed: {self._error!r}"
            ) from self._error


# --- a gate between the clients and the broker ------------------------------------------


@attrs.define(eq=False)
class _Link:
    """One client connection through the gate and its connection to the broker."""

    client: socket.socket
    server: socket.socket
    dropped: bool = False
    _pumps: int = 2  # the threads still using the sockets; the last one closes them

    def shut_down(self) -> None:
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def pump_done(self, lock: threading.Condition) -> None:
        self.shut_down()
        with lock:
            self._pumps -= 1
            last = self._pumps == 0
        if last:
            self.client.close()
            self.server.close()


@attrs.define(eq=False)
class Gate:
    """A TCP proxy in front of the broker that can hold back requests or responses.

    The broker advertises the gate's port, so every client connection passes through it.
    It lets the test choose what the log holds at a kill:

    - responses held: requests still reach the broker, which appends their batches, but
      no producer hears of it. The log ends in records no one was told about; the
      producers retry them after the restart, and the broker must recognise the retries
      as duplicates (KIP-98) instead of appending them again.
    - requests held: the broker answers what it has and gets nothing new. Once every
      appended record is acknowledged, the log ends in acknowledged batches, which
      recovery must keep to the last byte.

    A pump holds the lock while it forwards, so once :meth:`hold` returns nothing of the
    held direction is half way through the gate.
    """

    broker_port: int
    _listener: socket.socket = attrs.field(
        init=False, factory=lambda: socket.create_server(("127.0.0.1", 0))
    )
    _cond: threading.Condition = attrs.field(init=False, factory=threading.Condition)
    _held: dict[str, bool] = attrs.field(
        init=False, factory=lambda: {"requests": False, "responses": False}
    )
    _closed: bool = attrs.field(init=False, default=False)
    _links: list[_Link] = attrs.field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        self._listener.settimeout(_POLL)
        threading.Thread(target=self._accept, name="gate", daemon=True).start()

    @property
    def port(self) -> int:
        port: int = self._listener.getsockname()[1]
        return port

    def hold(self, direction: str) -> None:
        """From now on nothing goes that way (``requests`` or ``responses``)."""
        with self._cond:
            self._held[direction] = True

    def open(self) -> None:
        with self._cond:
            self._held = dict.fromkeys(self._held, False)
            self._cond.notify_all()

    def drop_all(self) -> None:
        """Close every connection, discarding whatever was held back."""
        with self._cond:
            links, self._links = self._links, []
            for link in links:
                link.dropped = True
                link.shut_down()
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
        self.drop_all()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            try:
                server = socket.create_connection(
                    ("127.0.0.1", self.broker_port), timeout=5
                )
            except OSError:
                client.close()  # the broker is down: the client sees a disconnect, retries
                continue
            client.settimeout(None)
            server.settimeout(None)
            link = _Link(client, server)
            with self._cond:
                self._links.append(link)
            for args in (
                (link, "requests", client, server),
                (link, "responses", server, client),
            ):
                threading.Thread(target=self._pump, args=args, daemon=True).start()
        self._listener.close()

    def _pump(
        self, link: _Link, direction: str, src: socket.socket, dst: socket.socket
    ) -> None:
        poller = select.poll()  # not select(): the test process may hold > 1024 files
        poller.register(src, select.POLLIN)
        try:
            while not link.dropped:
                readable = poller.poll(_POLL * 1000)
                if not readable:
                    continue
                with self._cond:
                    self._cond.wait_for(
                        lambda: not self._held[direction] or link.dropped
                    )
                    if self._held[direction]:
                        break  # dropped while held: what was held is discarded
                    data = src.recv(65536)
                    if not data:
                        break
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            link.pump_done(self._cond)


def records_on_disk(data_dir: Path, topic: str, partitions: int) -> int:
    """The records in the topic's segments now, up to a batch the broker is still writing."""
    total = 0
    for partition in range(partitions):
        for segment in (data_dir / f"{topic}-{partition}").glob("*.log"):
            with contextlib.suppress(CorruptRecordError):  # a torn tail: being written
                for _, header in iter_batches(segment.read_bytes(), verify_crc=False):
                    total += header.record_count
    return total


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll ``condition`` (a file the broker writes: nothing to wait on) until a deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)
    return True


@pytest.fixture
def gated_broker(tmp_path: Path) -> Iterator[tuple[BrokerProcess, Gate]]:
    """A broker whose clients all connect through a :class:`Gate`."""
    gate = Gate(broker_port=0)
    process = BrokerProcess(
        tmp_path / "data",
        overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{gate.port}"},
    )
    try:
        process.start()
        gate.broker_port = process.port
        yield process, gate
    finally:
        if process.process is not None:
            process.stop()
        gate.close()


def read_partitions(
    bootstrap: str, topic: str, partitions: int
) -> dict[int, list[Message]]:
    """Every record of every partition from the beginning to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "crash-safety-check",  # never joined or committed: assign only
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **_QUIET_LIBRDKAFKA,
        }
    )
    try:
        ends: dict[int, int] = {}
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(
                KafkaTopicPartition(topic, partition), timeout=PHASE_TIMEOUT
            )
            assert low == 0, f"partition {partition} starts at {low}, not 0"
            ends[partition] = high
        consumer.assign(
            [KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        )
        read: dict[int, list[Message]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + PHASE_TIMEOUT
        while any(len(read[p]) < ends[p] for p in read):
            assert time.monotonic() < deadline, (
                f"read {[len(read[p]) for p in read]} records of {ends} before the deadline"
            )
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                assert msg.error() is None, msg.error()
                where = msg.partition()
                assert where is not None
                read[where].append(msg)
        return read
    finally:
        consumer.close()


def check_log(
    acked: Sequence[Acked],
    read: dict[int, list[Message]],
    produced: dict[bytes, ProducedRecord],
) -> None:
    """What the consumer read holds every acknowledged record exactly once, in place."""
    at: dict[tuple[int, int], bytes] = {}
    values: Counter[bytes] = Counter()
    for partition, messages in read.items():
        offsets = [msg.offset() for msg in messages]
        assert offsets == list(range(len(messages))), (
            f"partition {partition}: offsets are not contiguous from 0: "
            f"{_first_gap([o if o is not None else -1 for o in offsets])}"
        )
        for msg in messages:
            value, offset = msg.value(), msg.offset()
            assert isinstance(value, bytes)
            assert offset is not None
            assert value in produced, (
                f"partition {partition} offset {offset}: unknown {value!r}"
            )
            assert msg.key() == produced[value].key, f"key of {value!r} changed"
            at[partition, offset] = value
            values[value] += 1
    duplicates = sorted(v for v, n in values.items() if n > 1)
    assert not duplicates, (
        f"{len(duplicates)} records appear more than once, first "
        f"{[index_of(d) for d in duplicates[:3]]} at (partition, offset) "
        f"{[[where for where, v in at.items() if v == d] for d in duplicates[:3]]}"
    )
    lost = [a for a in acked if at.get((a.partition, a.offset)) != a.value]
    found = [at.get((a.partition, a.offset)) for a in lost[:5]]
    assert not lost, (
        f"{len(lost)} of {len(acked)} acknowledged records are not where they were "
        f"acknowledged, first {lost[:5]}; found there {[v and index_of(v) for v in found]}"
    )
    assert len({(a.partition, a.offset) for a in acked}) == len(acked), (
        "two acknowledgements name the same offset"
    )
    # An idempotent producer's records stay in send order within a partition.
    for partition, messages in read.items():
        previous: dict[str, int] = {}
        for msg in messages:
            value = msg.value()
            assert isinstance(value, bytes)
            producer, index = index_of(value)
            assert index > previous.get(producer, -1), (
                f"partition {partition} offset {msg.offset()}: {producer} record {index} "
                f"after record {previous[producer]}"
            )
            previous[producer] = index


def _first_gap(offsets: list[int]) -> str:
    for expected, offset in enumerate(offsets):
        if offset != expected:
            return f"offset {offset} where {expected} was due"
    return "none"


def verify_partitions(
    data_dir: Path, topic: str, read: dict[int, list[Message]]
) -> None:
    """``python -m minikafka.log verify`` passes on every partition, counting its records."""
    for partition, messages in read.items():
        directory = data_dir / f"{topic}-{partition}"
        result = subprocess.run(
            [sys.executable, "-m", "minikafka.log", "verify", str(directory)],
            capture_output=True,
            text=True,
            timeout=PHASE_TIMEOUT,
            check=False,
        )
        assert result.returncode == 0, (
            f"verify {directory}: {result.stdout}{result.stderr}"
        )
        match = re.match(r"OK: \d+ batches, (?P<records>\d+) records", result.stdout)
        assert match, result.stdout
        assert int(match["records"]) == len(messages), (
            f"verify {directory} counts {match['records']} records, the consumer read "
            f"{len(messages)}"
        )


def broker_tail(broker: BrokerProcess, lines: int = 60) -> str:
    return "\n".join(broker.output[-lines:])


@attrs.frozen
class Kill:
    """What the log held at a SIGKILL."""

    held: str  # what the gate held back: "responses" or "requests"
    on_disk: int  # the topic's records in the log
    acked: int  # of them, acknowledged to a producer
    unanswered: int  # appended after the gate held the responses


def kill_behind_the_gate(
    broker: BrokerProcess, gate: Gate, ledger: Ledger, held: str, topic: str
) -> Kill:
    """SIGKILL the broker with its log ending the way ``held`` arranges (see :class:`Gate`).

    Each wait is bounded; if its condition does not come, the kill happens all the same
    and the returned :class:`Kill` says what the log held.
    """

    def on_disk() -> int:
        return records_on_disk(broker.data_dir, topic, PARTITIONS)

    gate.hold(held)
    before = on_disk()
    if held == "responses":
        # Appended after the hold: their responses come after it too, and stay held.
        wait_until(lambda: on_disk() > before, 5.0)
    else:
        # Nothing new arrives: wait for the answers to everything that did.
        wait_until(lambda: on_disk() == ledger.acked_count(), 5.0)
    broker.kill()
    gate.drop_all()
    kill = Kill(held, on_disk(), ledger.acked_count(), on_disk() - before)
    gate.open()
    return kill


def test_acknowledged_records_survive_kill_9_during_produce(
    gated_broker: tuple[BrokerProcess, Gate],
) -> None:
    """Kill -9 four times while two idempotent producers stream; nothing acked is lost.

    Each kill comes once every producer has a seeded number of acknowledgements more than
    at the previous restart, so both are mid-stream with records in flight. Two kills
    come with the responses held back, once the broker has appended records no producer
    heard about; two with the requests held back, once every appended record is
    acknowledged (see :class:`Gate`). The producers never stop between kills: they wait
    for the broker and retry.
    """
    broker, gate = gated_broker
    bootstrap = f"127.0.0.1:{gate.port}"
    rng = random.Random(SEED)
    topic = "crash-safety"
    create_topic(bootstrap, topic, PARTITIONS)
    streams = {
        # More records than the test will send: the producers stream until told to stop.
        "confluent": Stream(
            "confluent", make_records("confluent", 20_000, SEED), window=200
        ),
        "kafka-python": Stream(
            "kafka-python", make_records("kafka-python", 20_000, SEED), window=100
        ),
    }
    produced = {r.value: r for stream in streams.values() for r in stream.records}
    ledger = Ledger(set(streams), lead=LEAD)
    threads = [
        ProducerThread(
            "confluent",
            lambda: produce_with_confluent(
                bootstrap, topic, streams["confluent"], ledger
            ),
            ledger,
        ),
        ProducerThread(
            "kafka-python",
            lambda: produce_with_kafka_python(
                bootstrap, topic, streams["kafka-python"], ledger
            ),
            ledger,
        ),
    ]
    for thread in threads:
        thread.start()

    # Two kills of each kind, in a seeded order.
    kinds = ["responses", "requests"] * (KILLS // 2)
    rng.shuffle(kinds)
    kills: list[Kill] = []
    for kill in range(KILLS + 1):
        targets = {
            name: ledger.acked_by[name] + rng.randrange(200, 600) for name in streams
        }
        reached = ledger.wait_for_acks(targets, PHASE_TIMEOUT)
        assert not ledger.failed, (
            f"records failed: {ledger.failed[:5]}\n{broker_tail(broker)}"
        )
        assert all(reached[name] >= n for name, n in targets.items()), (
            f"acknowledgements {reached}, not {targets}\n{broker_tail(broker)}"
        )
        if kill == KILLS:
            break
        kills.append(kill_behind_the_gate(broker, gate, ledger, kinds[kill], topic))
        broker.start()
    for stream in streams.values():
        stream.stop.set()
    for thread in threads:
        thread.join(DELIVERY_TIMEOUT_MS / 1000 + PHASE_TIMEOUT)  # they flush, then stop

    assert not ledger.failed, (
        f"{len(ledger.failed)} records failed: {ledger.failed[:5]}"
    )
    acked = ledger.acked
    read = read_partitions(bootstrap, topic, PARTITIONS)
    check_log(acked, read, produced)
    # Every record sent was acknowledged in the end, those the kills left unanswered too,
    # and the log holds nothing else.
    assert ledger.in_flight() == dict.fromkeys(streams, 0)
    sent = {
        r.value
        for name, stream in streams.items()
        for r in stream.records[: ledger.sent[name]]
    }
    assert {a.value for a in acked} == sent
    assert sum(len(m) for m in read.values()) == len(acked), (
        "records no one acknowledged"
    )
    # The kills left the log as arranged: some with appended records no one was told
    # about (so retries of batches already written happened), the others ending in
    # acknowledged batches (so recovery could not cut an unacknowledged tail instead).
    assert any(k.unanswered for k in kills if k.held == "responses"), kills
    assert all(k.on_disk == k.acked > 0 for k in kills if k.held == "requests"), kills
    assert broker.stop() == 0, broker_tail(broker)
    verify_partitions(broker.data_dir, topic, read)


def produce_all(
    bootstrap: str, topic: str, records: Sequence[ProducedRecord]
) -> list[Acked]:
    """Produce ``records`` and wait until every one is acknowledged."""
    ledger = Ledger({"confluent"}, lead=len(records))
    produce_with_confluent(
        bootstrap, topic, Stream("confluent", records, len(records)), ledger
    )
    assert not ledger.failed, ledger.failed[:5]
    assert len(ledger.acked) == len(records)
    return ledger.acked


def test_acknowledged_records_survive_a_kill_right_after_restart(
    broker: BrokerProcess,
) -> None:
    """Killed again as soon as it says it is ready, before any scheduled flush.

    ``log.flush.interval.*`` default to never and the recovery-point checkpoint comes
    every 60 seconds, so the second start recovers the same unflushed logs from the same
    recovery point and must find everything the first one did; then the same again for
    records acknowledged by a broker that had itself just recovered twice.
    """
    topic = "crash-twice"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    records = make_records("confluent", 1400, SEED + 1)
    first, second = records[:700], records[700:]
    acked = produce_all(broker.bootstrap, topic, first)
    broker.kill()
    broker.start()
    broker.kill()  # right after the ready line: recovery done, nothing flushed
    broker.start()

    # A second generation, from a new producer id, acknowledged by the recovered broker.
    acked += produce_all(broker.bootstrap, topic, second)
    broker.kill()
    broker.start()
    broker.kill()
    broker.start()

    read = read_partitions(broker.bootstrap, topic, PARTITIONS)
    check_log(acked, read, {r.value: r for r in records})
    assert sum(len(m) for m in read.values()) == len(records)
    assert broker.stop() == 0, broker_tail(broker)
    verify_partitions(broker.data_dir, topic, read)
