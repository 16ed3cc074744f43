"""The reference itself: Apache Kafka's jars run, a KRaft combined node starts and serves
a real client, and a tool's bad arguments or an unknown tool get a message naming them."""

from __future__ import annotations

import pytest

from reference.kafka import TOOLS, KafkaNode, kafka_version, run_tool, tool_class

pytestmark = pytest.mark.external


def test_the_node_serves_kafkas_own_tools(kafka_reference: KafkaNode) -> None:
    # Guarantee: the shared node is a working Kafka: a topic created by kafka-topics is
    # listed back with its partitions, by the release the pom pins.
    bootstrap = kafka_reference.bootstrap
    run_tool(
        "kafka-topics",
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        "reference-probe",
        "--partitions",
        "2",
    ).check()
    described = run_tool(
        "kafka-topics",
        "--bootstrap-server",
        bootstrap,
        "--describe",
        "--topic",
        "reference-probe",
    ).check()
    assert "PartitionCount: 2" in described.stdout
    assert kafka_version() in kafka_reference.server_log.read_text()


def test_every_tool_name_is_a_class_in_the_jars() -> None:
    # Guarantee: each kafka-* name runs a class the jars hold (a renamed class in a new
    # release fails here, not in the middle of a comparison).
    for name in TOOLS:
        run = run_tool(tool_class(name), "--help")
        assert "ClassNotFoundException" not in run.stderr, name
        assert "Could not find or load main class" not in run.stderr, name


def test_an_unknown_tool_is_named() -> None:
    with pytest.raises(ValueError, match="kafka-topix"):
        run_tool("kafka-topix")
