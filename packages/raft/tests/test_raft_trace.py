"""The quorum's trace events: registered under ``raft``, written by a run, and each one
encodes to a JSON line the labs' Spark schemas can read."""

from __future__ import annotations

import json

from minikafka.raft._events import (
    HighWatermarkAdvanced,
    LogTruncated,
    SnapshotInstalled,
    StateChanged,
    VoteAnswered,
)
from minikafka.raft._scenarios import Fault, Scenario
from minikafka.raft._simulator import Simulation
from minikafka.trace import decode_event, event_types, spark_schema
from minikafka.trace._event import spec_for_class
from minikafka.trace.testing import RecordingTracer


def test_the_events_are_registered_under_raft() -> None:
    types = event_types()
    assert types["raft", "state_change"] is StateChanged
    assert types["raft", "vote"] is VoteAnswered
    assert types["raft", "hw_advance"] is HighWatermarkAdvanced
    assert types["raft", "truncate"] is LogTruncated
    assert types["raft", "snapshot_installed"] is SnapshotInstalled


def test_a_run_with_a_crash_and_a_partition_traces_every_kind_of_event() -> None:
    tracers: dict[int, RecordingTracer] = {}
    scenario = Scenario(
        voters=3,
        observers=1,
        duration=16.0,
        settle=10.0,
        faults=(
            Fault(3.0, "crash"),
            Fault(7.0, "restart"),
            Fault(9.0, "partition"),
            Fault(14.0, "heal"),
        ),
    )
    result = Simulation(
        scenario, 4, tracer_for=lambda n: tracers.setdefault(n, RecordingTracer(node=n))
    ).run()
    assert result.ok
    records = [r for t in tracers.values() for r in t.records]
    kinds = {type(event) for _, event in records}
    assert {
        StateChanged,
        VoteAnswered,
        HighWatermarkAdvanced,
        SnapshotInstalled,
    } <= kinds
    elected = [
        e for _, e in records if isinstance(e, StateChanged) and e.new == "Leader"
    ]
    # Every election says how long its node was without a leader; the first waited for
    # the randomized election timeout (1 to 2 s).
    assert elected[0].leaderless_for >= 1.0
    assert all(e.leaderless_for >= 0 for e in elected)
    for ts, event in records:
        spec = spec_for_class(type(event))
        line = json.loads(spec.encode(event, ts, 1))
        assert line["component"] == "raft"
        assert decode_event(line) == event  # the line says all the event says
        fields = spark_schema(type(event))["fields"]
        assert isinstance(fields, list)
        assert {f["name"] for f in fields} == set(line)
