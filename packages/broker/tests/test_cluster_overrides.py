"""``minikafka cluster up --override KEY=VALUE`` (as Kafka's ``kafka-server-start.sh
--override``): on first use each key goes into every node's properties; a pair without
``=`` is refused before anything is laid out."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from minikafka.broker import read_properties
from minikafka.broker._cli import app
from minikafka.broker._process_cluster import ProcessCluster


def test_overrides_go_into_every_nodes_properties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ProcessCluster, "up", lambda self, timeout=60.0: None)
    root = tmp_path / "cluster"
    result = CliRunner().invoke(
        app,
        [
            *("cluster", "up", "--dir", str(root), "--brokers", "2"),
            *("--override", "zookeeper.session.timeout.ms=6000"),
            "--override=controlled.shutdown.retry.backoff.ms=1000",
        ],
    )
    assert result.exit_code == 0, result.output
    cluster = ProcessCluster.load(root)
    for node in cluster.node_ids:
        props = read_properties(cluster.properties_file(node))
        assert props["zookeeper.session.timeout.ms"] == "6000"
        assert props["controlled.shutdown.retry.backoff.ms"] == "1000"


def test_an_override_without_a_value_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "cluster"
    result = CliRunner().invoke(
        app, ["cluster", "up", "--dir", str(root), "--override", "log.dirs"]
    )
    assert result.exit_code == 2
    assert "not KEY=VALUE" in result.output
    assert not root.exists()
