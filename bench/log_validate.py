"""What the leader's record checks cost: Kafka's LogValidator against the header-only path.

The leader's record checks' benchmark, with a large produce. In this process, one producer
batch (``RECORDS`` records of ``VALUE_BYTES``-byte values with 8-byte keys, as a producer
builds it) goes through:

- ``header+CRC``: ``validate_batches``, the checks every batch had before (structure,
  CRC-32C, sizes): the no-check path, the baseline;
- ``validate``: that plus ``validate_records``: decompress (if compressed) and walk every
  record (counts, offset deltas, lengths, keys), what ``Log.append_as_leader`` now does;
- ``recompress to zstd``: validate, then ``recompress`` into zstd as a topic with
  ``compression.type=zstd`` does for a batch in another codec.

once per codec (none, gzip, snappy, lz4, zstd). Then a large produce: one
uncompressed batch of as many such records as fit in 1 MiB (a Produce request's worth),
through ``header+CRC``, ``validate`` and ``walk every record``: ``walk_records``, the
record-by-record walk that ``check_records`` falls back to where records change shape
(its runs of same-shaped records are proved from byte columns instead), so the row shows
what the runs save in the same run. A second 1 MiB batch has values of 50 to 150 bytes
(seeded), where no run forms: the fallback's cost, attempts included.

Each case runs ``BATCHES`` times per repeat (``LARGE_BATCHES`` for the 1 MiB ones); the
median of ``REPEATS`` repeats is quoted, as microseconds per batch, nanoseconds per record
and MB/s of producer bytes (the batch as sent, compressed or not). No disk, no network.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

import attrs

from minikafka.log import (
    CompressionType,
    Record,
    RecordBatchHeader,
    RecordRules,
    build_batch,
)
from minikafka.log._batch import RECORD_BATCH_OVERHEAD
from minikafka.log._record_checks import walk_records
from minikafka.log._validator import (
    decompressed_limit,
    recompress,
    validate_batches,
    validate_records,
)

from ._common import (
    Report,
    bar_chart_svg,
    command_line,
    machine_facts,
    markdown_table,
    now_utc,
)

NAME = "log_validate"
RECORDS = 200
VALUE_BYTES = 100
MAX_MESSAGE_BYTES = 1024 * 1024 + 12
LARGE_BYTES = 1024 * 1024  # one Produce request of the large produce
TIMESTAMP = 1_700_000_000_000
# A record's own fields at most, besides its value: length (2 bytes), attributes, the
# timestamp and offset deltas (2 and 3), the key with its length (9), the value's length
# (2), the header count.
RECORD_FIELDS_MAX = 20


@attrs.frozen
class Settings:
    batches: int
    large_batches: int
    repeats: int

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        if quick:
            return cls(batches=20, large_batches=2, repeats=1)
        return cls(batches=300, large_batches=20, repeats=5)


@attrs.frozen
class Outcome:
    codec: str
    case: str
    batch_bytes: int
    records: int
    us_per_batch: float
    mb_per_s: float
    runs_us: tuple[float, ...]


def _batch(codec: CompressionType) -> bytes:
    value = (b"0123456789abcdef" * 8)[:VALUE_BYTES]
    records = [Record(i, TIMESTAMP + i, b"key-%04d" % i, value) for i in range(RECORDS)]
    return build_batch(records, compression=codec)


def _large_batch(varying: bool) -> bytes:
    """About LARGE_BYTES of records, uncompressed: values of VALUE_BYTES, or of 50 to 150
    bytes when ``varying``; timestamps 100 records to the millisecond."""
    rng = random.Random(17)
    source = b"0123456789abcdef" * 10
    records: list[Record] = []
    size = RECORD_BATCH_OVERHEAD
    while True:
        i = len(records)
        value = source[: rng.randrange(50, 151) if varying else VALUE_BYTES]
        size += len(value) + RECORD_FIELDS_MAX
        if size > LARGE_BYTES:
            return build_batch(records)
        records.append(Record(i, TIMESTAMP + i // 100, b"key-%04d" % i, value))


def _cases(data: bytes) -> dict[str, Callable[[], object]]:
    rules = RecordRules(require_key=True)
    limit = decompressed_limit(MAX_MESSAGE_BYTES)

    def header_only() -> object:
        return validate_batches(
            data, max_message_bytes=MAX_MESSAGE_BYTES, from_client=True
        )

    def validate() -> object:
        batches = validate_batches(
            data, max_message_bytes=MAX_MESSAGE_BYTES, from_client=True
        )
        return validate_records(data, batches, rules, limit)

    def to_zstd() -> object:
        buf = bytearray(data)
        batches = validate_batches(
            buf, max_message_bytes=MAX_MESSAGE_BYTES, from_client=True
        )
        payloads = validate_records(buf, batches, rules, limit)
        return recompress(
            buf, batches, payloads, CompressionType.ZSTD, None, MAX_MESSAGE_BYTES
        )

    def walk() -> object:
        # validate's path for an uncompressed batch, with the walk alone in place of
        # check_records (the runs off): the walk of every record, as before the runs.
        [(position, header)] = validate_batches(
            data, max_message_bytes=MAX_MESSAGE_BYTES, from_client=True
        )
        start, end = position + RECORD_BATCH_OVERHEAD, position + header.size
        walk_records(data, start, end, header, rules)
        return header

    return {
        "header+CRC": header_only,
        "validate": validate,
        "recompress to zstd": to_zstd,
        "walk every record": walk,
    }


def _time(fn: Callable[[], object], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) / n * 1e6


def run(quick: bool = False) -> Report:
    settings = Settings.choose(quick)
    started, clock = now_utc(), time.perf_counter()
    outcomes: list[Outcome] = []

    def measure(
        group: str, data: bytes, case: str, fn: Callable[[], object], n: int
    ) -> None:
        fn()  # warm up (and fail fast)
        runs = tuple(_time(fn, n) for _ in range(settings.repeats))
        us = statistics.median(runs)
        count = RecordBatchHeader.read(data).record_count
        outcomes.append(
            Outcome(group, case, len(data), count, us, len(data) / us, runs)
        )

    for codec in CompressionType:
        data = _batch(codec)
        for case, fn in _cases(data).items():
            if case == "walk every record":
                continue  # the 1 MiB rows show it
            if case == "recompress to zstd" and codec is CompressionType.ZSTD:
                continue  # already zstd: the in-place path, the "validate" row
            measure(codec.name.lower(), data, case, fn, settings.batches)
    for group, varying in (
        ("none, 1 MiB", False),
        ("none, 1 MiB, 50-150 B values", True),
    ):
        data = _large_batch(varying)
        cases = _cases(data)
        for case in ("header+CRC", "validate", "walk every record"):
            measure(group, data, case, cases[case], settings.large_batches)
    document: dict[str, object] = {
        "benchmark": NAME,
        "description": __doc__,
        "command": command_line(),
        "quick": quick,
        "settings": {
            **attrs.asdict(settings),
            "records": RECORDS,
            "value_bytes": VALUE_BYTES,
            "large_bytes": LARGE_BYTES,
        },
        "started_at": started,
        "duration_s": round(time.perf_counter() - clock, 2),
        "units": {
            "us_per_batch": "wall microseconds per batch (median repeat)",
            "mb_per_s": "10^6 producer bytes (the batch as sent) per second",
        },
        "machine": machine_facts(),
        "results": [attrs.asdict(o) for o in outcomes],
    }
    return Report(NAME, document, _table(outcomes), _chart(outcomes))


def _table(outcomes: list[Outcome]) -> str:
    baseline = {o.codec: o.us_per_batch for o in outcomes if o.case == "header+CRC"}
    rows = [
        [
            o.codec,
            o.case,
            f"{o.batch_bytes:,}",
            f"{o.records:,}",
            f"{o.us_per_batch:,.1f}",
            f"{o.us_per_batch / o.records * 1000:,.0f}",
            f"{o.mb_per_s:,.1f}",
            f"{o.us_per_batch / baseline[o.codec]:.1f}x",
        ]
        for o in outcomes
    ]
    header = [
        "codec",
        "case",
        "batch B",
        "records",
        "µs/batch",
        "ns/record",
        "MB/s",
        "vs header+CRC",
    ]
    return markdown_table(header, rows)


def _chart(outcomes: list[Outcome]) -> str:
    groups = [
        (codec, [(o.case, o.us_per_batch) for o in outcomes if o.codec == codec])
        for codec in dict.fromkeys(o.codec for o in outcomes)
    ]
    title = (
        f"Validating one batch of {VALUE_BYTES} B records ({RECORDS}, or 1 MiB of them)"
    )
    return bar_chart_svg(title, "µs per batch", groups)
