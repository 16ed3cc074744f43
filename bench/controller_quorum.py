"""The metadata quorum over real processes: what a commit costs with one controller and
with three, and how long the quorum is without a leader when its active controller dies
(seed 004, KIP-595).

Each cluster is ``minikafka.broker.testing.ProcessCluster`` (what ``minikafka cluster up
--controllers N`` runs): controllers 0..C-1 (``process.roles=controller``) and one broker
(node C), each a ``python -m minikafka.broker broker`` process of its own, with Kafka's
default ``quorum.*`` timings. This process talks to the controllers' listener directly
(``NetworkClient``, what a broker's forwarding does), not through the broker.

**Commit latency.** The bench finds the active controller (the voter that answers
DescribeQuorum; the others answer NOT_LEADER_OR_FOLLOWER), then sends it CreateTopics v4
of one new topic (1 partition, RF 1, ``timeout`` 30 s) at a time and waits for the answer.
The controller answers once the topic's records are committed: with one voter, once its
log is flushed; with three, once the leader and one follower have flushed them (the
follower's next fetch tells the leader, which moves the high watermark). Each
round trip is timed; ``TOPICS`` of them per run, ``REPEATS`` runs on fresh clusters,
interleaved, the median run quoted with the range:

- ``1 controller``: one voter, its own majority;
- ``3 controllers``: a Raft quorum, commits need a follower's fetch and fsync.

Ceilings, in the same run: what the disk allows (``bench.raft_quorum``'s ``_fsync_case``):
``os.write`` + ``os.fsync`` of 100 bytes once (the floor of one durable voter) and twice
in a row (a leader and the one follower that makes a majority of three, not overlapped).

Beside each run, the CPU every process used over it (% of one core) and what the rest
of the machine used: two or four processes share the machine's cores, and each node
traces to JSON Lines (``ProcessCluster`` starts every node with ``--trace-dir``), in
every case alike.

**Failover.** In the 3-controller cluster, ``FAILOVERS`` times: leave the quorum idle for
``SETTLE`` seconds plus a random part of the leader's 500 ms hold of an idle fetch (so
the kill does not always come just after the followers last heard from their leader),
SIGKILL the active controller and time from the kill to the first CreateTopics a
surviving controller acknowledges (a task per survivor sends one creation after another,
each with a short timeout, ``PROBE_PAUSE`` apart, until one is answered without error);
then restart the killed controller and wait until it has caught up (DescribeQuorum:
every voter's log end offset equal to the leader's) before the next kill. The expected
order, in the same run: the simulator's failover over as many crashes
(``bench.raft_quorum.failover_times``, virtual time, the same defaults) and the
configured bound, ``quorum.fetch.timeout.ms`` plus up to two election timeouts plus the
election backoff. Both are context, not pass/fail: a real failover adds a process's
scheduling, the wire and the new leader's first flush.

Quoted: commits/s and commit latency percentiles; failover seconds per kill, median, max.
"""

from __future__ import annotations

import datetime
import itertools
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
import trio
from kio.schema.create_topics.v4 import request as ct_req
from kio.schema.create_topics.v4 import response as ct_res
from kio.schema.describe_quorum.v1 import response as dq_res
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from minikafka.broker.testing import ClusterError, ProcessCluster, free_ports
from minikafka.net import ClientError, NetworkClient, Node
from minikafka.raft import QuorumInfo
from minikafka.raft._config import RaftConfig
from minikafka.raft._describe_wire import (
    DescribeQuorumError,
    decode_describe_quorum_response,
    encode_describe_quorum_request,
)

from ._common import (
    BenchError,
    Report,
    bar_chart_svg,
    cpu_percent,
    format_percent,
    latency_summary,
    machine_busy_seconds,
    machine_facts,
    markdown_table,
    median_run,
    now_utc,
    own_cpu_seconds,
    process_cpu_seconds,
    report_header,
)
from .raft_quorum import _fsync_case, failover_times

NAME = "controller_quorum"
TOPICS = 300
QUICK_TOPICS = 30
REPEATS = 3
FAILOVERS = 20
QUICK_FAILOVERS = 3
CONTROLLER_COUNTS = (1, 3)
OVERRIDES = {
    # As bench/cluster_replication.py; and one broker cannot hold three replicas.
    "min.insync.replicas": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
}
CREATE_TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))
PROBE_TIMEOUT = 1.0
"""A failover probe not answered within this is given up (its connection closed) and
sent again under a new name."""
PROBE_PAUSE = 0.01
"""Between a survivor's refusal (NOT_CONTROLLER) and the next probe: the resolution of
the failover figure, and what keeps the probes from taking the CPU the election needs."""
WAIT = 60.0
"""Deadline of every wait that is not measured (a leader, a warm-up, a catch-up)."""
POLL = 0.05
SETTLE = 1.0
"""Seconds the quorum is left alone before a kill, after the previous catch-up; plus a
random part up to the leader's hold of an idle fetch (seeded: the same every run)."""
FETCH_MAX_WAIT = RaftConfig().fetch_max_wait
OTHER_CPU_WARNING = 20.0
"""Above this share of a core used by other processes, the table warns."""


@attrs.frozen
class Settings:
    topics: int
    repeats: int
    failovers: int
    probe_timeout_s: float
    probe_pause_s: float

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        if quick:
            return cls(QUICK_TOPICS, 1, QUICK_FAILOVERS, PROBE_TIMEOUT, PROBE_PAUSE)
        return cls(TOPICS, REPEATS, FAILOVERS, PROBE_TIMEOUT, PROBE_PAUSE)


@attrs.frozen
class Commits:
    case: str
    topics: int
    seconds: float
    """The sum of the round trips (they run one after another)."""
    commits_per_second: float
    latency_ms: dict[str, float]
    cpu_percent: dict[str, float | None]
    """Over the timed stretch, % of one core: each node (``leader``, ``follower-N``,
    ``broker``), this process (``bench``) and the rest of the machine (``other``)."""
    latencies_ms: list[float] = attrs.field(repr=False)
    """Every round trip, in order: whether they grow with the number of topics."""


@attrs.frozen
class Failover:
    killed: int
    new_leader: int
    seconds: float
    """From the SIGKILL to the first creation the new leader acknowledged."""
    probes: int
    refusals: dict[str, int]
    """Error name (or ``timeout``/``disconnected``) -> probes answered so."""
    rejoin_seconds: float
    """From restarting the killed controller to every voter at the leader's log end."""
    idle_before_s: float
    """How long the quorum was left alone (no request from the bench) before the kill."""


@attrs.define
class CpuReading:
    """CPU seconds of named processes, this one and the whole machine, at one moment."""

    pids: dict[str, int]
    nodes: dict[str, float | None]
    own: float
    machine: float | None
    at: float

    @classmethod
    def take(cls, pids: dict[str, int]) -> CpuReading:
        nodes = {name: process_cpu_seconds(pid) for name, pid in pids.items()}
        return cls(
            pids, nodes, own_cpu_seconds(), machine_busy_seconds(), time.perf_counter()
        )

    def since(self, before: CpuReading) -> dict[str, float | None]:
        """Each process's share of a core between ``before`` and this reading, and
        ``other``: the machine's busy time less all of them."""
        seconds = self.at - before.at
        shares = {
            name: cpu_percent(before.nodes[name], self.nodes[name], seconds)
            for name in self.pids
        }
        shares["bench"] = cpu_percent(before.own, self.own, seconds)
        machine = cpu_percent(before.machine, self.machine, seconds)
        known = [v for v in shares.values() if v is not None]
        shares["other"] = None if machine is None else max(0.0, machine - sum(known))
        return shares


def _pids(cluster: ProcessCluster, leader: int) -> dict[str, int]:
    """The running nodes by role, in this order: ``leader``, ``follower-N``, ``broker``."""
    roles = {leader: "leader"}
    roles.update({c: f"follower-{c}" for c in cluster.controller_ids if c != leader})
    roles.update(dict.fromkeys(cluster.broker_ports, "broker"))
    return {
        name: pid
        for node, name in roles.items()
        if (pid := cluster.pid(node)) is not None
    }


# --- the cluster ---------------------------------------------------------------------------


@contextmanager
def _cluster(root: Path, controllers: int) -> Iterator[ProcessCluster]:
    ports = free_ports(controllers + 1)
    try:
        cluster = ProcessCluster.create(
            root,
            1,
            controllers=controllers,
            controller_ports=ports[:controllers],
            broker_ports=ports[controllers:],
            overrides=OVERRIDES,
        )
    except ClusterError as e:
        raise BenchError(str(e)) from e
    try:
        cluster.up()
        yield cluster
    except ClusterError as e:
        raise BenchError(str(e)) from e
    finally:
        cluster.kill_all()


def _node(cluster: ProcessCluster, controller: int) -> Node:
    return Node(controller, cluster.host, cluster.listen_port(controller))


def _create_request(name: str) -> ct_req.CreateTopicsRequest:
    topic = ct_req.CreatableTopic(
        name=TopicName(name),
        num_partitions=i32(1),
        replication_factor=i16(1),
        assignments=(),
        configs=(),
    )
    return ct_req.CreateTopicsRequest(topics=(topic,), timeout=CREATE_TIMEOUT)


async def _create(client: NetworkClient, node: Node, name: str) -> ErrorCode:
    """CreateTopics of ``name`` at ``node``: the answer's error code for it."""
    response = await client.send(node, _create_request(name))
    if (
        not isinstance(response, ct_res.CreateTopicsResponse)
        or len(response.topics) != 1
    ):
        raise BenchError(
            f"node {node.node_id}: unexpected answer to CreateTopics: {response!r}"
        )
    return response.topics[0].error_code


async def _describe(client: NetworkClient, node: Node) -> QuorumInfo | None:
    """The quorum as ``node`` describes it; None unless it leads (or if it is down)."""
    try:
        response = await client.send(node, encode_describe_quorum_request())
    except ClientError:
        return None
    if not isinstance(response, dq_res.DescribeQuorumResponse):
        raise BenchError(f"node {node.node_id}: unexpected answer to DescribeQuorum")
    try:
        return decode_describe_quorum_response(response)
    except DescribeQuorumError:
        return None


async def _leader(client: NetworkClient, cluster: ProcessCluster) -> QuorumInfo:
    """The quorum as its leader describes it, once one of the controllers leads."""
    with trio.move_on_after(WAIT):
        while True:
            for c in cluster.controller_ids:
                if cluster.pid(c) is not None and (
                    info := await _describe(client, _node(cluster, c))
                ):
                    return info
            await trio.sleep(POLL)
    raise BenchError(f"no controller leads the quorum after {WAIT:.0f} s")


async def _warm_up(client: NetworkClient, node: Node, name: str) -> None:
    """Create ``name`` once the broker is registered and unfenced (untimed)."""
    last: object = None
    with trio.move_on_after(WAIT):
        while True:
            try:
                last = await _create(client, node, name)
            except ClientError as e:  # a short timeout of the failover's client
                last = e
            if last in (ErrorCode.none, ErrorCode.topic_already_exists):
                return
            await trio.sleep(POLL)
    raise BenchError(
        f"warm-up creation at node {node.node_id} still failing ({last!r})"
    )


# --- commit latency --------------------------------------------------------------------------


async def _commit_run(
    cluster: ProcessCluster, case: str, prefix: str, topics: int
) -> Commits:
    async with NetworkClient.open(client_id="bench-controller-quorum") as client:
        leader = _node(cluster, (await _leader(client, cluster)).leader_id)
        await _warm_up(client, leader, f"{prefix}-warm-up")
        before = CpuReading.take(_pids(cluster, leader.node_id))
        latencies = []
        for i in range(topics):
            request = _create_request(f"{prefix}-{i}")
            started = time.perf_counter()
            response = await client.send(leader, request)
            latencies.append(time.perf_counter() - started)
            assert isinstance(response, ct_res.CreateTopicsResponse)
            code = response.topics[0].error_code
            if code != ErrorCode.none:
                raise BenchError(
                    f"{prefix}-{i}: controller {leader.node_id} answered {code!r}"
                )
        cpu = CpuReading.take(before.pids).since(before)
    return _commits(case, latencies, cpu)


def _commits(
    case: str, latencies: list[float], cpu: dict[str, float | None]
) -> Commits:
    seconds = sum(latencies)
    return Commits(
        case,
        len(latencies),
        seconds,
        len(latencies) / seconds,
        latency_summary(latencies),
        cpu,
        [round(x * 1000, 3) for x in latencies],
    )


# --- failover --------------------------------------------------------------------------------


async def _first_acknowledged(
    client: NetworkClient,
    cluster: ProcessCluster,
    survivors: list[int],
    names: Iterator[str],
) -> tuple[int, float, int, Counter[str]]:
    """Probe every survivor until one acknowledges a creation: (its id, when, probes,
    refusals by kind)."""
    found: list[tuple[int, float]] = []
    refusals: Counter[str] = Counter()
    probes = 0

    async def probe(controller: int, cancel: trio.CancelScope) -> None:
        nonlocal probes
        node = _node(cluster, controller)
        while True:
            probes += 1
            try:
                code = await _create(client, node, next(names))
            except ClientError as e:
                refusals["timeout" if "timed out" in str(e) else "disconnected"] += 1
            else:
                if code == ErrorCode.none:
                    found.append((controller, time.perf_counter()))
                    cancel.cancel()
                    return
                refusals[code.name.upper()] += 1
            await trio.sleep(PROBE_PAUSE)

    with trio.move_on_after(WAIT) as deadline:
        async with trio.open_nursery() as nursery:
            for controller in survivors:
                nursery.start_soon(probe, controller, nursery.cancel_scope)
    if not found:
        raise BenchError(
            f"no survivor of {survivors} acknowledged a creation within {WAIT:.0f} s "
            f"({dict(refusals)}; deadline hit: {deadline.cancelled_caught})"
        )
    return found[0][0], found[0][1], probes, refusals


async def _caught_up(client: NetworkClient, cluster: ProcessCluster) -> None:
    """Until the leader says every voter's log ends where its own does."""
    with trio.move_on_after(WAIT):
        while True:
            info = await _leader(client, cluster)
            ends = {v.replica_id: v.log_end_offset for v in info.voters}
            if (
                len(ends) == len(cluster.controller_ids)
                and len(set(ends.values())) == 1
            ):
                return
            await trio.sleep(POLL)
    raise BenchError(f"the controllers did not catch up within {WAIT:.0f} s")


async def _failovers(cluster: ProcessCluster, count: int) -> list[Failover]:
    names = (f"failover-{i}" for i in itertools.count())
    done = []
    async with NetworkClient.open(
        client_id="bench-controller-quorum",
        request_timeout=PROBE_TIMEOUT,
        connect_timeout=PROBE_TIMEOUT,
    ) as client:
        info = await _leader(client, cluster)
        await _warm_up(client, _node(cluster, info.leader_id), "failover-warm-up")
        await _caught_up(client, cluster)
        for run in range(count):
            # Idle before the kill, ending at a random point of the followers' 500 ms
            # fetch cycle: right after a catch-up the followers have just heard from the
            # leader, and every kill would find their fetch timers full.
            idle = SETTLE + random.Random(f"failover-{run}").uniform(0, FETCH_MAX_WAIT)
            await trio.sleep(idle)
            leader = (await _leader(client, cluster)).leader_id
            survivors = [c for c in cluster.controller_ids if c != leader]
            killed_at = time.perf_counter()
            cluster.kill(leader)  # SIGKILL, then reaped: a few milliseconds
            client.disconnect(_node(cluster, leader))
            new, acked_at, probes, refusals = await _first_acknowledged(
                client, cluster, survivors, names
            )
            seconds = acked_at - killed_at
            restarted = time.perf_counter()
            await trio.to_thread.run_sync(cluster.start, leader)
            await _caught_up(client, cluster)
            rejoin = time.perf_counter() - restarted
            done.append(
                Failover(leader, new, seconds, probes, dict(refusals), rejoin, idle)
            )
            print(
                f"  failover {run + 1}/{count}: killed {leader}, {new} acknowledged after "
                f"{seconds:.3f} s ({probes} probes); {leader} rejoined in {rejoin:.2f} s",
                flush=True,
            )
    return done


# --- the run -------------------------------------------------------------------------------


def run(quick: bool = False) -> Report:
    settings = Settings.choose(quick)
    started, clock = now_utc(), time.perf_counter()
    runs: dict[str, list[Commits]] = {}
    with tempfile.TemporaryDirectory(prefix="minikafka-bench-quorum-") as scratch:
        # interleaved, fresh clusters: the median is quoted
        for r in range(settings.repeats):
            for controllers in CONTROLLER_COUNTS:
                case = f"{controllers} controller{'s' if controllers > 1 else ''}, 1 broker"
                with _cluster(
                    Path(scratch) / f"commits-{controllers}-{r}", controllers
                ) as c:
                    done = trio.run(
                        _commit_run, c, case, f"c{controllers}-r{r}", settings.topics
                    )
                runs.setdefault(case, []).append(done)
            so_far = ", ".join(
                f"{case} {x[-1].commits_per_second:,.0f}/s" for case, x in runs.items()
            )
            print(f"  run {r + 1}/{settings.repeats}: {so_far}", flush=True)
        for fsyncs in (1, 2):
            case = f"ceiling: {fsyncs} fsync{'s' if fsyncs > 1 else ''}"
            for _ in range(settings.repeats):
                before = CpuReading.take({})
                _, latencies = _fsync_case(fsyncs, settings.topics)
                cpu = CpuReading.take({}).since(before)
                runs.setdefault(case, []).append(_commits(case, latencies, cpu))
        with _cluster(Path(scratch) / "failover", 3) as c:
            before = CpuReading.take({})
            failovers = trio.run(_failovers, c, settings.failovers)
            failover_other = CpuReading.take({}).since(before)["other"]
    commits = [median_run(x, lambda o: o.commits_per_second) for x in runs.values()]
    simulated = failover_times(settings.failovers)
    config = RaftConfig()
    bound = (
        config.fetch_timeout + 2 * config.election_timeout + config.election_backoff_max
    )
    seconds = [f.seconds for f in failovers]
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, settings.repeats, started, clock),
        "settings": attrs.asdict(settings),
        "overrides": OVERRIDES,
        "quorum_config": attrs.asdict(config),
        "machine": machine_facts(),
        "outcomes": [attrs.asdict(o) for o in commits],
        "runs": {case: [attrs.asdict(o) for o in x] for case, x in runs.items()},
        "failover": {
            "runs": [attrs.asdict(f) for f in failovers],
            "median_s": statistics.median(seconds),
            "max_s": max(seconds),
            "min_s": min(seconds),
            # The machine's busy time less this process's, over the whole failover
            # stretch: the cluster's processes are in it, so only a rough sign of load.
            "machine_cpu_percent_less_bench": failover_other,
        },
        "expected": {
            "simulator_virtual_s": {
                "runs": simulated,
                "median": statistics.median(simulated),
                "max": max(simulated),
            },
            "configured_bound_s": bound,
        },
    }
    return Report(
        NAME,
        document,
        _table(commits, runs, failovers, simulated, bound),
        _chart(commits),
    )


def _table(
    commits: list[Commits],
    runs: dict[str, list[Commits]],
    failovers: list[Failover],
    simulated: list[float],
    bound: float,
) -> str:
    rows = []
    for o in commits:
        rates = [x.commits_per_second for x in runs[o.case]]
        spread = f" ({min(rates):,.0f}-{max(rates):,.0f})" if len(rates) > 1 else ""
        rows.append(
            [
                o.case,
                f"{o.topics:,}",
                f"{o.commits_per_second:,.0f}{spread}",
                f"{o.latency_ms['p50_ms']:.3f}",
                f"{o.latency_ms['p99_ms']:.3f}",
                f"{o.latency_ms['max_ms']:.3f}",
                ", ".join(
                    f"{name} {share:.0f}"
                    for name, share in o.cpu_percent.items()
                    if share is not None and name != "other"
                ),
                format_percent(o.cpu_percent["other"]),
            ]
        )
    header = ["case", "commits", "commits/s (range)", "p50 ms", "p99 ms", "max ms"]
    table = markdown_table([*header, "CPU (% of a core)", "other CPU"], rows)
    # The ceilings' runs last well under a second, too short for 10 ms CPU ticks, and
    # their fsyncs' journal writes are the kernel's ("other"): only the clusters count.
    clusters = [o for o in commits if not o.case.startswith("ceiling")]
    busiest = max((o.cpu_percent["other"] or 0.0 for o in clusters), default=0.0)
    if busiest > OTHER_CPU_WARNING:
        table += (
            f"\nwarning: other processes used up to {busiest:.0f}% of a core during the "
            "timed runs: the figures are disturbed"
        )
    seconds = [f.seconds for f in failovers]
    rejoin = [f.rejoin_seconds for f in failovers]
    table += (
        f"\nfailover, 3 controllers, {len(seconds)} SIGKILLs of the active controller "
        f"(kill to the first creation acknowledged): median {statistics.median(seconds):.2f} s, "
        f"max {max(seconds):.2f} s, min {min(seconds):.2f} s"
        f"\n  each: {', '.join(f'{s:.2f}' for s in seconds)}"
        f"\n  the killed controller restarted and caught up in: median "
        f"{statistics.median(rejoin):.2f} s, max {max(rejoin):.2f} s"
        f"\nexpected order: the simulator (virtual time, {len(simulated)} crashes) median "
        f"{statistics.median(simulated):.2f} s, max {max(simulated):.2f} s; configured bound "
        f"quorum.fetch.timeout.ms + 2 x quorum.election.timeout.ms + backoff = {bound:.1f} s"
    )
    return table


def _chart(commits: list[Commits]) -> str:
    return bar_chart_svg(
        "Metadata commits through the controller quorum, real processes",
        "commits/s",
        [("commits/s", [(o.case, o.commits_per_second) for o in commits])],
    )
