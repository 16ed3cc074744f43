"""``ProcessCluster`` as a context manager: ``with ProcessCluster.create(...) as
cluster:`` starts every node and stops them all at the end of the block, cleanly; a node
that cannot start leaves no other running."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from minikafka.broker.testing import ClusterError, ProcessCluster, free_ports

# Real processes: seconds each on a loaded two-core machine.
pytestmark = pytest.mark.timeout(180)


def test_the_block_runs_with_every_node_up_and_ends_with_none(tmp_path: Path) -> None:
    # Guarantee: inside the block every node runs; after it none does, and none
    # crashed (down() told each to stop).
    controller, broker = free_ports(2)
    made = ProcessCluster.create(
        tmp_path, 1, controller_port=controller, broker_ports=[broker]
    )
    with made as cluster:
        assert cluster is made
        assert all(cluster.pid(node) is not None for node in cluster.node_ids)
    assert all(made.pid(node) is None for node in made.node_ids)
    assert made.crashes() == []


def test_a_node_that_cannot_start_leaves_none_running(tmp_path: Path) -> None:
    # Guarantee: the broker's port is taken, so it exits while starting; the error
    # reaches the caller and the controller started before it is killed too.
    controller, broker = free_ports(2)
    made = ProcessCluster.create(
        tmp_path, 1, controller_port=controller, broker_ports=[broker]
    )
    taken = socket.create_server(("127.0.0.1", broker))
    refused = pytest.raises(ClusterError, match="node 1 exited while starting")
    with taken, refused, made:
        pytest.fail("the block must not run")
    assert all(made.pid(node) is None for node in made.node_ids)
