"""ZooKeeper mode against KRaft on the same jobs, in one run (seed 004).

Each case is a fresh cluster of real processes (``minikafka.broker.testing.ProcessCluster``,
what ``make cluster`` and ``make cluster MODE=zk`` run): three brokers, and either one
KRaft controller node or Debian's ZooKeeper with the controller elected among the brokers.
Both modes detect a dead broker after the same 6 s (``broker.session.timeout.ms`` in
KRaft, ``zookeeper.session.timeout.ms`` in ZooKeeper mode). For 1,000 and 10,000
partitions (``--quick``: 200):

- **topic creation**: the partitions as topics of 100 partitions, RF 2, one CreateTopics
  at a time to the controller (through a broker in ZooKeeper mode's case, which forwards
  it); each answer comes once the partitions exist (KRaft: their records are committed;
  ZooKeeper mode: the controller's watch fired and the state znodes are written).
  Quoted: partitions created per second. Ceiling, in the same run: ZooKeeper mode's
  writes alone, the same znodes (one assignment and 100 state znodes per topic, one
  transaction per topic, as the controller writes them) written by this process to the
  same kind of server;
- **metadata propagation**: with the partitions in place, one more topic of one
  partition; from sending CreateTopics to the moment every broker's own Metadata lists
  it with a leader (each broker asked every 5 ms). Ceiling: one Metadata round trip;
- **failover**: SIGKILL the broker that leads the most partitions (in ZooKeeper mode, the
  controller broker: the controller and the leaders fail together), then time until a
  surviving broker's Metadata shows every partition led by a live broker. Ceiling: the
  6 s session timeout both modes wait out (measured from the broker's last heartbeat or
  ZooKeeper ping, so a kill just after one can be noticed a little sooner than 6 s).

Quoted: each figure with its ceiling and their ratio; one run per case (a 10,000-partition
cluster takes minutes to build).
"""

from __future__ import annotations

import collections
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.response import MetadataResponse

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.client import AsyncAdminClient
from minikafka.client._async_admin import metadata_request
from minikafka.net import NetworkClient, Node
from minikafka.tools._connection import connect
from minikafka.tools._topics import create_topic
from minikafka.zk import (
    Create,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    ZkClient,
    ZooKeeperServer,
)

from ._common import (
    Report,
    bar_chart_svg,
    machine_facts,
    markdown_table,
    now_utc,
    report_header,
)

NAME = "zookeeper_mode"
PER_TOPIC = 100
SESSION_MS = 6000
OVERRIDES = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": str(SESSION_MS),
    "zookeeper.session.timeout.ms": str(SESSION_MS),
    "default.replication.factor": "2",
    "offsets.topic.replication.factor": "1",
}
MODES = ("kraft", "zookeeper")


@attrs.frozen
class Settings:
    sizes: tuple[int, ...]

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        return cls((200,) if quick else (1_000, 10_000))


@attrs.frozen
class Case:
    mode: str
    partitions: int
    creation_seconds: float
    propagation_seconds: float
    failover_seconds: float
    killed: int

    @property
    def created_per_second(self) -> float:
        return self.partitions / self.creation_seconds


@contextmanager
def _cluster(root: Path, mode: str) -> Iterator[ProcessCluster]:
    ports = free_ports(4)
    cluster = ProcessCluster.create(
        root,
        3,
        controller_port=ports[0],
        broker_ports=ports[1:],
        overrides=OVERRIDES,
        zookeeper=mode == "zookeeper",
        zookeeper_port=ports[0],
    )
    try:
        cluster.up(timeout=120)
        yield cluster
    finally:
        cluster.kill_all()


async def _metadata(
    client: NetworkClient, node: Node, topics: list[str] | None
) -> MetadataResponse:
    response = await client.send(node, metadata_request(topics))
    assert isinstance(response, MetadataResponse)
    return response


async def _create(cluster: ProcessCluster, partitions: int) -> float:
    start = time.perf_counter()
    async with connect(
        cluster.bootstrap, client_id="bench", request_timeout_ms=120_000
    ) as tool:
        for t in range(partitions // PER_TOPIC):
            await create_topic(
                tool, f"t{t}", partitions=PER_TOPIC, replication_factor=2
            )
    return time.perf_counter() - start


async def _propagation(cluster: ProcessCluster) -> tuple[float, float]:
    """(seconds until every broker lists the new topic with a leader, one round trip)."""
    nodes = [Node(b, cluster.host, p) for b, p in cluster.broker_ports.items()]
    async with NetworkClient.open(client_id="bench-probe") as client:
        round_trip = time.perf_counter()
        await _metadata(client, nodes[0], ["absent"])
        round_trip = time.perf_counter() - round_trip
        async with connect(cluster.bootstrap, client_id="bench") as tool:
            start = time.perf_counter()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_create_probe, tool)
                waiting = set(range(len(nodes)))
                with trio.fail_after(60):
                    while waiting:
                        for i in list(waiting):
                            answer = await _metadata(client, nodes[i], ["probe"])
                            topic = answer.topics[0]
                            led = topic.error_code is ErrorCode.none and all(
                                p.leader_id >= 0 for p in topic.partitions
                            )
                            if led and topic.partitions:
                                waiting.discard(i)
                        await trio.sleep(0.005)
                elapsed = time.perf_counter() - start
    return elapsed, round_trip


async def _create_probe(tool: AsyncAdminClient) -> None:
    await create_topic(tool, "probe", partitions=1, replication_factor=2)


async def _leaders(cluster: ProcessCluster, node: Node) -> collections.Counter[int]:
    async with NetworkClient.open(client_id="bench-leaders") as client:
        answer = await _metadata(client, node, None)
    return collections.Counter(
        int(p.leader_id)
        for t in answer.topics
        if not str(t.name).startswith("__")
        for p in t.partitions
    )


def _failover(cluster: ProcessCluster, mode: str) -> tuple[float, int]:
    first = Node(
        min(cluster.broker_ports), cluster.host, cluster.port(min(cluster.broker_ports))
    )
    if mode == "zookeeper":
        victim = trio.run(_controller_of, cluster)
    else:
        victim = trio.run(_leaders, cluster, first).most_common(1)[0][0]
    survivor = next(b for b in cluster.broker_ports if b != victim)
    node = Node(survivor, cluster.host, cluster.port(survivor))
    cluster.signal(victim, signal.SIGKILL)
    start = time.perf_counter()
    deadline = start + 180
    while time.perf_counter() < deadline:
        try:
            leaders = trio.run(_leaders, cluster, node)
        except Exception:
            leaders = collections.Counter({-1: 1})
        if not set(leaders) & {victim, -1}:
            return time.perf_counter() - start, victim
        time.sleep(0.05)  # polling the survivor's Metadata, inside the deadline
    return float("nan"), victim


async def _controller_of(cluster: ProcessCluster) -> int:
    async with connect(cluster.bootstrap, client_id="bench") as tool:
        await tool.metadata([])
        return tool.controller_id


def _zookeeper_ceiling(root: Path, partitions: int) -> float:
    """ZooKeeper mode's writes alone: the same znodes, one transaction per topic."""
    server = ZooKeeperServer(root / f"ceiling-zookeeper-{partitions}", free_ports(1)[0])
    server.start()

    async def write() -> float:
        client = ZkClient(server.connect_string)
        await client.connect()
        try:
            start = time.perf_counter()
            for t in range(partitions // PER_TOPIC):
                assignment = TopicAssignment(
                    {p: (p % 3, (p + 1) % 3) for p in range(PER_TOPIC)}
                )
                ops = [
                    Create(f"/brokers/topics/t{t}", assignment.encode(), parents=True)
                ]
                ops += [
                    Create(
                        f"/brokers/topics/t{t}/partitions/{p}/state",
                        LeaderIsrAndControllerEpoch(
                            p % 3, 0, (p % 3, (p + 1) % 3), 1
                        ).encode(),
                        parents=True,
                    )
                    for p in range(PER_TOPIC)
                ]
                await client.transaction(ops)
            return time.perf_counter() - start
        finally:
            await client.close()

    try:
        return trio.run(write)
    finally:
        server.kill()


def run(quick: bool = False) -> Report:
    settings = Settings.choose(quick)
    started, clock = now_utc(), time.perf_counter()
    cases: list[Case] = []
    ceilings: dict[int, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="minikafka-bench-zk-") as scratch:
        for size in settings.sizes:
            for mode in MODES:
                with _cluster(Path(scratch) / f"{mode}-{size}", mode) as cluster:
                    creation = trio.run(_create, cluster, size)
                    propagation, round_trip = trio.run(_propagation, cluster)
                    failover, killed = _failover(cluster, mode)
                case = Case(mode, size, creation, propagation, failover, killed)
                cases.append(case)
                print(
                    f"  {mode:<9} {size:>6} partitions: created {case.created_per_second:,.0f}/s,"
                    f" every broker knew a new topic after {propagation * 1000:,.0f} ms,"
                    f" failover {failover:.1f} s",
                    flush=True,
                )
            ceilings[size] = (_zookeeper_ceiling(Path(scratch), size), round_trip)
    rows = []
    for case in cases:
        zk_write, round_trip = ceilings[case.partitions]
        ceiling_rate = case.partitions / zk_write
        rows.append(
            [
                case.mode,
                f"{case.partitions:,}",
                f"{case.created_per_second:,.0f}",
                f"{ceiling_rate:,.0f}",
                f"{case.created_per_second / ceiling_rate:.2f}x",
                f"{case.propagation_seconds * 1000:,.0f}",
                f"{round_trip * 1000:.1f}",
                f"{case.failover_seconds:.1f}",
                f"{SESSION_MS / 1000:.0f}",
            ]
        )
    table = markdown_table(
        [
            "mode",
            "partitions",
            "created/s",
            "ceiling: ZooKeeper writes alone/s",
            "ratio",
            "new topic on every broker, ms",
            "ceiling: one Metadata, ms",
            "failover, s",
            "ceiling: session timeout, s",
        ],
        rows,
    )
    document: dict[str, object] = {
        **report_header(NAME, __doc__, quick, 1, started, clock),
        "settings": attrs.asdict(settings),
        "overrides": OVERRIDES,
        "machine": machine_facts(),
        "cases": [
            {**attrs.asdict(c), "created_per_second": c.created_per_second}
            for c in cases
        ],
        "ceilings": {
            str(size): {"zookeeper_writes_s": z, "metadata_round_trip_s": r}
            for size, (z, r) in ceilings.items()
        },
    }
    chart = bar_chart_svg(
        "ZooKeeper mode and KRaft: failover after a broker is killed",
        "seconds",
        [
            (
                f"{size:,} partitions",
                [(c.mode, c.failover_seconds) for c in cases if c.partitions == size]
                + [("session timeout", SESSION_MS / 1000)],
            )
            for size in settings.sizes
        ],
    )
    return Report(NAME, document, table, chart)
