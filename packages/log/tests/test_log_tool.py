"""``python -m minikafka.log``: dump, verify and demo, our kafka-dump-log.sh.

Most tests call the functions with a StringIO; one runs the module as a process. What the
tool prints is checked against batches read independently with ``iter_batches``.
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.log import (
    Header,
    Record,
    RecordBatchHeader,
    build_batch,
    decode_batch,
    iter_batches,
    make_records,
    read_batch_header,
)
from minikafka.log.__main__ import main
from minikafka.log._batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    CompressionType,
    compute_crc,
)
from minikafka.log._demo import demo
from minikafka.log._tool import dump, format_batch, format_record, show_bytes, verify

FIRST_LOG = "00000000000000000000.log"
TS = 1_700_000_000_000


def _run(function: str, path: Path, **flags: bool) -> tuple[int, str]:
    out = io.StringIO()
    status = dump(path, out, **flags) if function == "dump" else verify(path, out)
    return status, out.getvalue()


def _batches(partition: Path) -> list[tuple[Path, int, RecordBatchHeader]]:
    """Every batch of every segment, read without the tool."""
    found = []
    for log_path in sorted(partition.glob("*.log")):
        for position, header in iter_batches(log_path.read_bytes()):
            found.append((log_path, position, header))
    return found


def _batch_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("baseOffset:")]


def _field(line: str, name: str) -> str:
    words = line.split()
    return words[words.index(f"{name}:") + 1]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The demo's log dir and what the demo printed (written once; copy it to damage it)."""
    root = tmp_path_factory.mktemp("demo")
    out = io.StringIO()
    assert demo(out, root) == 0
    return root, out.getvalue()


@pytest.fixture
def partition(demo_run: tuple[Path, str]) -> Path:
    return demo_run[0] / "demo-0"


@pytest.fixture
def damaged(demo_run: tuple[Path, str], tmp_path: Path) -> Path:
    """A copy of the demo's partition directory that a test may break."""
    shutil.copytree(demo_run[0] / "demo-0", tmp_path / "demo-0")
    return tmp_path / "demo-0"


# --- demo ---------------------------------------------------------------------------------


def test_demo_rolls_segments_and_says_what_to_run_next(
    demo_run: tuple[Path, str],
) -> None:
    root, output = demo_run
    partition = root / "demo-0"
    logs = sorted(partition.glob("*.log"))
    assert len(logs) >= 5
    assert all(p.stat().st_size <= 4096 for p in logs)  # segment.bytes=4096
    assert all(p.with_suffix(".index").stat().st_size > 0 for p in logs[:-1])
    batches = _batches(partition)
    assert len(batches) == 300
    records = sum(h.record_count for _, _, h in batches)
    assert f"log end offset {records}," in output
    assert {h.compression for _, _, h in batches} == set(CompressionType)
    for p in logs:
        assert f"{p.stat().st_size:>6} {p.name}" in output  # the ls -l listing
    assert "FileSlice(" in output
    assert "EARLIEST (-2)              -> offset 0 " in output
    assert f"LATEST (-1)                -> offset {records} " in output
    assert f"python -m minikafka.log dump {partition}" in output
    assert f"python -m minikafka.log verify {partition}" in output


def test_demo_is_deterministic(demo_run: tuple[Path, str], tmp_path: Path) -> None:
    root, output = demo_run
    again = io.StringIO()
    assert demo(again, tmp_path) == 0
    assert again.getvalue().replace(str(tmp_path), "ROOT") == output.replace(
        str(root), "ROOT"
    )
    for log_path in (root / "demo-0").glob("*.log"):
        assert (
            tmp_path / "demo-0" / log_path.name
        ).read_bytes() == log_path.read_bytes()


def test_demo_refuses_a_directory_holding_a_log(demo_run: tuple[Path, str]) -> None:
    assert main(["demo", "--dir", str(demo_run[0])]) == 2


def test_demo_in_a_temporary_directory_cleans_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    root = Path(out.split("Removed ", 1)[1].split(";", 1)[0])
    assert not root.exists()


# --- dump ---------------------------------------------------------------------------------


def test_dump_prints_every_batch_of_every_segment(partition: Path) -> None:
    status, output = _run("dump", partition)
    assert status == 0
    lines = _batch_lines(output)
    assert lines[0].startswith(
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false "
        "isControl: false deleteHorizonMs: OptionalLong.empty position: 0 "
        "CreateTime: 1700000000000 size: "
    )
    assert lines[1].startswith("baseOffset: 1 lastOffset: 2 count: 2 ")
    assert "compresscodec: gzip" in lines[1]
    assert lines[2].startswith("baseOffset: 3 lastOffset: 6 count: 4 ")
    assert "compresscodec: snappy" in lines[2]
    assert "partitionLeaderEpoch: 1" in lines[-1]  # the demo's leader change
    batches = _batches(partition)
    assert len(lines) == len(batches) == 300
    for line, (_, position, header) in zip(lines, batches, strict=True):
        assert int(_field(line, "baseOffset")) == header.base_offset
        assert int(_field(line, "lastOffset")) == header.last_offset
        assert int(_field(line, "count")) == header.record_count
        assert int(_field(line, "position")) == position
        assert int(_field(line, "size")) == header.size
        assert _field(line, "crc") == str(header.crc)  # unsigned decimal, as Kafka
        assert f" magic: 2 compresscodec: {header.compression.name.lower()} " in line
        assert line.endswith("isvalid: true")
    dumped = [
        line.split()[1] for line in output.splitlines() if line.startswith("Dumping")
    ]
    assert dumped == [str(p) for p in sorted(partition.glob("*.log"))]


def test_dump_of_a_log_dir_or_one_segment(partition: Path) -> None:
    assert _run("dump", partition.parent) == _run("dump", partition)
    status, output = _run("dump", partition / FIRST_LOG)
    assert status == 0
    in_first = [b for b in _batches(partition) if b[0].name == FIRST_LOG]
    assert len(_batch_lines(output)) == len(in_first)


def test_dump_deep_prints_every_record(partition: Path) -> None:
    status, output = _run("dump", partition, deep=True)
    assert status == 0
    records = [line for line in output.splitlines() if line.startswith("| offset:")]
    total = sum(h.record_count for _, _, h in _batches(partition))
    assert [int(_field(line, "offset")) for line in records] == list(range(total))
    assert records[1] == (
        "| offset: 1 CreateTime: 1700000000010 keySize: 7 valueSize: 34 sequence: -1 "
        'headerKeys: [] key: user-03 payload: {"order":1,"line":0,"item":"pear"}'
    )
    # The keyless binary record of batch 2 is shown as hex.
    assert records[6] == (
        "| offset: 6 CreateTime: 1700000000020 keySize: -1 valueSize: 16 sequence: -1 "
        "headerKeys: [] payload: 0x" + struct.pack(">qd", 2, 2 / 7).hex()
    )  # no key: the field is left out, as kafka-dump-log.sh does


def _dumped_records(
    records: list[Record],
    *,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
) -> list[str]:
    """What ``dump --deep`` prints for one batch of ``records``: its batch line first
    (an empty batch, as compaction leaves, starts at offset 5)."""
    data = build_batch(
        records,
        base_offset=None if records else 5,
        last_offset_delta=None if records else 0,
        is_control=is_control,
        delete_horizon_ms=delete_horizon_ms,
    )
    header = read_batch_header(data, 0)
    _, decoded = decode_batch(data)
    return [format_batch(header, 0)] + [format_record(r, header) for r in decoded]


def test_records_are_printed_as_kafka_dump_log_prints_them() -> None:
    # Guarantee: a record's line has kafka-dump-log.sh's fields: header keys joined by a
    # comma, a null key or value left out (not "null"), an empty value as nothing.
    records = [
        Record(0, TS, None, b"v", (Header("a", b"1"), Header("b", None))),
        Record(1, TS, b"k", None),
        Record(2, TS, b"k", b""),
    ]
    lines = _dumped_records(records)
    assert lines[1:] == [
        f"| offset: 0 CreateTime: {TS} keySize: -1 valueSize: 1 sequence: -1 "
        "headerKeys: [a,b] payload: v",
        f"| offset: 1 CreateTime: {TS} keySize: 1 valueSize: -1 sequence: -1 "
        "headerKeys: [] key: k",
        f"| offset: 2 CreateTime: {TS} keySize: 1 valueSize: 0 sequence: -1 "
        "headerKeys: [] key: k payload: ",
    ]


def test_a_delete_horizon_is_printed_as_javas_optional_long() -> None:
    (line,) = _dumped_records([], delete_horizon_ms=TS)
    assert f" deleteHorizonMs: OptionalLong[{TS}] position: 0 " in line


def test_control_records_are_named_not_dumped_as_bytes() -> None:
    # Guarantee: a transaction marker shows its outcome and coordinator epoch, another
    # control record its type, as kafka-dump-log.sh shows them (a control batch's key
    # and value are not data).
    commit = Record(7, TS, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 12))
    leader_change = Record(8, TS, struct.pack(">hh", 0, 2), b"\x00\x00")
    lines = _dumped_records([commit, leader_change], is_control=True)
    assert " isControl: true " in lines[0]
    assert lines[1].endswith("headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 12")
    assert lines[2].endswith("headerKeys: [] controlType: LEADER_CHANGE(2)")


def test_show_bytes() -> None:
    assert show_bytes(None) == "null"
    assert show_bytes(b"") == ""
    assert show_bytes("café".encode()) == "café"
    assert show_bytes(b"x" * 100) == "x" * 64 + "..."
    assert show_bytes(b"tab\there") == "0x" + b"tab\there".hex()
    assert show_bytes(bytes(40)) == "0x" + "00" * 32 + "..."


# An index file's suffix, the struct of one entry, and how kafka-dump-log.sh prints an entry.
_INDEX_FILES = [
    ("index", ">ii", "offset: {} position: {}"),
    ("timeindex", ">qi", "timestamp: {} offset: {}"),
]


@pytest.mark.parametrize(
    ("suffix", "entry", "line"), _INDEX_FILES, ids=[i[0] for i in _INDEX_FILES]
)
def test_dump_index_files(partition: Path, suffix: str, entry: str, line: str) -> None:
    index = partition / f"00000000000000000000.{suffix}"
    status, output = _run("dump", index)
    assert status == 0
    entries = list(struct.iter_unpack(entry, index.read_bytes()))
    assert len(entries) >= 3
    assert output.splitlines() == [f"Dumping {index}"] + [
        line.format(*e) for e in entries
    ]


@pytest.mark.parametrize(
    ("suffix", "entry", "line"), _INDEX_FILES, ids=[i[0] for i in _INDEX_FILES]
)
def test_a_preallocated_index_ends_at_its_first_zero_entry(
    partition: Path, tmp_path: Path, suffix: str, entry: str, line: str
) -> None:
    # Guarantee: the index of a running (or crashed) Kafka's active segment, written
    # into a file preallocated with zeros, dumps as its entries alone, with no
    # mismatch, as kafka-dump-log.sh stops at the first entry back at the base offset.
    for name in (FIRST_LOG, f"00000000000000000000.{suffix}"):
        shutil.copy(partition / name, tmp_path / name)
    index = tmp_path / f"00000000000000000000.{suffix}"
    trimmed = _run("dump", index)
    size = struct.calcsize(entry)
    with index.open("ab") as f:
        f.write(bytes(size * 1000))
    assert _run("dump", index) == trimmed
    assert trimmed[0] == 0
    assert len(trimmed[1].splitlines()) == 1 + index.stat().st_size // size - 1000


def test_each_offset_index_entry_is_a_batchs_last_offset_and_position(
    partition: Path,
) -> None:
    batches = {(p.name, pos): h for p, pos, h in _batches(partition)}
    index = partition / "00000000000000000000.index"
    for offset, position in struct.iter_unpack(">ii", index.read_bytes()):
        assert batches[FIRST_LOG, position].last_offset == offset


def test_dump_with_index_adds_each_segments_indexes(partition: Path) -> None:
    status, output = _run("dump", partition, index=True)
    assert status == 0
    assert "Mismatches" not in output
    for log_path in partition.glob("*.log"):
        assert f"Dumping {log_path.with_suffix('.index')}" in output
        assert f"Dumping {log_path.with_suffix('.timeindex')}" in output


def test_dump_index_reports_an_entry_that_points_nowhere(damaged: Path) -> None:
    index = damaged / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    offset, _ = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, offset, 1)  # the second entry now points at byte 1
    index.write_bytes(bytes(data) + b"\x00\x00")  # and a torn entry at the end
    status, output = _run("dump", index)
    assert status == 1
    assert f"Mismatches in {index}:" in output
    assert f"offset: {offset} position: 1: no batch starts there" in output
    assert "2 trailing bytes are not a whole entry" in output
    # The log itself is fine (an index is rebuilt from it), so the dump goes on.
    status, output = _run("dump", damaged, index=True)
    assert status == 1
    assert len(_batch_lines(output)) == 300


def test_dump_stops_at_a_corrupt_batch(damaged: Path) -> None:
    log_path, position, header = _batches(damaged)[40]
    _flip_byte(log_path, position + 70)
    status, output = _run("dump", damaged)
    assert status == 1
    lines = _batch_lines(output)
    assert len(lines) == 41  # the corrupt batch is shown, nothing after it
    assert lines[-1].endswith("isvalid: false")
    assert (
        f"CORRUPT: batch at position {position} (base offset {header.base_offset})"
        in output
    )
    assert "Traceback" not in output


# --- verify -------------------------------------------------------------------------------


def test_verify_a_good_log(partition: Path) -> None:
    status, output = _run("verify", partition)
    batches = _batches(partition)
    logs = list(partition.glob("*.log"))
    size = sum(p.stat().st_size for p in logs)
    records = sum(h.record_count for _, _, h in batches)
    assert (status, output) == (
        0,
        f"OK: {len(batches)} batches, {records} records, {size} bytes in {len(logs)} segments\n",
    )
    assert _run("verify", partition.parent) == (status, output)


def _flip_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))


def test_verify_finds_a_flipped_byte(damaged: Path) -> None:
    segments = sorted(damaged.glob("*.log"))
    log_path, position, header = [b for b in _batches(damaged) if b[0] == segments[1]][
        3
    ]
    _flip_byte(log_path, position + 61 + 5)  # inside the records, under the CRC
    status, output = _run("verify", damaged)
    assert status == 1
    assert output.startswith(
        f"CORRUPT: {log_path} position {position} baseOffset {header.base_offset}: "
    )
    assert "CRC" in output


def test_verify_finds_a_torn_tail(damaged: Path) -> None:
    log_path, position, header = _batches(damaged)[-1]
    with log_path.open("r+b") as f:
        # a crash in the middle of the last write
        f.truncate(position + header.size - 5)
    status, output = _run("verify", damaged)
    assert status == 1
    assert output.startswith(
        f"CORRUPT: {log_path} position {position} baseOffset {header.base_offset}: "
    )
    assert f"declares {header.size} bytes but only {header.size - 5} remain" in output


def _segment(dir: Path, base_offset: int, *batches: bytes) -> Path:
    dir.mkdir(exist_ok=True)
    path = dir / f"{base_offset:020d}.log"
    path.write_bytes(b"".join(batches))
    return path


def _batch(first_offset: int, count: int) -> bytes:
    pairs: list[tuple[bytes | None, bytes | None]] = [(b"k", b"v")] * count
    return build_batch(make_records(pairs, first_offset=first_offset, timestamp_ms=TS))


def test_verify_decodes_records_under_a_good_crc(tmp_path: Path) -> None:
    """A producer's batch that says GZIP but is not: its CRC is right, its records are not."""
    bad = bytearray(_batch(1, 2))
    struct.pack_into(">h", bad, ATTRIBUTES_OFFSET, CompressionType.GZIP)
    struct.pack_into(">I", bad, CRC_OFFSET, compute_crc(bad, 0, len(bad)))
    good = _batch(0, 1)
    path = _segment(tmp_path / "t-0", 0, good, bytes(bad))
    status, output = _run("verify", path)
    assert status == 1
    assert output.startswith(f"CORRUPT: {path} position {len(good)} baseOffset 1: ")
    assert "GZIP" in output
    assert _run("dump", path)[0] == 0  # the headers alone are fine
    status, output = _run("dump", path, deep=True)
    assert status == 1
    assert f"CORRUPT: batch at position {len(good)} (base offset 1): GZIP" in output


def test_verify_finds_overlapping_segments_and_accepts_gaps(tmp_path: Path) -> None:
    gaps = tmp_path / "gaps-0"
    first, second = _batch(0, 5), _batch(12, 3)
    _segment(gaps, 0, first)
    _segment(gaps, 10, second)  # compaction leaves gaps: fine
    size = len(first) + len(second)
    assert _run("verify", gaps) == (
        0,
        f"OK: 2 batches, 8 records, {size} bytes in 2 segments\n",
    )

    overlap = tmp_path / "overlap-0"
    _segment(overlap, 0, _batch(0, 10))
    later = _segment(overlap, 5, _batch(5, 5))
    status, output = _run("verify", overlap)
    assert status == 1
    assert output.startswith(f"CORRUPT: {later} position 0 baseOffset 5: ")
    assert "overlap" in output


def test_verify_finds_offsets_going_backwards(tmp_path: Path) -> None:
    first = _batch(0, 5)
    path = _segment(tmp_path / "t-0", 0, first, _batch(3, 2))
    status, output = _run("verify", path)
    assert status == 1
    assert output.startswith(f"CORRUPT: {path} position {len(first)} baseOffset 3: ")
    assert "below 5" in output


# --- paths and the command line ---------------------------------------------------------------


def test_missing_or_unrecognised_paths_exit_2(
    partition: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dump", str(tmp_path / "missing")]) == 2
    assert (
        f"error: {tmp_path / 'missing'}: no such file or directory"
        in capsys.readouterr().err
    )
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    assert main(["verify", str(notes)]) == 2
    assert "not a segment" in capsys.readouterr().err
    assert main(["dump", str(tmp_path)]) == 2  # holds no segment and no partition
    assert "holds no segment" in capsys.readouterr().err
    assert main(["verify", str(partition / "00000000000000000000.index")]) == 2
    assert "verify checks segments" in capsys.readouterr().err


def test_as_a_module(demo_run: tuple[Path, str], tmp_path: Path) -> None:
    root = demo_run[0]
    ok = subprocess.run(
        [sys.executable, "-m", "minikafka.log", "verify", str(root / "demo-0")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (ok.returncode, ok.stderr) == (0, "")
    assert ok.stdout.startswith("OK: 300 batches, ")
    missing = subprocess.run(
        [sys.executable, "-m", "minikafka.log", "dump", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2
    assert (
        missing.stderr == f"error: {tmp_path / 'missing'}: no such file or directory\n"
    )
