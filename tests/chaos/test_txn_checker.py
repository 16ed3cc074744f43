"""The transactional rules find each anomaly in a consume-transform-produce history
staged to show it, name the transactions and values that show it, and find nothing in
the clean history: exactly-once (``txn_lost``, ``txn_duplicate``), no aborted read,
atomicity (``txn_partial``), and offsets committed with the outputs (``txn_offsets``)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import attrs

from chaos.__main__ import main
from chaos.checker import Anomaly, Report, check
from chaos.history import (
    FinalState,
    Op,
    Outcome,
    TransactionalFinal,
    encode_final_state,
    format_history,
    parse_final_state,
    parse_history,
    parse_transactional_final,
)

SOURCE, SINK, GROUP = "chaos", "chaos-out", "chaos-transform"
LOG: FinalState = {(SOURCE, 0): ((0, 1), (1, 2), (2, 3), (3, 4))}
"""The input topic's final log: values 1 to 4 at offsets 0 to 3."""


def txn(
    index: int,
    outcome: Outcome,
    inputs: tuple[tuple[int, int, int], ...],
    outputs: tuple[int, ...],
    **fields: Any,
) -> Op:
    after = max(offset for _, offset, _ in inputs) + 1
    return Op(
        index,
        300,
        "txn",
        outcome,
        float(index),
        index + 0.5,
        topic=SINK,
        group=GROUP,
        transactional_id="chaos-transform-300",
        source=SOURCE,
        inputs=inputs,
        outputs=tuple((0, value) for value in outputs),
        offsets=((0, after),),
        **fields,
    )


def history() -> list[Op]:
    """1 and 2 transformed and committed; 3 and 4 transformed and aborted, then again
    and committed."""
    return [
        txn(0, "ok", ((0, 0, 1), (0, 1, 2)), (101, 102)),
        txn(1, "failed", ((0, 2, 3), (0, 3, 4)), (103, 104), error="commit: aborted"),
        txn(2, "ok", ((0, 2, 3), (0, 3, 4)), (105, 106)),
    ]


COMMITTED = ((0, 101), (1, 102), (5, 105), (6, 106))
"""The output's read_committed log: offsets 2 and 3 aborted, 4 their abort marker."""
UNCOMMITTED = ((0, 101), (1, 102), (2, 103), (3, 104), (5, 105), (6, 106))


def final(
    committed: tuple[tuple[int, int], ...] = COMMITTED, offset: int = 4
) -> TransactionalFinal:
    return TransactionalFinal(
        GROUP, {(SINK, 0): committed}, {(SINK, 0): UNCOMMITTED}, {(SOURCE, 0): offset}
    )


def run(ops: list[Op], txn_final: TransactionalFinal, log: FinalState = LOG) -> Report:
    return check(ops, log, transactions=txn_final)


def kinds(report: Report) -> dict[str, list[Anomaly]]:
    found: dict[str, list[Anomaly]] = {}
    for anomaly in report.anomalies:
        found.setdefault(anomaly.kind, []).append(anomaly)
    return found


def test_a_clean_consume_transform_produce_history_has_no_anomaly() -> None:
    report = run(history(), final())
    assert report.valid, report.anomalies


def test_an_unknown_commit_may_have_committed_or_not() -> None:
    ops = history()
    ops[2] = attrs.evolve(ops[2], outcome="unknown")
    assert run(ops, final()).valid
    # Not committed: its inputs are below no committed offset (still 2), no output.
    assert run(ops, final(COMMITTED[:2], offset=2)).valid


def test_a_committed_transaction_without_its_outputs_is_txn_lost() -> None:
    report = run(history(), final(COMMITTED[:2]))
    lost = kinds(report)["txn_lost"]
    assert [(a.ops, a.partition) for a in lost] == [((2,), 0)]
    assert "105, 106" in lost[0].detail
    assert "chaos-0@2=3" in lost[0].detail
    # The offset covers 3 and 4 but their transforms are not committed either.
    assert "txn_offsets" in kinds(report)


def test_an_input_transformed_by_two_committed_transactions_is_txn_duplicate() -> None:
    ops = [*history(), txn(3, "ok", ((0, 3, 4),), (107,))]
    report = run(ops, final((*COMMITTED, (7, 107))))
    duplicates = kinds(report)["txn_duplicate"]
    assert [a.ops for a in duplicates] == [(2, 3)]
    assert "chaos-0@3=4 transformed 2 times" in duplicates[0].detail
    assert "106 by op 2" in duplicates[0].detail
    assert "107 by op 3" in duplicates[0].detail
    assert set(kinds(report)) == {"txn_duplicate"}


def test_an_aborted_transactions_output_read_committed_is_an_aborted_read() -> None:
    committed = ((0, 101), (1, 102), (2, 103), (3, 104), (5, 105), (6, 106))
    report = run(history(), final(committed))
    aborted = kinds(report)["aborted_read"]
    assert [a.ops for a in aborted] == [(1,)]
    assert "103 at offset 2" in aborted[0].detail
    assert "commit: aborted" in aborted[0].detail
    # The aborted outputs are transforms of inputs committed again: twice each.
    assert len(kinds(report)["txn_duplicate"]) == 2


def test_a_transaction_with_some_outputs_committed_is_txn_partial() -> None:
    ops = history()
    for outcome in ("ok", "unknown"):
        ops[2] = attrs.evolve(ops[2], outcome=outcome)
        report = run(ops, final(COMMITTED[:3]))
        partial = kinds(report)["txn_partial"]
        assert [a.ops for a in partial] == [(2,)]
        assert "1 of its outputs" in partial[0].detail
        assert "(105)" in partial[0].detail
        assert "(106)" in partial[0].detail
        assert "txn_lost" not in kinds(report)


def test_outputs_committed_past_the_groups_offset_are_txn_offsets() -> None:
    report = run(history(), final(offset=2))
    found = kinds(report)["txn_offsets"]
    assert [(a.topic, a.partition, a.ops) for a in found] == [(SOURCE, 0, (1, 2))]
    assert "committed offset 2 of chaos-0" in found[0].detail
    assert "2 input(s) at or past it have one: 3@2, 4@3" in found[0].detail
    assert set(kinds(report)) == {"txn_offsets"}


def test_an_offset_committed_past_an_input_never_transformed_is_txn_offsets() -> None:
    log = {(SOURCE, 0): (*LOG[(SOURCE, 0)], (4, 5))}
    assert run(history(), final(), log).valid  # 5 at offset 4: not yet consumed
    report = run(history(), final(offset=5), log)
    found = kinds(report)["txn_offsets"]
    assert [a.ops for a in found] == [()]  # no transaction read it
    assert "1 input(s) below it have no committed transform: 5@4" in found[0].detail


def test_transactions_and_their_final_state_survive_their_files() -> None:
    ops = history()
    assert parse_history("".join(format_history(ops)).splitlines()) == ops
    text = encode_final_state(LOG, final())
    assert parse_final_state(text) == LOG
    assert parse_transactional_final(text) == final()
    assert parse_transactional_final(encode_final_state(LOG)) is None


def test_chaos_check_reads_the_transactions_from_the_final_state(
    tmp_path: Path,
) -> None:
    """``python -m chaos check`` applies the transactional rules when the final state
    has its ``transactions`` member, and counts their kinds."""
    committed = ((0, 101), (1, 102), (2, 103), (5, 105), (6, 106))
    (tmp_path / "history.jsonl").write_text("".join(format_history(history())))
    (tmp_path / "final.json").write_text(encode_final_state(LOG, final(committed)))
    out = io.StringIO()
    status = main(
        ["check", str(tmp_path / "history.jsonl"), str(tmp_path / "final.json")], out
    )
    assert status == 1
    assert "aborted_read         1" in out.getvalue()
    assert "aborted_read         chaos-out-0      ops 1:" in out.getvalue()
