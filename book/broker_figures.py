"""The broker chapter's figure: a request's path through the packages, drawn from the
broker's own protocol table (``KafkaApis.TABLE``): each API is placed under the part of
the broker its handler calls, found in the handler's source (``self.replica_manager``,
``self.groups``...), so a new API or a handler that moves shows up in the figure.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

from diagrams import SVG, Block, block_diagram

__all__ = ["apis_by_part", "request_path"]

# The KafkaApis attributes a handler reaches the rest of the broker through, in the
# order that decides where an API that uses several goes, with what the figure calls
# them and the package each lives in.
PARTS = {
    "groups": "GroupCoordinatorShell\n(minikafka.coordination)",
    "replica_manager": "ReplicaManager\n(minikafka.replication)",
    "producer_ids": "ProducerIdManager\n(minikafka.broker)",
    "metadata_cache": "MetadataCache\n(minikafka.broker)",
    "controller": "the controller\n(minikafka.controller)",
}


def _camel(name: str) -> str:
    return "".join(word.capitalize() for word in name.split("_"))


def apis_by_part(table: Iterable[Any]) -> dict[str, list[str]]:
    """The APIs of ``table`` (``ApiSpec`` rows) by the part their handler calls first
    in ``PARTS``' order; "" for those KafkaApis answers itself. A parking API has a *."""
    found: dict[str, list[str]] = {part: [] for part in [*PARTS, ""]}
    for spec in table:
        source = inspect.getsource(spec.handler)
        used = set(re.findall(r"self\.([a-z_]+)\b", source))
        part = next((p for p in PARTS if p in used), "")
        found[part].append(_camel(spec.key.name) + ("*" if spec.parks else ""))
    return found


def _lines(names: list[str], chars: int) -> str:
    lines: list[str] = []
    for name in names:
        if lines and len(lines[-1]) + 2 + len(name) <= chars:
            lines[-1] += ", " + name
        else:
            lines.append(name)
    return "\n".join(lines)


def request_path(table: Iterable[Any], title: str = "") -> SVG:
    by_part = apis_by_part(table)
    parts: list[Block] = []
    y = 0.0
    for part, label in PARTS.items():
        text = label + "\n" + _lines(by_part[part], 36)
        h = 16 + 14 * text.count("\n") + 14
        parts.append((part, 520, y, 240, h, text, "#e8f0fb"))
        y += h + 14
    mid = (y - 14) / 2
    blocks: list[Block] = [
        ("client", 0, mid - 25, 80, 50, "client", "#f4f4f4"),
        (
            "processor",
            130,
            mid - 85,
            150,
            50,
            "Processor\nreads a frame, mutes",
            "#e8f0fb",
        ),
        (
            "channel",
            130,
            mid + 35,
            150,
            50,
            "RequestChannel\n+ handler tasks",
            "#e8f0fb",
        ),
        (
            "apis",
            340,
            0,
            120,
            y - 14,
            "KafkaApis\none handler\nper API\n(TABLE)",
            "#fdebd0",
        ),
        *parts,
        (
            "log",
            800,
            parts[1][2],
            130,
            50,
            "Log, LogManager\n(minikafka.log)",
            "#e8f0fb",
        ),
    ]
    arrows = [
        ("client", "processor", "request", "request"),
        ("processor", "channel", "", "request"),
        ("channel", "apis", "", "request"),
        *((a, part, "", "request") for part in PARTS for a in ["apis"]),
        ("replica_manager", "log", "append, read", "data"),
        ("groups", "replica_manager", "__consumer_offsets", "data"),
        ("apis", "processor", "response", "response"),
        ("processor", "client", "", "response"),
    ]
    itself = ", ".join(by_part[""])
    return block_diagram(
        blocks,
        arrows,
        groups=[("minikafka.net", 120, mid - 110, 170, 205)],
        title=title,
        note=f"* parks: runs in a task of its own until others answer. "
        f"KafkaApis answers {itself} itself.",
    )
