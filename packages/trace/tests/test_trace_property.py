"""Property: whatever events are written, across any rotations, read back equal."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.trace import (
    JsonLinesTracer,
    TraceEvent,
    decode_event,
    read_trace,
    register_event,
)


@register_event
@attrs.frozen
class Scalars(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "property_scalars"
    i: int
    f: float
    s: str
    b: bool
    oi: int | None
    of: float | None
    os: str | None
    ob: bool | None


@register_event
@attrs.frozen
class Containers(TraceEvent):
    COMPONENT: ClassVar[str] = "test"
    EVENT: ClassVar[str] = "property_containers"
    ints: tuple[int, ...]
    strs: tuple[str, ...]
    floats: tuple[float, ...]
    counts: Mapping[str, int]
    labels: Mapping[str, str]
    weights: Mapping[str, float]


# Spark reads ints as 64-bit longs; NaN is excluded only because NaN != NaN.
longs = st.integers(-(2**63), 2**63 - 1)
doubles = st.floats(allow_nan=False)
texts = st.text(max_size=20)

scalars = st.builds(
    Scalars,
    longs, doubles, texts, st.booleans(),
    st.none() | longs, st.none() | doubles, st.none() | texts, st.none() | st.booleans(),
)  # fmt: skip
containers = st.builds(
    Containers,
    st.lists(longs, max_size=5).map(tuple),
    st.lists(texts, max_size=5).map(tuple),
    st.lists(doubles, max_size=5).map(tuple),
    st.dictionaries(texts, longs, max_size=4),
    st.dictionaries(texts, texts, max_size=4),
    st.dictionaries(texts, doubles, max_size=4),
)
timed_events = st.lists(
    st.tuples(st.floats(0, 4e9, allow_nan=False), scalars | containers), max_size=60
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    events=timed_events,
    max_file_bytes=st.integers(1, 2000),
    buffer_bytes=st.integers(0, 1500),
)
def test_events_read_back_equal(
    events: list[tuple[float, TraceEvent]], max_file_bytes: int, buffer_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        with JsonLinesTracer.open(
            directory, node=5, max_file_bytes=max_file_bytes, buffer_bytes=buffer_bytes
        ) as tracer:
            for ts, event in events:
                tracer.emit(event, ts=ts)
        records = list(read_trace(directory))
        # ts is written to the microsecond; the events' fields (no *_ms among them) exactly.
        written = [(float(f"{ts:.6f}"), event) for ts, event in events]
        assert [(r["ts"], decode_event(r)) for r in records] == written
        assert all(r["node"] == 5 for r in records)
        for path in directory.iterdir():
            lines = path.read_bytes().count(b"\n")
            assert lines == 1 or path.stat().st_size <= max_file_bytes
