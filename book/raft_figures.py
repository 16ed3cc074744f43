"""The Raft chapter's figures, drawn from what the code produces: a simulator run's trace
events as one swimlane per node (``run_swimlanes``), and a log per server as the
commitment rule's story goes on (``logs_by_server``).

The swimlanes read only the public parts of a run: the nodes' trace events
(``StateChanged``, ``HighWatermarkAdvanced``, ``LogTruncated``, ``SnapshotInstalled``)
and the scenario's fault schedule. A fault aimed at "the leader" is aimed, as the
simulator aims it, at the node that leads when it fires.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from diagrams import SVG, swimlanes

__all__ = ["run_swimlanes"]


def _leader_at(events: Sequence[tuple[float, Any]], t: float) -> int | None:
    """The node whose last state change before ``t`` made it Leader (and kept it)."""
    last: dict[int, str] = {}
    for ts, event in events:
        if ts > t:
            break
        last[event.node_id] = event.new
    leaders = [n for n, state in last.items() if state == "Leader"]
    return leaders[-1] if leaders else None


def run_swimlanes(
    records: Iterable[tuple[float, Any]],
    scenario: Any,
    *,
    title: str = "",
) -> SVG:
    """One lane per node of a run: its state over time (the bar, with its epoch), the
    moments it was elected, the stretches it was crashed or cut off, and a tick each
    time its high watermark moved (entries committed, as that node learned it)."""
    records = sorted(records, key=lambda r: r[0])
    end = float(scenario.duration)
    changes = [(ts, e) for ts, e in records if type(e).__name__ == "StateChanged"]
    voters = set(scenario.voter_ids)
    names = {
        n: f"voter {n}" if n in voters else f"observer {n}" for n in scenario.node_ids
    }
    # The faults, with "the leader" resolved as the simulator resolves it.
    down: dict[int, float] = {}
    cut: tuple[tuple[int, ...], float] | None = None
    bands: list[tuple[str, float, float, str]] = []
    crashed_at: dict[int, list[tuple[float, float]]] = {n: [] for n in names}
    faults = sorted(scenario.faults, key=lambda f: f.at)
    for fault in [*faults, *([] if not scenario.heals else [None])]:
        at = end if fault is None else fault.at
        kind = "heal_all" if fault is None else fault.kind
        nodes = () if fault is None else tuple(fault.nodes)
        if not nodes and kind in ("crash", "partition"):
            leader = _leader_at(changes, at)
            nodes = () if leader is None else (leader,)
        if kind == "crash":
            down.update(dict.fromkeys(nodes, at))
        if kind in ("restart", "heal_all"):
            for n in nodes or list(down):
                crashed_at[n].append((down.pop(n), at))
        if kind == "partition":
            cut = (nodes, at)
        if kind in ("heal", "heal_all") and cut is not None:
            bands += [(names[n], cut[1], at, "cut off") for n in cut[0]]
            cut = None
    for n, stretches in crashed_at.items():
        bands += [(names[n], a, b, "crashed") for a, b in stretches]
    # Each node's states between its changes; a crash ends a stretch, a restart starts
    # one in the state the node's next change leaves.
    spans: list[tuple[str, float, float, str, str]] = []
    marks: list[tuple[str, float, str]] = []
    for n, lane in names.items():
        gaps = sorted(crashed_at[n])
        state: tuple[str, int] | None = ("Unattached", 0)
        since = 0.0
        mine = [(ts, e) for ts, e in changes if e.node_id == n and ts <= end]
        points: list[tuple[float, Any]] = [*mine, *((b, None) for _, b in gaps)]
        points += [(a, "crash") for a, _ in gaps]
        for ts, event in sorted(points, key=lambda p: (p[0], p[1] is not None)):
            if event == "crash":
                if state is not None:
                    spans.append((lane, since, ts, state[0], f"epoch {state[1]}"))
                state = None
                continue
            if event is None:  # a restart: the state is known at the next change
                since = ts
                continue
            current = state or (event.old, event.epoch)
            if ts > since:
                spans.append((lane, since, ts, current[0], f"epoch {current[1]}"))
            state, since = (event.new, event.epoch), ts
            if event.new == "Leader":
                marks.append((lane, ts, f"leads epoch {event.epoch}"))
        if state is not None and since < end:
            spans.append((lane, since, end, state[0], f"epoch {state[1]}"))
    for ts, event in records:
        kind = type(event).__name__
        if ts <= end and kind == "SnapshotInstalled":
            marks.append((names[event.node_id], ts, "installs a snapshot"))
        elif ts <= end and kind == "LogTruncated":
            marks.append((names[event.node_id], ts, "truncates"))
    ticks = [
        (names[e.node_id], ts)
        for ts, e in records
        if type(e).__name__ == "HighWatermarkAdvanced" and ts <= end
    ]
    return swimlanes(
        list(names.values()),
        spans,
        end=end,
        marks=marks,
        bands=bands,
        ticks=ticks,
        tick_label="high watermark moves",
        title=title,
    )
