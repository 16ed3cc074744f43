"""A ZooKeeper-mode broker started while ZooKeeper's server is down gives up at
start-up, as Kafka's broker does (its ZooKeeper client times out and start-up fails):
the nemesis counts that as Kafka's behaviour, not a crash, and starts the broker again
once the server answers (a five-minute run, seed 115, had a killed broker's restart
fall into a ``kill-zookeeper`` and end the run with a false "crash"). A broker added
then (seed 123) gives up the same way: the add is recorded as not carried out, with
the reason, and not as a crash; a removed broker returned then is started again once
the server answers.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chaos.faults import Injector, refused_without_zookeeper
from chaos.nemesis import ZOOKEEPER, Fault
from chaos.runner import TOPIC, RunOptions, _cluster, _create_topic, _whole, crashes
from minikafka.zk._server import ZOOKEEPER_JAR
from tests.cluster._cluster import wait_for

pytestmark = [pytest.mark.serial, pytest.mark.timeout(300)]


def test_a_broker_started_while_zookeeper_is_down_stops_and_is_started_again(
    tmp_path: Path,
) -> None:
    if not ZOOKEEPER_JAR.exists():
        pytest.skip("Debian's zookeeper is installed by `make test`")
    cluster = _cluster(tmp_path, RunOptions(0, 0.0, mode="zk"))
    try:
        cluster.up(timeout=120.0)
        servers = cluster.bootstrap
        _create_topic(servers, 3)
        assert _whole(servers, 3, time.monotonic() + 60)
        injector = Injector(cluster, True, None, servers, TOPIC)

        kill = Fault(0, 1, "kill", (1,))
        injector.start(kill, time.time())
        zookeeper = Fault(0, 1, "kill-zookeeper", (ZOOKEEPER,))
        injector.start(zookeeper, time.time())
        injector.heal(kill, time.time())  # broker 1 starts: no ZooKeeper answers
        wait_for(
            lambda: cluster.pid(1) is None and refused_without_zookeeper(cluster, 1),
            "broker 1 gave up its start-up for want of ZooKeeper",
            60,
        )
        # Told apart from a crash by its last line, and not hidden from the cluster.
        assert any(c.node == 1 for c in cluster.crashes())

        injector.heal(zookeeper, time.time())
        record = injector.done[-1]
        assert "broker(s) [1] started again" in record.detail, record
        assert _whole(servers, 3, time.monotonic() + 90)
        assert injector.stopped_without_zookeeper == {1}
        assert crashes(cluster, injector) == []
    finally:
        cluster.down()


def test_a_broker_added_or_returned_while_zookeeper_is_down_is_no_crash(
    tmp_path: Path,
) -> None:
    if not ZOOKEEPER_JAR.exists():
        pytest.skip("Debian's zookeeper is installed by `make test`")
    opts = RunOptions(0, 0.0, mode="zk", faults=("broker-add", "broker-remove"))
    cluster = _cluster(tmp_path, opts)
    try:
        cluster.up(timeout=120.0)
        servers = cluster.bootstrap
        _create_topic(servers, 3)
        assert _whole(servers, 3, time.monotonic() + 60)
        injector = Injector(cluster, True, None, servers, TOPIC)
        gone, new = min(cluster.broker_ports), max(cluster.node_ids) + 1

        remove = Fault(0, 1, "broker-remove", (gone,))
        injector.start(remove, time.time())  # drained while ZooKeeper answers
        assert cluster.pid(gone) is None
        zookeeper = Fault(0, 1, "kill-zookeeper", (ZOOKEEPER,))
        injector.start(zookeeper, time.time())

        add = Fault(0, 1, "broker-add", (new,))
        injector.start(add, time.time())
        added = injector.done[-1]
        # Not carried out, with Kafka's reason, rather than an error of the harness.
        assert added.error == "", added
        assert added.started is None, added
        assert f"broker {new} gave up its start-up" in added.skipped, added
        assert "no ZooKeeper answered" in added.skipped
        assert cluster.pid(new) is None
        assert refused_without_zookeeper(cluster, new)

        injector.heal(remove, time.time())  # broker `gone` starts: none answers
        (removed,) = [r for r in injector.done if r.fault is remove]
        assert removed.error == "", removed
        assert f"broker {gone} gave up its start-up" in removed.detail
        assert cluster.pid(gone) is None

        injector.heal(zookeeper, time.time())
        assert f"broker(s) [{gone}] started again" in injector.done[1].detail
        assert _whole(servers, 3, time.monotonic() + 90)
        injector.heal_all()
        assert cluster.pid(new) is None  # its id is not used again
        assert injector.stopped_without_zookeeper == {gone, new}
        assert {c.node for c in cluster.crashes()} == {gone, new}
        assert crashes(cluster, injector) == []
    finally:
        cluster.down()
