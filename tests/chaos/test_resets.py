"""A committed offset going back is explained as the consumer's own reset, by a leader
still serving at a replaced leader epoch, only when the history and the traces show all
of it: the group's larger commit, the committing process reading the partition again
from the log start, and a ListOffsets answered in between by a broker leading the
partition at an epoch the controller had replaced. Anything less stays a
``nonmonotonic_commit``, which fails the run.

The staging is seed 103's (chaos/README.md): broker 1 leads at epoch 0, is paused and
cut off from the controller, which elects broker 2 at epoch 1; a consumer fetches from
broker 1 at the group's committed offset, past broker 1's log end, and resets."""

from __future__ import annotations

import json
from typing import Any

from chaos.checker import Anomaly, check
from chaos.history import FinalState, Kind, Op
from chaos.traces import kept_records, offset_lookups, stale_leaderships
from minikafka.controller import PartitionLeaderElected
from minikafka.net import RequestCompleted
from minikafka.replication import BecameFollower, BecameLeader
from minikafka.trace import TraceEvent, encode_line

TP = ("t", 0)
FINAL: FinalState = {TP: tuple((offset, 100 + offset) for offset in range(12))}


def line(event: TraceEvent, ts: float, node: int) -> dict[str, object]:
    record = json.loads(encode_line(event, ts, node))
    assert isinstance(record, dict)
    return record


def elected(ts: float, leader: int, epoch: int, reason: str) -> dict[str, object]:
    event = PartitionLeaderElected("t", 0, leader, -1, epoch, (leader,), reason)
    return line(event, ts, 0)


def leads(ts: float, node: int, epoch: int) -> dict[str, object]:
    return line(BecameLeader("t", 0, epoch, epoch, (1, 2), (node,), 0), ts, node)


def follows(ts: float, node: int, leader: int, epoch: int) -> dict[str, object]:
    return line(BecameFollower("t", 0, leader, epoch, epoch), ts, node)


def list_offsets(ts: float, node: int) -> dict[str, object]:
    event = RequestCompleted(
        "PLAINTEXT", "c", 0, "rdkafka", 2, "ListOffsets", 7, 1, 50, 46, 0, 0, 0, 0, 0, 0
    )
    return line(event, ts, node)


def traces(lookup_node: int = 1, learned_at: float = 60.0) -> list[dict[str, object]]:
    """Broker 1 leads at epoch 0 from 1 s; the controller elects broker 2 at epoch 1
    at 20 s; broker 1 learns it (follows) at ``learned_at``; ``lookup_node`` answers a
    ListOffsets at 41 s."""
    return [
        elected(1.0, 1, 0, "new_partition"),
        leads(1.1, 1, 0),
        elected(20.0, 2, 1, "offline"),
        leads(20.1, 2, 1),
        list_offsets(41.0, lookup_node),
        follows(learned_at, 1, 2, 1),
    ]


def op(index: int, process: int, kind: Kind, at: float, **fields: Any) -> Op:
    return Op(
        index=index,
        process=process,
        kind=kind,
        outcome="ok",
        invoke=at,
        complete=at + 0.5,
        topic=TP[0],
        partition=TP[1],
        **fields,
    )


def history(reread_from: int = 0) -> list[Op]:
    """Process 100 commits 10 at 30 s; process 101 reads from ``reread_from`` at 40.7 s
    and commits 4 at 45 s."""
    return [
        op(0, 101, "poll", 2.0, records=((0, 100), (1, 101))),
        op(1, 100, "commit", 30.0, group="g", offset=10),
        op(2, 101, "poll", 40.7, records=((reread_from, 100 + reread_from), (3, 103))),
        op(3, 101, "commit", 45.0, group="g", offset=4),
    ]


def kinds(anomalies: tuple[Anomaly, ...]) -> list[str]:
    return [a.kind for a in anomalies]


def test_a_commit_going_back_after_a_stale_leaders_reset_is_explained_not_failed() -> (
    None
):
    report = check(history(), FINAL, kept_records(traces()))
    assert report.valid
    assert kinds(report.explained) == ["commit_after_reset"]
    (explained,) = report.explained
    assert explained.ops == (1, 2, 3)  # the larger commit, the re-read, the smaller
    assert "broker 1, still leading at leader epoch 0" in explained.detail
    assert "the controller elected epoch 1 at 20.000" in explained.detail
    assert report.counts()["commit_after_reset"] == 1
    assert report.counts()["nonmonotonic_commit"] == 0


def test_without_traces_the_commit_going_back_fails_the_run() -> None:
    report = check(history(), FINAL)
    assert kinds(report.anomalies) == ["nonmonotonic_commit"]
    assert report.explained == ()


def test_a_lookup_answered_by_the_current_leader_explains_nothing() -> None:
    report = check(history(), FINAL, kept_records(traces(lookup_node=2)))
    assert kinds(report.anomalies) == ["nonmonotonic_commit"]


def test_a_lookup_after_the_old_leader_learned_the_new_epoch_explains_nothing() -> None:
    report = check(history(), FINAL, kept_records(traces(learned_at=35.0)))
    assert kinds(report.anomalies) == ["nonmonotonic_commit"]


def test_a_reread_not_from_the_log_start_is_no_reset() -> None:
    report = check(history(reread_from=2), FINAL, kept_records(traces()))
    assert kinds(report.anomalies) == ["nonmonotonic_commit"]


def test_stale_leaderships_span_from_the_newer_election_to_the_old_leaders_change() -> (
    None
):
    (stale,) = stale_leaderships(traces())
    assert (stale.node, stale.epoch, stale.newer_epoch) == (1, 0, 1)
    assert (stale.since, stale.until) == (20.0, 60.0)
    assert [e.ts for e in offset_lookups(traces())] == [41.0]
    # A leader that never hears of the newer epoch stays stale to the end of the traces.
    (endless,) = stale_leaderships(traces()[:-1])
    assert endless.until == float("inf")
