"""kcat (librdkafka's command-line client) against the real broker, as a subprocess.

kcat has no admin commands beyond ``-L`` (metadata); it produces from stdin (``-P``),
consumes a partition from a logical or absolute offset or a timestamp (``-C -o ...``,
the simple consumer: no group, no commits) and looks offsets up by timestamp (``-Q``).
Its JSON envelope (``-J``) carries key, value, headers, offset and timestamp of every
record, so what is read back is compared field by field with what was written. The
compression codec and the idempotent producer's id are checked in the batch headers of
the broker's segment files (record batch v2 layout, KIP-98), with the questions
``_clients.py`` asks of confluent-kafka's batches too.
"""

from __future__ import annotations

import functools
import json
import os
import re
import select
import shutil
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import pytest
from confluent_kafka import Producer

from minikafka.broker.testing import BrokerProcess
from tests.compat._clients import (
    CODECS,
    assert_codec_stored,
    assert_one_idempotent_producer,
    stored_batches,
)
from tests.compat._groups import unique_name

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(
        shutil.which("kcat") is None, reason="kcat is installed by `make test`"
    ),
]

TIMEOUT = 30.0  # seconds one kcat run may take before the test fails
# Reach end-of-partition quickly instead of after the default 500 ms long poll.
FAST_EOF = ("-X", "fetch.wait.max.ms=100")
REACHED_END = re.compile(rb"Reached end of topic \S+ \[0\] at offset (\d+)")


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name of this test alone, so one broker serves the whole module."""
    return unique_name(request, "kcat-")


def kcat(
    bootstrap: str, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run(
        ["kcat", "-b", bootstrap, "-m", "15", *args],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, f"kcat {' '.join(args)}: {result.stderr.decode()}"
    return result


def produce_lines(
    bootstrap: str, topic: str, lines: Sequence[str], *args: str
) -> subprocess.CompletedProcess[bytes]:
    """``kcat -P`` with ``key:value`` lines (``-K:``) on stdin."""
    stdin = "".join(f"{line}\n" for line in lines).encode()
    return kcat(bootstrap, "-P", "-t", topic, "-K", ":", *args, stdin=stdin)


@functools.cache
def kcat_librdkafka() -> tuple[int, ...]:
    """The version of the librdkafka kcat is built with (``kcat -V``)."""
    version = subprocess.run(
        ["kcat", "-V"], capture_output=True, check=True, timeout=TIMEOUT
    )
    found = re.search(
        rb"librdkafka (\d+)\.(\d+)\.(\d+)", version.stdout + version.stderr
    )
    assert found is not None, version
    return tuple(int(part) for part in found.groups())


def consume_json(bootstrap: str, topic: str, *args: str) -> list[dict[str, Any]]:
    """``kcat -C -J`` up to the end of partition 0 (``-e``): one dict per record."""
    result = kcat(
        bootstrap, "-C", "-t", topic, "-p", "0", "-J", "-e", "-q", *FAST_EOF, *args
    )
    return [json.loads(line) for line in result.stdout.decode().splitlines() if line]


def lines_of(count: int, prefix: str = "") -> list[str]:
    return [f"key-{i % 3}:{prefix}value-{i}" for i in range(count)]


def assert_records(
    records: Sequence[dict[str, Any]], lines: Sequence[str], first: int
) -> None:
    """``records`` hold exactly ``lines`` (``key:value``), at offsets from ``first``."""
    assert [(r["key"], r["payload"]) for r in records] == [
        tuple(line.split(":", 1)) for line in lines
    ]
    assert [r["offset"] for r in records] == list(range(first, first + len(lines)))
    assert {(r["topic"], r["partition"], r["tstype"]) for r in records} <= {
        (records[0]["topic"], 0, "create")
    }


class BackgroundConsumer:
    """``kcat -C`` running while the test produces; stderr is read as it comes."""

    def __init__(self, bootstrap: str, *args: str) -> None:
        self.process = subprocess.Popen(
            ["kcat", "-b", bootstrap, "-C", "-J", "-u", *FAST_EOF, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.stderr = b""

    def wait_for_stderr(self, pattern: re.Pattern[bytes]) -> re.Match[bytes]:
        assert self.process.stderr is not None
        fd = self.process.stderr.fileno()
        deadline = time.monotonic() + TIMEOUT
        poller = select.poll()  # not select(): the test process may hold > 1024 files
        poller.register(fd, select.POLLIN)
        while (match := pattern.search(self.stderr)) is None:
            left = deadline - time.monotonic()
            assert left > 0, f"kcat never printed {pattern.pattern!r}: {self.stderr!r}"
            ready = poller.poll(left * 1000)
            if ready:
                chunk = os.read(fd, 65536)
                assert chunk, f"kcat exited: {self.stderr!r}"
                self.stderr += chunk
        return match

    def records(self) -> list[dict[str, Any]]:
        """Wait for kcat to exit (``-c``) and parse what it printed."""
        stdout, stderr = self.process.communicate(timeout=TIMEOUT)
        self.stderr += stderr
        assert self.process.returncode == 0, self.stderr.decode()
        return [json.loads(line) for line in stdout.decode().splitlines() if line]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


# --- metadata ----------------------------------------------------------------------------


@pytest.mark.compat("ApiVersions", "kcat")
@pytest.mark.compat("Metadata", "kcat")
def test_metadata_listing(broker: BrokerProcess, topic: str) -> None:
    # Asking for a topic's metadata creates it (auto.create.topics.enable).
    listing = json.loads(kcat(broker.bootstrap, "-L", "-J", "-t", topic).stdout)
    assert listing["controllerid"] == 1
    assert listing["brokers"] == [{"id": 1, "name": broker.bootstrap}]
    assert listing["topics"] == [
        {
            "topic": topic,
            "partitions": [
                {
                    "partition": 0,
                    "leader": 1,
                    "replicas": [{"id": 1}],
                    "isrs": [{"id": 1}],
                }
            ],
        }
    ]

    everything = json.loads(kcat(broker.bootstrap, "-L", "-J").stdout)
    assert topic in {t["topic"] for t in everything["topics"]}

    invalid = json.loads(kcat(broker.bootstrap, "-L", "-J", "-t", "bad topic!").stdout)
    assert invalid["topics"] == [
        {"topic": "bad topic!", "error": "Broker: Invalid topic", "partitions": []}
    ]

    text = kcat(broker.bootstrap, "-L", "-t", topic).stdout.decode()
    assert f"broker 1 at {broker.bootstrap} (controller)" in text
    assert f'topic "{topic}" with 1 partitions:' in text
    assert "partition 0, leader 1, replicas: 1, isrs: 1" in text


@pytest.mark.compat("Metadata", "kcat")
def test_cluster_metadata_is_not_a_topic(own_broker: BrokerProcess) -> None:
    name = "__cluster_metadata"
    listing = json.loads(kcat(own_broker.bootstrap, "-L", "-J", "-t", name).stdout)
    [described] = listing["topics"]
    assert described["partitions"] == []
    assert "error" in described
    subprocess.run(
        [
            "kcat",
            "-b",
            own_broker.bootstrap,
            "-P",
            "-t",
            name,
            "-X",
            "message.timeout.ms=2000",
        ],
        input=b"not a metadata record\n",
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    own_broker.restart()
    listing = json.loads(kcat(own_broker.bootstrap, "-L", "-J").stdout)
    assert name not in {t["topic"] for t in listing["topics"]}


# --- produce -----------------------------------------------------------------------------


@pytest.mark.compat("Produce", "kcat")
@pytest.mark.compat("Fetch", "kcat")
@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_produce_acks(broker: BrokerProcess, topic: str, acks: str) -> None:
    lines = lines_of(200)
    produce_lines(
        broker.bootstrap, topic, lines, "-X", f"acks={acks}", "-H", "source=kcat"
    )
    records = consume_json(broker.bootstrap, topic, "-o", "beginning")
    assert_records(records, lines, 0)
    assert all(r["headers"] == ["source", "kcat"] for r in records)


@pytest.mark.compat("Produce", "kcat")
@pytest.mark.compat("Fetch", "kcat")
@pytest.mark.parametrize("codec", list(CODECS))
def test_produce_compression(broker: BrokerProcess, topic: str, codec: str) -> None:
    lines = [f"k{i}:" + f"compressible {i} " * 20 for i in range(300)]
    produce_lines(broker.bootstrap, topic, lines, "-z", codec, "-X", "linger.ms=50")
    assert_records(consume_json(broker.bootstrap, topic, "-o", "beginning"), lines, 0)
    assert_codec_stored(broker, topic, 300, codec, kcat_librdkafka())


@pytest.mark.compat("Produce", "kcat")
@pytest.mark.compat("InitProducerId", "kcat")
def test_idempotent_producer(broker: BrokerProcess, topic: str) -> None:
    lines = lines_of(100)
    produce_lines(broker.bootstrap, topic, lines, "-X", "enable.idempotence=true")
    assert_records(consume_json(broker.bootstrap, topic, "-o", "beginning"), lines, 0)
    assert_one_idempotent_producer(stored_batches(broker.data_dir, topic))


@pytest.mark.compat("Produce", "kcat")
@pytest.mark.compat("Fetch", "kcat")
def test_keys_headers_and_nulls(broker: BrokerProcess, topic: str) -> None:
    headers = ("-H", "trace=abc", "-H", "trace=def", "-H", "empty=")
    lines = [
        "plain:value",
        "ünï:cödé ✓",
        "k-with-empty-value:",
        ":value-with-empty-key",
    ]
    produce_lines(broker.bootstrap, topic, lines, *headers)
    # -Z: an empty key or value is sent as null, and printed as null.
    produce_lines(broker.bootstrap, topic, ["tombstone:", ":no-key"], "-Z")
    records = consume_json(broker.bootstrap, topic, "-o", "beginning", "-Z")
    assert [(r["offset"], r["key"], r["payload"]) for r in records] == [
        (0, "plain", "value"),
        (1, "ünï", "cödé ✓"),
        (2, "k-with-empty-value", ""),
        (3, "", "value-with-empty-key"),
        (4, "tombstone", None),
        (5, None, "no-key"),
    ]
    assert [r.get("headers") for r in records[:4]] == [
        ["trace", "abc", "trace", "def", "empty", ""]
    ] * 4
    assert [r.get("headers") for r in records[4:]] == [None, None]


# --- consume -----------------------------------------------------------------------------


@pytest.mark.compat("Fetch", "kcat")
@pytest.mark.compat("ListOffsets", "kcat")
def test_consume_from_beginning_offset_and_relative(
    broker: BrokerProcess, topic: str
) -> None:
    lines = lines_of(30)
    produce_lines(broker.bootstrap, topic, lines, "-z", "zstd", "-X", "linger.ms=50")
    assert_records(consume_json(broker.bootstrap, topic, "-o", "beginning"), lines, 0)
    # An absolute offset, inside a compressed batch the broker serves whole.
    assert any(
        b.base_offset < 17 <= b.last_offset
        for b in stored_batches(broker.data_dir, topic)
    )
    assert_records(consume_json(broker.bootstrap, topic, "-o", "17"), lines[17:], 17)
    # Relative to the end: the last five.
    assert_records(consume_json(broker.bootstrap, topic, "-o", "-5"), lines[25:], 25)
    # At the end there is nothing to read.
    assert consume_json(broker.bootstrap, topic, "-o", "end") == []


@pytest.mark.compat("Fetch", "kcat")
@pytest.mark.compat("ListOffsets", "kcat")
def test_consume_from_end_sees_only_new_records(
    broker: BrokerProcess, topic: str
) -> None:
    old = lines_of(10, "old-")
    produce_lines(broker.bootstrap, topic, old)
    consumer = BackgroundConsumer(
        broker.bootstrap, "-t", topic, "-p", "0", "-o", "end", "-c", "4"
    )
    try:
        # kcat reports reaching the end: it resolved "end" and waits there.
        reached = consumer.wait_for_stderr(REACHED_END)
        assert int(reached[1]) == 10
        new = lines_of(4, "new-")
        produce_lines(broker.bootstrap, topic, new)
        assert_records(consumer.records(), new, 10)
    finally:
        consumer.kill()


@pytest.mark.compat("Fetch", "kcat")
@pytest.mark.compat("ListOffsets", "kcat")
def test_consume_from_a_timestamp(broker: BrokerProcess, topic: str) -> None:
    # kcat cannot set a record's timestamp; librdkafka through confluent-kafka can.
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "linger.ms": 100,
            "compression.type": "zstd",
        }
    )
    base = (int(time.time()) - 120) * 1000  # recent, so retention never touches it
    for i in range(10):
        producer.produce(topic, key=f"k{i}", value=f"t{i}", timestamp=base + i * 1000)
    assert producer.flush(TIMEOUT) == 0
    # The timestamps looked up below fall inside one compressed batch.
    batches = stored_batches(broker.data_dir, topic)
    assert any(b.base_offset < 2 and b.last_offset > 6 for b in batches), batches

    def starting_at(timestamp: int, *more: str) -> list[tuple[int, str, int]]:
        records = consume_json(broker.bootstrap, topic, "-o", f"s@{timestamp}", *more)
        return [(r["offset"], r["payload"], r["ts"]) for r in records]

    expected = [(i, f"t{i}", base + i * 1000) for i in range(10)]
    assert starting_at(base + 3000) == expected[3:]
    assert starting_at(base + 3500) == expected[4:]
    assert starting_at(base - 5000) == expected
    # ... and stopping before a timestamp (e@, not included).
    assert starting_at(base + 2000, "-o", f"e@{base + 6000}") == expected[2:6]

    # -Q: the offset of the first record at or after a timestamp (ListOffsets by time).
    def query(timestamp: int) -> str:
        return kcat(
            broker.bootstrap, "-Q", "-t", f"{topic}:0:{timestamp}"
        ).stdout.decode()

    assert query(base + 3500).split() == [topic, "[0]", "offset", "4"]
    assert query(base).split() == [topic, "[0]", "offset", "0"]
    assert query(base + 60_000).split() == [
        topic,
        "[0]",
        "offset",
        "-1",
    ]  # none that late


# --- across a restart --------------------------------------------------------------------


@pytest.mark.compat("Produce", "kcat")
@pytest.mark.compat("Fetch", "kcat")
def test_read_back_across_restart(own_broker: BrokerProcess) -> None:
    topic = "kcat-restart"
    before = lines_of(50, "before-")
    produce_lines(own_broker.bootstrap, topic, before, "-z", "zstd", "-H", "phase=1")
    produce_lines(own_broker.bootstrap, topic, lines_of(5, "plain-"))
    own_broker.restart()
    after = lines_of(50, "after-")
    produce_lines(own_broker.bootstrap, topic, after, "-X", "enable.idempotence=true")

    records = consume_json(own_broker.bootstrap, topic, "-o", "beginning")
    assert_records(records, before + lines_of(5, "plain-") + after, 0)
    assert [r.get("headers") for r in records[:50]] == [["phase", "1"]] * 50
    first_batches = [
        b for b in stored_batches(own_broker.data_dir, topic) if b.base_offset < 50
    ]
    assert CODECS["zstd"] in {b.codec for b in first_batches}

    own_broker.restart()
    assert_records(
        consume_json(own_broker.bootstrap, topic, "-o", "-3"), after[-3:], 102
    )
    query = kcat(own_broker.bootstrap, "-Q", "-t", f"{topic}:0:0").stdout.decode()
    assert query.split() == [topic, "[0]", "offset", "0"]
