"""The storage layer's Log against raw file and socket syscalls, in one run.

Appends: ``Log.append_as_leader`` of 1 KiB and 1 MiB batches, with the default flush
policy (the page cache only) and with ``flush.messages=1`` (an fsync after every
append), beside the ceiling: ``os.write`` of the same bytes to an ``O_APPEND`` file in
the same directory, with and without ``os.fsync`` after each write.

Reads: a fetch as the broker serves it, ``Log.read`` then ``os.sendfile`` of the
returned FileSlice to a socket (the zero-copy path), and the copying path, ``Log.read``
then ``FileSlice.read_bytes`` and ``sendall``, beside the ceiling: ``os.sendfile`` of
the same file regions to the same socket. The socket (a Unix stream socket unless
``BENCH_LOG_SINK=tcp``; README.md says why) leads to a sink process on the other CPU
that drains it and, at the end of a run, answers with the byte count; a run ends when
that answer arrives, so every byte was delivered.

Batches are built once (producer-side work is not the log's), and every append gets its
own ``bytearray`` copy made before the clock starts, since the leader writes offsets into
the batch in place. An append run stops after a time or a byte count (with fsync, an
append count); a read run fetches round and round its log for a time. Every path runs
``REPEATS`` times, alternating, and the median run is quoted. Everything happens in a
fresh directory on the filesystem of the repository's ``data/``, and the figures are
for that filesystem only.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import attrs

from minikafka.log import (
    RECORD_BATCH_OVERHEAD,
    Log,
    LogConfig,
    build_batch,
    make_records,
)

from ._common import (
    ROOT,
    BenchError,
    Report,
    ServerProcess,
    bar_chart_svg,
    command_line,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    now_utc,
    own_cpu_seconds,
    spawned_server,
    split_cpus,
)

NAME = "log_io"

KIB = 1024
MIB = 1024 * 1024
REPEATS = 3
"""Runs of every path (``--quick``: one); the median run is quoted."""
LEADER_EPOCH = 0
TIMESTAMP_MS = 1_700_000_000_000
TOPIC_DIR = "bench-0"  # a Log's directory must be named <topic>-<partition>
BUSY_MACHINE_PERCENT = 20.0
"""Other processes' CPU use during a run above which the table carries a warning."""
MIN_ACCOUNTED_SECONDS = 0.2
"""Runs shorter than this get no other-CPU figure: /proc/stat counts in 10 ms ticks, so
one tick of anything at all would read as 15% of a 60 ms run."""
SINK_FAMILIES = ("unix", "tcp")
"""The sink's socket: a Unix stream socket (the default, see ``sink_family``) or loopback TCP."""
SINK_BUFFER = 4 * MIB
_COUNT = struct.Struct(">q")
_T = TypeVar("_T")

CEILING_WRITE = "ceiling: os.write"
LOG_APPEND = "Log.append_as_leader"
CEILING_SENDFILE = "ceiling: os.sendfile"
LOG_SENDFILE = "Log.read + os.sendfile"
LOG_COPY = "Log.read + read_bytes + sendall"


@attrs.frozen
class Settings:
    repeats: int
    run_seconds: float
    """A run stops after this long..."""
    run_bytes: int
    """...or after this many bytes (so the fast cases do not fill the page cache)."""
    fsync_ops: int
    """...or, with an fsync after each append, after this many appends."""
    read_log_bytes: int
    """The size of each log the read cases fetch from, in a loop."""


def settings(quick: bool) -> Settings:
    if quick:
        return Settings(
            repeats=1,
            run_seconds=0.1,
            run_bytes=32 * MIB,
            fsync_ops=2048,
            read_log_bytes=8 * MIB,
        )
    return Settings(
        repeats=REPEATS,
        run_seconds=0.5,
        run_bytes=256 * MIB,
        fsync_ops=8192,
        read_log_bytes=32 * MIB,
    )


@attrs.frozen
class BatchShape:
    label: str
    size: int
    records: int


SMALL = BatchShape("1 KiB", KIB, 8)
LARGE = BatchShape("1 MiB", MIB, 1024)


@attrs.frozen
class AppendCase:
    name: str
    batch: BatchShape
    fsync: bool

    @property
    def title(self) -> str:
        flush = "fsync each (flush.messages=1)" if self.fsync else "no fsync (default)"
        return f"append {self.batch.label} batches, {flush}"


@attrs.frozen
class ReadCase:
    name: str
    batch: BatchShape
    fetch_bytes: int
    """max_bytes of each Log.read, and the size of each region the ceiling sends."""

    @property
    def title(self) -> str:
        per = self.fetch_bytes // self.batch.size
        what = "1 batch" if per == 1 else f"{per:,} batches"
        return f"read {self.batch.label} batches, {_size(self.fetch_bytes)} fetches ({what})"

    @property
    def offsets_per_fetch(self) -> int:
        return self.fetch_bytes // self.batch.size * self.batch.records


APPEND_CASES = (
    AppendCase("append_1k", SMALL, fsync=False),
    AppendCase("append_1k_fsync", SMALL, fsync=True),
    AppendCase("append_1m", LARGE, fsync=False),
    AppendCase("append_1m_fsync", LARGE, fsync=True),
)
READ_CASES = (
    ReadCase("read_1k_fetch_1k", SMALL, KIB),
    ReadCase("read_1k_fetch_1m", SMALL, MIB),
    ReadCase("read_1m_fetch_1m", LARGE, MIB),
)


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB"


# --- batches ---------------------------------------------------------------------------


_PATTERN = bytes(range(256))


def _value(length: int) -> bytes:
    return (_PATTERN * (length // len(_PATTERN) + 1))[:length]


def build_exact_batch(shape: BatchShape) -> bytes:
    """A v2 batch of ``shape.records`` records that is exactly ``shape.size`` bytes.

    Exact sizes make every fetch of a multiple of the batch size end on a batch
    boundary, so the ceiling can send the very regions the Log answers with.
    """
    lengths = [(shape.size - RECORD_BATCH_OVERHEAD) // shape.records] * shape.records
    for _ in range(8):
        pairs = [(None, _value(n)) for n in lengths]
        batch = build_batch(make_records(pairs, timestamp_ms=TIMESTAMP_MS))
        if len(batch) == shape.size:
            return batch
        # Spread what the record framing took over the values; varint lengths may then
        # shift the size by a byte or two, which the next round takes off the last one.
        values = sum(lengths) + shape.size - len(batch)
        lengths = [values // shape.records] * shape.records
        lengths[-1] += values % shape.records
    raise BenchError(f"could not build a batch of exactly {shape.size} bytes")


def fresh_copies(batch: bytes, count: int) -> list[bytearray]:
    """One mutable copy per append: ``append_as_leader`` writes offsets into it."""
    return [bytearray(batch) for _ in range(count)]


# --- measuring -------------------------------------------------------------------------


@attrs.frozen
class Timed:
    ops: int
    bytes: int
    seconds: float


@attrs.frozen
class Measurement:
    path: str
    ops: int
    bytes: int
    seconds: float
    mb_per_s: float
    """10^6 bytes per second."""
    us_per_op: float
    cpu_percent: float
    """This process's user+system CPU over the run, as a percentage of one core."""
    sink_cpu_percent: float | None
    other_cpu_percent: float | None
    """CPU the rest of the machine used meanwhile: high means the figures are disturbed."""


def _measure(path: str, body: Callable[[], Timed], sink: Sink | None) -> Measurement:
    own, busy = own_cpu_seconds(), machine_busy_seconds()
    sink_cpu = sink.process.cpu_seconds() if sink is not None else None
    timed = body()
    own_after, busy_after = own_cpu_seconds(), machine_busy_seconds()
    sink_after = sink.process.cpu_seconds() if sink is not None else None
    seconds = timed.seconds
    own_percent = 100 * (own_after - own) / seconds
    sink_percent = (
        None
        if sink_cpu is None or sink_after is None
        else 100 * (sink_after - sink_cpu) / seconds
    )
    other = None
    if busy is not None and busy_after is not None and seconds >= MIN_ACCOUNTED_SECONDS:
        other = max(
            0.0,
            100 * (busy_after - busy) / seconds - own_percent - (sink_percent or 0.0),
        )
    return Measurement(
        path=path,
        ops=timed.ops,
        bytes=timed.bytes,
        seconds=seconds,
        mb_per_s=timed.bytes / seconds / 1e6,
        us_per_op=seconds / timed.ops * 1e6,
        cpu_percent=own_percent,
        sink_cpu_percent=sink_percent,
        other_cpu_percent=other,
    )


# --- appends ---------------------------------------------------------------------------


def _raw_append(
    fd: int, buffers: Sequence[bytearray], fsync: bool, seconds: float
) -> Timed:
    clock = time.perf_counter
    ops = written = 0
    started = clock()
    deadline = started + seconds
    for buf in buffers:
        n = os.write(fd, buf)
        if n != len(buf):  # a short write to a regular file: the disk is full
            raise BenchError(f"short write: {n} of {len(buf)} bytes")
        if fsync:
            os.fsync(fd)
        ops += 1
        written += n
        if clock() >= deadline:
            break
    return Timed(ops, written, clock() - started)


def _log_append(log: Log, buffers: Sequence[bytearray], seconds: float) -> Timed:
    clock = time.perf_counter
    append = log.append_as_leader
    ops = written = 0
    started = clock()
    deadline = started + seconds
    for buf in buffers:
        append(buf, LEADER_EPOCH)
        ops += 1
        written += len(buf)
        if clock() >= deadline:
            break
    return Timed(ops, written, clock() - started)


def _append_ceiling(
    directory: Path, case: AppendCase, buffers: Sequence[bytearray], s: Settings
) -> Measurement:
    path = directory / "ceiling.log"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)  # as a segment's
    try:
        m = _measure(
            CEILING_WRITE,
            lambda: _raw_append(fd, buffers, case.fsync, s.run_seconds),
            None,
        )
        if os.fstat(fd).st_size != m.bytes:
            raise BenchError(
                f"{path} holds {os.fstat(fd).st_size} bytes, not {m.bytes}"
            )
    finally:
        os.close(fd)
        path.unlink()
    return m


def _append_log(
    directory: Path, case: AppendCase, buffers: Sequence[bytearray], s: Settings
) -> Measurement:
    config = LogConfig(flush_messages=1) if case.fsync else LogConfig()
    log = Log.open(directory / TOPIC_DIR, config)
    try:
        m = _measure(LOG_APPEND, lambda: _log_append(log, buffers, s.run_seconds), None)
        expected_end = m.ops * case.batch.records
        if log.log_end_offset != expected_end or log.size != m.bytes:
            raise BenchError(
                f"the log ends at offset {log.log_end_offset} with {log.size} bytes after "
                f"{m.ops} appends; expected {expected_end} and {m.bytes}"
            )
        if case.fsync and log.recovery_point != log.log_end_offset:
            raise BenchError("flush.messages=1 left appended offsets unflushed")
    finally:
        log.delete()
    return m


def _rotated(paths: Sequence[_T], repeat: int) -> list[_T]:
    """Each repeat starts with the next path, so that no path always goes first (and a
    burst of load elsewhere on the machine does not land on one path only)."""
    shift = repeat % len(paths)
    return [*paths[shift:], *paths[:shift]]


def _run_append_case(
    scratch: Path, case: AppendCase, batch: bytes, s: Settings
) -> CaseOutcome:
    count = max(1, s.run_bytes // case.batch.size)
    if case.fsync:
        count = min(count, s.fsync_ops)
    runs: dict[str, list[Measurement]] = {CEILING_WRITE: [], LOG_APPEND: []}
    paths = [(CEILING_WRITE, _append_ceiling), (LOG_APPEND, _append_log)]
    for repeat in range(s.repeats):
        for path, measure in _rotated(paths, repeat):
            # The copies and the run's page cache both come from memory touched just now.
            warm_up(scratch, 2 * count * case.batch.size)
            buffers = fresh_copies(batch, count)
            runs[path].append(measure(scratch, case, buffers, s))
            del buffers
    return CaseOutcome(case.name, case.title, "append", runs, _append_facts(case))


def _append_facts(case: AppendCase) -> dict[str, object]:
    return {
        "batch_bytes": case.batch.size,
        "records_per_batch": case.batch.records,
        "fsync_each_append": case.fsync,
        "log_config": {"flush.messages": 1} if case.fsync else "defaults",
    }


# --- reads -----------------------------------------------------------------------------


def _send_region(sock_fd: int, fd: int, position: int, length: int) -> None:
    while length > 0:
        sent = os.sendfile(sock_fd, fd, position, length)
        if sent == 0:
            raise BenchError(
                f"the file ended {length} bytes early at position {position}"
            )
        position += sent
        length -= sent


@contextmanager
def _sink_connection(sink: Sink) -> Iterator[socket.socket]:
    if sink.path is not None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(sink.path))
            yield sock
        return
    with socket.create_connection((sink.process.host, sink.process.port)) as sock:
        # As the broker's sockets (trio sets TCP_NODELAY on every SocketStream).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        yield sock


def _finish(sock: socket.socket, sent: int) -> None:
    """Half-close and wait for the sink's byte count: every byte has arrived."""
    sock.shutdown(socket.SHUT_WR)
    answer = b""
    while len(answer) < _COUNT.size:
        chunk = sock.recv(_COUNT.size - len(answer))
        if not chunk:
            raise BenchError("the sink closed the connection without its byte count")
        answer += chunk
    (received,) = _COUNT.unpack(answer)
    if received != sent:
        raise BenchError(f"the sink received {received} bytes of {sent}")


def _read_ceiling(
    sink: Sink, fd: int, case: ReadCase, fetches: int, seconds: float
) -> Timed:
    with _sink_connection(sink) as sock:
        sock_fd, size = sock.fileno(), case.fetch_bytes
        clock = time.perf_counter
        ops = sent = 0
        started = clock()
        deadline = started + seconds
        while True:
            _send_region(sock_fd, fd, ops % fetches * size, size)
            ops += 1
            sent += size
            if clock() >= deadline:
                break
        _finish(sock, sent)
        return Timed(ops, sent, clock() - started)


def _read_log_sendfile(
    sink: Sink, log: Log, case: ReadCase, fetches: int, seconds: float
) -> Timed:
    with _sink_connection(sink) as sock:
        sock_fd, size, step = sock.fileno(), case.fetch_bytes, case.offsets_per_fetch
        read, high_watermark = log.read, log.high_watermark
        clock = time.perf_counter
        ops = sent = 0
        started = clock()
        deadline = started + seconds
        while True:
            records = read(
                ops % fetches * step, size, max_offset=high_watermark
            ).records
            if records is None:
                raise BenchError(f"Log.read found nothing at fetch {ops}")
            # As the Processor does: pin the segment's pooled file for the send.
            file = records.file
            if isinstance(file, int):
                raise BenchError(
                    "Log.read answered a raw descriptor, not the segment's file"
                )
            fd = file.pin()
            try:
                _send_region(sock_fd, fd, records.position, records.length)
            finally:
                file.unpin()
            ops += 1
            sent += records.length
            if clock() >= deadline:
                break
        _finish(sock, sent)
        return Timed(ops, sent, clock() - started)


def _read_log_copy(
    sink: Sink, log: Log, case: ReadCase, fetches: int, seconds: float
) -> Timed:
    with _sink_connection(sink) as sock:
        size, step = case.fetch_bytes, case.offsets_per_fetch
        read, high_watermark, sendall = log.read, log.high_watermark, sock.sendall
        clock = time.perf_counter
        ops = sent = 0
        started = clock()
        deadline = started + seconds
        while True:
            records = read(
                ops % fetches * step, size, max_offset=high_watermark
            ).records
            if records is None:
                raise BenchError(f"Log.read found nothing at fetch {ops}")
            data = records.read_bytes()
            sendall(data)
            ops += 1
            sent += len(data)
            if clock() >= deadline:
                break
        _finish(sock, sent)
        return Timed(ops, sent, clock() - started)


def _populate(directory: Path, batch: bytes, total_bytes: int) -> Log:
    """A log of ``total_bytes`` of ``batch`` copies, appended as a producer's would be.

    Flushed, so that no writeback of its pages starts in the middle of a timed read.
    """
    log = Log.open(directory, LogConfig())
    for buf in fresh_copies(batch, total_bytes // len(batch)):
        log.append_as_leader(buf, LEADER_EPOCH)
    log.flush()
    log.update_high_watermark(log.log_end_offset)  # consumers read below the HW
    return log


def _check_regions(log: Log, case: ReadCase, fetches: int) -> None:
    """The Log answers fetch ``i`` with the region the ceiling sends: ``i * fetch_bytes``."""
    for i in sorted(
        {0, 1, 2, fetches // 2, fetches - 2, fetches - 1} & set(range(fetches))
    ):
        records = log.read(i * case.offsets_per_fetch, case.fetch_bytes).records
        region = None if records is None else (records.position, records.length)
        if region != (i * case.fetch_bytes, case.fetch_bytes):
            raise BenchError(
                f"{case.name}: fetch {i} answered {region}, not "
                f"{(i * case.fetch_bytes, case.fetch_bytes)}"
            )


def _run_read_case(log: Log, case: ReadCase, sink: Sink, s: Settings) -> CaseOutcome:
    fetches = log.size // case.fetch_bytes
    _check_regions(log, case, fetches)
    if len(log.segments) != 1:
        raise BenchError("the read log rolled; the ceiling sends from one segment file")
    # The ceiling sends from one descriptor of the segment, pinned for the whole case.
    fd = log.active_segment.file.pin()
    paths: list[tuple[str, Callable[[], Timed]]] = [
        (
            CEILING_SENDFILE,
            lambda: _read_ceiling(sink, fd, case, fetches, s.run_seconds),
        ),
        (
            LOG_SENDFILE,
            lambda: _read_log_sendfile(sink, log, case, fetches, s.run_seconds),
        ),
        (LOG_COPY, lambda: _read_log_copy(sink, log, case, fetches, s.run_seconds)),
    ]
    runs: dict[str, list[Measurement]] = {path: [] for path, _ in paths}
    try:
        for repeat in range(s.repeats):
            for path, body in _rotated(paths, repeat):
                runs[path].append(_measure(path, body, sink))
    finally:
        log.active_segment.file.unpin()
    facts: dict[str, object] = {
        "batch_bytes": case.batch.size,
        "records_per_batch": case.batch.records,
        "fetch_max_bytes": case.fetch_bytes,
        "log_bytes": log.size,
        "fetches_per_pass": fetches,
    }
    return CaseOutcome(case.name, case.title, "read", runs, facts)


# --- the sink --------------------------------------------------------------------------


@attrs.frozen
class Sink:
    """The process the read cases send to, and where it listens."""

    process: ServerProcess
    family: str
    path: Path | None  # the Unix socket's; None for TCP


def sink_family() -> str:
    """``BENCH_LOG_SINK``: ``unix`` (the default) or ``tcp``; README.md says why unix."""
    family = os.environ.get("BENCH_LOG_SINK", "unix")
    if family not in SINK_FAMILIES:
        raise BenchError(
            f"BENCH_LOG_SINK={family!r}: choose one of {', '.join(SINK_FAMILIES)}"
        )
    return family


def sink_argv(family: str, path: Path | None) -> list[str]:
    argv = [sys.executable, "-m", "bench.log_io", "--sink", family]
    return argv if path is None else [*argv, "--path", str(path)]


@contextmanager
def spawned_sink(family: str, scratch: Path, cpus: set[int] | None) -> Iterator[Sink]:
    path = scratch / "sink.sock" if family == "unix" else None
    with spawned_server(sink_argv(family, path), cpus) as process:
        yield Sink(process, family, path)


def sink_main(family: str, path: str | None) -> None:
    """Drain each connection until the sender half-closes it, answer the byte count."""
    if family == "unix":
        if path is None:
            raise SystemExit("--sink unix needs --path")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen()
        where = f"unix:0 ({path})"  # the host:port form spawned_server waits for
    else:
        listener = socket.create_server(("127.0.0.1", 0))
        host, port = listener.getsockname()[:2]
        where = f"{host}:{port}"
    with listener:
        print(f"listening on {where}", flush=True)
        view = memoryview(bytearray(SINK_BUFFER))
        while True:
            conn, _ = listener.accept()
            with conn:
                total = 0
                while received := conn.recv_into(view):
                    total += received
                conn.sendall(_COUNT.pack(total))


# --- the run ---------------------------------------------------------------------------


@attrs.frozen
class CaseOutcome:
    """One case's runs per path; the figures quoted are each path's median run."""

    name: str
    title: str
    kind: str
    runs: dict[str, list[Measurement]]
    facts: dict[str, object]

    @property
    def ceiling_path(self) -> str:
        return next(iter(self.runs))

    def median(self, path: str) -> Measurement:
        """The run with the median MB/s (the lower middle one of an even count)."""
        runs = self.runs[path]
        return sorted(runs, key=lambda m: m.mb_per_s)[(len(runs) - 1) // 2]

    def ratio(self, path: str) -> float:
        return self.median(path).mb_per_s / self.median(self.ceiling_path).mb_per_s


def scratch_parent() -> Path:
    """Where the repository's ``data/`` lives, or the temp directory if that is on the
    same filesystem (``BENCH_LOG_DIR`` overrides both)."""
    if override := os.environ.get("BENCH_LOG_DIR"):
        return Path(override)
    data = ROOT / "data"
    anchor = data if data.exists() else ROOT
    temp = Path(tempfile.gettempdir())
    if os.stat(temp).st_dev == os.stat(anchor).st_dev:
        return temp
    data.mkdir(exist_ok=True)
    return data


def filesystem_facts(path: Path) -> dict[str, object]:
    """The filesystem ``path`` is on: mount, type and options (Linux), size (statvfs)."""
    st = os.statvfs(path)
    facts: dict[str, object] = {
        "path": str(path),
        "block_size": st.f_bsize,
        "size_bytes": st.f_blocks * st.f_frsize,
        "available_bytes": st.f_bavail * st.f_frsize,
        "same_filesystem_as_repository": os.stat(path).st_dev == os.stat(ROOT).st_dev,
    }
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return facts
    resolved = str(path.resolve())
    best: list[str] | None = None
    for line in mounts:
        fields = line.split()
        if len(fields) < 4:
            continue
        point = fields[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[1])):
            best = fields
    if best is not None:
        facts.update(device=best[0], mount_point=best[1], type=best[2], options=best[3])
    return facts


def run(quick: bool = False) -> Report:
    """Every case, each path ``REPEATS`` times; this process on the first half of the
    CPUs, the sink on the other half."""
    started, clock = now_utc(), time.perf_counter()
    s = settings(quick)
    pinned = split_cpus()
    bench_cpus, sink_cpus = pinned if pinned is not None else (None, None)
    original_cpus = os.sched_getaffinity(0) if pinned is not None else None
    if bench_cpus is not None:
        os.sched_setaffinity(0, bench_cpus)
    parent = scratch_parent()
    family = sink_family()
    try:
        with tempfile.TemporaryDirectory(
            prefix="minikafka-bench-log_io-", dir=parent
        ) as tmp:
            scratch = Path(tmp)
            filesystem = filesystem_facts(scratch)
            outcomes = _run_cases(scratch, s, family, sink_cpus)
    finally:
        if original_cpus is not None:
            os.sched_setaffinity(0, original_cpus)
    machine = machine_facts()
    packages = (
        dict(machine["packages"]) if isinstance(machine["packages"], dict) else {}
    )
    for dist in ("minikafka-log", "crc32c"):
        try:
            packages[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            packages[dist] = None
    machine["packages"] = packages
    sink_path = Path("<scratch>/sink.sock") if family == "unix" else None
    document: dict[str, object] = {
        "benchmark": NAME,
        "description": __doc__,
        "command": command_line(),
        "quick": quick,
        "settings": attrs.asdict(s),
        "started_at": started,
        "duration_s": round(time.perf_counter() - clock, 2),
        "units": {"mb_per_s": "10^6 bytes per second", "us_per_op": "microseconds"},
        "filesystem": filesystem,
        "sink": {
            "socket": "AF_UNIX stream"
            if family == "unix"
            else "loopback TCP, TCP_NODELAY",
            "argv": shlex.join(["python", *sink_argv(family, sink_path)[1:]]),
            "receive_buffer_bytes": SINK_BUFFER,
        },
        "cpu_pinning": None
        if pinned is None
        else {"benchmark": sorted(pinned[0]), "sink": sorted(pinned[1])},
        "machine": machine,
        "cases": [_case_document(outcome) for outcome in outcomes],
    }
    return Report(
        NAME, document, _table(outcomes, filesystem), _chart(outcomes, family)
    )


def warm_up(scratch: Path, total_bytes: int) -> None:
    """Write ``total_bytes`` to a file and delete it, so that what a run allocates next
    (its batch copies, its page cache) is memory that has just been touched.

    This VM's balloon device has free page reporting: memory that stays free for about
    two seconds is handed back to the host, and the guest's next touch of it faults in
    the host. Writing 256 MiB to a new file went at 4.4 GB/s right after another such
    write and at 0.45 GB/s after a 2 s pause. The kernel hands out recently freed pages
    first, so a write and delete just before a run saves the run from those faults.
    """
    chunk = bytes(MIB)
    path = scratch / "warm-up"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        written = 0
        while written < total_bytes:
            written += os.write(fd, chunk)
    finally:
        os.close(fd)
        path.unlink()


def _run_cases(
    scratch: Path, s: Settings, family: str, sink_cpus: set[int] | None
) -> list[CaseOutcome]:
    outcomes: list[CaseOutcome] = []
    batches = {shape: build_exact_batch(shape) for shape in (SMALL, LARGE)}
    for case in APPEND_CASES:
        outcomes.append(_run_append_case(scratch, case, batches[case.batch], s))
    with spawned_sink(family, scratch, sink_cpus) as sink:
        for shape in (SMALL, LARGE):
            log = _populate(
                scratch / f"read{shape.size}-0", batches[shape], s.read_log_bytes
            )
            try:
                for read_case in READ_CASES:
                    if read_case.batch == shape:
                        outcomes.append(_run_read_case(log, read_case, sink, s))
            finally:
                log.delete()
    return outcomes


def _case_document(outcome: CaseOutcome) -> dict[str, object]:
    return {
        "name": outcome.name,
        "title": outcome.title,
        "kind": outcome.kind,
        **outcome.facts,
        "ceiling": outcome.ceiling_path,
        "median": {path: attrs.asdict(outcome.median(path)) for path in outcome.runs},
        "over_ceiling": {path: outcome.ratio(path) for path in outcome.runs},
        "runs": {
            path: [attrs.asdict(m) for m in runs] for path, runs in outcome.runs.items()
        },
    }


def _table(outcomes: Sequence[CaseOutcome], filesystem: dict[str, object]) -> str:
    header = [
        "case",
        "path",
        "ops",
        "seconds",
        "MB/s",
        "MB/s range",
        "µs/op",
        "x ceiling",
        "CPU",
        "sink CPU",
        "other CPU",
    ]
    rows: list[list[str]] = []
    for outcome in outcomes:
        for i, path in enumerate(outcome.runs):
            m = outcome.median(path)
            rates = [run.mb_per_s for run in outcome.runs[path]]
            rows.append(
                [
                    outcome.title if i == 0 else "",
                    path,
                    f"{m.ops:,}",
                    f"{m.seconds:.2f}",
                    f"{m.mb_per_s:,.1f}",
                    f"{min(rates):,.1f}-{max(rates):,.1f}" if len(rates) > 1 else "",
                    f"{m.us_per_op:,.1f}",
                    "" if i == 0 else f"{outcome.ratio(path):.3g}x",
                    _format_percent(m.cpu_percent),
                    _format_percent(m.sink_cpu_percent),
                    _format_percent(m.other_cpu_percent),
                ]
            )
    table = markdown_table(header, rows)
    table += (
        f"\nfilesystem: {filesystem.get('type', '?')} on {filesystem.get('device', '?')} "
        f"({filesystem['path']})"
    )
    if warning := _busy_warning(outcomes):
        table += "\n" + warning
    return table


def _busy_warning(outcomes: Sequence[CaseOutcome]) -> str | None:
    """Which runs other processes disturbed, and whether the table quotes any of them."""
    disturbed: list[tuple[CaseOutcome, str, Measurement]] = []
    for outcome in outcomes:
        # An fsync has the journal thread and the block layer work for it: their CPU shows
        # up as other CPU there without meaning that anything else disturbed the run.
        if outcome.facts.get("fsync_each_append"):
            continue
        for path, runs in outcome.runs.items():
            disturbed += [
                (outcome, path, m)
                for m in runs
                if (m.other_cpu_percent or 0.0) > BUSY_MACHINE_PERCENT
            ]
    if not disturbed:
        return None
    total = sum(len(runs) for o in outcomes for runs in o.runs.values())
    busiest = max(m.other_cpu_percent or 0.0 for _, _, m in disturbed)
    quoted = [f"{o.title} / {path}" for o, path, m in disturbed if m is o.median(path)]
    which = (
        f"{len(quoted)} of them quoted above ({'; '.join(quoted)}): rerun when idle"
        if quoted
        else "none of them a median run quoted above"
    )
    return (
        f"warning: other processes used up to {busiest:.0f}% CPU "
        f"(of {100 * (os.cpu_count() or 1)}%) during {len(disturbed)} of {total} runs, {which}."
    )


def _format_percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _chart(outcomes: Sequence[CaseOutcome], family: str) -> str:
    sink = "a Unix socket" if family == "unix" else "loopback TCP"
    return bar_chart_svg(
        f"minikafka.log Log vs raw syscalls (one filesystem; reads to {sink}), median run",
        "MB/s",
        [
            (
                outcome.title,
                [(path, outcome.median(path).mb_per_s) for path in outcome.runs],
            )
            for outcome in outcomes
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.log_io",
        description="the read benchmark's sink; run the benchmark with python -m bench log_io",
    )
    parser.add_argument("--sink", choices=SINK_FAMILIES, required=True)
    parser.add_argument("--path", help="the Unix socket to listen on (--sink unix)")
    args = parser.parse_args(argv)
    sink_main(args.sink, args.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
