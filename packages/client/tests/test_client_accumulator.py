"""The RecordAccumulator's batching decisions, in virtual time (seconds as floats)."""

from __future__ import annotations

import pytest

from minikafka.client import BufferFull, PendingRecord, RecordAccumulator
from minikafka.client._accumulator import BATCH_OVERHEAD
from minikafka.common import TopicPartition
from minikafka.log import iter_batches

TP0, TP1, TP2 = (TopicPartition("t", p) for p in range(3))
LEADERS = {TP0: 1, TP1: 1, TP2: 2}


def record(value_bytes: int = 79) -> PendingRecord:
    # 100 bytes with framing
    return PendingRecord("t", None, b"x" * value_bytes, (), 1_000)


def accumulator(
    batch_size: int = 1_000,
    buffer_memory: int = 100_000,
    linger_ms: int = 5,
    retry_backoff_ms: int = 100,
) -> RecordAccumulator:
    return RecordAccumulator(batch_size, buffer_memory, linger_ms, retry_backoff_ms)


def test_a_batch_waits_for_linger_ms_unless_it_is_full() -> None:
    acc = accumulator()
    assert acc.append(TP0, record(), now=10.0)  # a new batch: the Sender should look
    assert not acc.append(TP0, record(), now=10.001)  # joined it, not full
    check = acc.ready(LEADERS.get, now=10.003)
    assert check.nodes == frozenset()
    assert check.next_check == pytest.approx(0.002)
    assert acc.ready(LEADERS.get, now=10.005).nodes == {1}  # linger.ms reached
    # Nine records of 100 bytes and the batch header make 961 bytes; the tenth does not
    # fit under batch.size (1,000), starts a second batch, and the first goes at once.
    full = accumulator(linger_ms=10_000)
    for _ in range(9):
        full.append(TP2, record(), now=0.0)
    assert full.ready(LEADERS.get, now=0.0).nodes == frozenset()
    full.append(TP2, record(), now=0.0)
    assert full.ready(LEADERS.get, now=0.0).nodes == {2}


def test_a_record_that_does_not_fit_starts_the_next_batch() -> None:
    acc = accumulator(linger_ms=10_000)
    for _ in range(12):
        acc.append(TP0, record(), now=0.0)
    # 9 in the first (939 bytes + 100 > 1,000), 3 after
    assert acc.queued_batches() == 2
    assert acc.ready(LEADERS.get, now=0.0).nodes == {
        1
    }  # a batch waits behind the first
    [first] = acc.drain(1, [TP0], max_request_size=1_000_000, now=0.0)
    assert len(first.records) == 9
    payload = first.build(acc.compression)
    [(_, header)] = list(iter_batches(payload))
    assert header.last_offset_delta == 8
    assert len(payload) <= 1_000


def test_flush_makes_every_batch_ready() -> None:
    acc = accumulator(linger_ms=10_000)
    acc.append(TP0, record(), now=0.0)
    assert acc.ready(LEADERS.get, now=1.0).nodes == frozenset()
    acc.begin_flush()
    assert acc.ready(LEADERS.get, now=1.0).nodes == {1}
    acc.end_flush()


def test_buffer_memory_bounds_unacknowledged_bytes() -> None:
    acc = accumulator(batch_size=100, buffer_memory=3 * (BATCH_OVERHEAD + 100))
    for partition in range(3):
        acc.append(TopicPartition("t", partition), record(), now=0.0)
    with pytest.raises(BufferFull):
        acc.append(TopicPartition("t", 3), record(), now=0.0)
    [batch] = acc.drain(1, [TP0], 1_000_000, now=0.0)
    with pytest.raises(BufferFull):  # drained is not acknowledged: still counted
        acc.append(TopicPartition("t", 3), record(), now=0.0)
    acc.release(batch)
    acc.append(TopicPartition("t", 3), record(), now=0.0)


def test_drain_takes_one_batch_per_partition_up_to_max_request_size_and_rotates() -> (
    None
):
    acc = accumulator(batch_size=200, linger_ms=0)
    partitions = [TopicPartition("t", p) for p in range(4)]
    for tp in partitions:
        for _ in range(3):  # 3 batches per partition (one 100-byte record fits in 200)
            acc.append(tp, record(), now=0.0)
    first = acc.drain(
        1, partitions, max_request_size=2 * (BATCH_OVERHEAD + 100), now=0.0
    )
    assert [b.topic_partition.partition for b in first] == [0, 1]
    second = acc.drain(1, partitions, max_request_size=10_000, now=0.0)
    # The next drain starts one partition further on, so partition 0 cannot starve others.
    assert [b.topic_partition.partition for b in second] == [1, 2, 3, 0]


def test_a_retried_batch_goes_back_in_sequence_order_and_waits_its_backoff() -> None:
    acc = accumulator(batch_size=100, linger_ms=0)
    for _ in range(3):
        acc.append(TP0, record(), now=0.0)
    batches = acc.drain(1, [TP0], 1_000_000, now=0.0) + acc.drain(
        1, [TP0], 1_000_000, now=0.0
    )
    for sequence, batch in zip((0, 1), batches, strict=True):
        batch.base_sequence = sequence
    acc.reenqueue(batches[1], now=1.0)
    acc.reenqueue(batches[0], now=1.0)  # answered after its successor, goes before it
    assert acc.ready(LEADERS.get, now=1.05).nodes == frozenset()  # retry.backoff.ms
    assert acc.ready(LEADERS.get, now=1.1).nodes == {1}
    order = [acc.drain(1, [TP0], 1_000_000, now=1.1)[0] for _ in range(3)]
    assert [b.base_sequence for b in order] == [0, 1, -1]  # the unsent batch last


def test_batches_older_than_the_delivery_timeout_are_taken_out() -> None:
    acc = accumulator(linger_ms=10_000)
    acc.append(TP0, record(), now=0.0)
    acc.append(TP2, record(), now=50.0)
    expired = acc.expired(delivery_timeout_ms=120_000, now=120.0)
    assert [b.topic_partition for b in expired] == [TP0]
    assert acc.queued_batches() == 1
