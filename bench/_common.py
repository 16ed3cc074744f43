"""What every benchmark shares: server processes, CPU accounting, statistics, reports.

A benchmark's server runs in its own process (``python -m ...`` printing ``listening on
host:port``) so that it and the client driving it each have a core: trio runs all of a
process's tasks on one thread, so a client and server in one process would share it
and each would measure the other's cost.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.machinery
import json
import math
import os
import platform
import queue
import re
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import TypeVar
from xml.sax.saxutils import escape

import attrs

ROOT = Path(__file__).resolve().parent.parent
"""The repository root: servers are started from here so ``python -m bench.x`` resolves."""

RESULTS = Path(__file__).resolve().parent / "results"

T = TypeVar("T")

_LISTENING = re.compile(r"listening on (?P<host>[^\s:]+):(?P<port>\d+)")


class BenchError(Exception):
    """The benchmark could not run as designed (a server died, a response was wrong)."""


@attrs.frozen
class Report:
    """One benchmark's outcome: the JSON document, the printed table and a chart."""

    name: str
    document: Mapping[str, object]
    table: str
    chart_svg: str | None = None


# --- processes ------------------------------------------------------------------------


@attrs.define(eq=False)
class ServerProcess:
    """A server child process and everything it has printed (stdout and stderr merged)."""

    process: subprocess.Popen[str]
    host: str = ""
    port: int = 0
    output: list[str] = attrs.field(factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu_seconds(self) -> float | None:
        return process_cpu_seconds(self.pid)

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise BenchError(
                f"server exited with {self.process.returncode}:\n{''.join(self.output[-20:])}"
            )


@contextmanager
def spawned_server(
    argv: Sequence[str],
    cpus: set[int] | None = None,
    start_timeout: float = 30.0,
    *,
    ready: re.Pattern[str] = _LISTENING,
    stop_timeout: float = 10.0,
) -> Iterator[ServerProcess]:
    """Start ``argv`` from the repository root (on ``cpus`` if given), wait for the line
    ``ready`` matches (by default ``listening on``; its ``host`` and ``port`` groups give
    the address), and stop it with SIGTERM (then SIGKILL after ``stop_timeout``) on exit."""
    env = dict(os.environ)
    env.pop("MINIKAFKA_TRACE_DIR", None)  # tracing would be measured too
    env["PYTHONUNBUFFERED"] = "1"
    process = subprocess.Popen(
        list(argv),
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if cpus is not None:
        with suppress(ProcessLookupError):  # already gone: reported below
            os.sched_setaffinity(process.pid, cpus)
    server = ServerProcess(process)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        # Drains the pipe for the process's whole life, so it can never fill and block.
        assert process.stdout is not None
        for line in process.stdout:
            server.output.append(line)
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(
        target=pump, name=f"server-{process.pid}-output", daemon=True
    )
    reader.start()
    try:
        while True:
            try:
                line = lines.get(timeout=start_timeout)
            except queue.Empty:
                raise BenchError(
                    f"{shlex.join(argv)} did not report its address"
                ) from None
            if line is None:
                server.check_alive()
                raise BenchError(
                    f"{shlex.join(argv)} closed its output before listening"
                )
            if match := ready.search(line):
                server.host, server.port = match["host"], int(match["port"])
                break
        try:
            yield server
        except Exception as e:
            # A client error is most often the server dying: say so, with its last words.
            # (Its sockets close as it exits, a moment before it can be reaped.)
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=1)
            if process.returncode is not None:
                raise BenchError(
                    f"{e!r}; the server died:\n{''.join(server.output[-20:])}"
                ) from e
            raise
        server.check_alive()
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=5)


def find_bench_error(error: BaseException) -> BenchError | None:
    """The BenchError in ``error`` or in the exception groups trio nurseries raise."""
    if isinstance(error, BenchError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if (found := find_bench_error(inner)) is not None:
                return found
    return None


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a running process (Linux ``/proc``), else ``None``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) is parenthesised and may hold spaces: split after its last ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def split_cpus() -> tuple[set[int], set[int]] | None:
    """(client CPUs, server CPUs): the usable CPUs halved, or ``None`` with fewer than two
    (or no ``sched_setaffinity``). Pinning keeps the two processes off each other's
    core, so a run does not depend on where the scheduler happened to put them."""
    if os.environ.get("BENCH_NO_PIN") or not hasattr(os, "sched_setaffinity"):
        return None
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < 2:
        return None
    half = len(usable) // 2
    return set(usable[:half]), set(usable[half:])


def machine_busy_seconds() -> float | None:
    """CPU time all processes on the machine have used (Linux ``/proc/stat``), else ``None``.

    Less the benchmark's own processes, it shows whether something else was running.
    """
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    # The guest fields (9 and 10) are already counted in user and nice.
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_percent(
    before: float | None, after: float | None, seconds: float
) -> float | None:
    """CPU seconds used between two readings, as a percentage of one core over ``seconds``."""
    return None if before is None or after is None else 100 * (after - before) / seconds


@attrs.frozen
class CpuUse:
    """Who used the CPU over a timed stretch, as percentages of one core."""

    seconds: float
    server_percent: float | None
    client_percent: float
    other_percent: float | None
    """The rest of the machine: high means the figures are disturbed."""


@attrs.define
class CpuMeter:
    """Readings of the server's, this process's and the machine's CPU time at the start of
    a timed stretch (:meth:`start`); :meth:`stop` turns them into a :class:`CpuUse`."""

    server_cpu: Callable[[], float | None]
    _server: float | None = None
    _client: float = 0.0
    _busy: float | None = None
    _started: float = 0.0

    @classmethod
    def start(cls, server_cpu: Callable[[], float | None]) -> CpuMeter:
        meter = cls(server_cpu)
        meter._server, meter._client = server_cpu(), own_cpu_seconds()
        meter._busy, meter._started = machine_busy_seconds(), time.perf_counter()
        return meter

    def stop(self) -> CpuUse:
        seconds = time.perf_counter() - self._started
        server = cpu_percent(self._server, self.server_cpu(), seconds)
        client = 100 * (own_cpu_seconds() - self._client) / seconds
        machine = cpu_percent(self._busy, machine_busy_seconds(), seconds)
        other = None
        if machine is not None and server is not None:
            other = max(0.0, machine - server - client)
        return CpuUse(seconds, server, client, other)


@attrs.frozen
class Pinning:
    """Where :func:`pinned_client` put this process and where servers go (None: unpinned)."""

    client: set[int] | None
    servers: set[int] | None

    @property
    def document(self) -> dict[str, list[int]] | None:
        if self.client is None or self.servers is None:
            return None
        return {"client": sorted(self.client), "servers": sorted(self.servers)}


@contextmanager
def pinned_client() -> Iterator[Pinning]:
    """Pin this process to the first half of the CPUs (:func:`split_cpus`) for the block;
    the other half is for the servers. Nothing is pinned when the machine cannot be split."""
    pinned = split_cpus()
    if pinned is None:
        yield Pinning(None, None)
        return
    original = os.sched_getaffinity(0)
    os.sched_setaffinity(0, pinned[0])
    try:
        yield Pinning(*pinned)
    finally:
        os.sched_setaffinity(0, original)


def report_header(
    name: str,
    description: str | None,
    quick: bool,
    repeats: int,
    started: str,
    clock: float,
) -> dict[str, object]:
    """The fields every benchmark's JSON starts with (``clock``: ``time.perf_counter()``
    when it started)."""
    return {
        "benchmark": name,
        "description": description,
        "command": command_line(),
        "quick": quick,
        "repeats": repeats,
        "started_at": started,
        "duration_s": round(time.perf_counter() - clock, 2),
    }


# --- facts and statistics ------------------------------------------------------------


def machine_facts() -> dict[str, object]:
    """What a reader needs to compare these figures with theirs."""
    facts: dict[str, object] = {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else None,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
    }
    versions: dict[str, str | None] = {}
    for dist in ("trio", "kio", "attrs", "minikafka-net"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    facts["packages"] = versions
    facts["git"] = _git_revision()
    facts["minikafka_build"] = python_build()
    return facts


def python_build() -> dict[str, object]:
    """Which build of minikafka this process imports, and so the servers it spawns, which
    inherit its ``PYTHONPATH``: ``pure`` (the source, what ``make run`` runs) or ``mypyc``
    (``make mypyc``, selected by ``MINIKAFKA_BUILD=mypyc``), with the modules that are
    compiled extensions."""
    compiled = compiled_modules()
    return {"build": "mypyc" if compiled else "pure", "compiled": compiled}


def compiled_modules() -> list[str]:
    """The minikafka modules imported from a compiled extension (the mypyc build's)."""
    for package in ("minikafka.log", "minikafka.net"):
        importlib.import_module(package)
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("minikafka.")
        and str(getattr(module, "__file__", None) or "").endswith(suffixes)
    )


def build_label() -> str:
    """:func:`python_build` in a few words, for a benchmark's header."""
    compiled = compiled_modules()
    if not compiled:
        return "pure Python build"
    return f"mypyc build ({len(compiled)} modules compiled)"


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _git_revision() -> dict[str, object] | None:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"commit": head, "dirty": bool(status.strip())}


def command_line() -> dict[str, str | None]:
    """The command that produced the results: as the interpreter saw it, and its parent's
    (``uv run ...`` when started through uv or ``make bench``), where Linux shows it."""
    argv = list(sys.orig_argv)
    if argv and argv[0] == sys.executable:
        argv[0] = "python"
    try:
        raw = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
        parent: str | None = shlex.join(
            part.decode() for part in raw.split(b"\0") if part
        )
    except OSError:
        parent = None
    return {
        "python": shlex.join(argv),
        "parent": parent,
        "via_make": "yes" if "MAKELEVEL" in os.environ else "no",
    }


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def format_percent(value: float | None) -> str:
    """A CPU share for a table: "-" where it could not be measured."""
    return "-" if value is None else f"{value:.0f}%"


def percentile(ordered: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of an already sorted sample."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median_run(runs: Sequence[T], key: Callable[[T], float]) -> T:
    """The run with the median ``key`` (the lower middle one of an even count): a whole
    run is quoted, so its figures belong together."""
    return sorted(runs, key=key)[(len(runs) - 1) // 2]


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99/p99.9/max/mean of round trips, in milliseconds."""
    ordered = sorted(seconds)
    mean = sum(ordered) / len(ordered) if ordered else math.nan
    return {
        "p50_ms": percentile(ordered, 50) * 1000,
        "p90_ms": percentile(ordered, 90) * 1000,
        "p99_ms": percentile(ordered, 99) * 1000,
        "p999_ms": percentile(ordered, 99.9) * 1000,
        "max_ms": (ordered[-1] if ordered else math.nan) * 1000,
        "mean_ms": mean * 1000,
    }


# --- output ---------------------------------------------------------------------------


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table with right-aligned columns (except the first two)."""
    widths = [
        max(len(str(cell)) for cell in column)
        for column in zip(header, *rows, strict=True)
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = [
        "-" * width if i < 2 else "-" * (width - 1) + ":"
        for i, width in enumerate(widths)
    ]
    return "\n".join(
        [line(header), "|" + "|".join(f" {r} " for r in rule) + "|"]
        + [line(row) for row in rows]
    )


def write_results(report: Report, stem: str, directory: Path = RESULTS) -> list[Path]:
    """``<stem>.json`` and, if the report has a chart, ``<stem>.svg``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / f"{stem}.json"]
    # JSON has no NaN: a figure that could not be measured (a stalled run) is null.
    written[0].write_text(
        json.dumps(_finite(report.document), indent=2, allow_nan=False) + "\n"
    )
    if report.chart_svg is not None:
        written.append(directory / f"{stem}.svg")
        written[1].write_text(report.chart_svg)
    return written


def _finite(value: object) -> object:
    """``value`` with every NaN or infinite float replaced by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def bar_chart_svg(
    title: str, unit: str, groups: Sequence[tuple[str, Sequence[tuple[str, float]]]]
) -> str:
    """A horizontal grouped bar chart as standalone SVG (no plotting library needed).

    ``groups`` is ``[(group label, [(series label, value), ...]), ...]``; each group is
    scaled to its own largest value, since scenarios differ by orders of magnitude.
    """
    colours = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
    bar, gap, label_width, plot_width = 22, 34, 250, 420
    rows = sum(len(series) for _, series in groups)
    height = 50 + rows * bar + len(groups) * gap
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_width + plot_width + 150}" '
        f'height="{height}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="10" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    y = 40
    for group, series in groups:
        out.append(
            f'<text x="10" y="{y + 12}" font-weight="bold">{escape(group)}</text>'
        )
        y += 18
        top = max((value for _, value in series), default=0.0) or 1.0
        for i, (name, value) in enumerate(series):
            width = max(1.0, plot_width * value / top)
            out.append(f'<text x="20" y="{y + 15}">{escape(name)}</text>')
            out.append(
                f'<rect x="{label_width}" y="{y + 2}" width="{width:.1f}" height="{bar - 4}" '
                f'fill="{colours[i % len(colours)]}"/>'
            )
            out.append(
                f'<text x="{label_width + width + 6:.1f}" y="{y + 15}">'
                f"{value:,.0f} {escape(unit)}</text>"
            )
            y += bar
        y += gap - 18
    out.append("</svg>")
    return "\n".join(out) + "\n"
