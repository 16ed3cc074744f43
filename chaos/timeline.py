"""A run's timeline: the faults per node, the operations' outcomes and the anomalies,
over the run's time, as one figure (``timeline.svg`` in the run directory).

Three panels share the time axis (seconds from the run's first operation or fault):

- **faults**: one lane per node; a bar from each fault's start to its heal, coloured
  by kind (a kill, a pause, a partition, ...). A fault the injector skipped or could
  not start has no bar.
- **acknowledged**: the operations that ended ``ok`` per second of their completion.
- **failed, unknown**: the ones that ended ``failed`` or ``unknown`` per second, on an
  axis of their own (a few against a hundred ``ok`` would not show).

Each anomaly is a red line across the three panels at the completion of the earliest
operation that shows it (a trace anomaly at its earliest event), labelled with its
kind; one the final log alone shows (no operation) sits at the run's end.

The runner draws it at the end of a run (:func:`save`); ``python -m chaos timeline
RUN_DIR`` draws it again from the run's files (:func:`redraw`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from minikafka.trace import read_trace

from .checker import Anomaly, check
from .history import Op, parse_final_state, parse_history, parse_transactional_final
from .traces import TraceAnomaly, check_traces

FILE = "timeline.svg"

FAULT_COLOURS = {
    "kill-active-controller": "#8e44ad",
    "kill": "#c0392b",
    "pause": "#f39c12",
    "partition": "#2e86c1",
    "slow-link": "#16a085",
}
"""A fault kind's colour by its first matching prefix; others are grey."""
OUTCOME_COLOURS = {"ok": "#2e7d32", "failed": "#7f8c8d", "unknown": "#e67e22"}

Mark = tuple[float, str]
"""An anomaly on the timeline: ``(epoch seconds, kind)``."""


def _colour(kind: str) -> str:
    for prefix, colour in FAULT_COLOURS.items():
        if kind.startswith(prefix):
            return colour
    return "#95a5a6"


def anomaly_marks(
    ops: Sequence[Op],
    anomalies: Iterable[Anomaly],
    traced: Iterable[TraceAnomaly] = (),
) -> list[Mark]:
    """When each anomaly shows: its earliest operation's completion (a trace anomaly's
    earliest event, else its operations'); ``inf`` for none (the run's end)."""
    complete = {op.index: op.complete for op in ops}
    marks: list[Mark] = []
    for anomaly in anomalies:
        times = [complete[i] for i in anomaly.ops if i in complete]
        marks.append((min(times, default=math.inf), anomaly.kind))
    for traced_anomaly in traced:
        times = [e.ts for e in traced_anomaly.events]
        times += [complete[i] for i in traced_anomaly.ops if i in complete]
        marks.append((min(times, default=math.inf), traced_anomaly.kind))
    return marks


def figure(
    ops: Sequence[Op],
    faults: Sequence[Mapping[str, object]],
    marks: Sequence[Mark] = (),
    title: str = "",
) -> Figure:
    """The timeline of a history ``ops``, the faults as carried out (``faults.jsonl``'s
    records: ``kind``, ``nodes``, ``started_at``, ``healed_at`` in epoch seconds) and
    the anomalies' ``marks``."""
    done = [f for f in faults if isinstance(f.get("started_at"), float | int)]
    starts = [op.invoke for op in ops] + [_seconds(f, "started_at") for f in done]
    ends = [op.complete for op in ops] + [
        _seconds(f, "healed_at") for f in done if f.get("healed_at") is not None
    ]
    origin = min(starts, default=0.0)
    end = max([*ends, *starts, origin + 1.0]) - origin
    nodes = sorted({int(n) for f in done for n in _nodes(f)})

    # A Figure of its own, not pyplot's: no global figure manager, no backend to pick.
    fig = Figure(
        figsize=(10, 2.2 + 0.35 * max(len(nodes), 1) + 3.2), layout="constrained"
    )
    lanes, acked, troubled = fig.subplots(
        3, 1, sharex=True, height_ratios=[max(len(nodes), 1) * 0.5 + 0.4, 1.6, 1.2]
    )
    for f in done:
        start = _seconds(f, "started_at") - origin
        healed = f.get("healed_at")
        stop = (_seconds(f, "healed_at") - origin) if healed is not None else end
        for node in _nodes(f):
            lanes.broken_barh(
                [(start, max(stop - start, end / 400))],
                (nodes.index(int(node)) - 0.35, 0.7),
                facecolors=_colour(str(f["kind"])),
                alpha=0.85,
            )
    lanes.set_yticks(range(len(nodes)), [f"node {n}" for n in nodes])
    lanes.set_ylim(-0.6, max(len(nodes), 1) - 0.4)
    lanes.invert_yaxis()
    lanes.set_ylabel("faults")
    kinds = sorted({str(f["kind"]) for f in done})
    if kinds:
        lanes.legend(
            handles=[Patch(color=_colour(k), label=k) for k in kinds],
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
            fontsize=8,
            frameon=False,
        )

    seconds = math.ceil(end) + 1
    per_second: dict[str, Counter[int]] = {o: Counter() for o in OUTCOME_COLOURS}
    for op in ops:
        per_second[op.outcome][int(op.complete - origin)] += 1
    bins = list(range(seconds))
    acked.bar(
        bins,
        [per_second["ok"][s] for s in bins],
        width=1.0,
        align="edge",
        color=OUTCOME_COLOURS["ok"],
        label="ok",
    )
    acked.set_ylabel("ok / s")
    bottom = [0] * seconds
    for outcome in ("failed", "unknown"):
        heights = [per_second[outcome][s] for s in bins]
        troubled.bar(
            bins,
            heights,
            width=1.0,
            align="edge",
            bottom=bottom,
            color=OUTCOME_COLOURS[outcome],
            label=outcome,
        )
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    troubled.set_ylabel("failed,\nunknown / s")
    troubled.set_ylim(0, max([*bottom, 1]) * 1.15)
    troubled.legend(
        loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False
    )
    troubled.set_xlabel("seconds since the run's first operation or fault")
    troubled.set_xlim(0, end)

    # Anomalies of one kind within a tenth of a second share a line and a label.
    shown = Counter(
        (round(end if math.isinf(at) else at - origin, 1), kind) for at, kind in marks
    )
    for (x, kind), count in sorted(shown.items()):
        for axes in (lanes, acked, troubled):
            axes.axvline(x, color="#c0392b", linewidth=1.0, linestyle="--")
        lanes.annotate(
            kind if count == 1 else f"{kind} x{count}",
            (x, 0),
            xycoords=("data", "axes fraction"),
            xytext=(2, 2),
            textcoords="offset points",
            rotation=90,
            fontsize=7,
            color="#c0392b",
            va="bottom",
        )
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def _seconds(record: Mapping[str, object], key: str) -> float:
    value = record[key]
    assert isinstance(value, float | int)  # a fault carried out has its times
    return float(value)


def _nodes(record: Mapping[str, object]) -> list[int]:
    nodes = record.get("nodes")
    return [int(n) for n in nodes] if isinstance(nodes, list) else []


def save(
    path: Path,
    ops: Sequence[Op],
    faults: Sequence[Mapping[str, object]],
    marks: Sequence[Mark] = (),
    title: str = "",
) -> Path:
    """Draw the timeline into ``path`` (SVG, reproducible: no date, fixed ids)."""
    fig = figure(ops, faults, marks, title)
    # Text as text (searchable, small), ids from a fixed salt: the same run, the same file.
    with matplotlib.rc_context(
        {"svg.hashsalt": "chaos-timeline", "svg.fonttype": "none"}
    ):
        fig.savefig(path, format="svg", metadata={"Date": None})
    return path


def redraw(run_dir: Path) -> Path:
    """The timeline of a run directory drawn again from its files: ``history.jsonl``,
    ``final.json``, ``faults.jsonl`` and ``cluster/traces`` (the last two if there)."""
    ops = parse_history((run_dir / "history.jsonl").read_text().splitlines())
    final = parse_final_state((run_dir / "final.json").read_text())
    fault_file = run_dir / "faults.jsonl"
    faults = (
        [json.loads(line) for line in fault_file.read_text().splitlines() if line]
        if fault_file.exists()
        else []
    )
    traces = run_dir / "cluster" / "traces"
    traced = check_traces(read_trace(traces), ops) if traces.is_dir() else []
    transactions = parse_transactional_final((run_dir / "final.json").read_text())
    report = check(ops, final, transactions=transactions)
    marks = anomaly_marks(ops, report.anomalies, traced)
    return save(run_dir / FILE, ops, faults, marks, title=run_dir.name)
