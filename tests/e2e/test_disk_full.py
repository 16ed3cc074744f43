"""A real broker on a disk that fills up: a 20 MB tmpfs.

The broker's data (and, in the second case, its metadata log) lives on a small tmpfs
mounted for the test (skipped with the reason where mounting is not permitted). A filler
file takes most of the space first, so the disk fills after a few MB of produce. Then:

- the produces the disk refused were answered KAFKA_STORAGE_ERROR, on a connection that
  stayed up (a dropped connection would surface as a transport error or a timeout);
- CreateTopics while full succeeds when the metadata log has room; when it has not, the
  metadata log's refused write is fatal for the controller, as in Kafka, and the single
  node's process ends (status 1, one line, no traceback), to come back up once there is
  space again;
- otherwise the broker stays up; once the filler is deleted, produce works again;
- every acknowledged record is read back exactly once, in order, before and after a
  restart, and ``python -m minikafka.log verify`` finds every partition directory clean.

Produces use acks=all without retries (``message.send.max.retries=0``) so that each
delivery report carries the broker's own error code rather than a retry's outcome.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from minikafka.broker.testing import BrokerProcess

pytestmark = pytest.mark.timeout(300)

TOPIC = "full"
VALUE_BYTES = 16 * 1024
DEADLINE = 120.0


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 20 MB tmpfs at ``tmp_path / "disk"``, unmounted afterwards."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}"
        )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path, leave_bytes: int) -> Path:
    """A filler file taking all but ``leave_bytes`` of ``disk``."""
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    filler = disk / "filler"
    with open(filler, "wb") as out:
        chunk = b"\0" * (1 << 20)
        remaining = free - leave_bytes
        while remaining > 0:
            remaining -= out.write(chunk[: min(len(chunk), remaining)])
    return filler


def top_off(filler: Path) -> None:
    """Grow ``filler`` until not one more byte fits (a refused 16 KB record leaves room for
    a small metadata record otherwise)."""
    fd = os.open(filler, os.O_WRONLY | os.O_APPEND)
    try:
        for size in (1 << 16, 1 << 12, 1 << 8, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> KafkaError | None:
    """CreateTopics; None on success, the error otherwise (never an exception)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)[
        name
    ]
    try:
        future.result(timeout=60)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        return error
    return None


def produce_until_refused(
    bootstrap: str, start: int, refusals: int
) -> tuple[list[int], list[int]]:
    """Produce numbered records until ``refusals`` were refused; (acked, refusal codes)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "message.send.max.retries": 0,
            "linger.ms": 0,
            "message.timeout.ms": 30_000,
        }
    )
    acked: list[int] = []
    codes: list[int] = []

    def report(err: KafkaError | None, msg: object) -> None:
        index = int(msg.value()[:8])  # type: ignore[attr-defined]
        if err is None:
            acked.append(index)
        else:
            codes.append(err.code())

    deadline = time.monotonic() + DEADLINE
    index = start
    while len(codes) < refusals and time.monotonic() < deadline:
        value = b"%08d" % index + b"x" * VALUE_BYTES
        producer.produce(TOPIC, value, on_delivery=report)
        index += 1
        producer.flush(30)  # one at a time: each answer is the broker's, in order
    assert len(codes) >= refusals, f"the disk never filled: {len(acked)} records acked"
    return acked, codes


def produce_some(bootstrap: str, start: int, count: int) -> list[int]:
    acked: list[int] = []
    codes: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})

    def report(err: KafkaError | None, msg: object) -> None:
        if err is None:
            acked.append(int(msg.value()[:8]))  # type: ignore[attr-defined]
        else:
            codes.append(err.code())

    for index in range(start, start + count):
        producer.produce(TOPIC, b"%08d" % index + b"y" * 100, on_delivery=report)
    assert producer.flush(60) == 0
    assert codes == [], codes
    return acked


def read_all(bootstrap: str) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "disk-full",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([KafkaTopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    seen: list[int] = []
    deadline = time.monotonic() + DEADLINE
    idle = 0
    try:
        while time.monotonic() < deadline and idle < 3:
            message = consumer.poll(1.0)
            if message is None:
                idle += 1
                continue
            idle = 0
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            seen.append(int(value[:8]))
    finally:
        consumer.close()
    return seen


def verify_clean(data_dir: Path, metadata_dir: Path) -> None:
    # The test's own topics (__consumer_offsets' 50 empty partitions would take a Python
    # start-up each on a loaded machine, and nothing here writes to them).
    ours = [p for p in data_dir.iterdir() if p.is_dir() and not p.name.startswith("_")]
    for partition_dir in [*sorted(ours), metadata_dir / "__cluster_metadata-0"]:
        done = subprocess.run(
            [sys.executable, "-m", "minikafka.log", "verify", str(partition_dir)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert done.returncode == 0, f"{partition_dir}: {done.stdout}{done.stderr}"


@pytest.mark.parametrize(
    "metadata_on_the_full_disk", [False, True], ids=["data", "data+meta"]
)
def test_a_full_disk_refuses_writes_cleanly_and_loses_nothing_acknowledged(
    tmp_path: Path,
    tmpfs: Path,
    metadata_on_the_full_disk: bool,
    expect_exit: Callable[[BrokerProcess], None],
) -> None:
    """Refused produces get KAFKA_STORAGE_ERROR, the broker stays up, writes resume once
    space is freed, every acknowledged record is read exactly once in order, a restart
    comes up, and every partition verifies clean."""
    data_dir = tmpfs / "data"
    metadata_dir = (tmpfs if metadata_on_the_full_disk else tmp_path) / "meta"
    broker = BrokerProcess(
        data_dir,
        overrides={"metadata.log.dir": str(metadata_dir), "num.partitions": "1"},
    )
    broker.start()
    try:
        assert create_topic(broker.bootstrap, TOPIC) is None
        filler = fill(tmpfs, leave_bytes=3 << 20)
        acked, codes = produce_until_refused(broker.bootstrap, 0, refusals=3)
        assert set(codes) == {KafkaError.KAFKA_STORAGE_ERROR}, codes
        assert broker.process is not None
        assert broker.process.poll() is None

        top_off(filler)
        # With the metadata log on the full disk: enough partitions for the records to
        # need new pages of its segment (tmpfs allocates by page: a few small records
        # would still fit in the last, partly used one).
        partitions = 1000 if metadata_on_the_full_disk else 2
        if metadata_on_the_full_disk:
            # Kafka's controller treats a metadata log I/O failure as fatal: the process
            # ends, whatever the client heard, and comes back once there is space.
            expect_exit(broker)
            error = create_topic(broker.bootstrap, "while-full", partitions)
            assert error is not None
            assert broker.process.wait(30) == 1
            broker.process = None
            filler.unlink()
            broker.start()
        else:
            error = create_topic(broker.bootstrap, "while-full", partitions)
            assert broker.process.poll() is None
            filler.unlink()  # space is back: writes resume without a restart
        acked += produce_some(broker.bootstrap, len(acked) + len(codes), 20)
        assert read_all(broker.bootstrap) == acked  # exactly once, in order
        assert broker.stop() == 0
        verify_clean(data_dir, metadata_dir)

        broker.start()
        assert read_all(broker.bootstrap) == acked
        assert create_topic(broker.bootstrap, "after-restart") is None
    finally:
        with contextlib.suppress(Exception):
            broker.stop()
    verify_clean(data_dir, metadata_dir)
