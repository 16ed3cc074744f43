"""Replica placement (seed 001 section 3, Kafka's AdminUtils) and the ``assign`` command.

The golden tests reproduce the seed's worked tables and the examples in AdminUtils' own
documentation; the properties check what the layouts are for (distinct replicas, balanced
leaders and followers, racks covered); the rest checks Kafka's validation rules and the
command's output. Hypothesis runs derandomized, so every run tests the same examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from minikafka.controller.__main__ import main
from minikafka.controller._assign_cmd import render_assignment_table
from minikafka.controller._placement import (
    Assignment,
    BrokerMetadata,
    PlacementError,
    assign_replicas_to_brokers,
    assign_replicas_to_brokers_rack_aware,
    draw_start_index_and_shift,
    parse_replica_assignment,
    rack_alternated_broker_list,
    replica_index,
    validate_manual_assignment,
)

SEED_BROKERS = [1000, 1001, 1002, 1003, 1004]
DETERMINISTIC = settings(derandomize=True, max_examples=300, deadline=None)

# Seed 001's third table: start index 0, and a follower shift that puts partition 1's first
# follower on 1000 (replica shift 3).
SEED_TABLE = """\
Broker       1000  1001  1002  1003  1004
Leader          0     1     2     3     4
                5     6     7     8     9
Follower 1      1     2     3     4     0
                9     5     6     7     8
Follower 2      4     0     1     2     3
                8     9     5     6     7"""

SEED_ASSIGNMENT: Assignment = {
    0: (1000, 1004, 1001),
    1: (1001, 1000, 1002),
    2: (1002, 1001, 1003),
    3: (1003, 1002, 1004),
    4: (1004, 1003, 1000),
    5: (1000, 1001, 1002),
    6: (1001, 1002, 1003),
    7: (1002, 1003, 1004),
    8: (1003, 1004, 1000),
    9: (1004, 1000, 1001),
}


def _brokers(ids: list[int], racks: list[str] | None = None) -> list[BrokerMetadata]:
    if racks is None:
        return [BrokerMetadata(i) for i in ids]
    return [BrokerMetadata(i, r) for i, r in zip(ids, racks, strict=True)]


def _seed_layout(start_index: int, replica_shift: int) -> Assignment:
    return assign_replicas_to_brokers(
        10,
        3,
        _brokers(SEED_BROKERS),
        start_index=start_index,
        replica_shift=replica_shift,
    )


def _rows(table: str, label: str) -> list[list[str]]:
    """The cells of a role's rows: the labelled row, then the unlabelled rows under it."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(label))
    rows = [lines[start][len(label) :].split()]
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        rows.append(line.split())
    return rows


def _assign_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["assign", *argv])
    return status, out.getvalue()


# --- the seed's worked tables ------------------------------------------------------------


def test_seed_third_table_is_reproduced_exactly() -> None:
    table = render_assignment_table(
        _seed_layout(start_index=0, replica_shift=3), SEED_BROKERS
    )
    assert table == SEED_TABLE


def test_seed_assignment_is_exact() -> None:
    assert _seed_layout(start_index=0, replica_shift=3) == SEED_ASSIGNMENT


def test_seed_commentary_holds() -> None:
    layout = _seed_layout(start_index=0, replica_shift=3)
    # "Partition 1: leader on 1001, followers on 1000 and 1002" (1001 is skipped: it leads).
    assert layout[1] == (1001, 1000, 1002)
    # "Partition 3: followers start from 1002, so 1002 and 1004."
    assert layout[3][1:] == (1002, 1004)
    # "Partition 7: from partition 5 on the shift grew by one, so 1003 and 1004."
    assert layout[7][1:] == (1003, 1004)


@pytest.mark.parametrize(
    ("start_index", "first_round", "second_round"),
    [
        (0, ["0", "1", "2", "3", "4"], ["5", "6", "7", "8", "9"]),
        # The seed's second table: partition 0's leader drawn on 1002.
        (2, ["3", "4", "0", "1", "2"], ["8", "9", "5", "6", "7"]),
    ],
)
def test_leader_rows_follow_the_start_index(
    start_index: int, first_round: list[str], second_round: list[str]
) -> None:
    table = render_assignment_table(
        _seed_layout(start_index, replica_shift=0), SEED_BROKERS
    )
    assert _rows(table, "Leader") == [first_round, second_round]


def test_kafka_documented_rack_unaware_example() -> None:
    # AdminUtils' own example: five brokers, fixed start index 0 (which Kafka also uses as the
    # shift), ten partitions, three replicas.
    layout = assign_replicas_to_brokers(
        10, 3, _brokers([0, 1, 2, 3, 4]), start_index=0, replica_shift=0
    )
    table = render_assignment_table(layout, [0, 1, 2, 3, 4])
    assert _rows(table, "Follower 1") == [list("40123"), list("89567")]
    assert _rows(table, "Follower 2") == [list("34012"), list("78956")]


def test_start_partition_id_numbers_new_partitions_from_there() -> None:
    # Adding partitions 10..12 to the seed's topic: the walk goes on from partition 10.
    added = assign_replicas_to_brokers(
        3,
        3,
        _brokers(SEED_BROKERS),
        start_index=0,
        replica_shift=3,
        start_partition_id=10,
    )
    assert sorted(added) == [10, 11, 12]
    assert [replicas[0] for replicas in added.values()] == [1000, 1001, 1002]
    # The shift only grows at the pass boundaries the walk itself crosses: once here (3 to 4),
    # where a topic created with 13 partitions would have grown it twice by partition 10.
    assert added[10] == (1000, 1001, 1002)
    created = assign_replicas_to_brokers(
        13, 3, _brokers(SEED_BROKERS), start_index=0, replica_shift=3
    )
    assert created[10] == (1000, 1002, 1003)


def test_start_partition_id_within_the_first_pass_continues_the_full_layout() -> None:
    added = assign_replicas_to_brokers(
        7,
        3,
        _brokers(SEED_BROKERS),
        start_index=0,
        replica_shift=3,
        start_partition_id=3,
    )
    assert added == {p: SEED_ASSIGNMENT[p] for p in range(3, 10)}


# --- rack awareness ----------------------------------------------------------------------

DOC_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_alternated_broker_list_documented_example() -> None:
    assert rack_alternated_broker_list(DOC_RACKS) == [0, 3, 1, 5, 4, 2]


def test_rack_alternated_broker_list_three_even_racks() -> None:
    racks = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_rack_alternated_broker_list_skips_racks_that_ran_out() -> None:
    assert rack_alternated_broker_list({5: "b", 1: "a", 2: "a", 3: "a"}) == [1, 5, 2, 3]
    assert rack_alternated_broker_list({}) == []


def test_rack_aware_documented_example() -> None:
    layout = assign_replicas_to_brokers_rack_aware(
        7, 3, DOC_RACKS, start_index=0, replica_shift=0
    )
    assert layout == {
        0: (0, 3, 1),
        1: (3, 1, 5),
        2: (1, 5, 4),
        3: (5, 4, 2),
        4: (4, 2, 0),
        5: (2, 0, 3),
        # The second pass shifts the followers instead of repeating partition 0's 0,3,1.
        6: (0, 4, 2),
    }


def test_entry_point_goes_rack_aware_when_every_broker_has_a_rack() -> None:
    brokers = [BrokerMetadata(b, rack) for b, rack in DOC_RACKS.items()]
    layout = assign_replicas_to_brokers(7, 3, brokers, start_index=0, replica_shift=0)
    assert layout[6] == (0, 4, 2)


# --- the random start --------------------------------------------------------------------


def test_same_seed_gives_the_same_assignment() -> None:
    brokers = _brokers(list(range(1000, 1007)))
    first = assign_replicas_to_brokers(20, 3, brokers, rng=random.Random(42))
    again = assign_replicas_to_brokers(20, 3, brokers, rng=random.Random(42))
    assert first == again


def test_drawn_values_reproduce_the_assignment() -> None:
    brokers = _brokers(list(range(1000, 1007)))
    start, shift = draw_start_index_and_shift(7, None, None, random.Random(42))
    drawn = assign_replicas_to_brokers(20, 3, brokers, rng=random.Random(42))
    given = assign_replicas_to_brokers(
        20, 3, brokers, start_index=start, replica_shift=shift
    )
    assert drawn == given


def test_only_missing_values_are_drawn_start_index_first() -> None:
    expected = random.Random(9)
    start, shift = expected.randrange(5), expected.randrange(5)
    assert draw_start_index_and_shift(5, None, None, random.Random(9)) == (start, shift)
    assert draw_start_index_and_shift(5, 4, None, random.Random(9)) == (4, start)
    assert draw_start_index_and_shift(5, None, 4, random.Random(9)) == (start, 4)
    assert draw_start_index_and_shift(5, 1, 2, random.Random(9)) == (1, 2)


@pytest.mark.parametrize(
    ("start_index", "replica_shift"), [(5, 0), (-1, 0), (0, 5), (0, -1)]
)
def test_start_index_and_shift_must_be_broker_list_positions(
    start_index: int, replica_shift: int
) -> None:
    with pytest.raises(ValueError, match=r"out of range: it must be in \[0, 5\)"):
        _seed_layout(start_index, replica_shift)


# --- properties --------------------------------------------------------------------------


Layout = tuple[list[BrokerMetadata], int, Assignment]
"""The brokers, the replication factor, and the assignment placed on them."""


@st.composite
def _layouts(draw: st.DrawFn, *, racks: bool) -> Layout:
    n = draw(st.integers(1, 12))
    ids = sorted(draw(st.sets(st.integers(0, 2000), min_size=n, max_size=n)))
    rack_names = (
        draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
        if racks
        else None
    )
    brokers = _brokers(ids, rack_names)
    replication_factor = draw(st.integers(1, n))
    n_partitions = draw(st.integers(1, 60))
    start_index = draw(st.integers(0, n - 1))
    replica_shift = draw(st.integers(0, n - 1))
    layout = assign_replicas_to_brokers(
        n_partitions,
        replication_factor,
        brokers,
        start_index=start_index,
        replica_shift=replica_shift,
    )
    return brokers, replication_factor, layout


def _spread_within_one(counts: Counter[int], brokers: list[BrokerMetadata]) -> bool:
    per_broker = [counts[b.id] for b in brokers]
    return max(per_broker) - min(per_broker) <= 1


@DETERMINISTIC
@given(_layouts(racks=False))
def test_every_partition_has_rf_distinct_replicas(case: Layout) -> None:
    brokers, replication_factor, layout = case
    ids = {b.id for b in brokers}
    for replicas in layout.values():
        assert len(replicas) == replication_factor
        assert len(set(replicas)) == replication_factor
        assert set(replicas) <= ids


@pytest.mark.parametrize("racks", [False, True], ids=["rack_unaware", "rack_aware"])
@DETERMINISTIC
@given(data=st.data())
def test_leaders_are_balanced(racks: bool, data: st.DataObject) -> None:
    brokers, _, layout = data.draw(_layouts(racks=racks))
    assert _spread_within_one(Counter(r[0] for r in layout.values()), brokers)


@DETERMINISTIC
@given(_layouts(racks=False))
def test_rack_unaware_followers_balanced_over_whole_passes(case: Layout) -> None:
    brokers, replication_factor, layout = case
    whole = len(layout) - len(layout) % len(brokers)
    full_passes = {p: r for p, r in layout.items() if p < whole}
    # Each pass puts every role on every broker exactly once.
    for role in range(replication_factor):
        counts = Counter(r[role] for r in full_passes.values())
        assert {counts[b.id] for b in brokers} <= {whole // len(brokers)}


@DETERMINISTIC
@given(_layouts(racks=True))
def test_rack_aware_partitions_span_as_many_racks_as_they_can(case: Layout) -> None:
    brokers, replication_factor, layout = case
    rack_of = {b.id: b.rack for b in brokers}
    n_racks = len(set(rack_of.values()))
    for replicas in layout.values():
        assert len(set(replicas)) == replication_factor
        assert len({rack_of[b] for b in replicas}) == min(replication_factor, n_racks)


@DETERMINISTIC
@given(st.data())
def test_replica_index_never_lands_on_the_leader(data: st.DataObject) -> None:
    n = data.draw(st.integers(2, 50))
    first = data.draw(st.integers(0, n - 1))
    shift = data.draw(st.integers(0, 10 * n))
    j = data.draw(st.integers(0, n - 2))
    index = replica_index(first, shift, j, n)
    assert 0 <= index < n
    assert index != first


@DETERMINISTIC
@given(st.integers(2, 30), st.integers(0, 100))
def test_followers_of_one_partition_are_distinct(n: int, shift: int) -> None:
    followers = [replica_index(0, shift, j, n) for j in range(n - 1)]
    assert sorted(followers) == list(range(1, n))


# --- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_partitions", "replication_factor", "brokers", "code", "message"),
    [
        (
            0,
            1,
            _brokers([1]),
            ErrorCode.invalid_partitions,
            "partitions must be larger than 0",
        ),
        (-3, 1, _brokers([1]), ErrorCode.invalid_partitions, "partitions"),
        (1, 0, _brokers([1]), ErrorCode.invalid_replication_factor, "larger than 0"),
        (
            1,
            3,
            _brokers([1, 2]),
            ErrorCode.invalid_replication_factor,
            "Replication factor: 3 larger than available brokers: 2.",
        ),
        (
            1,
            1,
            [BrokerMetadata(1, "a"), BrokerMetadata(2)],
            ErrorCode.invalid_replica_assignment,
            "Not all brokers have rack information",
        ),
        (
            1,
            1,
            _brokers([1, 2, 1]),
            ErrorCode.invalid_replica_assignment,
            "Broker 1 appears more than once",
        ),
    ],
)
def test_assign_refuses_bad_requests(
    n_partitions: int,
    replication_factor: int,
    brokers: list[BrokerMetadata],
    code: ErrorCode,
    message: str,
) -> None:
    with pytest.raises(PlacementError, match=message) as caught:
        assign_replicas_to_brokers(n_partitions, replication_factor, brokers)
    assert caught.value.error_code is code


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ({0: (1000, 1001), 1: (1001, 1007)}, "broker 1007 .* not a registered broker"),
        ({0: (1000, 1001, 1000)}, "broker 1000 in partition 0's replica list twice"),
        (
            {0: (1000, 1001, 1002), 1: (1001, 1002)},
            "partition 1 2 replica.*before it have 3",
        ),
        ({0: (1000,), 1: ()}, "partition 1 no replicas"),
        ({0: (1000,), 2: (1001,)}, r"run 0\.\.1 without gaps, but they are \[0, 2\]"),
        ({1: (1000,)}, "without gaps"),
        ({}, "no partitions"),
    ],
)
def test_manual_assignment_refusals(
    assignment: dict[int, tuple[int, ...]], message: str
) -> None:
    with pytest.raises(PlacementError, match=message) as caught:
        validate_manual_assignment(assignment, SEED_BROKERS)
    assert caught.value.error_code is ErrorCode.invalid_replica_assignment


def test_manual_assignment_accepted() -> None:
    validate_manual_assignment({0: [1000, 1001], 1: [1001, 1002]}, SEED_BROKERS)
    validate_manual_assignment(SEED_ASSIGNMENT, SEED_BROKERS)


def test_parse_replica_assignment_seed_example() -> None:
    # Seed 001 section 3.3: five partitions, one replica each, all on broker 1000.
    assert parse_replica_assignment("1000,1000,1000,1000,1000") == dict.fromkeys(
        range(5), (1000,)
    )


def test_parse_replica_assignment_colons_separate_replicas() -> None:
    assert parse_replica_assignment("1000:1001, 1001 :1002") == {
        0: (1000, 1001),
        1: (1001, 1002),
    }


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("", "''"),
        ("1000,x", "'x'"),
        ("1000:,1001", "''"),
        ("1000,1001;1002", "'1001;1002'"),
    ],
)
def test_parse_replica_assignment_names_the_bad_token(text: str, bad: str) -> None:
    with pytest.raises(ValueError, match=f"{bad} is not a broker id"):
        parse_replica_assignment(text)


# --- the table ---------------------------------------------------------------------------


def test_table_shows_every_partition_sharing_a_cell() -> None:
    layout = parse_replica_assignment("1000,1000,1000,1000,1000")
    table = render_assignment_table(layout, [1000, 1001, 1002])
    assert table == "Broker    1000  1001  1002\nLeader   0,1,2\n           3,4"


def test_table_skips_passes_without_partitions() -> None:
    table = render_assignment_table({10: (2, 1)}, [1, 2])
    # Only partition 10 exists: one pass (partitions 10..11 for two brokers), not six.
    assert table.splitlines() == [
        "Broker        1   2",
        "Leader           10",
        "Follower 1   10",
    ]


def test_table_refuses_a_replica_outside_the_columns() -> None:
    with pytest.raises(ValueError, match="broker 9"):
        render_assignment_table({0: (9,)}, [1, 2])


# --- the command -------------------------------------------------------------------------

SEED_ARGS = (
    "--brokers",
    "1000-1004",
    "--partitions",
    "10",
    "--replication-factor",
    "3",
)


def test_cli_prints_the_seed_table() -> None:
    status, out = _assign_cli(*SEED_ARGS, "--start-index", "0", "--replica-shift", "3")
    assert status == 0
    assert SEED_TABLE in out
    assert "Drawn at random" not in out


def test_cli_json_is_the_assignment_and_nothing_else() -> None:
    status, out = _assign_cli(
        *SEED_ARGS, "--start-index", "0", "--replica-shift", "3", "--json"
    )
    assert status == 0
    assert out.startswith('{"0": [1000, 1004, 1001], "1": [1001, 1000, 1002],')
    assert json.loads(out) == {str(p): list(r) for p, r in SEED_ASSIGNMENT.items()}


def test_cli_reports_drawn_values_and_they_reproduce_the_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out = _assign_cli(*SEED_ARGS, "--seed", "7")
    assert status == 0
    start, shift = draw_start_index_and_shift(5, None, None, random.Random(7))
    assert f"Drawn at random: --start-index {start} --replica-shift {shift}" in out
    _, rerun = _assign_cli(
        *SEED_ARGS, "--start-index", str(start), "--replica-shift", str(shift)
    )
    assert out.split("\n\n")[1] == rerun.split("\n\n")[1]
    # With --json the note goes to stderr, so stdout still parses.
    status, out = _assign_cli(*SEED_ARGS, "--seed", "7", "--start-index", "1", "--json")
    assert status == 0
    assert json.loads(out)["0"][0] == 1001
    assert "Drawn at random: --replica-shift" in capsys.readouterr().err


def test_cli_rack_aware_adds_a_rack_line() -> None:
    status, out = _assign_cli(
        "--brokers",
        "0-5",
        "--racks",
        "rack1,rack3,rack3,rack2,rack2,rack1",
        "--partitions",
        "7",
        "--replication-factor",
        "3",
        "--start-index",
        "0",
        "--replica-shift",
        "0",
    )
    assert status == 0
    assert "rack-aware" in out
    lines = out.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("Broker")))
    assert lines[header + 1].split() == [
        "Rack",
        "rack1",
        "rack3",
        "rack3",
        "rack2",
        "rack2",
        "rack1",
    ]


def test_cli_checks_a_manual_assignment() -> None:
    status, out = _assign_cli(
        "--brokers", "1000-1002", "--replica-assignment", "1000:1001,1001:1002"
    )
    assert status == 0
    assert "valid" in out
    assert "Leader          0     1" in out


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            (
                "--brokers",
                "1000,1001",
                "--partitions",
                "3",
                "--replication-factor",
                "3",
            ),
            "error: INVALID_REPLICATION_FACTOR: Replication factor: 3 larger than available "
            "brokers: 2.",
        ),
        (
            ("--brokers", "1000-1001", "--replica-assignment", "1000:1007"),
            "error: INVALID_REPLICA_ASSIGNMENT: The manual assignment uses broker 1007",
        ),
        (
            ("--brokers", "1000-1001", "--replica-assignment", "1000:x"),
            "error: bad replica assignment for partition 0",
        ),
        (
            ("--brokers", "10x", "--partitions", "1", "--replication-factor", "1"),
            "'10x'",
        ),
        (
            ("--brokers", "5-3", "--partitions", "1", "--replication-factor", "1"),
            "backwards",
        ),
        (
            ("--brokers", "1,1", "--partitions", "1", "--replication-factor", "1"),
            "more than once",
        ),
        ((*SEED_ARGS, "--start-index", "5"), "error: start index 5 is out of range"),
        ((*SEED_ARGS, "--racks", "a,b"), "2 rack(s) for 5 broker(s)"),
        (("--partitions", "3", "--replication-factor", "1"), "--brokers, --partitions"),
        (
            ("--replica-assignment", "1", "--partitions", "1"),
            "cannot be combined with --partitions",
        ),
    ],
)
def test_cli_errors_go_to_stderr_with_status_1(
    argv: tuple[str, ...], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = _assign_cli(*argv)
    assert status == 1
    assert out == ""
    assert error in capsys.readouterr().err
