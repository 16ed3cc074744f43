"""Kafka's log cleaner and minikafka's, pass for pass, over the same transactional log
(KIP-98, KIP-534): the files they leave are the same bytes.

minikafka writes a compacted partition with transactions of several producers
(committed, aborted, empty), closes it, and the directory is copied twice. One copy is
cleaned by minikafka's ``clean``, the other by Kafka 4.1.1's own ``Cleaner.doClean``
(``java/KafkaCleanerPass.java``: ``UnifiedLog`` opened on the copy, a fixed clock), with
the same time, pass after pass, the clock moved past ``delete.retention.ms`` between
some of them. After each pass every segment's ``.log`` and ``.txnindex`` must be equal
byte for byte: the same aborted records gone, the same markers kept, stamped with the
same delete horizon and removed at the same pass, the same producers' last batches
emptied, the same aborted transactions in the cleaned index.

``segment.bytes`` is raised for the cleaning so that each pass rewrites one group of
segments: minikafka keeps an emptied batch at the end of every group, Kafka at the end
of a pass (COMPAT.md), and with one group the two coincide.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from minikafka.log import CompressionType, Log, LogConfig, clean
from minikafka.log.testing import (
    ManualClock,
    TxnWriter,
    write_interleaved_txns,
    write_random_txns,
)
from reference.java import compile_sources
from reference.kafka import java_command

pytestmark = pytest.mark.external

RETENTION_MS = 10_000
WRITTEN = LogConfig(
    segment_bytes=600,
    index_interval_bytes=100,
    cleanup_policy=frozenset({"compact"}),
    delete_retention_ms=RETENTION_MS,
    file_delete_delay_ms=0,
)
ONE_GROUP = 1 << 20
CLEANED = LogConfig(
    segment_bytes=ONE_GROUP,
    index_interval_bytes=100,
    cleanup_policy=frozenset({"compact"}),
    delete_retention_ms=RETENTION_MS,
    file_delete_delay_ms=0,
)
SOURCE = Path(__file__).parent / "java" / "KafkaCleanerPass.java"
# Three passes at one time (the second finds the emptied transactions' markers), then
# one past the horizon; twice, so markers freed by the first round's removals go too.
ADVANCES = [0, 0, RETENTION_MS, 0, RETENTION_MS]


def kafka_pass(classes: Path, directory: Path, now: int) -> None:
    command = java_command(
        "KafkaCleanerPass",
        [str(directory), str(now), "0", str(ONE_GROUP), str(RETENTION_MS)],
        extra_classpath=[classes],
    )
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def minikafka_pass(directory: Path, clock: ManualClock, high_watermark: int) -> None:
    log = Log.open(
        directory,
        CLEANED,
        clock=clock,
        had_clean_shutdown=True,
        high_watermark=high_watermark,
    )
    clean(log, 0, clock())
    log.close()


def segment_files(directory: Path) -> dict[str, bytes]:
    return {
        path.name: path.read_bytes()
        for path in sorted(directory.iterdir())
        if path.suffix in (".log", ".txnindex")
    }


def compare_passes(tmp_path: Path, write: TxnWriter, clock: ManualClock) -> int:
    """Clean both copies pass after pass; returns how many passes changed the files."""
    classes = compile_sources([SOURCE])
    log = write.log
    high_watermark = log.log_end_offset
    log.close()
    ours, theirs = tmp_path / "ours" / "t-0", tmp_path / "kafka" / "t-0"
    shutil.copytree(log.dir, ours)
    shutil.copytree(log.dir, theirs)
    changed = 0
    previous = segment_files(ours)
    for advance in ADVANCES:
        clock.advance(advance)
        minikafka_pass(ours, clock, high_watermark)
        kafka_pass(classes, theirs, clock())
        mine = segment_files(ours)
        assert mine == segment_files(theirs)
        changed += mine != previous
        previous = mine
    return changed


def test_kafkas_cleaner_leaves_the_same_files_for_interleaved_transactions(
    tmp_path: Path,
) -> None:
    # Guarantee: over four producers' interleaved transactions (an aborted value of a
    # committed key, a producer whose last transaction aborted), every pass leaves
    # byte for byte the segments and .txnindex Kafka's cleaner leaves.
    clock = ManualClock()
    writer = TxnWriter(Log.open(tmp_path / "written" / "t-0", WRITTEN, clock=clock))
    write_interleaved_txns(writer)
    assert compare_passes(tmp_path, writer, clock) >= 3  # removal, stamp, deletion


@pytest.mark.parametrize("seed", range(len(CompressionType)))
def test_kafkas_cleaner_leaves_the_same_files_for_random_transactions(
    tmp_path: Path, seed: int
) -> None:
    # Guarantee: on random histories (tombstones, empty transactions, every outcome)
    # written in each codec, both cleaners leave the same bytes after every pass: a
    # rewritten batch is compressed again as Kafka's Java client compresses it.
    rng = random.Random(seed)
    clock = ManualClock()
    writer = TxnWriter(
        Log.open(tmp_path / "written" / "t-0", WRITTEN, clock=clock),
        compression=list(CompressionType)[seed],
    )
    write_random_txns(writer, rng)
    assert compare_passes(tmp_path, writer, clock) >= 1
