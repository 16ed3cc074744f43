"""``python -m chaos check`` reads a history, its final state and a trace directory,
prints every anomaly with its operations and a count by kind, and exits 1 on any."""

from __future__ import annotations

import io
from pathlib import Path

from chaos.__main__ import main
from chaos.history import Op, encode_final_state, format_history
from chaos.runner import refused
from minikafka.replication import BecameLeader
from minikafka.trace import JsonLinesTracer


def write_run(tmp_path: Path, final_values: tuple[int, ...]) -> list[str]:
    ops = [
        Op(
            i,
            0,
            "send",
            "ok",
            float(i),
            i + 0.5,
            topic="t",
            partition=0,
            value=v,
            offset=i,
        )
        for i, v in enumerate((10, 11))
    ]
    (tmp_path / "history.jsonl").write_text("".join(format_history(ops)))
    records = tuple(enumerate(final_values))
    (tmp_path / "final.json").write_text(encode_final_state({("t", 0): records}))
    traces = tmp_path / "traces"
    traces.mkdir()
    for node in (1, 2):  # two brokers lead epoch 0
        tracer = JsonLinesTracer.open(traces, node=node)
        tracer.emit(BecameLeader("t", 0, 0, 0, (1, 2), (1, 2), 0), ts=1.0)
        tracer.close()
    return [str(tmp_path / "history.jsonl"), str(tmp_path / "final.json")]


def test_a_clean_run_exits_zero_and_counts_nothing(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["check", *write_run(tmp_path, (10, 11))], out) == 0
    assert "2 operations, 2 acknowledged sends" in out.getvalue()
    assert "lost                 0" in out.getvalue()


def test_anomalies_from_history_and_traces_are_printed_and_fail(tmp_path: Path) -> None:
    out = io.StringIO()
    paths = write_run(tmp_path, (10,))
    assert main(["check", *paths, "--traces", str(tmp_path / "traces")], out) == 1
    text = out.getvalue()
    assert "lost                 t-0              ops 1: value 11" in text
    assert "two_leaders          t-0: broker 1 and broker 2 became leaders" in text
    assert "two_leaders          1" in text


def test_a_full_disk_is_refused_where_a_tmpfs_cannot_be_mounted() -> None:
    why = refused(("kill", "disk-full"), None, "kraft", "mounting a tmpfs needs root")
    assert why is not None
    assert "cannot inject disk-full here" in why
    assert "a full disk needs a tmpfs: mounting a tmpfs needs root" in why
    assert refused(("kill", "disk-full", "broker-add", "broker-remove"), None) is None


def test_zookeeper_faults_are_refused_outside_zookeeper_mode() -> None:
    why = refused(("kill", "kill-zookeeper"), None, "kraft")
    assert why is not None
    assert "need ZooKeeper mode" in why
    assert refused(("kill", "kill-zookeeper", "pause-zookeeper"), None, "zk") is None


def test_partitions_and_slow_links_are_refused_where_network_namespaces_cannot_be_made() -> (
    None
):
    why = refused(("kill", "partition-halves", "slow"), "network namespaces need root")
    assert why is not None
    assert "cannot inject partition-halves, slow" in why
    assert "injected here: kill, pause, kill-active-controller, reassign," in why
    assert (
        "partitions and slow links need network namespaces: network namespaces " in why
    )
    assert refused(("kill", "partition-halves", "slow"), None) is None
