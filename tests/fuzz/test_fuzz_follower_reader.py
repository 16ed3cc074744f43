"""The follower's reader against Fetch answers cut at every byte of a batch.

A leader cuts a Fetch answer at ``replica.fetch.max.bytes`` (or the response's
``fetch.max.bytes``) wherever the limit falls, inside a batch as often as not; only the
first batch of the answer is returned whole, whatever its size. Guarantees tested, for
every cut of a log of batches of several shapes (uncompressed, compressed, one record,
many, a large one):

- the follower's log takes the whole batches before the cut and nothing of the cut one,
  and raises nothing: a cut is not corruption;
- fetching again from its log end, the follower ends byte for byte the leader's log;
- a length no batch can have (shorter than a batch's own header, or negative) inside the
  answer is corruption: CorruptRecordError, nothing appended, no endless loop.
"""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import pytest

from minikafka.log import (
    CompressionType,
    CorruptRecordError,
    Log,
    LogConfig,
    iter_batches,
    whole_batches,
    whole_batches_size,
)
from minikafka.log.testing import ManualClock, keyed_batch

SEED = 24


def leader_log(tmp_path: Path) -> tuple[Log, bytes]:
    """A leader's log of batches of every shape, and all of its bytes."""
    rng = random.Random(SEED)
    leader = Log.open(tmp_path / "leader-0", LogConfig(), clock=ManualClock())
    shapes = [
        (1, 10, CompressionType.NONE),
        (5, 100, CompressionType.NONE),
        (3, 300, CompressionType.GZIP),
        (1, 2500, CompressionType.NONE),
        (20, 30, CompressionType.LZ4),
    ]
    for epoch, (count, size, codec) in enumerate(shapes):
        pairs = [(None, rng.randbytes(size)) for _ in range(count)]
        leader.append_as_leader(keyed_batch(pairs, compression=codec), epoch)
    read = leader.read(0, 1 << 30).records
    assert read is not None
    return leader, read.read_bytes()


def test_a_follower_takes_the_whole_batches_of_an_answer_cut_at_every_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Durability is not what this tests, and each truncation back rewrites the leader
    # epoch checkpoint: 23,000 fsyncs would be nearly all of the time.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    leader, data = leader_log(tmp_path)
    batches = list(iter_batches(data))
    follower = Log.open(tmp_path / "follower-0", LogConfig(), clock=ManualClock())
    for i, (start, header) in enumerate(batches):
        # The follower holds the batches before this one and asks from its log end:
        # the leader's answer starts here and is cut anywhere up to the end of the next
        # batch (inside this one, at its end, inside the next, at its end).
        last = batches[i + 1][0] + batches[i + 1][1].size if i + 1 < len(batches) else 0
        for cut in range(start, max(last, start + header.size) + 1):
            answer = data[start:cut]
            whole = whole_batches_size(answer)
            assert whole in (0, header.size, last - start), f"cut at byte {cut}"
            follower.append_as_follower(answer)
            expected = {
                0: header.base_offset,
                header.size: header.next_offset,
            }.get(whole, batches[i + 1][1].next_offset if i + 1 < len(batches) else -1)
            assert follower.log_end_offset == expected, (
                f"cut at byte {cut}: the follower holds exactly the whole batches"
            )
            if whole:
                follower.truncate_to(header.base_offset)  # as before the answer
        follower.append_as_follower(data[start : start + header.size])
    read = follower.read(0, 1 << 30).records
    assert read is not None
    assert read.read_bytes() == data, "byte for byte the leader's"
    assert follower.log_end_offset == leader.log_end_offset
    follower.close()
    leader.close()


@pytest.mark.parametrize("batch_length", [0, 48, -12, -1000, -(2**31)])
def test_an_impossible_batch_length_is_corruption_not_a_cut(
    tmp_path: Path, batch_length: int
) -> None:
    leader, data = leader_log(tmp_path)
    second = next(position for i, (position, _) in enumerate(iter_batches(data)) if i)
    bad = bytearray(data)
    struct.pack_into(">i", bad, second + 8, batch_length)
    with pytest.raises(CorruptRecordError):
        whole_batches_size(bad)
    with pytest.raises(CorruptRecordError):
        whole_batches(bytes(bad))
    follower = Log.open(tmp_path / "follower-0", LogConfig(), clock=ManualClock())
    with pytest.raises(CorruptRecordError):
        follower.append_as_follower(bytes(bad))
    assert follower.log_end_offset == 0, "nothing of a corrupt answer is appended"
    follower.close()
    leader.close()
