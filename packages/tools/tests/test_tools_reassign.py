"""The JSON files of ``minikafka reassign-partitions`` (Kafka's formats) and the answers
to bad ones: each names what is wrong, and nothing is sent to the cluster."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

import attrs
import pytest
from typer.testing import CliRunner

from minikafka.client import AsyncAdminClient, ClusterDescription
from minikafka.common import TopicPartition
from minikafka.net import Node
from minikafka.tools._cli import app
from minikafka.tools._connection import ToolError
from minikafka.tools._reassign import (
    assignment_json,
    execute,
    parse_assignment,
    parse_topics_to_move,
)


def test_an_assignment_round_trips_through_kafkas_json() -> None:
    assignment = {("b", 0): (2, 3, 4), ("a", 1): (3, 4, 2), ("a", 0): (4, 2, 3)}
    text = assignment_json(assignment)
    document = json.loads(text)
    assert document["version"] == 1
    assert [(p["topic"], p["partition"]) for p in document["partitions"]] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
    ]
    assert document["partitions"][0]["log_dirs"] == ["any", "any", "any"]
    assert parse_assignment(text) == assignment


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", "not JSON"),
        ("[]", "must hold an object"),
        ('{"version": 1}', '"partitions"'),
        ('{"partitions": [{"topic": "a"}]}', "topic/partition/replicas"),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 1]}]}',
            "not valid",
        ),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "replicas": []}]}',
            "not valid",
        ),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "replicas": [1]},'
            ' {"topic": "a", "partition": 0, "replicas": [2]}]}',
            "listed twice",
        ),
    ],
)
def test_a_bad_reassignment_file_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(ToolError, match=says):
        parse_assignment(text)


def test_topics_to_move() -> None:
    assert parse_topics_to_move(
        '{"topics": [{"topic": "x"}, {"topic": "y"}], "version": 1}'
    ) == [
        "x",
        "y",
    ]
    with pytest.raises(ToolError, match='"topics"'):
        parse_topics_to_move('{"version": 1}')
    with pytest.raises(ToolError, match='no "topic"'):
        parse_topics_to_move('{"topics": [{"name": "x"}]}')


def test_the_tools_refuse_bad_usage_before_connecting() -> None:
    runner = CliRunner()
    # No broker listens on port 1: a usage error must stop before any connection.
    both = runner.invoke(
        app,
        [
            "reassign-partitions",
            "--bootstrap-server",
            "127.0.0.1:1",
            "--execute",
            "--verify",
        ],
    )
    assert both.exit_code == 2
    assert "exactly one of" in both.output
    missing = runner.invoke(
        app, ["reassign-partitions", "--bootstrap-server", "127.0.0.1:1", "--execute"]
    )
    assert missing.exit_code == 2
    assert "--reassignment-json-file" in missing.output
    election = [
        "leader-election",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--all-topic-partitions",
    ]
    unknown = runner.invoke(app, [*election, "--election-type", "FASTEST"])
    assert unknown.exit_code == 2
    assert "PREFERRED or UNCLEAN" in unknown.output


@attrs.define
class _Cluster:
    """A cluster whose DescribeCluster lists ``registered``; records what is moved."""

    registered: tuple[int, ...]
    moved: list[Mapping[TopicPartition, Sequence[int] | None]] = attrs.Factory(list)

    async def describe_cluster(self) -> ClusterDescription:
        nodes = tuple(Node(b, "127.0.0.1", 9092 + b) for b in self.registered)
        return ClusterDescription("c", None, nodes)

    async def alter_partition_reassignments(
        self,
        target: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, None]:
        self.moved.append(target)
        return dict.fromkeys(target)


async def test_an_assignment_naming_a_broker_not_registered_moves_nothing() -> None:
    """Kafka's tool checks every broker the file names against DescribeCluster before
    sending anything (``verifyBrokerIds``): no partition moves when one names a broker
    that is down, rather than the others moving alone (chaos seed 141)."""
    cluster = _Cluster(registered=(1, 2, 4))
    target = {("t", 0): (4, 1, 2), ("t", 1): (0, 4, 3)}
    with pytest.raises(ToolError, match="Unknown broker id 0"):
        await execute(cast(AsyncAdminClient, cluster), target)
    assert cluster.moved == []
    await execute(cast(AsyncAdminClient, cluster), {("t", 0): (4, 1, 2)})
    assert len(cluster.moved) == 1
    # A cancellation names no broker: nothing to check.
    await execute(cast(AsyncAdminClient, _Cluster(registered=())), {("t", 0): None})
