"""A history drawn from a correct single-leader log is always clean: the checker raises
no false alarm over acks, reads, failed and unknown sends and commits, whatever their
interleaving.

The model: one leader per partition appends each send at once (in the order the
producers' sends reach it), so a producer's sends to a partition land in send order.
A send then completes ``ok`` with its offset, ``unknown`` (the record may have been
appended or not: both drawn), or ``failed`` (it was not appended). Reads return a slice
of what the log holds; a consumer group's commits only move forward; the final state is
the log.
"""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.checker import check
from chaos.history import Op, Outcome, TopicPartition

PARTITIONS: tuple[TopicPartition, ...] = (("a", 0), ("a", 1), ("b", 0))


@attrs.frozen
class Send:
    process: int
    tp: TopicPartition
    outcome: str
    """``ok``, ``failed``, or ``unknown-in``/``unknown-out``: unknown to the client,
    appended or not."""
    delay: float


@attrs.frozen
class Poll:
    process: int
    tp: TopicPartition
    start: int
    count: int


@attrs.frozen
class Commit:
    process: int
    tp: TopicPartition
    advance: int
    delay: float


Step = Send | Poll | Commit
processes = st.integers(0, 3)
partitions = st.sampled_from(PARTITIONS)
delays = st.floats(0.0, 5.0)
outcomes = st.sampled_from(["ok", "ok", "ok", "failed", "unknown-in", "unknown-out"])
steps = st.lists(
    st.one_of(
        st.builds(Send, processes, partitions, outcomes, delays),
        st.builds(Poll, processes, partitions, st.integers(0, 50), st.integers(0, 10)),
        st.builds(Commit, processes, partitions, st.integers(0, 3), delays),
    ),
    max_size=60,
)

Final = dict[TopicPartition, tuple[tuple[int, int], ...]]


def model_history(plan: list[Step]) -> tuple[list[Op], Final]:
    logs: dict[TopicPartition, list[tuple[int, int]]] = {tp: [] for tp in PARTITIONS}
    committed: dict[TopicPartition, int] = dict.fromkeys(PARTITIONS, 0)
    last_commit_end: dict[TopicPartition, float] = dict.fromkeys(PARTITIONS, 0.0)
    ops: list[Op] = []
    value = 0
    for now, step in enumerate(plan):
        index, (topic, partition) = len(ops), step.tp
        if isinstance(step, Send):
            value += 1
            log = logs[step.tp]
            offset = len(log)
            if step.outcome in ("ok", "unknown-in"):
                log.append((offset, value))
            outcome: Outcome = (
                "ok"
                if step.outcome == "ok"
                else ("failed" if step.outcome == "failed" else "unknown")
            )
            op = Op(
                index,
                step.process,
                "send",
                outcome,
                now,
                now + step.delay,
                topic=topic,
                partition=partition,
                value=value,
                offset=offset if outcome == "ok" else None,
            )
        elif isinstance(step, Poll):
            records = tuple(logs[step.tp][step.start : step.start + step.count])
            op = Op(
                index,
                step.process,
                "poll",
                "ok",
                now,
                now + 0.5,
                topic=topic,
                partition=partition,
                records=records,
            )
        else:
            # A group commits after its previous commit completed, never lower.
            start = max(float(now), last_commit_end[step.tp])
            committed[step.tp] = min(
                committed[step.tp] + step.advance, len(logs[step.tp])
            )
            last_commit_end[step.tp] = start + step.delay
            op = Op(
                index,
                step.process,
                "commit",
                "ok",
                start,
                start + step.delay,
                topic=topic,
                partition=partition,
                group="g",
                offset=committed[step.tp],
            )
        ops.append(op)
    return ops, {tp: tuple(log) for tp, log in logs.items()}


@settings(max_examples=200, deadline=None, derandomize=True)
@given(steps)
def test_a_correct_single_leader_log_yields_a_clean_history(plan: list[Step]) -> None:
    ops, final = model_history(plan)
    report = check(ops, final)
    assert report.valid, report.anomalies


@settings(max_examples=100, deadline=None, derandomize=True)
@given(steps, st.data())
def test_dropping_an_acknowledged_record_from_the_model_is_always_caught(
    plan: list[Step], data: st.DataObject
) -> None:
    """The converse, so the property above cannot pass by a checker that sees nothing:
    the same model with one acknowledged record taken out of its final log is lost."""
    ops, final = model_history(plan)
    acked = [op for op in ops if op.kind == "send" and op.outcome == "ok"]
    if not acked:
        return
    victim = data.draw(st.sampled_from(acked))
    final[victim.tp] = tuple(r for r in final[victim.tp] if r[1] != victim.value)
    lost = [a for a in check(ops, final).anomalies if a.kind == "lost"]
    assert [a.ops[0] for a in lost] == [victim.index]
