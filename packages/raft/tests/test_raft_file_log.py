"""FileRaftLog, the Raft log on minikafka.log's segments, behaves exactly as MemoryLog
(the simulator's), operation for operation, and keeps what it holds across a reopen."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.log import LogConfig
from minikafka.raft import Entry, MemoryLog, Snapshot, SnapshotId
from minikafka.raft._file_log import FileRaftLog
from minikafka.raft._scenarios import random_scenario
from minikafka.raft._simulator import Simulation

# Small segments, so that appends roll segments and snapshots delete whole ones.
SMALL = LogConfig(segment_bytes=1024)

Op = tuple[str, int, int]
ops = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "append",
                "append",
                "unit",
                "unit",
                "control",
                "truncate",
                "flush",
                "snapshot",
            ]
        ),
        st.integers(0, 6),
        st.integers(0, 2),
    ),
    max_size=40,
)


def between_units(log: MemoryLog | FileRaftLog, offset: int) -> int:
    """``offset``, or the end of the unit before it if it falls inside one: the core cuts
    a log (truncation, snapshots) only between units."""
    while offset > log.start_offset and log.read(offset - 1, 1)[0].continued:
        offset -= 1
    return offset


def apply(log: MemoryLog | FileRaftLog, op: Op) -> None:
    kind, a, b = op
    if kind in ("append", "control", "unit"):
        epoch = log.last_epoch + b
        start = log.end_offset
        log.append(
            [
                Entry(
                    start + i,
                    epoch,
                    b"e%d" % (start + i),
                    kind == "control",
                    continued=kind == "unit" and i < a,
                )
                for i in range(a + 1)
            ]
        )
    elif kind == "truncate":
        log.truncate_to(between_units(log, max(log.start_offset, log.end_offset - a)))
    elif kind == "flush":
        log.flush()
    elif kind == "snapshot" and log.flushed_end_offset > log.start_offset:
        end = log.flushed_end_offset - min(
            a, log.flushed_end_offset - log.start_offset - 1
        )
        end = between_units(log, end)
        if end == log.start_offset:
            return
        epoch = log.read(end - 1, 1)[0].epoch
        log.create_snapshot(Snapshot(SnapshotId(end, epoch), b"state at %d" % end))


def observe(log: MemoryLog | FileRaftLog) -> tuple[object, ...]:
    epochs = range(log.last_epoch + 3)
    return (
        log.start_offset,
        log.end_offset,
        log.flushed_end_offset,
        log.last_epoch,
        tuple(log.end_offset_for_epoch(e) for e in epochs),
        tuple(log.read(log.start_offset, 1000)),
        tuple(len(log.read(o, 1)) for o in range(log.start_offset, log.end_offset)),
        log.latest_snapshot(),
    )


@settings(max_examples=100, deadline=None)
@given(ops)
def test_the_file_log_answers_as_the_memory_log_does(operations: list[Op]) -> None:
    memory = MemoryLog()
    with tempfile.TemporaryDirectory() as tmp:
        on_disk = FileRaftLog(Path(tmp) / "__cluster_metadata-0", SMALL)
        try:
            for op in operations:
                apply(memory, op)
                apply(on_disk, op)
                assert observe(on_disk) == observe(memory), op
        finally:
            on_disk.close()


def test_a_reopened_log_finds_its_entries_epochs_and_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "__cluster_metadata-0"
    log = FileRaftLog(path, SMALL)
    log.append(
        [Entry(0, 1, b"", control=True)]
        + [Entry(i, 1, b"a%d" % i) for i in range(1, 30)]
    )
    log.append([Entry(30, 3, b"", control=True), Entry(31, 3, b"b")])
    log.flush()
    log.create_snapshot(Snapshot(SnapshotId(20, 1), b"twenty"))
    before = observe(log)
    log.close()
    again = FileRaftLog(path, SMALL)
    try:
        assert observe(again) == before
        assert again.read(30, 1) == [Entry(30, 3, b"", control=True)]
        assert sorted(p.name for p in path.glob("*.checkpoint")) == [
            "00000000000000000020-0000000001.checkpoint"
        ]
    finally:
        again.close()


def test_an_installed_snapshot_replaces_the_whole_log(tmp_path: Path) -> None:
    log = FileRaftLog(tmp_path / "__cluster_metadata-0", SMALL)
    try:
        log.append([Entry(i, 1, b"x") for i in range(5)])
        log.install_snapshot(Snapshot(SnapshotId(100, 7), b"leader's"))
        assert (log.start_offset, log.end_offset, log.last_epoch) == (100, 100, 7)
        log.append([Entry(100, 8, b"next")])
        assert log.end_offset_for_epoch(7).end_offset == 100
    finally:
        log.close()


def test_simulated_quorums_on_disk_logs_keep_every_invariant(tmp_path: Path) -> None:
    """The core runs unchanged on segment files: seeded runs with crashes (the unflushed
    entries cut off the files) and partitions hold every invariant."""
    for seed in range(4):
        root = tmp_path / f"seed{seed}"
        scenario = random_scenario(
            seed, voters=3, observers=1, kinds=("crash", "partition")
        )
        simulation = Simulation(
            scenario,
            seed,
            log_for=lambda node, root=root: FileRaftLog(  # type: ignore[misc]
                root / f"node{node}" / "__cluster_metadata-0"
            ),
        )
        try:
            result = simulation.run()
        finally:
            for node in simulation.nodes.values():
                assert isinstance(node.log, FileRaftLog)
                node.log.close()
        assert result.ok, f"seed {seed}: {result.violation}"
        assert result.commits > 50
