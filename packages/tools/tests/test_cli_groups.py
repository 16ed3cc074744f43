"""``minikafka groups`` (kafka-consumer-groups.sh) against groups real clients made.

Each test runs a broker in this trio loop (``running_broker``, as test_cli_tools.py does)
and makes its groups with real clients in worker threads: kafka-python consumers that
subscribe, consume and commit (a live group), and a confluent-kafka consumer that only
commits (an Empty group with no protocol type, like a simple consumer's). The tool's
async functions are checked against what the clients hold; the command runs through
typer's CliRunner in a worker thread (it calls ``trio.run`` itself) for its output,
and once as a process to show that an unreachable broker gives one line, no traceback.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import confluent_kafka
import pytest
import trio
from kafka import KafkaConsumer
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.errors import CommitFailedError, RebalanceInProgressError
from kio.schema.errors import ErrorCode
from typer.testing import CliRunner

from minikafka.broker.testing import (
    bootstrap,
    free_ports,
    single_node_config,
    tool_cluster,
)
from minikafka.common import TopicPartition
from minikafka.net import Node
from minikafka.tools._cli import app
from minikafka.tools._connection import AsyncAdminClient
from minikafka.tools._groups import (
    GroupDescription,
    GroupMember,
    PartitionOffsets,
    View,
    delete_groups,
    deletion_report,
    describe,
    describe_group,
    describe_offsets,
    list_groups,
    members_table,
    offsets_table,
    state_notice,
    state_table,
)
from minikafka.tools._produce import ProduceOptions, produce
from minikafka.tools._topics import create_topic

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow
JOIN_WAIT = 30.0  # seconds the consumers get to join, rebalance and catch up
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "num.partitions": "3",
}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[AsyncAdminClient]:
    async with tool_cluster(
        single_node_config(tmp_path / "data", OVERRIDES)
    ) as cluster:
        yield cluster


async def records(count: int) -> AsyncIterator[bytes]:
    for i in range(count):
        yield b"r%d" % i


async def fill(cluster: AsyncAdminClient, topic: str, counts: dict[int, int]) -> None:
    """Produce ``counts[p]`` records to each partition ``p``."""
    for partition, count in counts.items():
        options = ProduceOptions(topic, partition=partition)
        result = await produce(bootstrap(cluster), options, records(count), print)
        assert result.sent == count


def group_consumer(
    cluster: AsyncAdminClient, topic: str, group: str, client_id: str
) -> Any:
    """A member of ``group`` subscribed to ``topic``; it joins at its first poll."""
    # Short heartbeats: a member learns of a rebalance at its next heartbeat.
    return KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap(cluster),
        group_id=group,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        heartbeat_interval_ms=100,
        session_timeout_ms=6000,
        fetch_max_wait_ms=100,  # a poll notices a rebalance at least this often
        partition_assignment_strategy=[RoundRobinPartitionAssignor],
    )


def owned(consumer: Any) -> frozenset[tuple[str, int]]:
    return frozenset((tp.topic, tp.partition) for tp in consumer.assignment())


@attrs.define(eq=False)
class GroupProgress:
    """What each member's thread saw after its last poll; ``done`` once the members
    split every partition between them and each has read its partitions to the end."""

    ends: dict[int, int]
    members: int
    deadline: float
    done: threading.Event = attrs.field(factory=threading.Event)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _seen: dict[str, tuple[frozenset[tuple[str, int]], bool]] = attrs.field(
        factory=dict
    )

    def poll_until_done(self, consumer: Any) -> None:
        """One member's thread: a kafka-python consumer joins, rebalances and fetches only
        inside poll, so each member polls in its own thread, all at once."""
        while not self.done.is_set():
            assert time.monotonic() < self.deadline, self._seen
            consumer.poll(timeout_ms=1000)
            caught_up = all(
                consumer.position(tp) >= self.ends[tp.partition]
                for tp in consumer.assignment()
            )
            with self._lock:
                self._seen[consumer.config["client_id"]] = (owned(consumer), caught_up)
                held = [h for h, _ in self._seen.values()]
                every = frozenset().union(*held)
                if (
                    len(held) == self.members
                    and all(h and c for h, c in self._seen.values())
                    and sum(map(len, held)) == len(every) == len(self.ends)
                ):
                    self.done.set()


async def join_consume_commit(consumers: Sequence[Any], ends: dict[int, int]) -> None:
    """The members join, share the partitions, read them to ``ends``, and commit."""
    deadline = time.monotonic() + JOIN_WAIT
    while True:
        progress = GroupProgress(ends, len(consumers), deadline)
        async with trio.open_nursery() as nursery:
            for c in consumers:
                nursery.start_soon(
                    partial(trio.to_thread.run_sync, progress.poll_until_done, c)
                )
        try:
            for c in consumers:
                await trio.to_thread.run_sync(c.commit)
            return
        except (CommitFailedError, RebalanceInProgressError):
            # Another rebalance began after the members settled: settle again.
            assert time.monotonic() < deadline


def commit_only(
    cluster: AsyncAdminClient, group: str, offsets: dict[tuple[str, int], int]
) -> None:
    """A consumer that never joins and commits: its group is Empty, protocol type ""."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap(cluster),
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.commit(
            offsets=[
                confluent_kafka.TopicPartition(t, p, o) for (t, p), o in offsets.items()
            ],
            asynchronous=False,
        )
    finally:
        consumer.close()


def invoke(cluster: AsyncAdminClient, *args: str) -> Callable[[], tuple[int, str, str]]:
    """The command with ``args``, to run in a worker thread: (exit code, stdout, stderr)."""

    def run() -> tuple[int, str, str]:
        result = CliRunner().invoke(
            app,
            ["groups", "--bootstrap-server", bootstrap(cluster), *args],
            env={"COLUMNS": "200"},
        )
        return result.exit_code, result.stdout, result.stderr

    return run


def table(stdout: str) -> list[list[str]]:
    """A printed table as rows of whitespace-separated cells, header first."""
    lines = stdout.splitlines()
    assert lines[0] == ""  # Kafka's blank line before each table
    return [line.split() for line in lines[1:]]


# --- a live group -------------------------------------------------------------------------


async def test_list_and_describe_a_live_group(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "orders", partitions=3)
        await fill(cluster, "orders", {0: 5, 1: 5, 2: 5})
        # The constructor connects at once, so it runs where it may block: a worker thread.
        alpha = await trio.to_thread.run_sync(
            group_consumer, cluster, "orders", "orders-app", "alpha"
        )
        beta = await trio.to_thread.run_sync(
            group_consumer, cluster, "orders", "orders-app", "beta"
        )
        try:
            await join_consume_commit([alpha, beta], {0: 5, 1: 5, 2: 5})
            await trio.to_thread.run_sync(
                commit_only, cluster, "audit", {("orders", 1): 3}
            )
            await fill(cluster, "orders", {0: 2})  # lag 2 on partition 0
            held = {"alpha": owned(alpha), "beta": owned(beta)}

            assert await list_groups(cluster) == ["audit", "orders-app"]
            code, out, err = await trio.to_thread.run_sync(invoke(cluster, "--list"))
            assert (code, out, err) == (0, "audit\norders-app\n", "")

            group = await describe_group(cluster, "orders-app")
            assert (group.state, group.protocol_type, group.protocol) == (
                "Stable",
                "consumer",
                "roundrobin",
            )
            members = {m.client_id: m for m in group.members}
            assigned = {
                c: {(tp.topic, tp.partition) for tp in m.partitions}
                for c, m in members.items()
            }
            assert assigned == held
            for client, member in members.items():
                # Kafka's clientId-UUID
                assert member.member_id.startswith(f"{client}-")
                assert member.host == "/127.0.0.1"
                assert member.group_instance_id is None

            rows = await describe_offsets(cluster, group)
            by_partition = {r.partition: r for r in rows}
            assert {
                p: (r.offset, r.log_end_offset, r.lag) for p, r in by_partition.items()
            } == {
                0: (5, 7, 2),
                1: (5, 5, 0),
                2: (5, 5, 0),
            }
            for r in rows:
                assert (r.topic, r.partition) in held[r.client_id]
                assert (r.consumer_id, r.host) == (
                    members[r.client_id].member_id,
                    "/127.0.0.1",
                )
            # Kafka's order: the member with more partitions first, each by partition.
            first = max(held, key=lambda c: len(held[c]))
            assert [r.client_id for r in rows[:2]] == [first, first]
            assert [r.partition for r in rows[:2]] == sorted(p for _, p in held[first])

            # --describe: Kafka's table, one row per partition; Stable says nothing on stderr.
            code, out, err = await trio.to_thread.run_sync(
                invoke(cluster, "--describe", "--group", "orders-app")
            )
            assert (code, err) == (0, "")
            header, *cells = table(out)
            assert header == [
                "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                "CONSUMER-ID", "HOST", "CLIENT-ID",
            ]  # fmt: skip
            assert sorted((c[2], c[3], c[4], c[5], c[8]) for c in cells) == sorted(
                (str(p), "5", str(r.log_end_offset), str(r.lag), r.client_id)
                for p, r in by_partition.items()
            )
            assert all(
                c[:2] == ["orders-app", "orders"] and c[7] == "/127.0.0.1"
                for c in cells
            )

            # --members, with --verbose: each member's partitions.
            code, out, err = await trio.to_thread.run_sync(
                invoke(
                    cluster,
                    "--describe",
                    "--group",
                    "orders-app",
                    "--members",
                    "--verbose",
                )
            )
            assert (code, err) == (0, "")
            header, *cells = table(out)
            assert header == [
                "GROUP",
                "CONSUMER-ID",
                "HOST",
                "CLIENT-ID",
                "#PARTITIONS",
                "ASSIGNMENT",
            ]
            assert {c[3]: (c[1], int(c[4]), c[5]) for c in cells} == {
                client: (
                    members[client].member_id,
                    len(tps),
                    "orders(" + ",".join(str(p) for _, p in sorted(tps)) + ")",
                )
                for client, tps in held.items()
            }

            # --state: the coordinator, the assignor, the state, the member count.
            code, out, err = await trio.to_thread.run_sync(
                invoke(cluster, "--describe", "--group", "orders-app", "--state")
            )
            assert (code, err) == (0, "")
            assert table(out) == [
                [
                    "GROUP",
                    "COORDINATOR",
                    "(ID)",
                    "ASSIGNMENT-STRATEGY",
                    "STATE",
                    "#MEMBERS",
                ],
                ["orders-app", bootstrap(cluster), "(1)", "roundrobin", "Stable", "2"],
            ]

            # The group that only committed: Empty, its offsets and no consumer.
            code, out, err = await trio.to_thread.run_sync(
                invoke(cluster, "--describe", "--group", "audit")
            )
            assert code == 0
            assert err == "Consumer group 'audit' has no active members.\n"
            assert table(out)[1:] == [
                ["audit", "orders", "1", "3", "5", "2", "-", "-", "-"]
            ]

            # --all-groups: each group in turn, sorted.
            code, out, err = await trio.to_thread.run_sync(
                invoke(cluster, "--describe", "--all-groups", "--state")
            )
            assert code == 0
            rows_of = [line.split() for line in out.splitlines()]
            assert [r[0] for r in rows_of if r[1:2] == [bootstrap(cluster)]] == [
                "audit",
                "orders-app",
            ]
            assert err == "Consumer group 'audit' has no active members.\n"
        finally:
            await trio.to_thread.run_sync(alpha.close)
            await trio.to_thread.run_sync(beta.close)


# --- delete -------------------------------------------------------------------------------


async def test_delete_refuses_a_group_with_members_and_deletes_an_empty_one(
    cluster: AsyncAdminClient,
) -> None:
    with trio.fail_after(DEADLINE):
        await create_topic(cluster, "jobs", partitions=2)
        await fill(cluster, "jobs", {0: 3, 1: 1})
        solo = await trio.to_thread.run_sync(
            group_consumer, cluster, "jobs", "busy", "solo"
        )
        try:
            await join_consume_commit([solo], {0: 3, 1: 1})
            await trio.to_thread.run_sync(
                commit_only, cluster, "idle", {("jobs", 0): 1}
            )
            assert await list_groups(cluster) == ["busy", "idle"]

            # One call, two groups: the Empty one goes, the one with a member stays.
            code, out, err = await trio.to_thread.run_sync(
                invoke(cluster, "--delete", "--group", "busy", "--group", "idle")
            )
            assert code == 1
            assert err == (
                "Error: Deletion of some consumer groups failed:\n"
                "* Group 'busy' could not be deleted due to: NON_EMPTY_GROUP\n"
            )
            assert out == "These consumer groups were deleted successfully: 'idle'\n"
            assert await list_groups(cluster) == ["busy"]
            assert await delete_groups(cluster, ["busy"]) == {
                "busy": ErrorCode.non_empty_group
            }
        finally:
            await trio.to_thread.run_sync(solo.close)  # LeaveGroup: the group is Empty

        # Its committed offsets remain, with no consumer.
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, "--describe", "--group", "busy")
        )
        assert code == 0
        assert err == "Consumer group 'busy' has no active members.\n"
        assert table(out)[1:] == [
            ["busy", "jobs", "0", "3", "3", "0", "-", "-", "-"],
            ["busy", "jobs", "1", "1", "1", "0", "-", "-", "-"],
        ]
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, "--describe", "--group", "busy", "--members")
        )
        assert (code, out, err) == (
            0,
            "",
            "Consumer group 'busy' has no active members.\n",
        )

        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, "--delete", "--group", "busy")
        )
        assert (code, out, err) == (
            0,
            "Deletion of requested consumer groups ('busy') was successful.\n",
            "",
        )
        assert await list_groups(cluster) == []
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, "--describe", "--group", "busy")
        )
        assert (code, out, err) == (
            1,
            "",
            "Error: Consumer group 'busy' does not exist.\n",
        )
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, "--delete", "--group", "busy")
        )
        assert code == 1
        assert "* Group 'busy' could not be deleted due to: GROUP_ID_NOT_FOUND" in err


# --- errors -------------------------------------------------------------------------------


async def test_an_unknown_group_does_not_exist(cluster: AsyncAdminClient) -> None:
    with trio.fail_after(DEADLINE):
        views: tuple[View, ...] = ("offsets", "members", "state")
        for view in views:
            stdout, stderr = io.StringIO(), io.StringIO()
            assert not await describe(cluster, ["nope"], view, stdout, stderr)
            assert (stdout.getvalue(), stderr.getvalue()) == (
                "",
                "Error: Consumer group 'nope' does not exist.\n",
            )
        assert await delete_groups(cluster, ["nope"]) == {
            "nope": ErrorCode.group_id_not_found
        }
        code, out, err = await trio.to_thread.run_sync(
            invoke(cluster, "--describe", "--group", "nope", "--state")
        )
        assert (code, out, err) == (
            1,
            "",
            "Error: Consumer group 'nope' does not exist.\n",
        )
        assert await list_groups(cluster) == []


def test_an_unreachable_broker_is_one_line_and_exit_1() -> None:
    [port] = free_ports(1)  # a port nobody listens on
    server = f"127.0.0.1:{port}"
    error = f"Error: Metadata to bootstrap server ({server}): cannot connect"
    # As a process: what a user sees, with no traceback.
    command = [
        sys.executable,
        "-m",
        "minikafka.tools",
        "groups",
        "--bootstrap-server",
        server,
    ]
    result = subprocess.run(
        [*command, "--describe", "--group", "g"],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert (result.returncode, result.stdout) == (1, "")
    (line,) = result.stderr.splitlines()
    assert line.startswith(error)
    # The other actions, in this process.
    for action in (
        ["--list"],
        ["--delete", "--group", "g"],
        ["--describe", "--all-groups"],
    ):
        outcome = CliRunner().invoke(
            app, ["groups", "--bootstrap-server", server, *action]
        )
        assert (outcome.exit_code, outcome.stdout) == (1, ""), action
        (line,) = outcome.stderr.splitlines()
        assert line.startswith(error)


def test_arguments_are_checked_before_connecting() -> None:
    runner = CliRunner()
    cases = {
        (): "give exactly one of --list, --describe, --delete",
        ("--list", "--delete"): "give exactly one of",
        ("--describe",): "--describe needs --group or --all-groups",
        ("--delete",): "--delete needs --group or --all-groups",
        ("--describe", "--group", "g", "--all-groups"): "not both",
        ("--describe", "--group", "g", "--members", "--state"): "at most one of",
        ("--list", "--members"): "--members is for --describe",
    }
    for args, message in cases.items():
        result = runner.invoke(
            app,
            ["groups", "--bootstrap-server", "127.0.0.1:1", *args],
            env={"COLUMNS": "200"},
        )
        assert result.exit_code == 2, args
        assert message in " ".join(result.output.split()), (args, result.output)


# --- the tables ---------------------------------------------------------------------------


def test_tables_are_kafkas_fixed_width_columns_with_dashes_for_the_unknown() -> None:
    long_id = "consumer-with-a-rather-long-client-id-0123456789"
    rows = [
        PartitionOffsets("g", "t", 0, 7, 10, long_id, "/10.0.0.1", "c"),
        PartitionOffsets("g", "t", 1, None, 4),  # nothing committed, no consumer
        PartitionOffsets("g", "gone", 2, 3, None),  # no log end offset: no lag
    ]
    assert rows[0].lag == 3
    assert rows[1].lag is None
    assert rows[2].lag is None
    lines = offsets_table(rows)
    assert lines[0] == ""
    assert lines[1].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    assert lines[2].split() == [
        "g",
        "t",
        "0",
        "7",
        "10",
        "3",
        long_id,
        "/10.0.0.1",
        "c",
    ]
    assert lines[3].split() == ["g", "t", "1", "-", "4", "-", "-", "-", "-"]
    assert lines[4].split() == ["g", "gone", "2", "3", "-", "-", "-", "-", "-"]
    # Columns of at least 15 (PARTITION 10) and one space; the consumer id widened its own.
    host_at = lines[1].index("HOST")
    assert host_at == sum((16, 16, 11, 16, 16, 16, len(long_id) + 1))
    assert lines[2].index("/10.0.0.1") == host_at
    assert lines[3][host_at - 1 : host_at + 1] == " -"

    node = Node(1, "broker.example", 9092)
    static = GroupMember(
        "m-1", "instance-a", "c1", "/10.0.0.1", (TopicPartition("t", 1),)
    )
    dynamic = GroupMember(
        "m-2", None, "c2", "/10.0.0.2", (TopicPartition("t", 0), TopicPartition("u", 3))
    )
    group = GroupDescription(
        "g", node, "Stable", "consumer", "range", (static, dynamic)
    )
    lines = members_table(group, verbose=True)
    assert lines[1].split() == [
        "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
        "ASSIGNMENT",
    ]  # fmt: skip
    assert lines[2].split() == [
        "g",
        "m-1",
        "instance-a",
        "/10.0.0.1",
        "c1",
        "1",
        "t(1)",
    ]
    assert lines[3].split() == ["g", "m-2", "/10.0.0.2", "c2", "2", "t(0),", "u(3)"]
    plain = members_table(attrs.evolve(group, members=(dynamic,)))
    assert plain[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
    ]

    header = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
    row = ("g", "broker.example:9092 (1)", "range", "Stable", "2")
    assert state_table(group)[1:] == [
        "{:<25} {:<25} {:<20} {:<15} {}".format(*line) for line in (header, row)
    ]

    assert state_notice("g", "Stable") is None
    assert state_notice("g", "Empty") == "Consumer group 'g' has no active members."
    assert (
        state_notice("g", "PreparingRebalance")
        == "Warning: Consumer group 'g' is rebalancing."
    )
    assert state_notice("g", "Dead") == "Consumer group 'g' does not exist."

    ok = {"a": ErrorCode.none, "b": ErrorCode.none}
    assert deletion_report(ok) == (
        ["Deletion of requested consumer groups ('a', 'b') was successful."],
        [],
    )
    out, err = deletion_report(
        {"a": ErrorCode.none, "b": ErrorCode.coordinator_not_available}
    )
    assert out == ["These consumer groups were deleted successfully: 'a'"]
    assert (
        err[1] == "* Group 'b' could not be deleted due to: COORDINATOR_NOT_AVAILABLE"
    )
