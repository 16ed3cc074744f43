"""The partitioner: Kafka's murmur2 bit for bit, KIP-794's sticky choice, round robin."""

from __future__ import annotations

import collections
import itertools
import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from minikafka.client import Partitioner, murmur2, partition_for_key

# Kafka's UtilsTest.testMurmur2: what the Java client computes for these keys.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), JAVA_MURMUR2.items())
def test_murmur2_is_the_java_clients(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_murmur2_agrees_with_kafka_python_on_every_tail_length() -> None:
    # kafka-python's murmur2 (another reading of Java's) returns Java's int as unsigned.
    for n in range(64):
        data = bytes(range(n))
        assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data) & 0xFFFFFFFF


def test_a_key_goes_to_to_positive_hash_mod_partitions() -> None:
    # toPositive(-790332482) = 1357151166, and 1357151166 % 10 = 6
    assert partition_for_key(b"foobar", 10) == 6
    partitioner = Partitioner(batch_size=100, rng=random.Random(1))
    # Keyed records ignore availability: a key's partition does not move with leaders.
    assert partitioner.partition("t", b"foobar", 10, available=[0, 1]) == 6


def test_keyless_records_stick_until_a_batch_size_has_gone_there() -> None:
    """KIP-794: one partition gets batch.size bytes, then another (never the same one
    twice in a row), chosen among the available partitions."""
    partitioner = Partitioner(batch_size=1_000, rng=random.Random(7))
    available = [0, 2, 3, 5]
    choices = []
    for _ in range(400):
        partition = partitioner.partition("t", None, 6, available)
        partitioner.on_append("t", partition, 100, 6, available)
        choices.append(partition)
    runs = [len(list(g)) for _, g in itertools.groupby(choices)]
    assert all(run == 10 for run in runs)  # 10 records x 100 bytes = batch.size
    assert set(choices) <= set(available)
    counts = collections.Counter(choices)
    assert len(counts) == 4
    assert min(counts.values()) >= 40


def test_ignore_keys_and_round_robin() -> None:
    ignoring = Partitioner(batch_size=10_000, rng=random.Random(3), ignore_keys=True)
    assert (
        len({ignoring.partition("t", f"k{i}".encode(), 8, range(8)) for i in range(50)})
        == 1
    )
    robin = Partitioner(batch_size=10_000, rng=random.Random(3), round_robin=True)
    dealt = [robin.partition("t", b"same key", 4, [0, 1, 3]) for _ in range(6)]
    assert dealt == [0, 1, 3, 0, 1, 3]
    other = [robin.partition("u", None, 2, []) for _ in range(3)]  # none available: all
    assert other == [0, 1, 0]
