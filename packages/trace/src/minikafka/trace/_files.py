"""Trace file names and reading trace directories back.

A writer owns the files ``trace-node<node>-<pid>-<seq:05d>.jsonl``: node and pid keep
processes sharing a directory (a local cluster) apart, seq numbers one writer's rotations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

_TRACE_FILE = re.compile(
    r"^trace-node(?P<node>-?\d+)-(?P<pid>\d+)-(?P<seq>\d+)\.jsonl$"
)


def trace_file_name(node: int, pid: int, seq: int) -> str:
    return f"trace-node{node}-{pid}-{seq:05d}.jsonl"


def parse_trace_file_name(name: str) -> tuple[int, int, int] | None:
    """``(node, pid, seq)`` of a writer's file name, or None for any other name."""
    match = _TRACE_FILE.match(name)
    if match is None:
        return None
    return int(match["node"]), int(match["pid"]), int(match["seq"])


def next_seq(directory: Path, node: int, pid: int) -> int:
    """The first seq after any file this (node, pid) already wrote in ``directory``.

    A second writer in one process (tracing reconfigured), or a recycled pid, then
    appends new files instead of mixing into old ones.
    """
    taken = [
        parsed[2]
        for path in directory.glob(f"trace-node{node}-{pid}-*.jsonl")
        if (parsed := parse_trace_file_name(path.name)) is not None
        and parsed[:2] == (node, pid)
    ]
    return max(taken, default=-1) + 1


def _order(path: Path) -> tuple[int, int, int, int, str]:
    parsed = parse_trace_file_name(path.name)
    if parsed is None:
        # Foreign .jsonl files (copied, renamed) go last, by name.
        return (1, 0, 0, 0, path.name)
    node, pid, seq = parsed
    return (0, node, pid, seq, path.name)


def trace_files(directory: Path) -> list[Path]:
    """The ``*.jsonl`` files of ``directory`` by (node, pid, seq): each writer's files
    in the order it wrote them. Across processes that is not time order; sort on ``ts``.
    """
    return sorted(directory.glob("*.jsonl"), key=_order)


def read_trace(directory: Path) -> Iterator[dict[str, object]]:
    """Every trace record in ``directory``, file by file in :func:`trace_files` order.

    A process killed mid-write can leave a last line without its newline; that torn line
    is skipped. Any other line that is not a JSON object raises ValueError with its
    place.
    """
    for path in trace_files(directory):
        with path.open("rb") as file:
            for number, raw in enumerate(file, start=1):
                if not raw.endswith(b"\n"):
                    break
                try:
                    record = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
                if not isinstance(record, dict):
                    raise ValueError(f"{path}:{number}: not a JSON object")
                yield record
