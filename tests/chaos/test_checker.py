"""The checker finds each anomaly in a history staged to have it, names the operations
that show it, and finds nothing in the same history without it."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.checker import ANOMALY_KINDS, Anomaly, check
from chaos.history import (
    FinalState,
    Kind,
    Op,
    Outcome,
    encode_final_state,
    format_history,
    parse_final_state,
    parse_history,
)

TP = ("t", 0)


class History:
    """Builds a history op by op, numbering and timing each."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.clock = 0.0

    def add(self, kind: Kind, outcome: Outcome = "ok", **fields: Any) -> Op:
        start = float(fields.pop("invoke", self.clock))
        end = float(fields.pop("complete", start + 1.0))
        self.clock = max(self.clock, end) + 1.0
        fields.setdefault("process", 0)
        if kind in ("send", "poll", "commit"):
            fields.setdefault("topic", TP[0])
            fields.setdefault("partition", TP[1])
        op = Op(
            index=len(self.ops),
            kind=kind,
            outcome=outcome,
            invoke=start,
            complete=end,
            **fields,
        )
        self.ops.append(op)
        return op

    def send(
        self, value: int, offset: int | None, outcome: Outcome = "ok", **f: Any
    ) -> Op:
        return self.add("send", outcome, value=value, offset=offset, **f)

    def poll(self, *records: tuple[int, int], **f: Any) -> Op:
        return self.add("poll", records=tuple(records), **f)


def only(anomalies: tuple[Anomaly, ...], kind: str) -> list[Anomaly]:
    return [a for a in anomalies if a.kind == kind]


def test_a_clean_history_has_no_anomaly() -> None:
    h = History()
    h.send(1, 0)
    h.send(2, 1)
    h.send(3, None, "failed")
    h.send(4, None, "unknown")  # an unknown send may be there or not: here it is
    h.poll((0, 1), (1, 2), (2, 4))
    h.add("commit", group="g", offset=3)
    report = check(h.ops, {TP: ((0, 1), (1, 2), (2, 4))})
    assert report.valid, report.anomalies
    assert report.ok_sends == 2


def test_an_acknowledged_write_missing_from_the_final_log_is_lost() -> None:
    h = History()
    h.send(1, 0)
    acked = h.send(2, 1)
    reader = h.poll((0, 1), (1, 2))
    report = check(h.ops, {TP: ((0, 1),)})
    lost = only(report.anomalies, "lost")
    assert len(lost) == 1
    assert lost[0].ops == (acked.index, reader.index)
    assert "value 2" in lost[0].detail
    assert check(h.ops, {TP: ((0, 1), (1, 2))}).valid


def test_a_value_at_two_offsets_is_a_duplicate() -> None:
    h = History()
    sent = h.send(1, 0)
    h.send(2, 1)
    report = check(h.ops, {TP: ((0, 1), (1, 2), (2, 1))})
    duplicates = only(report.anomalies, "duplicate")
    assert len(duplicates) == 1
    assert duplicates[0].ops == (sent.index,)
    assert duplicates[0].in_final
    assert "offsets 0" in duplicates[0].detail
    assert "2 by the final log" in (duplicates[0].detail)


def test_a_producer_without_idempotence_may_duplicate_on_a_retry() -> None:
    h = History()
    h.send(1, 0, idempotent=False)
    assert check(h.ops, {TP: ((0, 1), (1, 1))}).valid


def test_two_values_claimed_at_one_offset_is_a_divergence() -> None:
    h = History()
    first = h.send(1, 0)
    second = h.send(2, 0)  # acknowledged at the same offset: one of them is wrong
    report = check(h.ops, {TP: ((0, 1), (1, 2))})
    divergences = only(report.anomalies, "divergence")
    assert len(divergences) == 1
    assert divergences[0].ops == (first.index, second.index)


def test_reads_that_disagree_about_an_offset_diverge() -> None:
    h = History()
    h.send(1, None, "unknown")
    h.send(2, None, "unknown")
    one = h.poll((0, 1))
    other = h.poll((0, 2))
    report = check(h.ops, {TP: ((0, 1),)})
    divergences = only(report.anomalies, "divergence")
    assert [d.ops for d in divergences] == [(one.index, other.index)]
    assert divergences[0].in_final
    # The read of 2 is also dirty: 2 was never acknowledged and is gone.
    assert [d.ops for d in only(report.anomalies, "dirty_read")] == [(1, other.index)]


def test_one_producers_values_out_of_send_order_are_a_reorder() -> None:
    h = History()
    first = h.send(1, 0, process=7)
    second = h.send(2, 1, process=7)
    h.send(3, 2, process=8)
    report = check(h.ops, {TP: ((0, 2), (1, 1), (2, 3))})
    reorders = only(report.anomalies, "reorder")
    assert [r.ops for r in reorders] == [(first.index, second.index)]
    assert "process 7" in reorders[0].detail


def test_order_is_not_asked_of_failed_or_unknown_sends_nor_across_producers() -> None:
    h = History()
    h.send(1, None, "unknown", process=1)
    h.send(2, 0, process=1)
    h.send(3, None, "failed", process=1)
    h.send(4, 1, process=2, invoke=0.0)  # another producer, invoked first
    assert check(h.ops, {TP: ((0, 2), (1, 4), (2, 1))}).valid


def test_a_committed_offset_going_back_is_nonmonotonic() -> None:
    h = History()
    high = h.add("commit", group="g", offset=10)
    low = h.add("commit", group="g", offset=4)
    h.add("commit", group="other", offset=1)
    report = check(h.ops, {TP: ()})
    found = only(report.anomalies, "nonmonotonic_commit")
    assert [a.ops for a in found] == [(high.index, low.index)]


def test_concurrent_commits_are_not_ordered() -> None:
    h = History()
    h.add("commit", group="g", offset=10, invoke=0.0, complete=5.0)
    h.add("commit", group="g", offset=4, invoke=1.0, complete=6.0)
    h.add("commit", group="g", offset=4, invoke=2.0, complete=3.0, outcome="failed")
    assert check(h.ops, {TP: ()}).valid


def test_a_read_of_a_record_never_acknowledged_and_later_gone_is_dirty() -> None:
    h = History()
    h.send(1, 0)
    unacked = h.send(2, None, "unknown")
    read = h.poll((0, 1), (1, 2))
    report = check(h.ops, {TP: ((0, 1),)})
    assert [a.ops for a in only(report.anomalies, "dirty_read")] == [
        (unacked.index, read.index)
    ]
    # The same read is fine if the record survived: an unknown send may have happened.
    assert check(h.ops, {TP: ((0, 1), (1, 2))}).valid


def test_a_deleted_topics_partitions_are_not_read_for_losses() -> None:
    h = History()
    h.send(1, 0)
    h.add("delete_topic", topic="t")
    assert check(h.ops, {}).valid


def test_every_kind_is_counted() -> None:
    h = History()
    h.send(1, 0)
    counts = check(h.ops, {TP: ()}).counts()
    assert list(counts) == list(ANOMALY_KINDS)
    assert counts["lost"] == 1
    assert sum(counts.values()) == 1


def test_history_and_final_state_round_trip_through_their_files() -> None:
    h = History()
    h.send(1, 0, client="confluent-kafka", acks=1)
    h.send(2, None, "unknown", error="timed out", idempotent=False)
    h.poll((0, 1), (1, 2))
    h.add("create_topic", topic="u", partitions=3)
    assert parse_history(format_history(h.ops)) == h.ops
    final: FinalState = {TP: ((0, 1), (3, 2)), ("u", 2): ()}
    assert parse_final_state(encode_final_state(final)) == final


def test_a_history_whose_lines_are_out_of_place_is_refused() -> None:
    h = History()
    h.send(1, 0)
    h.send(2, 1)
    lines = list(format_history(h.ops))
    with pytest.raises(ValueError, match="expected 0"):
        parse_history(reversed(lines))


def test_a_final_state_whose_offsets_go_back_is_refused() -> None:
    text = '{"partitions":[{"topic":"t","partition":0,"records":[[1,1],[0,2]]}]}'
    with pytest.raises(ValueError, match="do not increase"):
        parse_final_state(text)
