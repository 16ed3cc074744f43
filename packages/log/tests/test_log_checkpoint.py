"""Checkpoint files: Kafka's text format, atomic rewrites, and typed errors for bad files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.log._checkpoint import (
    CheckpointError,
    EpochEntry,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from minikafka.log._names import LEADER_EPOCH_CHECKPOINT, RECOVERY_POINT_CHECKPOINT

# Kafka's legal topic characters (Topic.LEGAL_CHARS); 249 is the maximum length.
topics = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=40,
)
partitions = st.integers(0, 2**31 - 1)
offsets = st.integers(-(2**63), 2**63 - 1)


def test_offset_checkpoint_writes_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    OffsetCheckpointFile(path).write(
        {
            TopicPartition("orders", 1): 17,
            TopicPartition("orders", 0): 42,
            TopicPartition("a", 3): 0,
        }
    )
    # Version, count, then entries (sorted, so the file is deterministic), "\n"-terminated.
    assert path.read_text() == "0\n3\na 3 0\norders 0 42\norders 1 17\n"
    assert not (tmp_path / (RECOVERY_POINT_CHECKPOINT + ".tmp")).exists()


def test_leader_epoch_checkpoint_writes_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    LeaderEpochCheckpointFile(path).write([EpochEntry(0, 1), EpochEntry(1, 2)])
    # The example in LeaderEpochCheckpointFile's javadoc.
    assert path.read_text() == "0\n2\n0 1\n1 2\n"
    assert LeaderEpochCheckpointFile(path).read() == [
        EpochEntry(0, 1),
        EpochEntry(1, 2),
    ]


def test_reads_a_file_written_by_kafka_with_extra_whitespace(tmp_path: Path) -> None:
    # Kafka splits entries on \s+, and BufferedReader accepts \r\n line ends.
    path = tmp_path / "replication-offset-checkpoint"
    path.write_bytes(b"0\r\n2\r\nfoo  1\t5\r\nbar 2 10\r\n")
    assert OffsetCheckpointFile(path).read() == {
        TopicPartition("foo", 1): 5,
        TopicPartition("bar", 2): 10,
    }


def test_overwrite_replaces_all_entries(tmp_path: Path) -> None:
    # OffsetCheckpointFileWithFailureHandlerTest.shouldPersistAndOverwriteAndReloadFile
    checkpoint = OffsetCheckpointFile(tmp_path / "cp")
    checkpoint.write({TopicPartition("foo", 1): 5, TopicPartition("bar", 2): 10})
    checkpoint.write({TopicPartition("foo", 2): 15})
    assert checkpoint.read() == {TopicPartition("foo", 2): 15}
    checkpoint.write({})
    assert checkpoint.read() == {}
    assert (tmp_path / "cp").read_text() == "0\n0\n"


def test_missing_and_empty_files_read_as_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "missing").read() == {}
    assert LeaderEpochCheckpointFile(tmp_path / "missing").read() == []
    (tmp_path / "empty").write_bytes(b"")
    assert LeaderEpochCheckpointFile(tmp_path / "empty").read() == []
    # Kafka's CheckpointReadBuffer also returns nothing when the count line is absent.
    (tmp_path / "version-only").write_bytes(b"0\n")
    assert LeaderEpochCheckpointFile(tmp_path / "version-only").read() == []


def test_leftover_tmp_file_is_never_read(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    tmp = tmp_path / (LEADER_EPOCH_CHECKPOINT + ".tmp")
    # A write that crashed before its rename leaves a .tmp: the old state is what counts.
    tmp.write_text("0\n1\n9 900\n")
    assert LeaderEpochCheckpointFile(path).read() == []
    LeaderEpochCheckpointFile(path).write([EpochEntry(3, 30)])
    tmp.write_text("garbage")
    assert LeaderEpochCheckpointFile(path).read() == [EpochEntry(3, 30)]
    # The next write simply overwrites the leftover.
    LeaderEpochCheckpointFile(path).write([EpochEntry(4, 40)])
    assert not tmp.exists()
    assert LeaderEpochCheckpointFile(path).read() == [EpochEntry(4, 40)]


def test_write_is_a_rename_of_a_fsynced_tmp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cp"
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(
            "fsync-dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync-file"
        )
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(f"rename {Path(src).name} -> {Path(dst).name}")
        # The old file is still intact when the new content is complete on disk.
        assert Path(src).read_text() == "0\n1\n1 5\n"
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    LeaderEpochCheckpointFile(path).write([EpochEntry(1, 5)])
    assert calls == ["fsync-file", "rename cp.tmp -> cp", "fsync-dir"]


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ("1\n0\n", 1, "unrecognised version 1"),
        ("x\n0\n", 1, "version 'x'"),
        ("0\nmany\n", 2, "entry count 'many'"),
        ("0\n-1\n", 2, "entry count -1"),
        ("0\n2\n1 5\n", 2, "expected 2 entries but found 1"),
        ("0\n1\n1 5\n2 6\n", 2, "expected 1 entries but found 2"),
        ("0\n1\n1 5 7\n", 3, "expected 2 fields"),
        ("0\n2\n1 5\n\n", 4, "found 0"),
        ("0\n1\n1 five\n", 3, "start offset 'five'"),
        ("0\n1\n1_0 5\n", 3, "epoch '1_0'"),
        ("0\n1\n-1 5\n", 3, "epoch -1"),
        ("0\n1\n2147483648 5\n", 3, "epoch 2147483648"),
        ("0\n1\n1 -5\n", 3, "start offset -5"),
        ("0\n1\n1 9223372036854775808\n", 3, "start offset 9223372036854775808"),
    ],
)
def test_malformed_leader_epoch_file_names_file_and_line(
    tmp_path: Path, content: str, line: int, fragment: str
) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(content)
    with pytest.raises(CheckpointError) as info:
        LeaderEpochCheckpointFile(path).read()
    assert info.value.path == path
    assert info.value.line_number == line
    assert fragment in info.value.reason
    assert str(path) in str(info.value)
    assert f"line {line}" in str(info.value)


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ("0\n1\nfoo 1\n", 3),
        ("0\n1\nfoo one 5\n", 3),
        ("0\n1\nfoo -1 5\n", 3),
        ("0\n1\nfoo 1 5x\n", 3),
        ("0\n2\nfoo 1 5\nbar 1 5 6\n", 4),
    ],
)
def test_malformed_offset_file_names_line(
    tmp_path: Path, content: str, line: int
) -> None:
    path = tmp_path / "cp"
    path.write_text(content)
    with pytest.raises(CheckpointError) as info:
        OffsetCheckpointFile(path).read()
    assert info.value.line_number == line


def test_invalid_utf8_is_a_checkpoint_error(tmp_path: Path) -> None:
    path = tmp_path / "cp"
    path.write_bytes(b"0\n1\nt\xff 0 5\n")
    with pytest.raises(CheckpointError) as info:
        OffsetCheckpointFile(path).read()
    assert info.value.line_number == 3


def test_checkpoint_error_is_a_value_error() -> None:
    assert issubclass(CheckpointError, ValueError)


def test_write_refuses_what_it_could_not_read_back(tmp_path: Path) -> None:
    path = tmp_path / "cp"
    with pytest.raises(ValueError, match="topic"):
        OffsetCheckpointFile(path).write({TopicPartition("has space", 0): 1})
    with pytest.raises(ValueError, match="epoch"):
        LeaderEpochCheckpointFile(path).write([EpochEntry(-1, 0)])
    with pytest.raises(ValueError, match="start offset"):
        LeaderEpochCheckpointFile(path).write([EpochEntry(0, 2**63)])
    # A refused write leaves nothing behind.
    assert not path.exists()


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.builds(TopicPartition, topics, partitions), offsets, max_size=20)
)
def test_offset_checkpoint_round_trips(entries: dict[TopicPartition, int]) -> None:
    with tempfile.TemporaryDirectory() as d:
        checkpoint = OffsetCheckpointFile(Path(d) / "cp")
        checkpoint.write(entries)
        assert OffsetCheckpointFile(Path(d) / "cp").read() == entries


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.builds(EpochEntry, st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)),
        max_size=20,
    )
)
def test_leader_epoch_checkpoint_round_trips(entries: list[EpochEntry]) -> None:
    # The file keeps order and duplicates: the cache, not the file, enforces monotonicity.
    with tempfile.TemporaryDirectory() as d:
        LeaderEpochCheckpointFile(Path(d) / "cp").write(entries)
        assert LeaderEpochCheckpointFile(Path(d) / "cp").read() == entries


_lines = st.one_of(
    st.sampled_from(["0", "1", "2", "-1", "", " ", "1 2", "a 1 2", "1 2 3", "x", "\r"]),
    st.text(max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines, max_size=6), st.binary(max_size=4))
def test_any_file_content_reads_or_raises_checkpoint_error(
    lines: list[str], tail: bytes
) -> None:
    # Fuzz: whatever is in the file, read() returns entries or raises CheckpointError.
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + tail
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "cp"
        path.write_bytes(data)
        errors: list[CheckpointError] = []
        for checkpoint in (LeaderEpochCheckpointFile(path), OffsetCheckpointFile(path)):
            try:
                checkpoint.read()
            except CheckpointError as e:
                errors.append(e)
        assert all(e.path == path and e.line_number is not None for e in errors)
