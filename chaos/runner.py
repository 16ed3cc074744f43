"""``python -m chaos run``: one chaos run over a real process cluster, end to end.

1. Lay out and start a :class:`~minikafka.broker.testing.ProcessCluster` (KRaft with 1
   or 3 controllers, or ZooKeeper mode) under ``OUT/cluster``, with fast failure
   detection (:data:`SETTINGS`), and create the topic: RF 3, ``min.insync.replicas=2``
   (an ``acks=all`` write is then on two replicas at least, as Jepsen's Kafka runs set).
2. Draw the nemesis's schedule from the seed (:mod:`chaos.nemesis`) for the cluster's
   topology and run the workloads (:mod:`chaos.workload`) while :class:`~.faults.Injector`
   starts and heals each fault at its time (:func:`~.carry.carry_out`: the steps that
   wait on the cluster -- admin operations, membership changes, ZooKeeper restarts --
   on a lane of their own, so that they hold up no other fault's heal; a step may
   still be late, a start that could come only after its fault's heal is skipped, and
   the record keeps when each really happened).
3. Heal everything, stop the workloads, wait for every partition's whole ISR, read the
   final state back (with transactions, ``chaos-out`` both ways and the transform
   group's offsets too), and check the history (:mod:`chaos.checker`) and the traces
   (:mod:`chaos.traces`).
4. Write ``history.jsonl``, ``final.json``, ``faults.jsonl`` (the schedule as carried
   out: each fault's ``start`` and ``heal`` as drawn, its ``started_at`` and
   ``healed_at`` as carried out), ``summary.txt`` (printed too, with the schedule's
   lateness: :func:`~.carry.lateness_line`), ``timeline.svg`` (:mod:`chaos.timeline`: the
   faults, the operations' outcomes and the anomalies over time), and keep
   ``cluster/`` (its nodes' logs and ``traces/``) to ``OUT``; the exit status is 1 on
   any anomaly, 2 if the run itself went wrong (a worker died, a node crashed, the
   cluster never whole again, a partition that could not be read back).
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

from . import timeline
from .carry import carry_out, lateness_line
from .checker import ANOMALY_KINDS, AnomalyKind, check
from .churn import TopicChurn
from .disk import Disks
from .faults import (
    DISK_KINDS,
    INJECTED,
    NETWORK_KINDS,
    NOT_INJECTED,
    PROCESS_KINDS,
    Injector,
)
from .history import (
    Op,
    Record,
    TopicPartition,
    TransactionalFinal,
    encode_final_state,
    format_history,
)
from .nemesis import ZOOKEEPER_KINDS, Options, Topology, schedule
from .netcluster import bootstrap, place
from .netns import Network, unavailable
from .proxies import LinkProxies, links_line, proxy_reason
from .proxies import place as place_proxies
from .traces import TRACE_ANOMALY_KINDS, TraceAnomaly, check_traces, kept_records
from .transactions import SINK, Transformer, read_back_transactions
from .workload import (
    CLIENT,
    GroupConsumer,
    Producer,
    Recorder,
    read_back_readable,
    stop_all,
)
from .writers import read_writers

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
REPLICATION_FACTOR = 3


@attrs.frozen
class RunOptions:
    seed: int
    duration: float
    mode: str = "kraft"
    controllers: int = 1
    faults: tuple[str, ...] = PROCESS_KINDS
    brokers: int = 3
    partitions: int = 4
    producers: int = 2
    consumers: int = 2
    clients: tuple[str, ...] = (CLIENT,)
    """The producers' clients, taken in turn (:data:`~.workload.CLIENTS`)."""
    churn: float = 0.0
    """Seconds between topic churn cycles (:mod:`chaos.churn`: a topic created,
    written and deleted); 0: none."""
    transactions: int = 0
    """Consume-transform-produce workers (:mod:`chaos.transactions`) from the topic
    to ``chaos-out`` in one group, each with its own transactional id; 0: none."""
    links: str = "auto"
    """Where partitions and slow links are carried out: ``namespaces`` (a network
    namespace per node: :mod:`chaos.netns`), ``proxies`` (a TCP fault proxy per link:
    :mod:`chaos.proxies`), or ``auto``: namespaces where they can be made, else the
    proxies."""
    client_debug: str = ""
    """librdkafka's ``debug`` contexts for the group consumers (``cgrp,broker``): a
    consumer's own account of a hang, written to standard error by librdkafka's
    threads, so it is there even while the consumer's thread is stuck in a call."""


def injectable(
    no_namespaces: str | None, no_tmpfs: str | None = None
) -> tuple[str, ...]:
    """The kinds a run injects here: partitions and slow links unless the run asked
    for namespaces (``--links namespaces``) and they cannot be made (``no_namespaces``
    is why not, or None: without that request they go on the link proxies), a full
    disk only where a tmpfs can be mounted (``no_tmpfs`` likewise)."""
    missing = (
        *(NETWORK_KINDS if no_namespaces else ()),
        *(DISK_KINDS if no_tmpfs else ()),
    )
    return tuple(kind for kind in INJECTED if kind not in missing)


def refused(
    faults: Sequence[str],
    no_namespaces: str | None = None,
    mode: str = "kraft",
    no_tmpfs: str | None = None,
) -> str | None:
    """Why a run cannot inject ``faults``, or None if it can (``no_namespaces``: why
    network namespaces cannot be made here, or None if they can; ``no_tmpfs``: why a
    tmpfs cannot be mounted, likewise)."""
    if mode != "zk" and any(kind in ZOOKEEPER_KINDS for kind in faults):
        return f"{', '.join(ZOOKEEPER_KINDS)} need ZooKeeper mode (--mode zk)"
    missing = [kind for kind in faults if kind in NOT_INJECTED]
    why = ""
    if no_namespaces is not None and any(k in NETWORK_KINDS for k in faults):
        missing += [kind for kind in faults if kind in NETWORK_KINDS]
        why += f"; partitions and slow links need network namespaces: {no_namespaces}"
    if no_tmpfs is not None and any(kind in DISK_KINDS for kind in faults):
        missing += [kind for kind in faults if kind in DISK_KINDS]
        why += f"; a full disk needs a tmpfs: {no_tmpfs}"
    if not missing:
        return None
    return (
        f"cannot inject {', '.join(missing)} here (injected here: "
        f"{', '.join(injectable(no_namespaces, no_tmpfs))}{why})"
    )


def needs_network(faults: Sequence[str]) -> bool:
    return any(kind in NETWORK_KINDS for kind in faults)


def brokers(opts: RunOptions) -> int:
    """The brokers a run starts: one more than the replication factor when a broker
    may be removed (a drained broker's replicas need a broker to go to)."""
    if "broker-remove" in opts.faults:
        return max(opts.brokers, REPLICATION_FACTOR + 1)
    return opts.brokers


def _cluster(root: Path, opts: RunOptions) -> ProcessCluster:
    zookeeper = opts.mode == "zk"
    controllers = 0 if zookeeper else opts.controllers
    ports = free_ports(max(controllers, 1) + brokers(opts))
    return ProcessCluster.create(
        root,
        brokers(opts),
        controllers=max(controllers, 1),
        controller_ports=ports[: max(controllers, 1)],
        broker_ports=ports[max(controllers, 1) :],
        overrides=SETTINGS,
        zookeeper=zookeeper,
        zookeeper_port=ports[0],
    )


def _create_topic(servers: str, partitions: int, name: str = TOPIC) -> None:
    client = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    topic = NewTopic(
        name, partitions, REPLICATION_FACTOR, config={"min.insync.replicas": "2"}
    )
    client.create_topics([topic], operation_timeout=30)[name].result(timeout=60)


def _whole(servers: str, partitions: int, deadline: float) -> bool:
    """Wait until every partition has a leader and its whole ISR."""
    return not not_whole(servers, partitions, deadline)


def not_whole(servers: str, partitions: int, deadline: float) -> list[str]:
    """Wait until every partition has a leader, :data:`REPLICATION_FACTOR` replicas and
    all of them in its ISR; empty then, else the partitions that were not, as last
    seen (the ISR compared with the partition's own replicas, so that a harness
    leaving one with four replicas is named, not taken for an ISR too large)."""
    client = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    short = [f"no answer about {TOPIC}"]
    while time.monotonic() < deadline:
        try:
            found = client.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
            if found is not None and found.error is None:
                short = []
                for p in range(partitions):
                    s = found.partitions.get(p)
                    if s is None:
                        short.append(f"{p}: not listed")
                    elif (
                        s.leader < 0
                        or len(s.replicas) != REPLICATION_FACTOR
                        or sorted(s.isrs) != sorted(s.replicas)
                    ):
                        short.append(
                            f"{p}: leader {s.leader} replicas {s.replicas} isr {s.isrs}"
                        )
                if not short:
                    return []
        except Exception:  # no broker answered yet: ask again
            pass
        time.sleep(0.5)  # polling the cluster's state, inside the deadline
    return short


def settle_and_read(
    servers: str, partitions: int, notes: list[str]
) -> tuple[dict[TopicPartition, tuple[Record, ...]], list[TopicPartition], float]:
    """After healing: the wait for every partition's whole ISR, then the read-back of
    each partition, each within :data:`SETTLE` of its own (a replica left on a broker
    gone for good keeps an ISR short forever, yet the partition is readable; a
    partition left with no leader is not, and must not spend the others' time); the
    final state, the partitions that could not be read back (each named in ``notes``,
    with why), and the deadline of the transactional read-back that may follow."""
    short = not_whole(servers, partitions, time.monotonic() + SETTLE)
    if short:
        notes.append(
            "not every partition had its whole ISR again after healing: "
            + "; ".join(short)
        )
    final, unreadable = read_back_readable(servers, TOPIC, partitions, SETTLE)
    notes += unreadable
    unread = [(TOPIC, p) for p in range(partitions) if (TOPIC, p) not in final]
    return final, unread, time.monotonic() + SETTLE


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
        min_brokers=REPLICATION_FACTOR,
    )
    drawn = schedule(
        opts.seed, topology, Options(duration=opts.duration, faults=opts.faults)
    )
    (out_dir / "schedule.jsonl").write_text("\n".join(drawn.lines()) + "\n")
    recorder = Recorder()
    transactions: TransactionalFinal | None = None
    added = [t for f in drawn.faults if f.kind == "broker-add" for t in f.targets]
    network: Network | None = None
    proxies: LinkProxies | None = None
    via_proxies: str | None = None
    if needs_network(opts.faults):
        no_namespaces = unavailable() if opts.links == "auto" else None
        via_proxies = proxy_reason(opts.links, no_namespaces)
        if via_proxies is None:
            network = Network.create([*cluster.node_ids, *added])
        else:
            proxies = place_proxies(cluster, added)
    full = {t for f in drawn.faults if f.kind in DISK_KINDS for t in f.targets}
    try:
        disks = Disks.mount(cluster, full) if full else None
    except BaseException:
        _close_links(network, proxies)
        raise
    servers = cluster.bootstrap
    if network is not None:
        place(cluster, network)
        servers = bootstrap(cluster, network)
    injector = Injector(
        cluster, zookeeper, network, servers, TOPIC, disks, proxies, REPLICATION_FACTOR
    )
    notes: list[str] = []
    origin = time.time()  # the schedule's instant 0, on the records' clock
    try:
        cluster.up(timeout=120.0)
        _create_topic(servers, opts.partitions)
        if opts.transactions:
            _create_topic(servers, opts.partitions, SINK)
        if not _whole(servers, opts.partitions, time.monotonic() + 60):
            notes.append("the topic was not fully in sync before the faults began")
        workers: list[Producer | GroupConsumer | TopicChurn | Transformer] = [
            Producer(
                p,
                servers,
                TOPIC,
                opts.partitions,
                recorder,
                client=opts.clients[p % len(opts.clients)],
            )
            for p in range(opts.producers)
        ]
        workers += [
            GroupConsumer(
                100 + c, servers, TOPIC, GROUP, recorder, debug=opts.client_debug
            )
            for c in range(opts.consumers)
        ]
        if opts.churn > 0:
            churn = TopicChurn(200, servers, f"{TOPIC}-churn", recorder, opts.churn)
            workers.append(churn)
        workers += [
            Transformer(300 + t, servers, TOPIC, recorder)
            for t in range(opts.transactions)
        ]
        for worker in workers:
            worker.start()
        began, origin = time.monotonic(), time.time()
        carry_out(drawn.steps(), injector, began)
        injector.heal_all()
        rest = began + opts.duration - time.monotonic()
        if rest > 0:
            time.sleep(rest)  # the schedule's quiet end: the workloads run whole
        notes += stop_all(workers, timeout=180.0)
        final, unread, deadline = settle_and_read(servers, opts.partitions, notes)
        if opts.transactions:
            transactions, open_ = read_back_transactions(
                servers, TOPIC, opts.partitions, deadline
            )
            notes += open_
        notes += crashes(cluster, injector)
    finally:
        try:
            injector.heal_all()
            cluster.kill_all()
        finally:
            if disks is not None:
                disks.close()  # after the nodes; what they wrote is kept
            # After the nodes: nothing is left in a namespace, or through a proxy.
            _close_links(network, proxies)
    ops = recorder.ops
    (out_dir / "history.jsonl").write_text("".join(format_history(ops)))
    (out_dir / "final.json").write_text(encode_final_state(final, transactions))
    (out_dir / "faults.jsonl").write_text(
        "".join(json.dumps(r.to_json()) + "\n" for r in injector.done)
    )
    records = kept_records(read_trace(cluster.root / "traces"))
    writers = read_writers(cluster.root, TOPIC)
    report = check(ops, final, records, writers, transactions, unread)
    traced = check_traces(records, ops)
    faults = [r.to_json() for r in injector.done]
    marks = timeline.anomaly_marks(ops, report.anomalies, traced)
    timeline.save(out_dir / timeline.FILE, ops, faults, marks, title=out_dir.name)
    where = None
    if network is not None:
        where = f"{network.layout.prefix}*, 10.{network.layout.subnet}.0.0/24"
    links = links_line(where, via_proxies)
    if proxies is not None:
        links += f"; {proxies.summary()}"
    lines = _summary(opts, injector, ops, report.counts(), traced, notes, links)
    lines.insert(2, lateness_line(injector.done, origin))
    for anomaly in (*report.anomalies, *report.explained):
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


def _close_links(network: Network | None, proxies: LinkProxies | None) -> None:
    try:
        if proxies is not None:
            proxies.close()
    finally:
        if network is not None:
            network.close()


REGISTRATION_GAVE_UP = "unable to register with the controller quorum"
"""What a KRaft broker logs when it stops because its registration did not go through
within ``initial.broker.registration.timeout.ms`` (a broker started behind a cut to
every controller), as Kafka's ``BrokerLifecycleManager`` says and does."""


def crashes(cluster: ProcessCluster, injector: Injector) -> list[str]:
    """The cluster's crashes, as notes, less a broker's halt on a full disk (Kafka's
    broker halts so when its metadata log dir fails: one line, no traceback), a
    ZooKeeper-mode broker's start-up given up while ZooKeeper's server was down and a
    KRaft broker's given up for want of a controller (so do Kafka's). The end's heal
    started each again."""
    injector.note_zookeeper_refusals()  # one still down
    expected = injector.halted | injector.stopped_without_zookeeper

    def gave_up_registering(node: int) -> bool:
        return REGISTRATION_GAVE_UP in cluster.tail(node, lines=1_000_000)

    return [
        f"node {c.node} {c.what}"
        for c in cluster.crashes()
        if not (
            "without being told to" in c.what
            and (c.node in expected or gave_up_registering(c.node))
        )
    ]


def _summary(
    opts: RunOptions,
    injector: Injector,
    history: Sequence[Op],
    counts: Mapping[AnomalyKind, int],
    traced: Sequence[TraceAnomaly],
    notes: Sequence[str],
    links: str,
) -> list[str]:
    lines = [
        f"chaos run: seed {opts.seed}, {opts.duration:.0f}s, mode {opts.mode}, "
        f"{0 if opts.mode == 'zk' else opts.controllers} controller(s), "
        f"{brokers(opts)} brokers, faults {','.join(opts.faults)}, "
        f"{opts.producers} producers, clients "
        f"{','.join(opts.clients[p % len(opts.clients)] for p in range(opts.producers))}",
        links,
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
    kinds_ = ("send", "poll", "commit", "create_topic", "delete_topic")
    for kind in (*kinds_, *(("txn",) if opts.transactions else ())):
        outcomes = Counter(op.outcome for op in history if op.kind == kind)
        lines.append(
            f"{kind:<12} {outcomes['ok']:>8} {outcomes['failed']:>8} {outcomes['unknown']:>8}"
        )
    lines += ["", f"{'anomaly':<20} count"]
    lines += [f"{kind:<20} {counts[kind]}" for kind in ANOMALY_KINDS]
    traced_counts = Counter(a.kind for a in traced)
    lines += [f"{kind:<20} {traced_counts[kind]}" for kind in TRACE_ANOMALY_KINDS]
    for record in injector.done:
        if record.detail:
            lines.append(
                f"fault {record.fault.kind} at {record.fault.start}s: {record.detail}"
            )
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
