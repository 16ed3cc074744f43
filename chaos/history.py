"""A chaos run's history: every operation a client invoked, and how it ended.

One operation per JSON line, in the order the harness recorded them. Each says who
(``process``: the worker that ran it, one thread, one client; ``client``: which library),
what (``kind``), where (``topic``, ``partition``), with what (``value``, ``offset``,
``records``), how it ended (``outcome``) and when (``invoke``, ``complete``: seconds on
the harness's clock, the same epoch clock the brokers' traces use).

``outcome`` is the one Jepsen histories give: ``ok`` (the broker said it happened),
``failed`` (it certainly did not happen: an error the client knows was not applied) or
``unknown`` (a timeout, a dropped connection: it may or may not have happened, and the
checker must allow both).

The kinds:

- ``send``: one record with a unique integer ``value`` produced to a partition;
  ``offset`` is the offset the acknowledgement gave (``ok`` only). ``acks`` is Kafka's
  ``acks`` (-1 for ``all``), ``idempotent`` whether ``enable.idempotence`` was on.
- ``poll``: what one consumer fetch returned for one partition: ``records`` is the list
  of ``(offset, value)`` it saw (a poll of several partitions is one line per partition).
- ``commit``: a consumer ``group`` committed ``offset`` (the next offset it will read)
  for a partition.
- ``create_topic``/``delete_topic``: ``topic`` created with ``partitions`` partitions, or
  deleted.
- ``txn``: one consume-transform-produce transaction (KIP-98, KIP-447) of a
  ``transactional_id``: ``inputs`` the ``(partition, offset, value)`` it read from
  ``source`` (read_committed, as a member of ``group``), ``outputs`` the ``(partition,
  value)`` it wrote to ``topic`` in their order (the i-th output transforms the i-th
  input: a new unique value), ``offsets`` the ``(partition, next offset)`` it sent to the
  transaction for ``group``. ``ok``: ``commit_transaction`` returned; ``failed``: it was
  aborted, or never asked to commit; ``unknown``: the commit raised (timed out, or the
  producer failed fatally during it), so it may have committed.

The final state is read back after the faults are healed: per partition, every
``(offset, value)`` from the log start to the end, as one JSON document
(:func:`parse_final_state`); with transactions, its ``transactions`` member
(:class:`TransactionalFinal`) holds the output topic read both ways and the group's
committed offsets.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Literal, TypeAlias, cast

import attrs

Kind: TypeAlias = Literal[
    "send", "poll", "commit", "create_topic", "delete_topic", "txn"
]
Outcome: TypeAlias = Literal["ok", "failed", "unknown"]
TopicPartition: TypeAlias = tuple[str, int]
Record: TypeAlias = tuple[int, int]
"""``(offset, value)``: one record as a read or the final state saw it."""

KINDS: tuple[Kind, ...] = (
    "send",
    "poll",
    "commit",
    "create_topic",
    "delete_topic",
    "txn",
)
OUTCOMES: tuple[Outcome, ...] = ("ok", "failed", "unknown")
ACKS_ALL = -1


@attrs.frozen
class Op:
    """One operation of the history, as invoked and as it completed."""

    index: int
    """The operation's place in the history: what an anomaly names it by."""
    process: int
    kind: Kind
    outcome: Outcome
    invoke: float
    complete: float
    client: str = ""
    topic: str = ""
    partition: int = -1
    value: int | None = None
    offset: int | None = None
    records: tuple[Record, ...] = ()
    group: str = ""
    acks: int = ACKS_ALL
    idempotent: bool = True
    partitions: int = 0
    error: str = ""
    """The client's error for a ``failed`` or ``unknown`` outcome, as it reported it."""
    transactional_id: str = ""
    source: str = ""
    inputs: tuple[tuple[int, int, int], ...] = ()
    """A ``txn``'s inputs: ``(partition, offset, value)`` read from ``source``."""
    outputs: tuple[tuple[int, int], ...] = ()
    """A ``txn``'s outputs: ``(partition, value)`` written to ``topic``, one per input."""
    offsets: tuple[tuple[int, int], ...] = ()
    """A ``txn``'s offsets for ``group``: ``(partition, next offset)`` of ``source``."""

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def __attrs_post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"op {self.index}: unknown kind {self.kind!r}")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"op {self.index}: unknown outcome {self.outcome!r}")
        if self.complete < self.invoke:
            raise ValueError(f"op {self.index}: completes before it is invoked")
        if self.kind == "send" and self.value is None:
            raise ValueError(f"op {self.index}: a send without a value")
        if self.kind in ("send", "poll", "commit") and self.partition < 0:
            raise ValueError(f"op {self.index}: a {self.kind} without a partition")
        if len(self.outputs) != len(self.inputs):
            raise ValueError(f"op {self.index}: one output per input")


def encode_op(op: Op) -> str:
    """One JSON line (no newline) for ``op``: its fields, defaults left out."""
    document: dict[str, object] = {
        "index": op.index,
        "process": op.process,
        "kind": op.kind,
        "outcome": op.outcome,
        "invoke": op.invoke,
        "complete": op.complete,
    }
    defaults = Op(0, 0, "create_topic", "ok", 0.0, 0.0)
    for field in attrs.fields(Op):
        name = field.name
        if name in document:
            continue
        value = getattr(op, name)
        if value != getattr(defaults, name):
            document[name] = [list(r) for r in value] if name in _TUPLES else value
    return json.dumps(document, separators=(",", ":"))


def decode_op(line: str) -> Op:
    """The :class:`Op` of one history line; ValueError if it is not one."""
    document = json.loads(line)
    if not isinstance(document, dict):
        raise ValueError(f"not a JSON object: {line!r}")
    names = {field.name for field in attrs.fields(Op)}
    unknown = set(document) - names
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}: {line!r}")
    for name, arity in _TUPLES.items():
        if name in document:
            document[name] = tuple(_ints(r, arity) for r in document[name])
    try:
        return Op(**document)
    except TypeError as exc:
        raise ValueError(f"not an operation: {line!r}: {exc}") from exc


_TUPLES = {"records": 2, "inputs": 3, "outputs": 2, "offsets": 2}
"""The fields holding tuples of integers (JSON lists of lists), each tuple's length."""


def _ints(raw: object, arity: int) -> tuple[int, ...]:
    if (
        not isinstance(raw, list)
        or len(raw) != arity
        or not all(isinstance(x, int) for x in raw)
    ):
        raise ValueError(f"expected {arity} integers, not {raw!r}")
    return tuple(raw)


def _record(raw: object) -> Record:
    if (
        not isinstance(raw, list)
        or len(raw) != 2
        or not all(isinstance(x, int) for x in raw)
    ):
        raise ValueError(f"a record is [offset, value], not {raw!r}")
    return (raw[0], raw[1])


def parse_history(lines: Iterable[str]) -> list[Op]:
    """The operations of a history's lines (blank lines skipped), each index checked to
    be its place, so an anomaly's op numbers point at the right lines."""
    ops = [decode_op(line) for line in lines if line.strip()]
    for place, op in enumerate(ops):
        if op.index != place:
            raise ValueError(f"line {place + 1} holds op {op.index}, expected {place}")
    return ops


def format_history(ops: Iterable[Op]) -> Iterator[str]:
    """The history's lines, each ending in a newline, ready to write."""
    for op in ops:
        yield encode_op(op) + "\n"


FinalState: TypeAlias = Mapping[TopicPartition, tuple[Record, ...]]
"""Per partition, the log read back after healing: ``(offset, value)`` in offset order."""


@attrs.frozen
class TransactionalFinal:
    """What a run with transactions reads back after healing: the output topic read
    with ``isolation.level=read_committed`` (``committed``) and ``read_uncommitted``
    (``uncommitted``), per partition its ``(offset, value)``; and the ``offsets`` the
    transform ``group`` has committed for the input topic's partitions (a partition
    without one is absent)."""

    group: str
    committed: FinalState
    uncommitted: FinalState
    offsets: Mapping[TopicPartition, int]


def _encode_partitions(state: FinalState) -> list[dict[str, object]]:
    return [
        {"topic": topic, "partition": partition, "records": [list(r) for r in records]}
        for (topic, partition), records in sorted(state.items())
    ]


def encode_final_state(
    state: FinalState, transactions: TransactionalFinal | None = None
) -> str:
    """The final state as one JSON document (with ``transactions``, its member of
    that name)."""
    document: dict[str, object] = {"partitions": _encode_partitions(state)}
    if transactions is not None:
        document["transactions"] = {
            "group": transactions.group,
            "read_committed": _encode_partitions(transactions.committed),
            "read_uncommitted": _encode_partitions(transactions.uncommitted),
            "offsets": [
                {"topic": topic, "partition": partition, "offset": offset}
                for (topic, partition), offset in sorted(transactions.offsets.items())
            ],
        }
    return json.dumps(document, separators=(",", ":"))


def parse_final_state(text: str) -> dict[TopicPartition, tuple[Record, ...]]:
    """The final state of :func:`encode_final_state`'s document; ValueError if a
    partition's offsets do not strictly increase (a read back that went wrong)."""
    document = json.loads(text)
    if not isinstance(document, dict) or not isinstance(
        document.get("partitions"), list
    ):
        raise ValueError("a final state is {'partitions': [...]}")
    return _partitions(document["partitions"])


def parse_transactional_final(text: str) -> TransactionalFinal | None:
    """The ``transactions`` member of a final state's document, or None if it has
    none (a run without transactions); ValueError if it is malformed."""
    document = json.loads(text)
    raw = document.get("transactions") if isinstance(document, dict) else None
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("group"), str):
        raise ValueError("transactions: {'group': ..., 'read_committed': [...], ...}")
    offsets: dict[TopicPartition, int] = {}
    for entry in raw.get("offsets", []):
        topic, partition, offset = (
            entry.get(k) for k in ("topic", "partition", "offset")
        )
        if not (
            isinstance(topic, str)
            and isinstance(partition, int)
            and isinstance(offset, int)
        ):
            raise ValueError(
                f"a committed offset is topic, partition, offset: {entry!r}"
            )
        offsets[(topic, partition)] = offset
    return TransactionalFinal(
        raw["group"],
        _partitions(raw.get("read_committed")),
        _partitions(raw.get("read_uncommitted")),
        offsets,
    )


def _partitions(raw_partitions: object) -> dict[TopicPartition, tuple[Record, ...]]:
    if not isinstance(raw_partitions, list):
        raise ValueError("partitions must be a list")
    state: dict[TopicPartition, tuple[Record, ...]] = {}
    for entry in cast(list[dict[str, object]], raw_partitions):
        topic, partition = entry.get("topic"), entry.get("partition")
        if not isinstance(topic, str) or not isinstance(partition, int):
            raise ValueError(f"a partition needs a topic and a number: {entry!r}")
        raw = entry.get("records")
        if not isinstance(raw, list):
            raise ValueError(f"{topic}-{partition}: records must be a list")
        records = tuple(_record(r) for r in raw)
        offsets = [offset for offset, _ in records]
        if any(b <= a for a, b in itertools.pairwise(offsets)):
            raise ValueError(f"{topic}-{partition}: offsets do not increase")
        state[(topic, partition)] = records
    return state
