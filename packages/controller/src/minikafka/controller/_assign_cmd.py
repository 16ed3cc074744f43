"""``python -m minikafka.controller assign``: run replica placement and draw it.

The table is seed 001 section 3's: brokers as columns, one block of rows per role (Leader,
Follower 1, ...), and inside a block one row per pass over the broker list (partitions
``0..n-1``, then ``n..2n-1``, ... for ``n`` brokers). In a rack-unaware layout each pass puts
exactly one partition of each role on each broker, so every cell holds one partition id; a
rack-aware or manual layout may put several in one cell, and shows them all.

``--replica-assignment`` checks a manual assignment instead (``kafka-topics.sh`` syntax) and
draws it the same way. ``--json`` prints only the assignment, as ``{"0": [1000, 1004, 1001]}``.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

import attrs

from ._placement import (
    Assignment,
    BrokerMetadata,
    PlacementError,
    assign_replicas_to_brokers,
    draw_start_index_and_shift,
    parse_replica_assignment,
    validate_manual_assignment,
)

_RANGE = re.compile(r"([0-9]+)-([0-9]+)")
_SINGLE = re.compile(r"[0-9]+")
# Options that only make sense when placement computes the assignment.
_COMPUTED_ONLY = (
    "partitions",
    "replication_factor",
    "start_index",
    "replica_shift",
    "seed",
)


@attrs.frozen
class AssignOptions:
    """The ``assign`` command's options, as given (``None``: not given)."""

    brokers: str | None = None
    partitions: int | None = None
    replication_factor: int | None = None
    start_index: int | None = None
    replica_shift: int | None = None
    seed: int | None = None
    racks: str | None = None
    replica_assignment: str | None = None
    json: bool = False


def run_assign(args: AssignOptions, out: TextIO) -> int:
    """Run ``assign`` with its options; output to ``out``, errors to stderr; exit status."""
    try:
        _assign(args, out)
    except PlacementError as error:
        print(
            f"error: {error.error_code.name.upper()}: {error.message}", file=sys.stderr
        )
        return 1
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _assign(args: AssignOptions, out: TextIO) -> None:
    brokers = None if args.brokers is None else _parse_broker_ids(args.brokers)
    racks = None if args.racks is None else _parse_racks(args.racks, brokers)
    drawn_note = None
    if args.replica_assignment is not None:
        assignment, columns = _check_manual(args, args.replica_assignment, brokers)
        summary = f"Manual assignment of {len(assignment)} partition(s): valid"
    else:
        if (
            brokers is None
            or args.partitions is None
            or args.replication_factor is None
        ):
            raise ValueError(
                "--brokers, --partitions and --replication-factor are required "
                "(unless --replica-assignment is given)"
            )
        assignment, summary, drawn_note = _compute(
            args, brokers, args.partitions, args.replication_factor, racks
        )
        columns = brokers
    if args.json:
        # stdout stays pure JSON; the values needed to reproduce the run go to stderr.
        if drawn_note is not None:
            print(drawn_note, file=sys.stderr)
        print(
            json.dumps({str(p): list(assignment[p]) for p in sorted(assignment)}),
            file=out,
        )
        return
    print(summary, file=out)
    if drawn_note is not None:
        print(drawn_note, file=out)
    print(file=out)
    print(render_assignment_table(assignment, sorted(columns), racks=racks), file=out)


def _check_manual(
    args: AssignOptions, text: str, brokers: list[int] | None
) -> tuple[Assignment, list[int]]:
    """The parsed and validated ``--replica-assignment``, and the brokers to draw it over."""
    given = [
        f"--{name.replace('_', '-')}"
        for name in _COMPUTED_ONLY
        if getattr(args, name) is not None
    ]
    if given:
        raise ValueError(
            f"--replica-assignment cannot be combined with {', '.join(given)}"
        )
    assignment = parse_replica_assignment(text)
    # Without --brokers, every broker the assignment names counts as registered.
    columns = brokers or sorted(
        {b for replicas in assignment.values() for b in replicas}
    )
    validate_manual_assignment(assignment, columns)
    return assignment, columns


def _compute(
    args: AssignOptions,
    brokers: list[int],
    partitions: int,
    replication_factor: int,
    racks: Mapping[int, str] | None,
) -> tuple[Assignment, str, str | None]:
    """The computed assignment, what produced it, and which values were drawn at random."""
    rng = random.Random() if args.seed is None else random.Random(args.seed)
    start_index, replica_shift = draw_start_index_and_shift(
        len(brokers), args.start_index, args.replica_shift, rng
    )
    metadata = [BrokerMetadata(b, None if racks is None else racks[b]) for b in brokers]
    assignment = assign_replicas_to_brokers(
        partitions,
        replication_factor,
        metadata,
        start_index=start_index,
        replica_shift=replica_shift,
    )
    kind = "rack-unaware" if racks is None else "rack-aware"
    summary = (
        f"{partitions} partition(s) x {replication_factor} replica(s) over "
        f"{len(brokers)} broker(s), {kind}: start index {start_index}, "
        f"replica shift {replica_shift}"
    )
    drawn = [
        f"--{name} {value}"
        for name, value, given in (
            ("start-index", start_index, args.start_index),
            ("replica-shift", replica_shift, args.replica_shift),
        )
        if given is None
    ]
    if not drawn:
        return assignment, summary, None
    return (
        assignment,
        summary,
        f"Drawn at random: {' '.join(drawn)} (pass them to reproduce this)",
    )


def _parse_broker_ids(text: str) -> list[int]:
    """``1000-1002,1005`` -> ``[1000, 1001, 1002, 1005]``."""
    ids: list[int] = []
    for token in (t.strip() for t in text.split(",")):
        if span := _RANGE.fullmatch(token):
            low, high = int(span[1]), int(span[2])
            if low > high:
                raise ValueError(f"--brokers: range {token!r} runs backwards")
            ids.extend(range(low, high + 1))
        elif _SINGLE.fullmatch(token):
            ids.append(int(token))
        else:
            raise ValueError(
                f"--brokers: {token!r} is not a broker id or a range like 1000-1004"
            )
    repeated = sorted({b for b in ids if ids.count(b) > 1})
    if repeated:
        raise ValueError(f"--brokers lists broker {repeated[0]} more than once")
    return ids


def _parse_racks(text: str, brokers: Sequence[int] | None) -> dict[int, str]:
    if brokers is None:
        raise ValueError(
            "--racks needs --brokers: racks are given in the brokers' order"
        )
    names = [name.strip() for name in text.split(",")]
    if "" in names:
        raise ValueError(f"--racks: empty rack name in {text!r}")
    if len(names) != len(brokers):
        raise ValueError(
            f"--racks names {len(names)} rack(s) for {len(brokers)} broker(s)"
        )
    return dict(zip(brokers, names, strict=True))


def render_assignment_table(
    assignment: Mapping[int, Sequence[int]],
    brokers: Sequence[int],
    *,
    racks: Mapping[int, str] | None = None,
) -> str:
    """Seed 001's table: brokers across, a block per role, a row per pass over the brokers."""
    if not brokers:
        raise ValueError("no brokers to draw the assignment over")
    column = {broker: i for i, broker in enumerate(brokers)}
    n_roles = max((len(replicas) for replicas in assignment.values()), default=0)
    # Passes are counted from partition 0; a pass no partition falls in has no rows.
    passes = sorted({partition_id // len(brokers) for partition_id in assignment})
    cells: dict[tuple[int, int], list[list[str]]] = {
        (role, p): [[] for _ in brokers] for role in range(n_roles) for p in passes
    }
    for partition_id in sorted(assignment):
        for role, broker in enumerate(assignment[partition_id]):
            if broker not in column:
                raise ValueError(
                    f"partition {partition_id} has a replica on broker {broker}, not a column"
                )
            cells[role, partition_id // len(brokers)][column[broker]].append(
                str(partition_id)
            )
    rows = [("Broker", [str(broker) for broker in brokers])]
    if racks is not None:
        rows.append(("Rack", [racks[broker] for broker in brokers]))
    for role in range(n_roles):
        label = "Leader" if role == 0 else f"Follower {role}"
        for i, p in enumerate(passes):
            rows.append(
                (label if i == 0 else "", [",".join(c) for c in cells[role, p]])
            )
    return _format_rows(rows)


def _format_rows(rows: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Fixed-width text: labels left-aligned, cells right-aligned, trailing blanks dropped."""
    label_width = max(len(label) for label, _ in rows) + 1
    widths = [max(len(cells[i]) for _, cells in rows) for i in range(len(rows[0][1]))]
    lines = [
        label.ljust(label_width)
        + "".join(f"  {c:>{w}}" for c, w in zip(cells, widths, strict=True))
        for label, cells in rows
    ]
    return "\n".join(line.rstrip() for line in lines)
