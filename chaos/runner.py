"""``python -m chaos run``: one chaos run over a real process cluster, end to end.

1. Lay out and start a :class:`~minikafka.broker.testing.ProcessCluster` (KRaft with 1
   or 3 controllers, or ZooKeeper mode) under ``OUT/cluster``, with fast failure
   detection (:data:`SETTINGS`), and create the topic: RF 3, ``min.insync.replicas=2``
   (an ``acks=all`` write is then on two replicas at least, as Jepsen's Kafka runs set).
2. Draw the nemesis's schedule from the seed (:mod:`chaos.nemesis`) for the cluster's
   topology and run the workloads (:mod:`chaos.workload`) while :class:`~.faults.Injector`
   starts and heals each fault at its time (late if the one before took long: the
   record keeps when each really happened).
3. Heal everything, stop the workloads, wait for every partition's whole ISR, read the
   final state back, and check the history (:mod:`chaos.checker`) and the traces
   (:mod:`chaos.traces`).
4. Write ``history.jsonl``, ``final.json``, ``faults.jsonl`` (the schedule as carried
   out), ``summary.txt`` (printed too), and keep ``cluster/`` (its nodes' logs and
   ``traces/``) to ``OUT``; the exit status is 1 on any anomaly, 2 if the run itself
   went wrong (a worker died, a node crashed, the cluster never whole again).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import attrs
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.trace import read_trace

from .checker import ANOMALY_KINDS, AnomalyKind, check
from .faults import INJECTED, NOT_INJECTED, Injector
from .history import Op, encode_final_state, format_history
from .nemesis import Options, Topology, schedule
from .traces import TRACE_ANOMALY_KINDS, TraceAnomaly, check_traces
from .workload import CLIENT, GroupConsumer, Producer, Recorder, read_back, stop_all

SETTINGS = {
    # A killed or paused broker is fenced, and its partitions led by others, within
    # seconds (the cluster tests' settings: short, yet no live broker is fenced on a
    # loaded two-core machine).
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "5000",
    "zookeeper.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
}
TOPIC = "chaos"
GROUP = "chaos-group"
SETTLE = 120.0
"""Seconds the cluster gets, once healed, to be whole again and read back."""


@attrs.frozen
class RunOptions:
    seed: int
    duration: float
    mode: str = "kraft"
    controllers: int = 1
    faults: tuple[str, ...] = INJECTED
    brokers: int = 3
    partitions: int = 4
    producers: int = 2
    consumers: int = 2
    clients: tuple[str, ...] = (CLIENT,)
    """The producers' clients, taken in turn (:data:`~.workload.CLIENTS`)."""


def refused(faults: Sequence[str]) -> str | None:
    """Why a run cannot inject ``faults``, or None if it can."""
    missing = [kind for kind in faults if kind in NOT_INJECTED]
    if not missing:
        return None
    return (
        f"cannot inject {', '.join(missing)} yet (injected today: "
        f"{', '.join(INJECTED)}; partitions, slow links, a full disk, admin operations "
        "and membership changes are scheduled by the nemesis but not carried out)"
    )


def _cluster(root: Path, opts: RunOptions) -> ProcessCluster:
    zookeeper = opts.mode == "zk"
    controllers = 0 if zookeeper else opts.controllers
    ports = free_ports(max(controllers, 1) + opts.brokers)
    return ProcessCluster.create(
        root,
        opts.brokers,
        controllers=max(controllers, 1),
        controller_ports=ports[: max(controllers, 1)],
        broker_ports=ports[max(controllers, 1) :],
        overrides=SETTINGS,
        zookeeper=zookeeper,
        zookeeper_port=ports[0],
    )


def _create_topic(cluster: ProcessCluster, partitions: int) -> None:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    topic = NewTopic(TOPIC, partitions, 3, config={"min.insync.replicas": "2"})
    client.create_topics([topic], operation_timeout=30)[TOPIC].result(timeout=60)


def _whole(cluster: ProcessCluster, partitions: int, deadline: float) -> bool:
    """Wait until every partition has a leader and three in-sync replicas."""
    client = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    while time.monotonic() < deadline:
        try:
            found = client.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
            if found is not None and found.error is None:
                states = [found.partitions.get(p) for p in range(partitions)]
                if all(
                    s is not None and s.leader >= 0 and len(s.isrs) == 3 for s in states
                ):
                    return True
        except Exception:  # no broker answered yet: ask again
            pass
        time.sleep(0.5)  # polling the cluster's state, inside the deadline
    return False


def run(opts: RunOptions, out_dir: Path, out: TextIO) -> int:
    """One run; its summary printed to ``out``; 1 on any anomaly, else 2 if the run
    itself went wrong (a worker died, a node crashed, the cluster was not whole again:
    its notes say), else 0."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cluster = _cluster(out_dir / "cluster", opts)
    zookeeper = opts.mode == "zk"
    topology = Topology(
        tuple(sorted(cluster.broker_ports)),
        () if zookeeper else tuple(cluster.controller_ids),
    )
    drawn = schedule(
        opts.seed, topology, Options(duration=opts.duration, faults=opts.faults)
    )
    (out_dir / "schedule.jsonl").write_text("\n".join(drawn.lines()) + "\n")
    recorder = Recorder()
    injector = Injector(cluster, zookeeper)
    notes: list[str] = []
    try:
        cluster.up(timeout=120.0)
        _create_topic(cluster, opts.partitions)
        if not _whole(cluster, opts.partitions, time.monotonic() + 60):
            notes.append("the topic was not fully in sync before the faults began")
        workers: list[Producer | GroupConsumer] = [
            Producer(
                p,
                cluster.bootstrap,
                TOPIC,
                opts.partitions,
                recorder,
                client=opts.clients[p % len(opts.clients)],
            )
            for p in range(opts.producers)
        ]
        workers += [
            GroupConsumer(100 + c, cluster.bootstrap, TOPIC, GROUP, recorder)
            for c in range(opts.consumers)
        ]
        for worker in workers:
            worker.start()
        began = time.monotonic()
        for at, what, fault in drawn.steps():
            wait = began + at - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # the schedule's next step is due then
            if what == "start":
                injector.start(fault, time.time())
            else:
                injector.heal(fault, time.time())
        injector.heal_all()
        rest = began + opts.duration - time.monotonic()
        if rest > 0:
            time.sleep(rest)  # the schedule's quiet end: the workloads run whole
        notes += stop_all(workers, timeout=180.0)
        deadline = time.monotonic() + SETTLE
        if not _whole(cluster, opts.partitions, deadline):
            notes.append("not every partition had its whole ISR again after healing")
        final = read_back(cluster.bootstrap, TOPIC, opts.partitions, deadline)
        notes += [f"node {c.node} {c.what}" for c in cluster.crashes()]
    finally:
        injector.heal_all()
        cluster.kill_all()
    ops = recorder.ops
    (out_dir / "history.jsonl").write_text("".join(format_history(ops)))
    (out_dir / "final.json").write_text(encode_final_state(final))
    (out_dir / "faults.jsonl").write_text(
        "".join(json.dumps(r.to_json()) + "\n" for r in injector.done)
    )
    report = check(ops, final)
    traced = check_traces(read_trace(cluster.root / "traces"), ops)
    lines = _summary(opts, injector, ops, report.counts(), traced, notes)
    for anomaly in report.anomalies:
        where = f"{anomaly.topic}-{anomaly.partition}"
        lines.append(f"{anomaly.kind} {where} ops {anomaly.ops}: {anomaly.detail}")
    for anomaly_ in traced:
        lines.append(f"{anomaly_.kind}: {anomaly_.detail}")
    text = "\n".join(lines) + "\n"
    (out_dir / "summary.txt").write_text(text)
    out.write(text)
    if report.anomalies or traced:
        return 1
    return 2 if notes else 0


def _summary(
    opts: RunOptions,
    injector: Injector,
    history: Sequence[Op],
    counts: Mapping[AnomalyKind, int],
    traced: Sequence[TraceAnomaly],
    notes: Sequence[str],
) -> list[str]:
    lines = [
        f"chaos run: seed {opts.seed}, {opts.duration:.0f}s, mode {opts.mode}, "
        f"{0 if opts.mode == 'zk' else opts.controllers} controller(s), "
        f"{opts.brokers} brokers, faults {','.join(opts.faults)}, "
        f"producers' clients {','.join(opts.clients)}",
        "link faults: not injected (no network namespaces for the nodes yet; the "
        "nemesis's partitions and slow links are refused)",
        "",
        f"{'fault':<24} {'injected':>8} {'skipped':>8} {'errors':>8}",
    ]
    kinds = Counter(r.fault.kind for r in injector.done if r.started and not r.error)
    skipped = Counter(r.fault.kind for r in injector.done if r.skipped)
    errors = Counter(r.fault.kind for r in injector.done if r.error)
    for kind in opts.faults:
        counts_ = f"{kinds[kind]:>8} {skipped[kind]:>8} {errors[kind]:>8}"
        lines.append(f"{kind:<24} {counts_}")
    lines += ["", f"{'operation':<12} {'ok':>8} {'failed':>8} {'unknown':>8}"]
    for kind in ("send", "poll", "commit"):
        outcomes = Counter(op.outcome for op in history if op.kind == kind)
        lines.append(
            f"{kind:<12} {outcomes['ok']:>8} {outcomes['failed']:>8} {outcomes['unknown']:>8}"
        )
    lines += ["", f"{'anomaly':<20} count"]
    lines += [f"{kind:<20} {counts[kind]}" for kind in ANOMALY_KINDS]
    traced_counts = Counter(a.kind for a in traced)
    lines += [f"{kind:<20} {traced_counts[kind]}" for kind in TRACE_ANOMALY_KINDS]
    for record in injector.done:
        if record.skipped:
            lines.append(
                f"fault {record.fault.kind} at {record.fault.start}s skipped: {record.skipped}"
            )
        if record.error:
            lines.append(
                f"fault {record.fault.kind} at {record.fault.start}s: {record.error}"
            )
    lines += [f"note: {note}" for note in notes]
    return lines
