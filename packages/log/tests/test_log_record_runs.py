"""The record walk's fast path (_record_runs): runs of same-shaped records proved from byte
columns must reach exactly the verdicts of the record-by-record walk.

The walk itself is tested through the log in test_log_validator_records.py; here each
batch is checked twice, once as shipped (check_records) and once by the walk alone
(walk_records), and the outcomes (accepted, or the same error class and message) must agree.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs
import pytest

from minikafka.log import (
    Header,
    InvalidRecordError,
    InvalidTimestampError,
    MissingKeyError,
    Record,
    RecordBatchHeader,
    RecordRules,
    build_batch,
    check_records,
)
from minikafka.log._batch import HEADER
from minikafka.log._compression import Buffer
from minikafka.log._record_checks import walk_records
from minikafka.log._record_runs import offset_delta_column, verified_run

NOW = 1_700_000_000_000
MAX_LONG = 2**63 - 1

Outcome = tuple[str, str] | None
Check = Callable[[Buffer, int, int, RecordBatchHeader, RecordRules], None]


def uniform(
    n: int, *, key: bytes | None = b"key-0000", value_bytes: int = 100
) -> bytearray:
    """``n`` records of one shape, timestamps one millisecond apart (as the bench's)."""
    value = b"v" * value_bytes
    return bytearray(build_batch([Record(i, NOW + i, key, value) for i in range(n)]))


def outcome(
    check: Check,
    data: bytes | bytearray | memoryview,
    header: RecordBatchHeader,
    rules: RecordRules,
) -> Outcome:
    try:
        check(data, HEADER.size, len(data), header, rules)
    except InvalidRecordError as e:
        return type(e).__name__, str(e)
    return None


def both_ways(
    data: bytes | bytearray | memoryview, header: RecordBatchHeader, rules: RecordRules
) -> Outcome:
    """The verdict with runs, after checking that the walk alone reaches the same one."""
    with_runs = outcome(check_records, data, header, rules)
    assert with_runs == outcome(walk_records, data, header, rules)
    return with_runs


def zigzag_varint(value: int) -> bytes:
    unsigned, out = (value << 1) ^ (value >> 63), bytearray()
    while unsigned >= 0x80:
        out.append(unsigned & 0x7F | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


@pytest.mark.parametrize(
    ("first", "n"),
    [
        (0, 64),
        (5, 40),
        (64, 8128),
        (100, 3000),
        (8192, 20000),
        (1_000_000, 40_000),
        (1 << 20, 20_000),
    ],
)
def test_offset_delta_columns_are_the_varints_bytes(first: int, n: int) -> None:
    """The expected columns, built from repeating tables, equal the varints byte by byte
    (within one width: 1 byte below 64, 2 below 8192, 3 below 2^20, 4 beyond)."""
    encoded = [zigzag_varint(d) for d in range(first, first + n)]
    width = len(encoded[0])
    assert len(encoded[-1]) == width
    for digit in range(width):
        assert offset_delta_column(first, n, width, digit) == bytes(
            e[digit] for e in encoded
        )


def test_a_uniform_batch_is_proved_in_runs() -> None:
    """Records of one shape go by runs, split only where the offset delta (and here the
    timestamp delta) grows a byte: 64 records, then the other 136."""
    batch = uniform(200)
    header = RecordBatchHeader.read(batch)
    start = HEADER.size
    n, size = verified_run(batch, start, len(batch), 0, 200, True, None)
    assert n == 64
    rest, size2 = verified_run(batch, start + n * size, len(batch), 64, 200, True, None)
    assert (rest, start + n * size + rest * size2) == (136, len(batch))
    assert outcome(check_records, batch, header, RecordRules(require_key=True)) is None


LARGE = 9000  # about 1 MiB of records: runs across the offset delta's 1/2-byte widths


@pytest.fixture(scope="module")
def large() -> bytes:
    value = b"v" * 100
    records = [Record(i, NOW + i, b"key-%05d" % i, value) for i in range(LARGE)]
    return build_batch(records)


def fields_of(batch: bytearray, index: int) -> int:
    """Where record ``index``'s key starts (its key is unique): its key length varint is
    the byte before, the 2-byte offset delta the two before that, and so on."""
    at = batch.find(b"key-%05d" % index)
    assert at > 0
    return at


def tampered(large: bytes, how: str) -> tuple[bytearray, RecordBatchHeader]:
    batch = bytearray(large)
    header = RecordBatchHeader.read(batch)
    key = fields_of(batch, 5000)
    if how == "offset delta":
        batch[key - 3 : key - 1] = zigzag_varint(5001)
    elif how == "null key":
        batch[key - 1] = 0x01  # zigzag -1
    elif how == "value length":
        batch[key + 9] += 2  # zigzag +1: the value now runs into the next record
    elif how == "timestamp width":
        # a third timestamp byte: it swallows the offset delta's first
        batch[key - 4] |= 0x80
    elif how == "trailing byte":
        batch.append(0)
    elif how == "one record more declared":
        header = attrs.evolve(header, record_count=LARGE + 1)
    elif how == "one record less declared":
        header = attrs.evolve(header, record_count=LARGE - 1)
    return batch, header


@pytest.mark.parametrize(
    ("how", "error", "message"),
    [
        ("offset delta", InvalidRecordError, "record 5000 has offset delta 5001"),
        ("null key", MissingKeyError, "without key (record 5000)"),
        ("value length", InvalidRecordError, "header count is cut off"),
        ("timestamp width", InvalidRecordError, "record 5000 has offset delta"),
        ("trailing byte", InvalidRecordError, "1 bytes follow the 9000 records"),
        (
            "one record more declared",
            InvalidRecordError,
            "declares 9001 records but holds 9000",
        ),
        (
            "one record less declared",
            InvalidRecordError,
            "bytes follow the 8999 records",
        ),
    ],
)
def test_a_bad_record_deep_in_a_run_is_reported_as_the_walk_reports_it(
    large: bytes, how: str, error: type, message: str
) -> None:
    """One record broken in the middle of 9,000 same-shaped ones: the runs stop before it
    and the walk names it, with the same error as when it walks every record."""
    batch, header = tampered(large, how)
    result = both_ways(batch, header, RecordRules(require_key=True))
    assert result is not None
    assert result[0] == error.__name__
    assert message in result[1]


def test_the_intact_large_batch_passes_both_ways(large: bytes) -> None:
    header = RecordBatchHeader.read(large)
    for data in (large, bytearray(large), memoryview(large)):
        assert both_ways(data, header, RecordRules(require_key=True)) is None


@pytest.mark.parametrize(
    ("before", "after", "failing"),
    [
        (
            MAX_LONG,
            6_000,
            6_001,
        ),  # deltas up to 8999 > 6000: the 2-byte width can leave
        (1, MAX_LONG, None),  # nothing is older than now - 1
        (MAX_LONG, 10_000, None),  # every delta fits: width 2 (up to 8191) cannot leave
        (MAX_LONG, 0, 1),
    ],
)
def test_timestamps_are_checked_where_the_window_can_fail(
    large: bytes,
    before: int,
    after: int,
    failing: int | None,
) -> None:
    """KIP-937's bounds: a run whose timestamp width fits the window skips the check; one
    that does not is walked, and the first record out of range is named."""
    header = RecordBatchHeader.read(large)
    rules = RecordRules(now_ms=NOW, before_max_ms=before, after_max_ms=after)
    result = both_ways(large, header, rules)
    if failing is None:
        assert result is None
    else:
        assert result is not None
        assert result[0] == InvalidTimestampError.__name__
        assert f"of record {failing} is out of range" in result[1]


def test_records_with_headers_and_null_values_run_too() -> None:
    """Header lengths are structural bytes like the others; a null value is -1."""
    records = [
        Record(i, NOW, None, None if i % 50 else b"x", (Header("trace", b"0123"),))
        for i in range(300)
    ]
    batch = bytearray(build_batch(records))
    header = RecordBatchHeader.read(batch)
    assert both_ways(batch, header, RecordRules()) is None
    result = both_ways(batch, header, RecordRules(require_key=True))
    assert result is not None
    assert "without key (record 0)" in result[1]


@pytest.mark.parametrize("seed", range(60))
def test_random_damage_gets_the_walks_verdict(seed: int) -> None:
    """Mostly same-shaped batches (some values of other lengths, some wide timestamps),
    with bytes flipped, inserted or removed anywhere: runs and walk always agree."""
    rng = random.Random(seed)
    n = rng.randrange(16, 400)
    timestamps = rng.choice(
        [[NOW] * n, [NOW + i for i in range(n)], [NOW - 40 * i for i in range(n)]]
    )
    records = [
        Record(
            i,
            timestamps[i],
            None if rng.random() < 0.02 else b"k%03d" % (i % 1000),
            b"v" * (100 if rng.random() < 0.95 else rng.randrange(0, 200)),
        )
        for i in range(n)
    ]
    batch = bytearray(build_batch(records))
    header = RecordBatchHeader.read(batch)
    for _ in range(rng.randrange(0, 4)):
        at = rng.randrange(HEADER.size, len(batch))
        action = rng.random()
        if action < 0.7:
            batch[at] ^= 1 << rng.randrange(8)
        elif action < 0.85:
            del batch[at]
        else:
            batch.insert(at, rng.randrange(256))
    rules = RecordRules(
        require_key=rng.random() < 0.5,
        now_ms=NOW,
        before_max_ms=rng.choice([MAX_LONG, 1_000, 100_000]),
        after_max_ms=rng.choice([MAX_LONG, 50, 100_000]),
    )
    data = memoryview(batch) if rng.random() < 0.3 else batch
    both_ways(data, header, rules)
