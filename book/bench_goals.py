"""The performance goals as the last full ``make bench`` measured them, for the chapters
that explain them: ``bench/results/goals.json``, written by ``python -m bench goals``
(``bench/goals.py``), printed as a table of the goals a chapter names."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

__all__ = ["show_goals"]


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return "not measured"
    if unit == "requests/s":
        return f"{value:,.0f}/s"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.2f} {unit}"


def show_goals(results: Path, sources: Iterable[str]) -> None:
    """Print the run's command, machine and load, then one line per goal whose figure
    comes from one of the benchmarks ``sources``: the bound, the figure, met or not,
    and Kafka's figure where the run measured it."""
    document = json.loads(results.read_text())
    machine = document["machine"]
    git = machine["git"] or {}
    print(
        f"command: {document['command']['parent']} (at {str(git.get('commit'))[:12]})"
    )
    print(
        f"machine: {machine['cpu_count']} CPUs ({machine['cpu_model']}), "
        f"Python {machine['python']}, load average at the end "
        f"{', '.join(f'{x:.2f}' for x in machine['load_average'])}"
    )
    wanted = set(sources)
    for goal in document["goals"]:
        if goal["source"] not in wanted:
            continue
        unit = goal["unit"]
        bound = ("<= " if goal["at_most"] else ">= ") + _figure(goal["bound"], unit)
        met = {None: "", True: "met", False: "NOT MET"}[goal["met"]]
        kafka = (
            "" if goal["kafka"] is None else f" (Kafka: {_figure(goal['kafka'], unit)})"
        )
        print(f"\n{goal['goal']}")
        print(
            f"    goal {bound}, measured {_figure(goal['figure'], unit)} {met}{kafka}"
        )
