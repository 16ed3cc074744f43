"""``minikafka cluster``, the supervisor behind ``make cluster``, as a user runs it: up
(laying the cluster out on first use), status, kill N, restart N, down; and kcat ``-L``
against it lists the three brokers with the partitions' leaders spread over them, in
KRaft mode and in ZooKeeper mode (``make cluster MODE=zk``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.broker.testing import free_ports
from tests.cluster._cluster import FAST, WAIT, wait_for

# Clusters of real processes, killed and restarted: minutes on a loaded two-core
# machine, more than the suite's default per-test timeout.
pytestmark = pytest.mark.timeout(300)


def cluster_cli(root: Path, *args: str) -> str:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "minikafka.broker",
            "cluster",
            *args,
            "--dir",
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def status_rows(root: Path) -> dict[str, list[str]]:
    """NODE -> the rest of its row in ``minikafka cluster status``."""
    return status_table(cluster_cli(root, "status"))


def status_table(output: str) -> dict[str, list[str]]:
    """NODE -> the rest of its row in the node table ``status`` (and ``up``) print."""
    lines = output.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("NODE")))
    rows = {}
    for line in lines[header + 1 :]:
        if not line.strip():
            break
        node, *rest = line.split()
        rows[node] = rest
    return rows


def fetcher_rows(root: Path) -> dict[str, list[str]]:
    """BROKER -> its replica fetchers' counts (fetching, truncating, delayed, failed) in
    ``minikafka cluster status``, and "FAILED" -> each failed partition's line."""
    lines = cluster_cli(root, "status").splitlines()
    if "REPLICA FETCHERS" not in lines:
        return {}
    rows: dict[str, list[str]] = {"FAILED": []}
    for line in lines[lines.index("REPLICA FETCHERS") + 2 :]:
        if line.startswith("FAILED"):
            rows["FAILED"].append(line)
        elif line.strip():
            broker, *counts = line.split()
            rows[broker] = counts
    return rows


def kcat_leaders(bootstrap: str, topic: str) -> set[str]:
    """The leaders ``kcat -L`` lists for ``topic``'s partitions, once it sees 3 brokers."""
    listed = subprocess.run(
        ["kcat", "-b", bootstrap, "-L", "-t", topic],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    ).stdout
    if " 3 brokers:" not in listed:
        return set()
    return {
        line.split("leader ")[1].split(",")[0]
        for line in listed.splitlines()
        if "leader " in line
    }


def create_spread_topic(bootstrap: str, brokers: set[str]) -> None:
    """``minikafka topics --create`` a three-partition topic, and wait until kcat lists
    its leaders spread over ``brokers``."""
    create = ["topics", "--create", "--topic", "spread", "--partitions", "3"]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "minikafka.broker",
            *create,
            "--bootstrap-server",
            bootstrap,
        ],
        check=True,
        capture_output=True,
        timeout=WAIT,
    )
    # The topic exists once the controller has committed it; the broker kcat asks
    # knows it once it has replayed that far, a moment later on a loaded machine.
    wait_for(
        lambda: kcat_leaders(bootstrap, "spread") == brokers,
        "kcat lists the three partitions' leaders, spread over the brokers",
    )


@pytest.mark.external
def test_the_cluster_command_runs_a_cluster_kcat_can_use(tmp_path: Path) -> None:
    root = tmp_path / "cluster"
    first = free_ports(4)[0]  # consecutive: the controller, then brokers 1-3
    try:
        up = cluster_cli(
            root, "up", "--controller-port", str(first), "--port", str(first + 1)
        )
        assert "new cluster" in up
        create_spread_topic(f"127.0.0.1:{first + 1}", {"1", "2", "3"})
        rows = status_rows(root)
        assert rows["0"][0] == "controller"
        assert all(rows[b][0] == "broker" and rows[b][-1] == "running" for b in "123")
        cluster_cli(root, "kill", "2")
        assert status_rows(root)["2"][-1] == "stopped"
        cluster_cli(root, "restart", "2")
        wait_for(
            lambda: status_rows(root)["2"][-1] == "running", "broker 2 running again"
        )
        # Each running broker reports its replica fetchers (the topic has one replica
        # per partition: nothing to fetch, nothing failed).
        wait_for(
            lambda: set(fetcher_rows(root)) == {"1", "2", "3", "FAILED"},
            "status shows every broker's replica fetchers",
        )
        assert fetcher_rows(root)["FAILED"] == []
        cluster_cli(root, "down")
        assert all(r[-1] == "stopped" for r in status_rows(root).values())
        assert sorted(p.name for p in (root / "traces").iterdir())  # every node traced
        assert (root / "node-2.log").read_text().count("minikafka broker ready") == 2
    finally:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "minikafka.broker",
                "cluster",
                "down",
                "--dir",
                str(root),
            ],
            capture_output=True,
            timeout=WAIT * 2,
        )


@pytest.mark.external
def test_the_cluster_command_runs_a_zookeeper_mode_cluster(tmp_path: Path) -> None:
    """``make cluster MODE=zk`` (``minikafka cluster up --zookeeper``): a ZooKeeper and
    three brokers that elect their controller through it; kcat lists the three with the
    partitions' leaders spread over them; a broker killed and restarted comes back on
    its own data (its meta.properties: this cluster's id, its broker id)."""
    root = tmp_path / "cluster"
    first = free_ports(4)[0]  # consecutive: ZooKeeper, then brokers 0-2
    try:
        up = cluster_cli(
            root,
            "up",
            "--zookeeper",
            "--zookeeper-port",
            str(first),
            "--port",
            str(first + 1),
            # The test clusters' timers: the killed broker's session (its registration,
            # which the restarted one waits out, and the controller role if it held it)
            # ends in 6 s, not 18 s; the last broker down asks to move its leaderships
            # 1 s apart, not 5 s.
            *(f"--override={key}={value}" for key, value in FAST.items()),
        )
        assert "new ZooKeeper-mode cluster" in up
        create_spread_topic(f"127.0.0.1:{first + 1}", {"0", "1", "2"})
        rows = status_rows(root)
        assert all(rows[b][0] == "broker" and rows[b][-1] == "running" for b in "012")
        cluster_cli(root, "kill", "1")
        assert status_rows(root)["1"][-1] == "stopped"
        cluster_cli(root, "restart", "1")
        wait_for(
            lambda: status_rows(root)["1"][-1] == "running", "broker 1 running again"
        )
        meta = (root / "node-1" / "meta.properties").read_text()
        assert "version=0\nbroker.id=1\ncluster.id=" in meta
        cluster_cli(root, "down")
        assert all(r[-1] == "stopped" for r in status_rows(root).values())
        assert (root / "node-1.log").read_text().count("minikafka broker ready") == 2
    finally:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "minikafka.broker",
                "cluster",
                "down",
                "--dir",
                str(root),
            ],
            capture_output=True,
            timeout=WAIT * 2,
        )


def metadata_quorum(bootstrap: str, view: str) -> str:
    """``minikafka metadata-quorum --bootstrap-server B describe --VIEW``'s output ("" if
    it failed: no leader yet)."""
    result = subprocess.run(
        [
            *(sys.executable, "-m", "minikafka.broker", "metadata-quorum"),
            *("--bootstrap-server", bootstrap, "describe", f"--{view}"),
        ],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    return result.stdout if result.returncode == 0 else ""


def status_fields(bootstrap: str) -> dict[str, str]:
    lines = metadata_quorum(bootstrap, "status").splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def test_make_cluster_with_three_controllers_describes_its_quorum(
    tmp_path: Path,
) -> None:
    """``make cluster CONTROLLERS=3``: three controllers elect a leader; a broker answers
    ``metadata-quorum describe`` for them (the leader, its epoch, the high watermark,
    every voter's and observer's lag); killing the leader makes another one lead."""
    root = tmp_path / "cluster"
    # controllers on first+2, first+1, first; brokers after
    first = free_ports(6)[0]  # consecutive
    try:
        up = cluster_cli(
            root, "up", "--controllers", "3", "--controller-port", str(first + 2),
            "--port", str(first + 3),
        )  # fmt: skip
        rows = status_table(up)  # ``up`` ends with ``status``'s table
        assert [rows[n][0] for n in "012345"] == ["controller"] * 3 + ["broker"] * 3
        bootstrap = f"127.0.0.1:{first + 3}"
        status: dict[str, str] = {}

        def led_and_observed() -> bool:
            # One ``metadata-quorum`` run a try (a process start: the test's time):
            # its answer is also the one the checks below read.
            status.clear()
            status.update(status_fields(bootstrap))
            return (
                status.get("LeaderId") in {"0", "1", "2"}
                and status.get("CurrentObservers")
                == '[{"id": 3}, {"id": 4}, {"id": 5}]'
            )

        wait_for(
            led_and_observed,
            "a leader, and every broker fetching the metadata log as an observer",
        )
        assert int(status["LeaderEpoch"]) >= 1
        assert int(status["HighWatermark"]) > 0  # the brokers' registrations, at least
        # Kafka 4's JSON: each voter with its controller listener (DescribeQuorum v2)
        voters = json.loads(status["CurrentVoters"])
        assert [v["id"] for v in voters] == [0, 1, 2]
        assert all(len(v["endpoints"]) == 1 for v in voters)
        replication = metadata_quorum(bootstrap, "replication").splitlines()
        assert replication[0].split() == [
            "NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
            "LastCaughtUpTimestamp", "Status",
        ]  # fmt: skip
        statuses = sorted(line.split()[-1] for line in replication[1:])
        assert statuses == ["Follower", "Follower", "Leader"] + ["Observer"] * 3
        leader = status["LeaderId"]
        cluster_cli(root, "kill", leader)
        wait_for(
            lambda: (
                status_fields(bootstrap).get("LeaderId") in {"0", "1", "2"} - {leader}
            ),
            "another controller leads",
        )
        cluster_cli(root, "down")
        assert all(r[-1] == "stopped" for r in status_rows(root).values())
    finally:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "minikafka.broker",
                "cluster",
                "down",
                "--dir",
                str(root),
            ],
            capture_output=True,
            timeout=WAIT * 2,
        )
