"""Reading what Kafka's tools print: the parsers ``test_tools.py`` checks their output with.

Each function takes a tool's stdout (as :func:`reference.kafka.run_tool` returns it) and
gives back what a user reads in it: the fields of ``kafka-topics --describe``, the table of
``kafka-consumer-groups``, the ``topic:partition:offset`` lines of ``kafka-get-offsets``,
the JSON events of the verifiable producer and consumer, the perf tests' summaries, and
``kafka-metadata-quorum``'s status and replication. Output that is not in the expected
shape raises :class:`UnexpectedOutput` with the text, so a failing test shows what the
tool said.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs


class UnexpectedOutput(AssertionError):
    """A tool printed something other than the shape its parser reads."""


def _fail(what: str, text: str) -> UnexpectedOutput:
    return UnexpectedOutput(f"{what}; the output was:\n{text}")


def fields(line: str) -> dict[str, str]:
    """``Key: value`` pairs of one tab-separated line (``kafka-topics --describe``)."""
    found: dict[str, str] = {}
    for part in line.strip().split("\t"):
        key, colon, value = part.partition(":")
        if not colon:
            raise _fail(f"{part!r} is not 'Key: value'", line)
        found[key.strip()] = value.strip()
    return found


@attrs.frozen
class TopicDescription:
    """``kafka-topics --describe`` of one topic: its header line and a line a partition."""

    header: Mapping[str, str]
    partitions: Sequence[Mapping[str, str]]

    def replicas(self, partition: int) -> list[int]:
        return _ids(self.partitions[partition]["Replicas"])

    def isr(self, partition: int) -> list[int]:
        return _ids(self.partitions[partition]["Isr"])

    def leader(self, partition: int) -> int:
        return int(self.partitions[partition]["Leader"])


def _ids(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n]


def describe_topic(text: str) -> TopicDescription:
    """The one topic ``kafka-topics --describe --topic T`` printed."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("Topic:"):
        raise _fail("no 'Topic:' header line", text)
    partitions = [fields(line) for line in lines[1:]]
    if any("Partition" not in p for p in partitions):
        raise _fail("a partition line without 'Partition:'", text)
    partitions.sort(key=lambda p: int(p["Partition"]))
    return TopicDescription(fields(lines[0]), partitions)


def table(text: str) -> list[dict[str, str]]:
    """The rows of a table whose first non-blank line names the columns, separated by
    spaces or tabs (``kafka-consumer-groups``, ``kafka-metadata-quorum --replication``)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise _fail("no table", text)
    columns = lines[0].split()
    rows = []
    for line in lines[1:]:
        values = line.split()
        if len(values) != len(columns):
            raise _fail(f"{line!r} has not the {len(columns)} columns {columns}", text)
        rows.append(dict(zip(columns, values, strict=True)))
    return rows


def columns(text: str) -> list[str]:
    """The column names of such a table."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise _fail("no table", text)
    return lines[0].split()


def offsets(text: str) -> dict[tuple[str, int], int]:
    """``kafka-get-offsets``: (topic, partition) -> offset, from ``topic:partition:offset``
    lines (a topic name may itself hold no colon: Kafka's names cannot)."""
    found = {}
    for line in text.splitlines():
        match = re.fullmatch(r"([^:]+):(\d+):(-?\d+)", line.strip())
        if match is None:
            raise _fail(f"{line!r} is not topic:partition:offset", text)
        found[match[1], int(match[2])] = int(match[3])
    return found


def json_events(text: str) -> list[dict[str, Any]]:
    """The JSON objects, one a line, the verifiable producer and consumer print."""
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            raise _fail(f"{line!r} is not a JSON line", text) from None
        if not isinstance(event, dict) or "name" not in event:
            raise _fail(f"{line!r} is not an event", text)
        events.append(event)
    return events


@attrs.frozen
class ProducerPerf:
    """The summary line of ``kafka-producer-perf-test``."""

    records: int
    records_per_sec: float
    mb_per_sec: float
    avg_ms: float
    max_ms: float
    p50_ms: int
    p95_ms: int
    p99_ms: int
    p999_ms: int


_PRODUCER_SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg "
    r"latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, "
    r"(\d+) ms 99\.9th\."
)


def producer_perf(text: str) -> ProducerPerf:
    """The last line, the whole run's summary (earlier lines are periodic windows)."""
    lines = text.strip().splitlines()
    match = _PRODUCER_SUMMARY.fullmatch(lines[-1]) if lines else None
    if match is None:
        raise _fail("no summary line", text)
    g = match.groups()
    return ProducerPerf(
        int(g[0]), float(g[1]), float(g[2]), float(g[3]), float(g[4]), *map(int, g[5:])
    )


def consumer_perf(text: str) -> dict[str, str]:
    """``kafka-consumer-perf-test``'s comma-separated header and its one line of values."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 2:
        raise _fail("not a header and one line of values", text)
    keys = [k.strip() for k in lines[0].split(",")]
    values = [v.strip() for v in lines[1].split(",")]
    if len(keys) != len(values):
        raise _fail("as many values as columns", text)
    return dict(zip(keys, values, strict=True))


def quorum_status(text: str) -> dict[str, str]:
    """``kafka-metadata-quorum describe --status``: ``Key: value`` a line."""
    found = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, colon, value = line.partition(":")
        if not colon:
            raise _fail(f"{line!r} is not 'Key: value'", text)
        found[key.strip()] = value.strip()
    return found


def voter_ids(value: str) -> list[int]:
    """The ids in ``CurrentVoters``/``CurrentObservers``' JSON list of nodes."""
    nodes = json.loads(value)
    return sorted(int(node["id"]) for node in nodes)


def json_after(text: str, heading: str) -> Any:
    """The JSON line after the line ``heading`` (``kafka-reassign-partitions`` prints its
    plans so, a blank line between them at times)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == heading:
            for following in lines[i + 1 :]:
                if following.strip():
                    return json.loads(following)
    raise _fail(f"no JSON after {heading!r}", text)
