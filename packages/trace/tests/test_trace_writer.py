"""JsonLinesTracer: round trips, buffering, rotation, closing and threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import types
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import attrs
import pytest

from minikafka.trace import (
    JsonLinesTracer,
    NullTracer,
    TraceEvent,
    Tracer,
    TracerClosedError,
    decode_event,
    read_trace,
    register_event,
    trace_files,
)


@register_event
@attrs.frozen
class AllTypes(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "writer_all_types"
    an_int: int
    a_float: float
    a_str: str
    a_bool: bool
    maybe_int: int | None
    maybe_float: float | None
    maybe_str: str | None
    maybe_bool: bool | None
    ints: tuple[int, ...]
    strs: tuple[str, ...]
    floats: tuple[float, ...]
    counts: Mapping[str, int]
    labels: Mapping[str, str]
    weights: dict[str, float]


@register_event
@attrs.frozen
class Tick(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "writer_tick"
    thread: int
    n: int


@attrs.frozen
class Unregistered(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "writer_unregistered"
    x: int


def _all_types(i: int) -> AllTypes:
    return AllTypes(
        an_int=-(2**63) + i,
        a_float=0.1 * i,
        a_str=f'é"\\\n{i}\u2603',
        a_bool=i % 2 == 0,
        maybe_int=None if i % 2 else i,
        maybe_float=None if i % 2 else 1.5,
        maybe_str=None if i % 2 else "x",
        maybe_bool=None if i % 2 else False,
        ints=tuple(range(i)),
        strs=("a", "", "ü"),
        floats=(),
        counts=types.MappingProxyType({"p0": i, "p1": 2**62}),
        labels={"rack": "r1"},
        weights={"w": 0.25},
    )


def test_round_trip_of_every_field_type(tmp_path: Path) -> None:
    events = [_all_types(i) for i in range(4)]
    with JsonLinesTracer.open(tmp_path, node=7) as tracer:
        for i, event in enumerate(events):
            tracer.emit(event, ts=1_700_000_000.0 + i)
    records = list(read_trace(tmp_path))
    assert [decode_event(r) for r in records] == events
    assert [r["ts"] for r in records] == [1_700_000_000.0 + i for i in range(4)]
    assert {r["node"] for r in records} == {7}
    first = records[0]
    assert list(first)[:4] == ["ts", "node", "component", "event"]
    assert first["component"] == "test"
    assert first["event"] == "writer_all_types"
    assert first["counts"] == {"p0": 0, "p1": 2**62}
    assert first["ints"] == []


def test_lines_are_compact_ascii_json(tmp_path: Path) -> None:
    with JsonLinesTracer.open(tmp_path, node=1) as tracer:
        tracer.emit(Tick(thread=0, n=1), ts=2.5)
    (path,) = trace_files(tmp_path)
    assert path.read_bytes() == (
        b'{"ts":2.500000,"node":1,"component":"test","event":"writer_tick","thread":0,"n":1}\n'
    )
    assert path.name == f"trace-node1-{os.getpid()}-00000.jsonl"


def test_ts_defaults_to_now(tmp_path: Path) -> None:
    import time

    before = time.time()
    with JsonLinesTracer.open(tmp_path, node=1) as tracer:
        tracer.emit(Tick(0, 0))
    after = time.time()
    (record,) = read_trace(tmp_path)
    assert isinstance(record["ts"], float)
    assert before <= record["ts"] <= after


def test_nothing_reaches_disk_before_flush(tmp_path: Path) -> None:
    # No flushing thread: only the size of the buffer and flush() write lines out.
    tracer = JsonLinesTracer.open(tmp_path / "new" / "dir", node=1, flush_interval=None)
    for n in range(100):
        tracer.emit(Tick(0, n), ts=float(n))
    assert (tmp_path / "new" / "dir").is_dir()
    assert list((tmp_path / "new" / "dir").iterdir()) == []
    tracer.flush()
    assert [r["n"] for r in read_trace(tmp_path / "new" / "dir")] == list(range(100))
    tracer.close()


def test_a_full_buffer_is_written_without_flush(tmp_path: Path) -> None:
    tracer = JsonLinesTracer.open(
        tmp_path, node=1, buffer_bytes=1000, flush_interval=None
    )
    line = len(json.dumps({"ts": 0.0, "node": 1, "component": "test", "event": "writer_tick",
                           "thread": 0, "n": 0}, separators=(",", ":"))) + 1  # fmt: skip
    count = 1000 // line + 1  # the first emit that takes the buffer past 1000 bytes
    for n in range(count - 1):
        tracer.emit(Tick(0, n), ts=0.0)
    assert trace_files(tmp_path) == []
    tracer.emit(Tick(0, count - 1), ts=0.0)
    assert len(list(read_trace(tmp_path))) == count
    tracer.emit(Tick(0, count), ts=0.0)
    assert len(list(read_trace(tmp_path))) == count
    tracer.close()
    assert len(list(read_trace(tmp_path))) == count + 1


def test_rotation_splits_files_and_keeps_order(tmp_path: Path) -> None:
    with JsonLinesTracer.open(
        tmp_path, node=2, max_file_bytes=1000, buffer_bytes=300
    ) as tracer:
        for n in range(500):
            tracer.emit(Tick(0, n), ts=float(n))
    files = trace_files(tmp_path)
    assert len(files) > 10
    assert [f.name[-11:] for f in files[:3]] == [
        "00000.jsonl",
        "00001.jsonl",
        "00002.jsonl",
    ]
    assert all(f.stat().st_size <= 1000 for f in files)
    # Rotation happens only when the next line would not fit.
    line = files[0].read_bytes().split(b"\n")[0]
    assert all(f.stat().st_size > 1000 - len(line) - 10 for f in files[:-1])
    assert [r["n"] for r in read_trace(tmp_path)] == list(range(500))


def test_a_line_longer_than_a_file_gets_a_file_to_itself(tmp_path: Path) -> None:
    with JsonLinesTracer.open(
        tmp_path, node=1, max_file_bytes=10, buffer_bytes=0
    ) as tracer:
        tracer.emit(Tick(0, 1), ts=0.0)
        tracer.emit(Tick(0, 2), ts=0.0)
    assert len(trace_files(tmp_path)) == 2
    assert [r["n"] for r in read_trace(tmp_path)] == [1, 2]


def test_a_second_writer_appends_new_files(tmp_path: Path) -> None:
    with JsonLinesTracer.open(tmp_path, node=1, max_file_bytes=200) as tracer:
        for n in range(10):
            tracer.emit(Tick(0, n), ts=0.0)
    written = len(trace_files(tmp_path))
    with JsonLinesTracer.open(tmp_path, node=1) as tracer:
        tracer.emit(Tick(1, 10), ts=0.0)
    files = trace_files(tmp_path)
    assert files[-1].name.endswith(f"-{written:05d}.jsonl")
    assert [r["n"] for r in read_trace(tmp_path)] == list(range(11))


def test_read_trace_orders_files_by_node_pid_and_seq(tmp_path: Path) -> None:
    def write(name: str, n: int) -> None:
        (tmp_path / name).write_text(json.dumps({"n": n}) + "\n")

    write("trace-node10-5-00000.jsonl", 3)
    write("trace-node2-100-00000.jsonl", 2)
    write("trace-node2-99-00010.jsonl", 1)
    write("trace-node2-99-00002.jsonl", 0)
    write("other.jsonl", 4)
    (tmp_path / "notes.txt").write_text("not a trace\n")
    assert [r["n"] for r in read_trace(tmp_path)] == [0, 1, 2, 3, 4]


def test_read_trace_skips_a_torn_last_line(tmp_path: Path) -> None:
    (tmp_path / "trace-node1-1-00000.jsonl").write_text('{"n":1}\n{"n":2}\n{"n":')
    (tmp_path / "trace-node1-1-00001.jsonl").write_text('{"n":3}\n')
    assert [r["n"] for r in read_trace(tmp_path)] == [1, 2, 3]


def test_read_trace_reports_where_a_line_is_bad(tmp_path: Path) -> None:
    (tmp_path / "trace-node1-1-00000.jsonl").write_text('{"n":1}\nnope\n')
    with pytest.raises(ValueError, match=r"trace-node1-1-00000\.jsonl:2: not JSON"):
        list(read_trace(tmp_path))
    (tmp_path / "trace-node1-1-00000.jsonl").write_text("[1]\n")
    with pytest.raises(ValueError, match=":1: not a JSON object"):
        list(read_trace(tmp_path))


def test_close_flushes_disables_and_then_emit_raises(tmp_path: Path) -> None:
    tracer = JsonLinesTracer.open(tmp_path, node=1)
    tracer.emit(Tick(0, 0), ts=0.0)
    enabled = [tracer.enabled]
    tracer.close()
    enabled.append(tracer.enabled)
    assert enabled == [True, False]
    assert len(list(read_trace(tmp_path))) == 1
    with pytest.raises(TracerClosedError, match="emitted after the tracer for node 1"):
        tracer.emit(Tick(0, 1), ts=0.0)
    tracer.flush()
    tracer.close()
    assert len(list(read_trace(tmp_path))) == 1


def test_emitting_an_unregistered_event_names_the_decorator(tmp_path: Path) -> None:
    with (
        JsonLinesTracer.open(tmp_path, node=1) as tracer,
        pytest.raises(TypeError, match="decorate it with @register_event"),
    ):
        tracer.emit(Unregistered(1))


def test_open_rejects_bad_sizes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_file_bytes"):
        JsonLinesTracer.open(tmp_path, node=1, max_file_bytes=0)
    with pytest.raises(ValueError, match="buffer_bytes"):
        JsonLinesTracer.open(tmp_path, node=1, buffer_bytes=-1)
    with pytest.raises(ValueError, match="flush_interval"):
        JsonLinesTracer.open(tmp_path, node=1, flush_interval=0)


def test_null_tracer_writes_nothing(tmp_path: Path) -> None:
    tracer = NullTracer(node=3)
    assert not tracer.enabled
    assert tracer.node == 3
    tracer.emit(Tick(0, 0))
    tracer.emit(Unregistered(0))
    tracer.flush()
    tracer.close()
    tracer.emit(Tick(0, 1))
    assert list(tmp_path.iterdir()) == []


def test_both_tracers_satisfy_the_protocol(tmp_path: Path) -> None:
    with JsonLinesTracer.open(tmp_path, node=1) as json_tracer:
        tracers: list[Tracer] = [NullTracer(), json_tracer]
        assert all(isinstance(t, Tracer) for t in tracers)


def test_concurrent_emitters_write_every_line_intact(tmp_path: Path) -> None:
    threads, per_thread = 8, 2000
    tracer = JsonLinesTracer.open(
        tmp_path, node=1, max_file_bytes=20_000, buffer_bytes=1000
    )
    start = threading.Barrier(threads)

    def work(thread: int) -> None:
        start.wait()
        for n in range(per_thread):
            tracer.emit(Tick(thread, n), ts=float(n))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    tracer.close()
    seen: dict[int, list[int]] = {t: [] for t in range(threads)}
    for record in read_trace(tmp_path):
        event = decode_event(record)
        assert isinstance(event, Tick)
        seen[event.thread].append(event.n)
    assert seen == {t: list(range(per_thread)) for t in range(threads)}
    assert len(trace_files(tmp_path)) > 1


_EXIT_SCRIPT = """
import sys
from pathlib import Path
from typing import ClassVar
import attrs
from minikafka.trace import TraceEvent, configure_tracing, get_tracer, register_event

@register_event
@attrs.frozen
class Bye(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "writer_bye"
    n: int

configure_tracing(Path(sys.argv[1]), node=4)
get_tracer().emit(Bye(1), ts=1.0)
sys.exit(0)
"""


def test_buffered_events_are_flushed_at_exit(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, str(tmp_path)], check=True)
    assert list(read_trace(tmp_path)) == [
        {"ts": 1.0, "node": 4, "component": "test", "event": "writer_bye", "n": 1}
    ]


_KILLED_SCRIPT = """
import os, signal, sys, time
from pathlib import Path
import attrs
from typing import ClassVar
from minikafka.trace import JsonLinesTracer, TraceEvent, register_event, trace_files

@register_event
@attrs.frozen
class Last(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "writer_last"
    n: int

directory = Path(sys.argv[1])
tracer = JsonLinesTracer.open(directory, node=3, flush_interval=0.05)
tracer.emit(Last(1), ts=1.0)
deadline = time.monotonic() + 30
# Not just the file: it exists from the write-out's open, a moment before its write.
while (
    not any(path.stat().st_size for path in trace_files(directory))
    and time.monotonic() < deadline
):
    time.sleep(0.01)  # polling for the flushing thread's write, inside the deadline
os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs
"""


def test_a_killed_process_loses_only_its_last_flush_interval(tmp_path: Path) -> None:
    # Guarantee: a node killed with SIGKILL leaves in its trace every event buffered
    # more than flush_interval before the kill (what the fault labs read).
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_SCRIPT, str(tmp_path)], timeout=60
    )
    assert done.returncode == -9
    assert list(read_trace(tmp_path)) == [
        {"ts": 1.0, "node": 3, "component": "test", "event": "writer_last", "n": 1}
    ]


def test_without_a_flushing_thread_a_killed_process_loses_its_buffer(
    tmp_path: Path,
) -> None:
    script = _KILLED_SCRIPT.replace("flush_interval=0.05", "flush_interval=None")
    script = script.replace("deadline = time.monotonic() + 30", "deadline = 0")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], timeout=60)
    assert done.returncode == -9
    assert list(read_trace(tmp_path)) == []
