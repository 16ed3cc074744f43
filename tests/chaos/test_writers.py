"""The batch headers behind a duplicate: a client's re-send under a new producer epoch
is told apart from a broker appending one producer's sequence twice."""

from __future__ import annotations

import io
from pathlib import Path

from chaos.__main__ import main
from chaos.checker import check
from chaos.history import Op, encode_final_state, format_history
from chaos.writers import Writer, read_writers
from minikafka.log import build_batch, make_records

TOPIC = "chaos"
TP = (TOPIC, 2)
PID = 1000


def _send(index: int, value: int, offset: int) -> Op:
    return Op(
        index=index,
        kind="send",
        outcome="ok",
        invoke=float(index),
        complete=float(index) + 0.5,
        process=0,
        topic=TOPIC,
        partition=2,
        value=value,
        offset=offset,
    )


def _segment(
    root: Path,
    node: int,
    batches: list[tuple[int, list[int], int, int, int]],
    torn: bool = False,
) -> Path:
    """Node ``node``'s first segment of ``chaos-2``: each batch is ``(base offset,
    values, producer epoch, base sequence, leader epoch)`` from producer ``PID``."""
    directory = root / f"node-{node}" / f"{TOPIC}-2"
    directory.mkdir(parents=True)
    data = b""
    for base, values, epoch, sequence, leader_epoch in batches:
        pairs = [(None, str(v).encode()) for v in values]
        data += build_batch(
            make_records(pairs, first_offset=base, timestamp_ms=1),
            producer_id=PID,
            producer_epoch=epoch,
            base_sequence=sequence,
            partition_leader_epoch=leader_epoch,
        )
    if torn:
        data = data[:-10]  # the node was killed while appending the last batch
    path = directory / "00000000000000000000.log"
    path.write_bytes(data)
    return path


def test_each_record_is_given_its_batchs_producer_epoch_and_sequence(
    tmp_path: Path,
) -> None:
    _segment(tmp_path, 0, [(0, [5, 6], 0, 10, 1), (2, [7], 1, 0, 2)])
    _segment(tmp_path, 1, [(0, [5, 6], 0, 10, 1)])
    (tmp_path / "node-1" / "other-2").mkdir()
    writers = read_writers(tmp_path, TOPIC)
    assert list(writers) == [TP]
    assert writers[TP] == {
        (0, 5): Writer(PID, 0, 10, 1),
        (1, 6): Writer(PID, 0, 11, 1),
        (2, 7): Writer(PID, 1, 0, 2),
    }


def test_a_torn_tail_ends_the_reading_of_its_file(tmp_path: Path) -> None:
    _segment(tmp_path, 0, [(0, [5], 0, 0, 0), (1, [6], 0, 1, 0)], torn=True)
    assert read_writers(tmp_path, TOPIC)[TP] == {(0, 5): Writer(PID, 0, 0, 0)}


def test_copies_from_one_producer_at_two_epochs_are_the_clients_resend(
    tmp_path: Path,
) -> None:
    """Seed 111's case: the first copy at epoch 0 sequence 308, the second at epoch 1
    sequence 0; reported and counted, the run not failed."""
    _segment(tmp_path, 0, [(821, [3289], 0, 308, 1), (822, [3289], 1, 0, 2)])
    ops = [_send(0, 3289, 821), _send(1, 3289, 822)]
    final = {TP: ((821, 3289), (822, 3289))}
    report = check(ops, final, writers=read_writers(tmp_path, TOPIC))
    assert report.valid
    assert [a.kind for a in report.explained] == ["duplicate_new_epoch"]
    assert report.counts()["duplicate_new_epoch"] == 1
    assert report.counts()["duplicate"] == 0
    detail = report.explained[0].detail
    assert "offset 821: producer 1000 epoch 0 sequence 308" in detail
    assert "offset 822: producer 1000 epoch 1 sequence 0" in detail


def test_one_producers_sequence_written_twice_stays_a_duplicate_named_so(
    tmp_path: Path,
) -> None:
    """The broker's deduplication failing: one producer id, epoch and sequence at two
    offsets fails the run."""
    _segment(tmp_path, 0, [(821, [3289], 0, 308, 1), (822, [3289], 0, 308, 1)])
    ops = [_send(0, 3289, 821), _send(1, 3289, 822)]
    final = {TP: ((821, 3289), (822, 3289))}
    report = check(ops, final, writers=read_writers(tmp_path, TOPIC))
    assert not report.valid
    assert [a.kind for a in report.anomalies] == ["duplicate"]
    assert "one producer id, epoch and sequence twice" in report.anomalies[0].detail


def test_without_every_copys_writer_a_duplicate_stays_one(tmp_path: Path) -> None:
    _segment(tmp_path, 0, [(821, [3289], 0, 308, 1)])
    ops = [_send(0, 3289, 821), _send(1, 3289, 822)]
    final = {TP: ((821, 3289), (822, 3289))}
    with_segments = check(ops, final, writers=read_writers(tmp_path, TOPIC))
    assert [a.kind for a in with_segments.anomalies] == ["duplicate"]
    assert "offset 822: writer not found" in with_segments.anomalies[0].detail
    without = check(ops, final)
    assert [a.kind for a in without.anomalies] == ["duplicate"]
    assert without.explained == ()


def test_two_producer_ids_are_not_an_epoch_bump(tmp_path: Path) -> None:
    directory = tmp_path / "node-0" / f"{TOPIC}-2"
    directory.mkdir(parents=True)
    data = b"".join(
        build_batch(
            make_records([(None, b"3289")], first_offset=offset, timestamp_ms=1),
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
        )
        for offset, pid, epoch in ((821, 1000, 0), (822, 1001, 1))
    )
    (directory / "00000000000000000000.log").write_bytes(data)
    ops = [_send(0, 3289, 821), _send(1, 3289, 822)]
    final = {TP: ((821, 3289), (822, 3289))}
    report = check(ops, final, writers=read_writers(tmp_path, TOPIC))
    assert [a.kind for a in report.anomalies] == ["duplicate"]


def test_check_with_the_segments_passes_a_resend_and_fails_one_sequence_twice(
    tmp_path: Path,
) -> None:
    """``python -m chaos check --cluster``: the same duplicate exits 0 when its copies
    carry two epochs, 1 when they carry one sequence twice."""
    ops = [_send(0, 3289, 821), _send(1, 3289, 822)]
    final = {TP: ((821, 3289), (822, 3289))}
    (tmp_path / "history.jsonl").write_text("".join(format_history(ops)))
    (tmp_path / "final.json").write_text(encode_final_state(final))
    paths = [str(tmp_path / "history.jsonl"), str(tmp_path / "final.json")]
    for name, second_epoch, status in (("bumped", 1, 0), ("twice", 0, 1)):
        root = tmp_path / name
        batches = [(821, [3289], 0, 308, 1), (822, [3289], second_epoch, 308, 1)]
        _segment(root, 0, batches)
        out = io.StringIO()
        assert main(["check", *paths, "--cluster", str(root)], out) == status
        kind = "duplicate_new_epoch" if status == 0 else "duplicate"
        assert f"{kind:<20} 1" in out.getvalue()
