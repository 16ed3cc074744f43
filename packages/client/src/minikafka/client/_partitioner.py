"""Which partition a record goes to (seed 000, "the partitioner"; KIP-480, KIP-794).

- A record with a partition set goes there.
- A record with a key goes to ``toPositive(murmur2(key)) % partitions``, over *all* of the
  topic's partitions whether or not they have a leader now: Kafka's ``Utils.murmur2``
  bit for bit, so the Java client, librdkafka's ``murmur2_random`` and this producer
  put the same key on the same partition, and a key's records stay in order.
- A record without a key (or with ``partitioner.ignore.keys``) goes to the topic's
  *sticky* partition: the same one until ``batch.size`` bytes have gone to it, then
  another chosen at random among the partitions that have a leader (KIP-794's uniform
  sticky partitioner, the default since Kafka 3.3). Sticking fills one batch at a time
  instead of spreading a trickle of records over one small batch per partition, which
  is what made ``linger.ms`` cost latency with the old round robin (KIP-480).
- ``partitioner.class=RoundRobinPartitioner`` deals keyless *and* keyed records to the
  available partitions in turn.

Kafka 3.3's built-in partitioner also weighs partitions by their brokers' queue
lengths (``partitioner.adaptive.partitioning.enable``); this one is uniform.

A core: no clock, no I/O; its randomness is the ``random.Random`` it is given.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import attrs

_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (32-bit MurmurHash2, seed 0x9747b28c), as a signed int
    the way Java returns it."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & _MASK
        k ^= k >> r
        k = (k * m) & _MASK
        h = (h * m) & _MASK
        h ^= k
    tail = data[whole:]
    if tail:
        # Java's switch falls through: three bytes left mix all three, and so on.
        for i in reversed(range(len(tail))):
            h ^= tail[i] << (8 * i)
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka's ``BuiltInPartitioner.partitionForKey``: ``toPositive(murmur2(key)) % n``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@attrs.define
class _Sticky:
    partition: int
    produced_bytes: int = 0


@attrs.define
class Partitioner:
    """The producer's choice of partition, per topic."""

    batch_size: int
    rng: random.Random
    round_robin: bool = False
    ignore_keys: bool = False
    _sticky: dict[str, _Sticky] = attrs.field(factory=dict)
    _counters: dict[str, int] = attrs.field(factory=dict)

    def partition(
        self, topic: str, key: bytes | None, partitions: int, available: Sequence[int]
    ) -> int:
        """The partition for a record of ``topic`` (``partitions`` in all, ``available``
        of them with a leader now)."""
        if self.round_robin:
            counter = self._counters.get(topic, 0)
            self._counters[topic] = counter + 1
            choices = available or range(partitions)
            return choices[counter % len(choices)]
        if key is not None and not self.ignore_keys:
            return partition_for_key(key, partitions)
        sticky = self._sticky.get(topic)
        if sticky is None or sticky.partition >= partitions:
            sticky = self._sticky[topic] = _Sticky(
                self._next(partitions, available, None)
            )
        return sticky.partition

    def on_append(
        self,
        topic: str,
        partition: int,
        size: int,
        partitions: int,
        available: Sequence[int],
    ) -> None:
        """``size`` bytes went to ``partition``: once the sticky partition has had
        ``batch.size`` of them, the next keyless record goes elsewhere (KIP-794's
        ``updatePartitionInfo``)."""
        sticky = self._sticky.get(topic)
        if sticky is None or sticky.partition != partition:
            return
        sticky.produced_bytes += size
        if sticky.produced_bytes >= max(self.batch_size, 1):
            self._sticky[topic] = _Sticky(self._next(partitions, available, partition))

    def _next(
        self, partitions: int, available: Sequence[int], current: int | None
    ) -> int:
        choices = [p for p in (available or range(partitions)) if p != current]
        if not choices:  # one partition: it stays
            return current if current is not None else 0
        return self.rng.choice(choices)
