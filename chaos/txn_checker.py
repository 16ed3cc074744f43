"""The transactional rules: what a consume-transform-produce history (``txn``
operations, :mod:`chaos.transactions`) and the final state read back after healing
(:class:`~chaos.history.TransactionalFinal`) must never show.

A transaction reads records of the input topic as a member of a group, writes one new
unique value per record read to the output topic, and sends the offsets after what it
read to the transaction (KIP-98 and KIP-447: the offsets and the outputs commit
together, or neither does). An input is named by ``(partition, offset, value)``. With
the output topic read back with ``read_committed`` (what a downstream consumer sees) and
``read_uncommitted`` (everything written), and the group's committed offsets:

- ``txn_lost``: a transaction whose commit succeeded (``ok``) has none of its outputs in
  the ``read_committed`` log of a partition it wrote (exactly-once: a consumed input with
  no committed transform).
- ``txn_duplicate``: one input transformed more than once in the ``read_committed`` log
  (two transactions' outputs for it, or one output at two offsets): exactly-once broken
  across transactions, the input processed again after its offsets were committed.
- ``aborted_read``: an output of an aborted transaction (``failed``) in the
  ``read_committed`` log (Jepsen's "aborted read", G1a): aborted writes visible.
- ``txn_partial``: a transaction, committed or ``unknown``, with some of its outputs to
  a partition in the ``read_committed`` log and others not: a transaction applied in
  part (atomicity); for a committed one whose outputs are all missing, ``txn_lost``.
- ``txn_offsets``: the group's committed offset of an input partition disagrees with the
  committed outputs: an input below it whose transform is not committed (the offset
  committed without the output: that input is never processed), or one at or past it
  whose transform is (the output committed without the offset: it will be processed
  again). The inputs are the input topic's final log.

Pure functions over values, as :mod:`chaos.checker`'s rules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal, TypeAlias

from .history import FinalState, Op, TransactionalFinal

TxnKind: TypeAlias = Literal[
    "txn_lost", "txn_duplicate", "aborted_read", "txn_partial", "txn_offsets"
]
TXN_KINDS: tuple[TxnKind, ...] = (
    "txn_lost",
    "txn_duplicate",
    "aborted_read",
    "txn_partial",
    "txn_offsets",
)
Input: TypeAlias = tuple[int, int, int]
"""``(partition, offset, value)`` of the input topic."""
Found: TypeAlias = tuple[TxnKind, str, int, tuple[int, ...], str]
"""An anomaly as the rules find it: kind, topic, partition, ops, detail."""

SHOWN = 8
"""How many values an anomaly's detail names before it says how many more."""


def _some(items: Iterable[object]) -> str:
    listed = list(items)
    head = ", ".join(str(x) for x in listed[:SHOWN])
    return head + (f" and {len(listed) - SHOWN} more" if len(listed) > SHOWN else "")


def check_transactions(
    ops: Sequence[Op], final: FinalState, txn: TransactionalFinal
) -> list[Found]:
    """Every transactional anomaly of ``ops``' ``txn`` operations of ``txn.group``,
    against the output topic as read back and the input topic's ``final`` log, by kind
    in :data:`TXN_KINDS` order."""
    txns = [op for op in ops if op.kind == "txn" and op.group == txn.group]
    if not txns:
        return []
    # Where each output value sits in the read_committed log: (partition, offset)s.
    committed: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
    for (_, partition), records in txn.committed.items():
        for offset, value in records:
            committed[value].append((partition, offset))
    visible = {op.index: _visible(op, committed) for op in txns}
    found: list[Found] = []
    found += _lost(txns, visible)
    found += _duplicates(txns, committed)
    found += _aborted_reads(txns, visible, committed)
    found += _partial(txns, visible)
    found += _offsets(txns, final, txn, committed)
    return found


def _visible(
    op: Op, committed: dict[int, list[tuple[int, int]]]
) -> dict[int, tuple[list[int], list[int]]]:
    """Per output partition of ``op``: its output values there in the read_committed
    log, and those not."""
    split: dict[int, tuple[list[int], list[int]]] = {}
    for partition, value in op.outputs:
        seen, missing = split.setdefault(partition, ([], []))
        (seen if committed.get(value) else missing).append(value)
    return split


def _lost(
    txns: Sequence[Op], visible: dict[int, dict[int, tuple[list[int], list[int]]]]
) -> list[Found]:
    found: list[Found] = []
    for op in txns:
        if op.outcome != "ok":
            continue
        for partition, (seen, missing) in sorted(visible[op.index].items()):
            if missing and not seen:
                inputs = [
                    i
                    for i, o in zip(op.inputs, op.outputs, strict=True)
                    if o[1] in missing
                ]
                detail = (
                    f"transaction op {op.index} ({op.transactional_id}) committed, but "
                    f"none of its {len(missing)} outputs to partition {partition} are "
                    f"in the read_committed log: {_some(missing)} (from inputs "
                    f"{_some(f'{op.source}-{p}@{o}={v}' for p, o, v in inputs)})"
                )
                found.append(("txn_lost", op.topic, partition, (op.index,), detail))
    return found


def _duplicates(
    txns: Sequence[Op], committed: dict[int, list[tuple[int, int]]]
) -> list[Found]:
    """Each input's transforms in the read_committed log, more than one."""
    places: defaultdict[Input, list[tuple[Op, int, int]]] = defaultdict(list)
    for op in txns:
        for (p, o, v), (_, out) in zip(op.inputs, op.outputs, strict=True):
            for _, offset in committed.get(out, []):
                places[(p, o, v)].append((op, out, offset))
    found: list[Found] = []
    for (partition, offset, value), copies in sorted(places.items()):
        if len(copies) < 2:
            continue
        first = copies[0][0]
        where = "; ".join(
            f"{out} by op {op.index} ({op.outcome}) at offset {at}"
            for op, out, at in copies
        )
        detail = (
            f"input {first.source}-{partition}@{offset}={value} transformed "
            f"{len(copies)} times in the read_committed log: {where}"
        )
        ops_ = tuple(sorted({op.index for op, _, _ in copies}))
        found.append(("txn_duplicate", first.topic, partition, ops_, detail))
    return found


def _aborted_reads(
    txns: Sequence[Op],
    visible: dict[int, dict[int, tuple[list[int], list[int]]]],
    committed: dict[int, list[tuple[int, int]]],
) -> list[Found]:
    found: list[Found] = []
    for op in txns:
        if op.outcome != "failed":
            continue
        for partition, (seen, _) in sorted(visible[op.index].items()):
            if seen:
                at = [f"{v} at offset {committed[v][0][1]}" for v in seen]
                detail = (
                    f"transaction op {op.index} ({op.transactional_id}) was aborted "
                    f"({op.error or 'no error given'}), but the read_committed log of "
                    f"partition {partition} has {len(seen)} of its outputs: {_some(at)}"
                )
                found.append(("aborted_read", op.topic, partition, (op.index,), detail))
    return found


def _partial(
    txns: Sequence[Op], visible: dict[int, dict[int, tuple[list[int], list[int]]]]
) -> list[Found]:
    found: list[Found] = []
    for op in txns:
        if op.outcome == "failed":
            continue
        for partition, (seen, missing) in sorted(visible[op.index].items()):
            if seen and missing:
                detail = (
                    f"transaction op {op.index} ({op.transactional_id}, {op.outcome}): "
                    f"{len(seen)} of its outputs to partition {partition} are in the "
                    f"read_committed log ({_some(seen)}), {len(missing)} are not "
                    f"({_some(missing)})"
                )
                found.append(("txn_partial", op.topic, partition, (op.index,), detail))
    return found


def _offsets(
    txns: Sequence[Op],
    final: FinalState,
    txn: TransactionalFinal,
    committed: dict[int, list[tuple[int, int]]],
) -> list[Found]:
    source = txns[0].source
    readers: defaultdict[Input, list[int]] = defaultdict(list)
    transformed: set[Input] = set()  # the inputs whose transform is committed
    for op in txns:
        for input_, (_, out) in zip(op.inputs, op.outputs, strict=True):
            readers[input_].append(op.index)
            if committed.get(out):
                transformed.add(input_)
    found: list[Found] = []
    for (topic, partition), records in sorted(final.items()):
        if topic != source:
            continue
        at = txn.offsets.get((topic, partition), 0)
        skipped = [
            (o, v)
            for o, v in records
            if o < at and (partition, o, v) not in transformed
        ]
        again = sorted((o, v) for p, o, v in transformed if p == partition and o >= at)
        if not skipped and not again:
            continue
        parts = []
        if skipped:
            parts.append(
                f"{len(skipped)} input(s) below it have no committed transform: "
                f"{_some(f'{v}@{o}' for o, v in skipped)}"
            )
        if again:
            parts.append(
                f"{len(again)} input(s) at or past it have one: "
                f"{_some(f'{v}@{o}' for o, v in again)}"
            )
        witnesses = {
            i for o, v in [*skipped, *again] for i in readers[(partition, o, v)]
        }
        detail = (
            f"group {txn.group!r} committed offset {at} of {topic}-{partition}; "
            + "; ".join(parts)
        )
        found.append(
            ("txn_offsets", topic, partition, tuple(sorted(witnesses)), detail)
        )
    return found
