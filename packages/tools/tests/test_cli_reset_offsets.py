"""``minikafka groups --reset-offsets`` and ``--delete-offsets``: their arguments and
printed formats (Kafka's ConsumerGroupCommand's), and the commands against a real single
broker, with groups made by the admin client's commits and a live kafka-python member.

The command calls ``trio.run`` itself, so it runs through typer's CliRunner in a worker
thread while the broker runs in this test's trio loop.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from kafka import KafkaConsumer
from kio.schema.errors import ErrorCode
from typer.testing import CliRunner

from minikafka.broker.testing import bootstrap, single_node_config, tool_cluster
from minikafka.client import AsyncAdminClient, KafkaError, NewTopic, OffsetAndMetadata
from minikafka.common import TopicPartition
from minikafka.common.testing import GROUP_POLL_MS
from minikafka.tools._cli import app
from minikafka.tools._connection import ToolError
from minikafka.tools._produce import ProduceOptions, produce
from minikafka.tools._reset_offsets import (
    delete_offsets_report,
    parse_datetime,
    parse_duration,
    parse_topic_arg,
    reset_table,
)

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow
JOIN_WAIT = 30.0
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
}
HEADER = ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]


# --- arguments and formats ---------------------------------------------------------------


def test_topic_args_are_a_topic_or_its_listed_partitions_in_kafkas_words() -> None:
    assert parse_topic_arg("orders") == ("orders", None)
    assert parse_topic_arg("orders:0,2") == ("orders", (0, 2))
    with pytest.raises(ToolError, match="Invalid topic arg 'a:1:2', expected topic"):
        parse_topic_arg("a:1:2")
    with pytest.raises(ToolError, match="Invalid partition 'x' specified in topic arg"):
        parse_topic_arg("orders:0,x")


def test_datetimes_are_utc_unless_zoned_and_parsed_strictly() -> None:
    # Guarantee: Kafka's Utils.getDateTime: no zone is UTC, Z and offsets are honoured,
    # milliseconds kept; anything else (no millis, Feb 30) is refused.
    assert parse_datetime("1970-01-01T00:00:01.250") == 1250
    assert parse_datetime("1970-01-01T01:00:00.000+01:00") == 0
    assert parse_datetime("1970-01-01T00:00:00.000-0130") == 5_400_000
    assert parse_datetime("2024-03-01T12:00:00.000Z") == 1_709_294_400_000
    for bad in ("2024-03-01T12:00:00", "2024-02-30T00:00:00.000", "yesterday"):
        with pytest.raises(ToolError, match="Unparseable date"):
            parse_datetime(bad)


def test_durations_are_javas_iso_8601_days_to_seconds() -> None:
    assert parse_duration("PT1M") == 60_000
    assert parse_duration("P1DT2H3M4.5S") == 93_784_500
    assert parse_duration("pt-0.5s") == -500
    assert parse_duration("-PT10S") == -10_000
    for bad in ("P", "PT", "1H", "P1H", "P1DT"):
        with pytest.raises(ToolError, match="cannot be parsed to a Duration"):
            parse_duration(bad)


def test_the_reset_table_is_kafkas_fixed_width_plan_sorted() -> None:
    # Guarantee: a blank line, the header in %-30s %-30s %-10s %-15s columns, one row
    # a partition sorted by group, topic, partition, and a final newline; a refused
    # group (an empty plan) still gets the header, no plan at all only the newline.
    plan = {
        "g": {TopicPartition("t", 1): 5, TopicPartition("t", 0): 0},
        "a": {},
    }
    text = reset_table(plan)
    assert text == (
        "\n" + f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} NEW-OFFSET"
        "\n" + f"{'g':<30} {'t':<30} {'0':<10} 0"
        "\n" + f"{'g':<30} {'t':<30} {'1':<10} 5" + "\n"
    )
    assert reset_table({}) == "\n"


def test_the_delete_offsets_report_says_the_outcome_then_a_row_a_partition() -> None:
    ok = delete_offsets_report(
        "g", ["t"], ErrorCode.none, {TopicPartition("t", 0): None}
    )
    assert ok.splitlines() == [
        "Request succeed for deleting offsets with topic t group g",
        "",
        f"{'TOPIC':<30} {'PARTITION':<15} STATUS",
        f"{'t':<30} {'0':<15} Successful",
    ]
    missing = KafkaError(ErrorCode.group_id_not_found)
    lines = delete_offsets_report(
        "g",
        ["t", "x"],
        ErrorCode.group_id_not_found,
        {
            TopicPartition("t", 0): missing,
            TopicPartition("x", -1): KafkaError(ErrorCode.unknown_topic_or_partition),
        },
    ).splitlines()
    assert lines[:3] == ["", "Error: 'g' does not exist.", ""]
    assert lines[4:] == [
        f"{'t':<30} {'0':<15} Error: :GROUP_ID_NOT_FOUND",
        f"{'x':<30} {'Not Provided':<15} Error: :UNKNOWN_TOPIC_OR_PARTITION",
    ]


def test_reset_and_delete_offsets_arguments_are_checked_before_connecting() -> None:
    runner = CliRunner()
    reset = ("--reset-offsets", "--group", "g")
    cases = {
        (*reset, "--to-earliest"): "One of the reset scopes should be defined",
        (*reset, "--topic", "t"): "requires one of the following scenarios",
        (*reset, "--topic", "t", "--to-earliest", "--to-latest"): "can't be used with",
        (*reset, "--all-topics", "--to-earliest", "--dry-run", "--execute"): (
            "only accepts one of --execute and --dry-run"
        ),
        (*reset, "--all-topics", "--to-datetime", "2024-01-01"): "Unparseable date",
        (*reset, "--all-topics", "--by-duration", "1H"): "parsed to a Duration",
        (*reset, "--topic", "t:x", "--to-latest"): "Invalid partition 'x'",
        ("--reset-offsets", "--topic", "t", "--to-latest"): "needs --group",
        ("--delete-offsets", "--group", "g"): "--delete-offsets takes",
        ("--delete-offsets", "--topic", "t"): "--delete-offsets takes",
        ("--describe", "--group", "g", "--to-earliest"): "are for --reset-offsets",
        ("--describe", "--group", "g", "--topic", "t"): "--topic is for",
        ("--delete", "--group", "g", "--topic", "t"): (
            "does not support topic-specific offset deletion"
        ),
        ("--list", "--reset-offsets"): "give exactly one of",
    }
    for args, message in cases.items():
        result = runner.invoke(
            app,
            ["groups", "--bootstrap-server", "127.0.0.1:1", *args],
            env={"COLUMNS": "300"},
        )
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)


# --- against a broker ---------------------------------------------------------------------


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[AsyncAdminClient]:
    async with tool_cluster(
        single_node_config(tmp_path / "data", OVERRIDES)
    ) as cluster:
        with trio.fail_after(DEADLINE):
            created = await cluster.create_topics([NewTopic("orders", 2, 1)])
            assert created == {"orders": None}
            for partition, count in ((0, 5), (1, 3)):
                await fill(cluster, partition, count)
        yield cluster


async def fill(cluster: AsyncAdminClient, partition: int, count: int) -> None:
    async def records() -> AsyncIterator[bytes]:
        for i in range(count):
            yield b"r%d" % i

    options = ProduceOptions("orders", partition=partition)
    assert (await produce(bootstrap(cluster), options, records(), print)).sent == count


def invoke(cluster: AsyncAdminClient, *args: str) -> Callable[[], tuple[int, str, str]]:
    def run() -> tuple[int, str, str]:
        result = CliRunner().invoke(
            app,
            ["groups", "--bootstrap-server", bootstrap(cluster), *args],
            env={"COLUMNS": "200"},
        )
        return result.exit_code, result.stdout, result.stderr

    return run


def plan_of(stdout: str) -> dict[tuple[str, str, int], int]:
    lines = [line.split() for line in stdout.splitlines() if line.strip()]
    start = lines.index(HEADER)
    return {(g, t, int(p)): int(o) for g, t, p, o in lines[start + 1 :]}


async def committed(cluster: AsyncAdminClient, group: str) -> dict[int, int]:
    answer = (await cluster.list_consumer_group_offsets([group]))[group]
    assert not isinstance(answer, KafkaError), answer
    return {tp.partition: o.offset for tp, o in answer.items()}


async def test_a_dry_run_changes_nothing_and_execute_commits_the_plan(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: the default (no --execute) warns on stderr as Kafka does and commits
    # nothing; --execute commits exactly the printed plan; --to-latest gives the high
    # watermarks, --to-earliest zeros; a group never seen (Dead) may be reset and is
    # then created.
    with trio.fail_after(DEADLINE):
        args = ("--reset-offsets", "--group", "fresh", "--topic", "orders")
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, *args, "--to-latest")
        )
        assert code == 0, (out, err)
        assert err.startswith("WARN: No action will be performed as the --execute")
        assert plan_of(out) == {("fresh", "orders", 0): 5, ("fresh", "orders", 1): 3}
        assert await committed(cluster, "fresh") == {}
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, *args, "--to-latest", "--execute")
        )
        assert (code, err) == (0, "")
        assert await committed(cluster, "fresh") == {0: 5, 1: 3}
        code, out, _ = await trio.to_thread.run_sync(
            invoke(cluster, *args[:-1], "orders:1", "--to-earliest", "--execute")
        )
        assert plan_of(out) == {("fresh", "orders", 1): 0}
        assert await committed(cluster, "fresh") == {0: 5, 1: 0}


async def test_shift_offset_current_and_time_scenarios_follow_kafkas_rules(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: --shift-by moves the committed offsets and is clamped to the log
    # (Kafka's checkOffsetsRange), --to-offset past the end is the end, --to-current
    # keeps what is committed, --to-datetime finds the first record at that time and
    # falls back, with Kafka's warning, to the end when none is that late;
    # --by-duration from long ago is the log start; --all-topics covers what the
    # group committed.
    with trio.fail_after(DEADLINE):
        mark = int(time.time() * 1000)
        await trio.sleep(0.002)  # the next record is later than mark
        await fill(cluster, 0, 2)  # partition 0: offsets 5, 6 after mark
        done = await cluster.alter_consumer_group_offsets(
            "g", {TopicPartition("orders", 0): OffsetAndMetadata(2)}
        )
        assert done == {TopicPartition("orders", 0): None}
        group = ("--reset-offsets", "--group", "g")

        async def planned(*args: str) -> tuple[dict[tuple[str, str, int], int], str]:
            code, out, err = await trio.to_thread.run_sync(
                invoke(cluster, *group, *args, "--dry-run")
            )
            assert (code, err) == (0, ""), (args, out, err)
            return plan_of(out), out

        assert (await planned("--all-topics", "--shift-by", "3"))[0] == {
            ("g", "orders", 0): 5
        }
        assert (await planned("--all-topics", "--shift-by", "-10"))[0] == {
            ("g", "orders", 0): 0
        }
        assert (await planned("--topic", "orders:0", "--to-offset", "99"))[0] == {
            ("g", "orders", 0): 7
        }
        assert (await planned("--topic", "orders", "--to-current"))[0] == {
            ("g", "orders", 0): 2,
            ("g", "orders", 1): 3,  # nothing committed: the high watermark
        }
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(mark / 1000))
        stamp = f"{when}.{mark % 1000:03d}"
        plan, out = await planned("--topic", "orders", "--to-datetime", stamp)
        assert plan == {("g", "orders", 0): 5, ("g", "orders", 1): 3}
        assert (
            "Warn: Partition 1 from topic orders is empty. Falling back to latest"
            in out
        )
        plan, _ = await planned("--topic", "orders", "--by-duration", "P3650D")
        assert plan == {("g", "orders", 0): 0, ("g", "orders", 1): 0}
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, *group, "--topic", "orders:1", "--shift-by", "1")
        )
        assert code == 1
        assert (
            "Cannot shift offset for partition orders-1 since there is no current"
            in err
        )


def live_member(cluster: AsyncAdminClient, group: str) -> Any:
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=bootstrap(cluster),
        group_id=group,
        enable_auto_commit=False,
        heartbeat_interval_ms=100,
        session_timeout_ms=6000,
        fetch_max_wait_ms=100,
    )
    deadline = time.monotonic() + JOIN_WAIT
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer never joined"
        consumer.poll(timeout_ms=GROUP_POLL_MS)
    return consumer


async def test_a_live_group_is_refused_a_reset_and_keeps_subscribed_offsets(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: a group with a member is not reset: Kafka's message on stdout, an
    # empty plan, nothing committed, exit 1; --delete-offsets of its subscribed topic
    # reports the partition-level error per row; once it leaves, the reset executes.
    with trio.fail_after(DEADLINE):
        await cluster.alter_consumer_group_offsets(
            "busy", {TopicPartition("orders", 0): 1}
        )
        member = await trio.to_thread.run_sync(live_member, cluster, "busy")
        try:
            reset = ("--reset-offsets", "--group", "busy", "--topic", "orders:0")
            code, out, _ = await trio.to_thread.run_sync(
                invoke(cluster, *reset, "--to-latest", "--execute")
            )
            assert code == 1
            assert out.splitlines()[:2] == [
                "",
                "Error: Assignments can only be reset if the group 'busy' is "
                "inactive, but the current state is Stable.",
            ]
            assert plan_of(out) == {}
            assert await committed(cluster, "busy") == {0: 1}
            code, out, _ = await trio.to_thread.run_sync(
                invoke(
                    cluster,
                    "--delete-offsets",
                    "--group",
                    "busy",
                    "--topic",
                    "orders:0",
                )
            )
            assert code == 1
            assert out.splitlines()[1] == (
                "Error: Encounter some partition level error, see the follow-up details:"
            )
            assert out.splitlines()[-1].split() == [
                "orders",
                "0",
                "Error:",
                ":GROUP_SUBSCRIBED_TO_TOPIC",
            ]
        finally:
            await trio.to_thread.run_sync(member.close)
        code, out, _ = await trio.to_thread.run_sync(
            invoke(cluster, *reset, "--to-latest", "--execute")
        )
        assert code == 0
        assert await committed(cluster, "busy") == {0: 5}


async def test_delete_offsets_removes_them_and_reports_unknown_groups_and_topics(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: --delete-offsets of an Empty group's topic deletes each partition's
    # offset (Successful rows); an unknown topic is one "Not Provided" row; an unknown
    # group is Kafka's "does not exist" with the error on each row.
    with trio.fail_after(DEADLINE):
        await cluster.alter_consumer_group_offsets(
            "idle",
            {TopicPartition("orders", 0): 1, TopicPartition("orders", 1): 2},
        )
        args = ("--delete-offsets", "--group", "idle", "--topic", "orders")
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, *args, "--topic", "nope")
        )
        assert code == 1, (out, err)
        rows = [line.split() for line in out.splitlines()[3:]]
        assert rows == [
            ["nope", "Not", "Provided", "Error:", ":UNKNOWN_TOPIC_OR_PARTITION"],
            ["orders", "0", "Successful"],
            ["orders", "1", "Successful"],
        ]
        assert await committed(cluster, "idle") == {}
        code, out, _ = await trio.to_thread.run_sync(
            invoke(
                cluster, "--delete-offsets", "--group", "ghost", "--topic", "orders:0"
            )
        )
        assert code == 1
        assert out.splitlines()[:2] == ["", "Error: 'ghost' does not exist."]
        assert out.splitlines()[-1].split() == [
            "orders",
            "0",
            "Error:",
            ":GROUP_ID_NOT_FOUND",
        ]
