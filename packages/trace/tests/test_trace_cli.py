"""``python -m minikafka.trace summary DIR`` (and ``minikafka trace summary DIR``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import attrs
import pytest

from minikafka.trace import JsonLinesTracer, TraceEvent, register_event, trace_runs
from minikafka.trace.__main__ import main


@register_event
@attrs.frozen
class Rolled(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "cli_rolled"
    base_offset: int


@register_event
@attrs.frozen
class Shrunk(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "cli_shrunk"
    isr: tuple[int, ...]


def _write(directory: Path) -> None:
    with JsonLinesTracer.open(directory, node=2, max_file_bytes=150) as tracer:
        tracer.emit(Rolled(0), ts=1_700_000_000.0)
        tracer.emit(Shrunk((1, 2)), ts=1_700_000_001.5)
        tracer.emit(Rolled(100), ts=1_700_000_003.25)
    with JsonLinesTracer.open(directory, node=1) as tracer:
        tracer.emit(Rolled(7), ts=1_699_999_999.0)


EXPECTED = """\
component  event       count  first                          last                           nodes
test       cli_rolled  3      2023-11-14T22:13:19.000+00:00  2023-11-14T22:13:23.250+00:00  1,2
test       cli_shrunk  1      2023-11-14T22:13:21.500+00:00  2023-11-14T22:13:21.500+00:00  2
4 events, 2 event types, nodes 1,2
"""


def test_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path)
    assert main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    header, rest = out.split("\n", 1)
    assert header == f"{tmp_path}: 4 trace file(s)"
    assert rest == EXPECTED


def test_summary_as_a_module(tmp_path: Path) -> None:
    _write(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "minikafka.trace", "summary", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.endswith(EXPECTED)


def test_summary_of_an_empty_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{tmp_path}: no trace files (*.jsonl)\n"


def test_summary_of_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summary", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    shown = capsys.readouterr()  # the help, which names the commands
    assert "summary" in shown.out + shown.err


def _runs(folder: Path) -> tuple[Path, Path]:
    """A folder of two runs as ``make run`` lays them out, the second written last."""
    older, newer = folder / "20261201T090000Z", folder / "20261202T090000Z"
    with JsonLinesTracer.open(older, node=1) as tracer:
        tracer.emit(Rolled(0), ts=1_700_000_000.0)
    _write(newer)
    # The older run's files were written first, whatever the file system's clock says.
    for path in older.iterdir():
        os.utime(path, (1_700_000_000, 1_700_000_000))
    return older, newer


def test_summary_of_a_folder_of_runs_is_its_newest_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _older, newer = _runs(tmp_path)
    assert trace_runs(tmp_path) == [_older, newer]
    assert main(["summary", str(tmp_path)]) == 0
    first, second, rest = capsys.readouterr().out.split("\n", 2)
    assert first == (
        f"{tmp_path}: 2 run(s), the newest is {newer.name}; "
        "1 older run(s), --all summarizes each"
    )
    assert second == f"{newer}: 4 trace file(s)"
    assert rest == EXPECTED


def test_summary_of_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older, newer = _runs(tmp_path)
    assert main(["summary", "--all", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    first, second = out.split("\n\n")
    assert first.startswith(f"{older}: 1 trace file(s)\n")
    assert first.endswith("1 events, 1 event types, nodes 1")
    assert second == f"{newer}: 4 trace file(s)\n{EXPECTED}"


def test_a_folder_of_empty_runs_has_no_trace_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "20261202T090000Z").mkdir()
    assert main(["summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{tmp_path}: no trace files (*.jsonl)\n"
