"""What the leader's record checks cost: Kafka's LogValidator against the header-only path.

Issue 15 item 3's benchmark. In this process, one producer batch (``RECORDS`` records of
``VALUE_BYTES``-byte values with 8-byte keys, as a producer builds it) goes through:

- ``header+CRC``: ``validate_batches``, the checks every batch had before (structure,
  CRC-32C, sizes): the no-check path, the baseline;
- ``validate``: that plus ``validate_records``: decompress (if compressed) and walk every
  record (counts, offset deltas, lengths, keys), what ``Log.append_as_leader`` now does;
- ``recompress to zstd``: validate, then ``recompress`` into zstd as a topic with
  ``compression.type=zstd`` does for a batch in another codec.

once per codec (none, gzip, snappy, lz4, zstd). Each case runs ``BATCHES`` times per
repeat; the median of ``REPEATS`` repeats is quoted, as microseconds per batch and as MB/s
of producer bytes (the batch as sent, compressed or not). No disk, no network.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import attrs

from minikafka.log import CompressionType, Record, RecordRules, build_batch
from minikafka.log._validator import (
    decompressed_limit,
    recompress,
    validate_batches,
    validate_records,
)

from ._common import Report, bar_chart_svg, command_line, machine_facts, markdown_table, now_utc

NAME = "log_validate"
RECORDS = 200
VALUE_BYTES = 100
MAX_MESSAGE_BYTES = 1024 * 1024 + 12


@attrs.frozen
class Settings:
    batches: int
    repeats: int

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        return cls(batches=20, repeats=1) if quick else cls(batches=300, repeats=5)


@attrs.frozen
class Outcome:
    codec: str
    case: str
    batch_bytes: int
    us_per_batch: float
    mb_per_s: float
    runs_us: tuple[float, ...]


def _batch(codec: CompressionType) -> bytes:
    value = (b"0123456789abcdef" * 8)[:VALUE_BYTES]
    records = [Record(i, 1_700_000_000_000 + i, b"key-%04d" % i, value) for i in range(RECORDS)]
    return build_batch(records, compression=codec)


def _cases(data: bytes) -> dict[str, Callable[[], object]]:
    rules = RecordRules(require_key=True)
    limit = decompressed_limit(MAX_MESSAGE_BYTES)

    def header_only() -> object:
        return validate_batches(data, max_message_bytes=MAX_MESSAGE_BYTES, from_client=True)

    def validate() -> object:
        batches = validate_batches(data, max_message_bytes=MAX_MESSAGE_BYTES, from_client=True)
        return validate_records(data, batches, rules, limit)

    def to_zstd() -> object:
        buf = bytearray(data)
        batches = validate_batches(buf, max_message_bytes=MAX_MESSAGE_BYTES, from_client=True)
        payloads = validate_records(buf, batches, rules, limit)
        return recompress(buf, batches, payloads, CompressionType.ZSTD, None, MAX_MESSAGE_BYTES)

    return {"header+CRC": header_only, "validate": validate, "recompress to zstd": to_zstd}


def _time(fn: Callable[[], object], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) / n * 1e6


def run(quick: bool = False) -> Report:
    settings = Settings.choose(quick)
    started, clock = now_utc(), time.perf_counter()
    outcomes: list[Outcome] = []
    for codec in CompressionType:
        data = _batch(codec)
        for case, fn in _cases(data).items():
            if case == "recompress to zstd" and codec is CompressionType.ZSTD:
                continue  # already zstd: the in-place path, the "validate" row
            fn()  # warm up (and fail fast)
            runs = tuple(_time(fn, settings.batches) for _ in range(settings.repeats))
            us = statistics.median(runs)
            outcomes.append(Outcome(codec.name.lower(), case, len(data), us, len(data) / us, runs))
    document: dict[str, object] = {
        "benchmark": NAME,
        "description": __doc__,
        "command": command_line(),
        "quick": quick,
        "settings": {**attrs.asdict(settings), "records": RECORDS, "value_bytes": VALUE_BYTES},
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
            f"{o.us_per_batch:,.1f}",
            f"{o.us_per_batch / RECORDS * 1000:,.0f}",
            f"{o.mb_per_s:,.1f}",
            f"{o.us_per_batch / baseline[o.codec]:.1f}x",
        ]
        for o in outcomes
    ]
    header = ["codec", "case", "batch B", "µs/batch", "ns/record", "MB/s", "vs header+CRC"]
    return markdown_table(header, rows)


def _chart(outcomes: list[Outcome]) -> str:
    groups = [
        (codec, [(o.case, o.us_per_batch) for o in outcomes if o.codec == codec])
        for codec in dict.fromkeys(o.codec for o in outcomes)
    ]
    title = f"Validating one batch of {RECORDS} x {VALUE_BYTES} B records"
    return bar_chart_svg(title, "µs per batch", groups)
