"""The figures of "The consumer group protocol, again", drawn from the group simulator.

``rebalance_figure`` draws one rebalance of each run side by side: one lane per
partition, coloured by the member that owns it, blank while nobody does. It reads only
the public parts of a ``SimulationResult``: its ownership changes and its rebalances.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Patch

__all__ = ["rebalance_figure"]

_COLOURS = [colormaps["tab10"](i) for i in range(10)]


def _owner_spans(
    result: Any, start: int, end: int
) -> dict[int, list[tuple[int, int, str]]]:
    """Per partition number: (from ms, until ms, member) while owned, within the window."""
    owners: dict[str, frozenset[Any]] = {}
    current: dict[int, tuple[int, str]] = {}
    spans: dict[int, list[tuple[int, int, str]]] = {
        p: [] for p in range(result.config.partitions)
    }
    for change in [*result.ownership, None]:
        time_ms = end if change is None else min(max(change.time_ms, start), end)
        if change is not None:
            owners[change.member] = change.partitions
        now = {tp.partition: m for m, tps in owners.items() for tp in tps}
        for p in spans:
            held = current.get(p)
            if held is not None and (change is None or now.get(p) != held[1]):
                if time_ms > held[0]:
                    spans[p].append((held[0], time_ms, held[1]))
                del current[p]
            if change is not None and p in now and p not in current:
                current[p] = (time_ms, now[p])
    return spans


def rebalance_figure(
    results: Sequence[tuple[str, Any]], cause: str, before_ms: int = 1_000
) -> Figure:
    """One panel per (title, result): the rebalance ``cause`` started, from ``before_ms``
    before its event until it settled, each partition's owner over time."""
    members = sorted(
        {c.member for _, r in results for c in r.ownership},
        key=lambda m: int(m.rpartition("-")[2]),
    )
    colour = {m: _COLOURS[i % len(_COLOURS)] for i, m in enumerate(members)}
    figure, axes = plt.subplots(
        len(results), 1, figsize=(9, 1.2 + 1.6 * len(results)), squeeze=False
    )
    for ax, (title, result) in zip(axes[:, 0], results, strict=True):
        rebalance = next(r for r in result.rebalances if r.cause == cause)
        start, end = rebalance.trigger_ms - before_ms, rebalance.end_ms + before_ms
        for p, spans in _owner_spans(result, start, end).items():
            for since, until, member in spans:
                ax.barh(
                    p, (until - since) / 1000, left=(since - start) / 1000,
                    height=0.7, color=colour[member],
                )  # fmt: skip
        ax.axvline(before_ms / 1000, color="black", linestyle="--", linewidth=1)
        paused = sum(ms for _, ms in rebalance.paused_partitions_ms) / 1000
        ax.set_title(
            f"{title}: {cause}, settled after "
            f"{(rebalance.end_ms - rebalance.trigger_ms) / 1000:.2f} s, "
            f"{paused:.2f} partition·s without an owner",
            fontsize=9,
        )
        ax.set_yticks(range(result.config.partitions))
        ax.set_yticklabels([f"p{p}" for p in range(result.config.partitions)])
        ax.set_xlim(0, (end - start) / 1000)
        ax.invert_yaxis()
    axes[-1, 0].set_xlabel(
        "seconds (virtual) from 1 s before the event; dashed: the event"
    )
    handles = [Patch(color=colour[m], label=m) for m in members]
    figure.legend(handles=handles, loc="upper right", fontsize=8, ncols=len(members))
    figure.tight_layout(rect=(0, 0, 1, 0.93))
    return figure
