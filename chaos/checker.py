"""The checker: what a history and the final state say went wrong.

Each rule is one of the anomalies Jepsen's analyses of Kafka-compatible systems define
(Redpanda 21.10, Bufstream 0.1), for a log of unique integer values:

- ``lost``: a send acknowledged ``ok`` whose value is not in its partition's final log.
- ``duplicate``: one value seen at two offsets of a partition (by acks, reads or the
  final log), from an idempotent producer (one without idempotence may duplicate on a
  retry: Kafka promises it nothing better).
- ``divergence``: two values seen at one offset (Jepsen's "inconsistent offsets"): an
  acknowledgement, a read and the final log disagree about what the offset holds.
- ``reorder``: an idempotent producer's acknowledged values to one partition sit in
  the final log in an order other than it sent them. The order is the send order
  (``invoke``): one producer's sends to one partition are acknowledged in that order
  (sequence numbers), so both orders agree. Sends that ``failed`` or ended ``unknown``
  take no part: they promise no place.
- ``nonmonotonic_commit``: a group's committed offset for a partition went back: a
  commit that completed before another was invoked names a larger offset than it.
  Concurrent commits are not ordered in time, so they are not compared.
- ``commit_after_reset``: a ``nonmonotonic_commit`` the run's traces explain as the
  consumer's own reset, which Kafka does too: after the group had committed the larger
  offset, the committing process read the partition again from the log start (the
  workload's ``auto.offset.reset=earliest``), and in that span a broker still leading
  the partition at a leader epoch the controller had replaced answered a ListOffsets
  (the reset's lookup). A stale ZooKeeper-mode leader, cut off from the controller,
  answers a fetch past its log end with OFFSET_OUT_OF_RANGE and the client resets
  (chaos/README.md, seed 103). Reported and counted with that evidence, not a failure:
  without traces, or without all of it, the commit stays a ``nonmonotonic_commit``.
- ``duplicate_new_epoch``: a ``duplicate`` whose copies in the final log were written
  by one producer id at as many producer epochs as there are copies: the client sent
  the record again under a new epoch (librdkafka bumps its own epoch after an
  OUT_OF_ORDER_SEQUENCE_NUMBER or a delivery timeout and re-sends from sequence 0,
  chaos/README.md, seeds 3 and 111), which no broker can match to the first copy, Kafka
  included. Reported and counted with the batch headers, not a failure: without the
  run's segments (:mod:`chaos.writers`), or when any copy's writer is unknown or two
  share an epoch, it stays a ``duplicate``, whose detail then names the writers (one
  producer id, epoch and sequence twice is the broker's deduplication failing).
- ``dirty_read``: a read returned a value that was never acknowledged and is not in the
  final log: a read past the high watermark of a record later truncated away.

With transactions (:mod:`chaos.txn_checker`), ``txn_lost``, ``txn_duplicate``,
``aborted_read``, ``txn_partial`` and ``txn_offsets``: a consume-transform-produce
transaction's outputs and offsets against the output topic read back both ways and the
group's committed offsets.

Partitions of a topic that was deleted (``delete_topic``, any outcome) are left out of
the rules that read the final log (``lost``, ``dirty_read``): their records are gone by
design. A workload recreates topics under new names.

Pure functions over values: :func:`check` takes the ops, the final state and
optionally the run's trace lines, returns a :class:`Report`.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from typing import Literal, TypeAlias

import attrs

from .history import FinalState, Op, TopicPartition, TransactionalFinal
from .resets import ResetEvidence
from .traces import Record
from .txn_checker import TXN_KINDS, TxnKind, check_transactions
from .writers import Writer, Writers

AnomalyKind: TypeAlias = Literal[
    "lost",
    "duplicate",
    "divergence",
    "reorder",
    "nonmonotonic_commit",
    "dirty_read",
    "commit_after_reset",
    "duplicate_new_epoch",
    TxnKind,
]
ANOMALY_KINDS: tuple[AnomalyKind, ...] = (
    "lost",
    "duplicate",
    "divergence",
    "reorder",
    "nonmonotonic_commit",
    "dirty_read",
    "commit_after_reset",
    "duplicate_new_epoch",
    *TXN_KINDS,
)


@attrs.frozen
class Anomaly:
    """One anomaly: its kind, where, and the operations that show it (``ops``: history
    indices; ``in_final``: whether the final log is one of the witnesses)."""

    kind: AnomalyKind
    topic: str
    partition: int
    ops: tuple[int, ...]
    detail: str
    in_final: bool = False


@attrs.frozen
class Report:
    anomalies: tuple[Anomaly, ...]
    """What fails the run."""
    operations: int
    ok_sends: int
    explained: tuple[Anomaly, ...] = ()
    """``commit_after_reset`` and ``duplicate_new_epoch``: reported and counted, not
    failing the run (Kafka behaves the same)."""

    @property
    def valid(self) -> bool:
        return not self.anomalies

    def counts(self) -> dict[AnomalyKind, int]:
        counted = Counter(a.kind for a in (*self.anomalies, *self.explained))
        return {kind: counted[kind] for kind in ANOMALY_KINDS}


FINAL = -1
"""The witness number the final log goes by among ops' indices, inside this module."""


def _observations(
    ops: Sequence[Op], final: FinalState
) -> list[tuple[TopicPartition, int, int, int]]:
    """Every claim that an offset holds a value: ``(tp, offset, value, witness)``, from
    ok acknowledgements, reads and the final log (witness :data:`FINAL`)."""
    seen: list[tuple[TopicPartition, int, int, int]] = []
    for op in ops:
        if op.kind == "send" and op.outcome == "ok" and op.offset is not None:
            assert op.value is not None  # Op refuses a send without one
            seen.append((op.tp, op.offset, op.value, op.index))
        elif op.kind == "poll" and op.outcome == "ok":
            seen.extend(
                (op.tp, offset, value, op.index) for offset, value in op.records
            )
    for tp, records in final.items():
        seen.extend((tp, offset, value, FINAL) for offset, value in records)
    return seen


def _witnesses(indices: set[int]) -> tuple[tuple[int, ...], bool]:
    return tuple(sorted(i for i in indices if i != FINAL)), FINAL in indices


def _divergences(
    seen: list[tuple[TopicPartition, int, int, int]],
) -> list[Anomaly]:
    at: defaultdict[tuple[TopicPartition, int], defaultdict[int, set[int]]]
    at = defaultdict(lambda: defaultdict(set))
    for tp, offset, value, witness in seen:
        at[(tp, offset)][value].add(witness)
    found = []
    for ((topic, partition), offset), values in sorted(at.items()):
        if len(values) < 2:
            continue
        ops, in_final = _witnesses(set().union(*values.values()))
        claims = ", ".join(
            f"{value} by {_names(witnesses)}"
            for value, witnesses in sorted(values.items())
        )
        detail = f"offset {offset} holds {claims}"
        found.append(Anomaly("divergence", topic, partition, ops, detail, in_final))
    return found


def _duplicates(
    ops: Sequence[Op],
    seen: list[tuple[TopicPartition, int, int, int]],
    writers: Writers | None = None,
) -> list[Anomaly]:
    lenient = {
        (op.tp, op.value) for op in ops if op.kind == "send" and not op.idempotent
    }
    where: defaultdict[tuple[TopicPartition, int], defaultdict[int, set[int]]]
    where = defaultdict(lambda: defaultdict(set))
    for tp, offset, value, witness in seen:
        where[(tp, value)][offset].add(witness)
    found = []
    for ((topic, partition), value), offsets in sorted(where.items()):
        if len(offsets) < 2 or ((topic, partition), value) in lenient:
            continue
        ops_, in_final = _witnesses(set().union(*offsets.values()))
        places = ", ".join(
            f"{offset} by {_names(w)}" for offset, w in sorted(offsets.items())
        )
        detail = f"value {value} at offsets {places}"
        kind: AnomalyKind = "duplicate"
        if writers is not None:
            known = writers.get((topic, partition), {})
            copies = {offset: known.get((offset, value)) for offset in offsets}
            kind, why = _copies(copies)
            detail += f"; {why}"
        found.append(Anomaly(kind, topic, partition, ops_, detail, in_final))
    return found


def _copies(copies: dict[int, Writer | None]) -> tuple[AnomalyKind, str]:
    """What the copies' batch headers say: ``duplicate_new_epoch`` when one producer id
    wrote them at distinct epochs, else ``duplicate`` with the writers named."""
    named = "; ".join(
        f"offset {offset}: {writer or 'writer not found in the segments'}"
        for offset, writer in sorted(copies.items())
    )
    written = [w for w in copies.values() if w is not None]
    if len(written) < len(copies):
        return "duplicate", named
    ids = {w.producer_id for w in written}
    epochs = {w.producer_epoch for w in written}
    if len(ids) == 1 and len(epochs) == len(written) and -1 not in ids:
        return "duplicate_new_epoch", (
            f"{named}: one producer id at {len(epochs)} epochs, "
            "the client re-sent it under a new epoch"
        )
    same = Counter((w.producer_id, w.producer_epoch, w.sequence) for w in written)
    if any(n > 1 and pid >= 0 for (pid, _, _), n in same.items()):
        return "duplicate", f"{named}: one producer id, epoch and sequence twice"
    return "duplicate", named


def _names(witnesses: set[int]) -> str:
    names = [f"op {i}" for i in sorted(witnesses) if i != FINAL]
    if FINAL in witnesses:
        names.append("the final log")
    return ", ".join(names)


def _deleted(ops: Sequence[Op]) -> set[str]:
    return {op.topic for op in ops if op.kind == "delete_topic"}


def _lost(ops: Sequence[Op], final: FinalState) -> list[Anomaly]:
    deleted = _deleted(ops)
    values = {tp: {value for _, value in records} for tp, records in final.items()}
    readers: defaultdict[tuple[TopicPartition, int], set[int]] = defaultdict(set)
    for op in ops:
        if op.kind == "poll" and op.outcome == "ok":
            for _, value in op.records:
                readers[(op.tp, value)].add(op.index)
    found = []
    for op in ops:
        if op.kind != "send" or op.outcome != "ok" or op.topic in deleted:
            continue
        if op.value is not None and op.value not in values.get(op.tp, set()):
            read = readers.get((op.tp, op.value), set())
            detail = (
                f"value {op.value} acknowledged at offset {op.offset}, "
                "not in the final log"
            )
            if read:
                detail += f" (read by {_names(read)})"
            ops_ = (op.index, *sorted(read))
            found.append(Anomaly("lost", op.topic, op.partition, ops_, detail, True))
    return found


def _dirty_reads(ops: Sequence[Op], final: FinalState) -> list[Anomaly]:
    deleted = _deleted(ops)
    acked = {
        (op.tp, op.value) for op in ops if op.kind == "send" and op.outcome == "ok"
    }
    sends = defaultdict(list)
    for op in ops:
        if op.kind == "send":
            sends[(op.tp, op.value)].append(op.index)
    values = {tp: {value for _, value in records} for tp, records in final.items()}
    readers: defaultdict[tuple[TopicPartition, int], list[tuple[int, int]]]
    readers = defaultdict(list)
    for op in ops:
        if op.kind != "poll" or op.outcome != "ok" or op.topic in deleted:
            continue
        for offset, value in op.records:
            if (op.tp, value) not in acked and value not in values.get(op.tp, set()):
                readers[(op.tp, value)].append((op.index, offset))
    found = []
    for ((topic, partition), value), reads in sorted(readers.items()):
        senders = sends.get(((topic, partition), value), [])
        how = (
            f"sent by {_names(set(senders))}, never acknowledged"
            if senders
            else ("never sent")
        )
        places = ", ".join(f"op {i} at offset {offset}" for i, offset in reads)
        detail = f"value {value} read by {places}; {how}; not in the final log"
        ops_ = tuple(sorted({i for i, _ in reads} | set(senders)))
        found.append(Anomaly("dirty_read", topic, partition, ops_, detail, True))
    return found


def _reorders(ops: Sequence[Op], final: FinalState) -> list[Anomaly]:
    position = {
        (tp, value): offset
        for tp, records in final.items()
        for offset, value in records
    }
    streams: defaultdict[tuple[int, TopicPartition], list[Op]] = defaultdict(list)
    for op in ops:
        if op.kind == "send" and op.outcome == "ok" and op.idempotent:
            streams[(op.process, op.tp)].append(op)
    found = []
    for (process, (topic, partition)), sent in sorted(streams.items()):
        placed: list[tuple[Op, int]] = []
        for op in sorted(sent, key=lambda op: (op.invoke, op.index)):
            if op.value is not None and (op.tp, op.value) in position:
                placed.append((op, position[(op.tp, op.value)]))
        for (before, at_before), (after, at_after) in itertools.pairwise(placed):
            if at_after < at_before:
                detail = (
                    f"process {process} sent {before.value} (op {before.index}) before "
                    f"{after.value} (op {after.index}), but the final log has them at "
                    f"offsets {at_before} and {at_after}"
                )
                ops_ = (before.index, after.index)
                found.append(Anomaly("reorder", topic, partition, ops_, detail, True))
    return found


def _nonmonotonic_commits(ops: Sequence[Op]) -> list[Anomaly]:
    commits: defaultdict[tuple[str, TopicPartition], list[Op]] = defaultdict(list)
    for op in ops:
        if op.kind == "commit" and op.outcome == "ok" and op.offset is not None:
            commits[(op.group, op.tp)].append(op)
    found = []
    for (group, (topic, partition)), done in sorted(commits.items()):
        by_completion = sorted(done, key=lambda op: (op.complete, op.index))
        highest: Op | None = None  # the largest offset among commits completed so far
        completed = 0  # how many of by_completion completed before this op's invoke
        for op in sorted(done, key=lambda op: (op.invoke, op.index)):
            while (
                completed < len(by_completion)
                and by_completion[completed].complete < op.invoke
            ):
                earlier = by_completion[completed]
                completed += 1
                if highest is None or _offset(earlier) > _offset(highest):
                    highest = earlier
            if highest is not None and _offset(op) < _offset(highest):
                first, then = _offset(highest), _offset(op)
                detail = (
                    f"group {group!r} committed {first} (op {highest.index}), "
                    f"then {then} (op {op.index}), invoked after the first completed"
                )
                ops_ = (highest.index, op.index)
                found.append(
                    Anomaly("nonmonotonic_commit", topic, partition, ops_, detail)
                )
    return found


def _offset(op: Op) -> int:
    assert op.offset is not None  # only commits with an offset are compared
    return op.offset


def _explain_resets(
    found: list[Anomaly],
    ops: Sequence[Op],
    final: FinalState,
    traces: Sequence[Record],
) -> tuple[list[Anomaly], list[Anomaly]]:
    """``found`` split into what stays and the ``nonmonotonic_commit`` anomalies the
    traces explain, turned ``commit_after_reset`` (their ops: the larger commit, the
    first read after the reset, the smaller commit)."""
    if not traces or not any(a.kind == "nonmonotonic_commit" for a in found):
        return found, []
    evidence = ResetEvidence.of(ops, final, traces)
    by_index = {op.index: op for op in ops}
    kept, explained = [], []
    for anomaly in found:
        if anomaly.kind != "nonmonotonic_commit":
            kept.append(anomaly)
            continue
        highest, later = (by_index[i] for i in anomaly.ops)
        why = evidence.explain(highest, later)
        if why is None:
            kept.append(anomaly)
            continue
        detail, reread = why
        ops_ = (highest.index, reread.index, later.index)
        explained.append(Anomaly("commit_after_reset", *later.tp, ops_, detail))
    return kept, explained


def check(
    ops: Sequence[Op],
    final: FinalState,
    traces: Sequence[Record] = (),
    writers: Writers | None = None,
    transactions: TransactionalFinal | None = None,
    unread: Collection[TopicPartition] = (),
) -> Report:
    """Every anomaly of the history ``ops`` against the ``final`` state, by kind in
    :data:`ANOMALY_KINDS` order, each kind by partition; with the run's ``traces``
    (:func:`chaos.traces.kept_records`), the commits going back that a stale leader's
    reset explains are moved to ``explained``; with the ``writers`` of the final log's
    records (:func:`chaos.writers.read_writers`), so are the duplicates one producer
    wrote at distinct epochs; with ``transactions`` (the output topic and the transform
    group's offsets read back), the transactional rules. The partitions in ``unread``
    could not be read back: the rules that need a partition's final log (``lost``,
    ``dirty_read``) pass over them rather than take the missing log for an empty one."""
    seen = _observations(ops, final)
    known = [op for op in ops if op.tp not in unread] if unread else ops
    duplicates = _duplicates(ops, seen, writers)
    anomalies = [
        *_lost(known, final),
        *(a for a in duplicates if a.kind == "duplicate"),
        *_divergences(seen),
        *_reorders(ops, final),
        *_nonmonotonic_commits(ops),
        *_dirty_reads(known, final),
    ]
    if transactions is not None:
        anomalies += [
            Anomaly(kind, topic, partition, ops_, detail)
            for kind, topic, partition, ops_, detail in check_transactions(
                ops, final, transactions
            )
        ]
    kept, explained = _explain_resets(anomalies, ops, final, traces)
    explained += [a for a in duplicates if a.kind == "duplicate_new_epoch"]
    ok_sends = sum(1 for op in ops if op.kind == "send" and op.outcome == "ok")
    return Report(tuple(kept), len(ops), ok_sends, tuple(explained))
