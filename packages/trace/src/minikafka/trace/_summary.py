"""What a trace directory holds: counts and time ranges per event type, for the CLI.

It works on raw records, so it needs none of the packages that defined the events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import attrs

from ._files import read_trace, trace_files


@attrs.frozen
class EventSummary:
    component: str
    event: str
    count: int
    first_ts: float
    last_ts: float
    nodes: tuple[int, ...]


@attrs.define(eq=False)
class _Tally:
    count: int = 0
    first_ts: float = float("inf")
    last_ts: float = float("-inf")
    nodes: set[int] = attrs.field(factory=set)


def summarize(records: Iterable[Mapping[str, object]]) -> list[EventSummary]:
    """One row per (component, event), sorted; first and last are min and max ``ts``
    because several processes' files interleave in time."""
    tallies: dict[tuple[str, str], _Tally] = {}
    for record in records:
        key = (str(record.get("component")), str(record.get("event")))
        tally = tallies.setdefault(key, _Tally())
        tally.count += 1
        ts = record.get("ts")
        if isinstance(ts, int | float):
            tally.first_ts = min(tally.first_ts, ts)
            tally.last_ts = max(tally.last_ts, ts)
        node = record.get("node")
        if isinstance(node, int):
            tally.nodes.add(node)
    return [
        EventSummary(c, e, t.count, t.first_ts, t.last_ts, tuple(sorted(t.nodes)))
        for (c, e), t in sorted(tallies.items())
    ]


def _when(ts: float) -> str:
    if ts in (float("inf"), float("-inf")):
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds")


def format_summary(rows: list[EventSummary]) -> str:
    """A plain text table, then a total line."""
    header = ("component", "event", "count", "first", "last", "nodes")
    table = [
        (
            row.component,
            row.event,
            str(row.count),
            _when(row.first_ts),
            _when(row.last_ts),
            ",".join(map(str, row.nodes)),
        )
        for row in rows
    ]
    widths = [
        max(len(cells[i]) for cells in [header, *table]) for i in range(len(header))
    ]
    lines = [
        "  ".join(
            cell.ljust(width) for cell, width in zip(cells, widths, strict=True)
        ).rstrip()
        for cells in [header, *table]
    ]
    nodes = sorted({node for row in rows for node in row.nodes})
    total = sum(row.count for row in rows)
    lines.append(
        f"{total} events, {len(rows)} event types, nodes {','.join(map(str, nodes)) or '-'}"
    )
    return "\n".join(lines)


def trace_runs(directory: Path) -> list[Path]:
    """The runs in a folder of runs (``make run`` traces each run into a directory of its
    own under ``traces/``): its subdirectories that hold trace files, oldest first, by
    the time their last trace file was written (then by name)."""

    def written(run: Path) -> float:
        return max(path.stat().st_mtime for path in trace_files(run))

    runs = [run for run in directory.iterdir() if run.is_dir() and trace_files(run)]
    return sorted(runs, key=lambda run: (written(run), run.name))


def summary_report(directory: Path, *, every_run: bool = False) -> str:
    """What ``summary DIR`` prints: the summary of a trace directory, or, given a folder
    of runs (no trace files of its own, subdirectories with some), of its newest run, or
    of each run oldest first when ``every_run``. Raises ValueError on a line that is not
    a trace record (naming its file and line)."""
    files = trace_files(directory)
    if files:
        rows = summarize(read_trace(directory))
        return f"{directory}: {len(files)} trace file(s)\n{format_summary(rows)}"
    runs = trace_runs(directory)
    if not runs:
        return f"{directory}: no trace files (*.jsonl)"
    if every_run:
        return "\n\n".join(summary_report(run) for run in runs)
    newest = runs[-1]
    more = (
        f"; {len(runs) - 1} older run(s), --all summarizes each"
        if len(runs) > 1
        else ""
    )
    return (
        f"{directory}: {len(runs)} run(s), the newest is {newest.name}{more}\n"
        f"{summary_report(newest)}"
    )
