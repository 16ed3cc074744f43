"""``minikafka cluster up|down|status|kill N|restart N``: the small supervisor behind
``make cluster`` (:mod:`._process_cluster` does the work).

``up`` lays the cluster out on first use (one controller, ``--brokers`` brokers on
consecutive ports from ``--port``, data under ``--dir``; with ``--zookeeper``, a
ZooKeeper server and brokers in ZooKeeper mode instead) and starts whatever is not
running; ``status`` shows each node's role, port, pid and whether the controller has it
fenced, then every partition's leader and ISR, from the brokers' own Metadata, then how
each running broker's replica fetchers stand (from the ``replica-fetcher-state.json``
each writes into its first log dir): how many partitions fetch, truncate, back off or
fail, and each failed partition with its fetch offset and error.

``unregister --bootstrap-server HOST:PORT --id N`` is not the supervisor's but
``kafka-cluster.sh unregister`` (:mod:`minikafka.tools`), on any KRaft cluster: it
removes a retired broker's registration (KIP-631).

``up --override KEY=VALUE`` (on first use) puts a key in every node's properties, as
Kafka's ``kafka-server-start.sh --override`` does for one broker.

``up --tls`` and ``--sasl`` (on first use) make every listener SSL, SASL_PLAINTEXT or
SASL_SSL, the brokers' own traffic included (:mod:`._secure_cluster`): a throw-away CA
and certificate under ``<dir>/pki``, SCRAM-SHA-512 users, and a client's settings
written beside them and printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import trio
import typer

from minikafka.client import AsyncAdminClient, KafkaException
from minikafka.net.testing import make_pki
from minikafka.tools import (
    ToolError,
    describe_failure,
    lone_errors,
    parse_bootstrap,
    unregister_command,
)

from ._cluster_layout import (
    DEFAULT_BROKER_PORT,
    DEFAULT_CONTROLLER_PORT,
    DEFAULT_ZOOKEEPER_PORT,
    LAYOUT_FILE,
)
from ._process_cluster import ClusterError, ProcessCluster
from ._replica_fetchers import FETCHER_STATE_FILE
from ._secure_cluster import (
    BROKER_USER,
    CLIENT_USER,
    secure_overrides,
    security_protocol,
    write_client_settings,
)

cluster_app = typer.Typer(
    name="cluster",
    help="Run a KRaft cluster on this machine: one controller and several brokers.",
    no_args_is_help=True,
)

Dir = Annotated[Path, typer.Option("--dir", help="the cluster's directory")]


@cluster_app.callback()
def _cluster_group() -> None:
    """Run a KRaft cluster on this machine: one controller and several brokers."""


# kafka-cluster.sh's subcommand, a client tool (minikafka.tools), on any cluster.
cluster_app.command("unregister")(unregister_command)


def _load(root: Path) -> ProcessCluster:
    if not (root / LAYOUT_FILE).exists():
        typer.echo(
            f"minikafka cluster: no cluster in {root} (run `minikafka cluster up`)",
            err=True,
        )
        raise typer.Exit(1)
    return ProcessCluster.load(root)


def _node(cluster: ProcessCluster, node: int) -> int:
    if node not in cluster.node_ids:
        typer.echo(
            f"minikafka cluster: no node {node} (nodes: {cluster.node_ids})", err=True
        )
        raise typer.Exit(2)
    return node


@cluster_app.command()
def up(
    root: Dir = Path("cluster"),
    brokers: Annotated[int, typer.Option(help="brokers, on first use", min=1)] = 3,
    controllers: Annotated[
        int,
        typer.Option(help="controllers, on first use (3 or 5: a Raft quorum)", min=1),
    ] = 1,
    port: Annotated[
        int, typer.Option(help="the first broker's port")
    ] = DEFAULT_BROKER_PORT,
    controller_port: Annotated[
        int, typer.Option(help="the controller's port")
    ] = DEFAULT_CONTROLLER_PORT,
    zookeeper: Annotated[
        bool,
        typer.Option(
            "--zookeeper",
            help="ZooKeeper mode, on first use: a ZooKeeper server and brokers that elect "
            "their controller through it (no controller nodes)",
        ),
    ] = False,
    zookeeper_port: Annotated[
        int, typer.Option(help="ZooKeeper's port (ZooKeeper mode)")
    ] = DEFAULT_ZOOKEEPER_PORT,
    tls: Annotated[
        bool,
        typer.Option(
            "--tls",
            help="on first use: every listener speaks TLS, with a throw-away CA",
        ),
    ] = False,
    sasl: Annotated[
        bool,
        typer.Option(
            "--sasl",
            help="on first use: every listener authenticates with SASL SCRAM-SHA-512",
        ),
    ] = False,
    override: Annotated[
        list[str] | None,
        typer.Option(
            "--override",
            metavar="KEY=VALUE",
            help="on first use: a key every node's properties get (as Kafka's "
            "kafka-server-start.sh --override); repeatable",
        ),
    ] = None,
) -> None:
    """Start the cluster (laying it out first if ``--dir`` has none)."""
    try:
        if (root / LAYOUT_FILE).exists():
            cluster = ProcessCluster.load(root)
        else:
            protocol = security_protocol(tls, sasl)
            overrides = {
                **_overrides(override or []),
                **_secure_layout(root, protocol, zookeeper),
            }
            cluster = ProcessCluster.create(
                root,
                brokers,
                broker_port=port,
                controller_port=controller_port,
                controllers=controllers,
                zookeeper=zookeeper,
                zookeeper_port=zookeeper_port,
                overrides=overrides,
                security_protocol=protocol,
            )
            kind = (
                "ZooKeeper-mode cluster"
                if zookeeper
                else f"cluster {cluster.cluster_id}"
            )
            print(f"minikafka cluster: new {kind} in {cluster.root}")
        cluster.up()
    except ClusterError as exc:
        typer.echo(f"minikafka cluster: {exc}", err=True)
        raise typer.Exit(1) from None
    print(f"minikafka cluster: up; bootstrap servers {cluster.bootstrap}")
    if cluster.security_protocol != "PLAINTEXT":
        _print_client_settings(cluster)
        return  # minikafka's own admin client, which status uses, speaks PLAINTEXT
    _status(cluster)


def _overrides(pairs: list[str]) -> dict[str, str]:
    """``--override KEY=VALUE``s as properties."""
    found = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            typer.echo(
                f"minikafka cluster: --override {pair!r}: not KEY=VALUE", err=True
            )
            raise typer.Exit(2)
        found[key.strip()] = value
    return found


def _secure_layout(root: Path, protocol: str, zookeeper: bool) -> dict[str, str]:
    """The keys of a cluster whose listeners all speak ``protocol``: a throw-away CA
    under ``root/pki`` for TLS, SCRAM users for SASL, and a client's settings."""
    if protocol == "PLAINTEXT":
        return {}
    pki = None
    if "SSL" in protocol:
        pki = make_pki(root / "pki", clients=())
    root.mkdir(parents=True, exist_ok=True)
    write_client_settings(root, protocol, pki)
    listeners = (protocol,) if zookeeper else (protocol, "CONTROLLER")
    return secure_overrides(
        protocol,
        pki,
        listeners=listeners,
        kraft=not zookeeper,
        users={CLIENT_USER[0]: CLIENT_USER[1]},
    )


def _print_client_settings(cluster: ProcessCluster) -> None:
    java = cluster.root / "client.properties"
    rdkafka = cluster.root / "librdkafka.config"
    print(f"minikafka cluster: every listener speaks {cluster.security_protocol}")
    if "SASL" in cluster.security_protocol:
        print(
            f"  clients log in as {CLIENT_USER[0]}/{CLIENT_USER[1]} (SCRAM-SHA-512); "
            f"the brokers as {BROKER_USER[0]}; kcat (librdkafka 2.0.2, whose SCRAM Kafka "
            "refuses): -X sasl.mechanism=PLAIN"
        )
    print(f"  Kafka's tools: --command-config {java}")
    print(f"  librdkafka (kcat -F, confluent-kafka): {rdkafka}")
    for line in rdkafka.read_text().splitlines():
        print(f"    {line}")


@cluster_app.command()
def down(root: Dir = Path("cluster")) -> None:
    """Stop every node: the brokers (controlled shutdown), then the controller."""
    cluster = _load(root)
    try:
        cluster.down()
    except ClusterError as exc:
        typer.echo(f"minikafka cluster: {exc}", err=True)
        raise typer.Exit(1) from None
    print("minikafka cluster: down")


@cluster_app.command()
def status(root: Dir = Path("cluster")) -> None:
    """Each node's role, pid and fencing; each partition's leader and ISR."""
    _status(_load(root))


@cluster_app.command()
def kill(node: int, root: Dir = Path("cluster")) -> None:
    """SIGKILL node N: it stops dead, as a crashed machine does."""
    cluster = _load(root)
    try:
        cluster.kill(_node(cluster, node))
    except ClusterError as exc:
        typer.echo(f"minikafka cluster: {exc}", err=True)
        raise typer.Exit(1) from None
    print(f"minikafka cluster: node {node} killed")


@cluster_app.command()
def restart(node: int, root: Dir = Path("cluster")) -> None:
    """Start node N again (stopping it first if it runs)."""
    cluster = _load(root)
    try:
        cluster.restart(_node(cluster, node))
    except ClusterError as exc:
        typer.echo(f"minikafka cluster: {exc}", err=True)
        raise typer.Exit(1) from None
    print(f"minikafka cluster: node {node} running")


def _status(cluster: ProcessCluster) -> None:
    alive: set[int] | None = None
    partitions: list[tuple[str, int, int, list[int], list[int]]] = []
    if any(cluster.pid(b) is not None for b in cluster.broker_ports):
        try:
            with lone_errors():
                alive, partitions = trio.run(_metadata, cluster)
        except ToolError as exc:
            print(f"(no broker answered Metadata: {exc})")
        except KafkaException as exc:
            print(f"(no broker answered Metadata: {describe_failure(exc.args[0])})")
    print(f"{'NODE':<6}{'ROLE':<12}{'PORT':<7}{'PID':<9}STATE")
    if cluster.zookeeper_port is not None:
        pid = cluster.zookeeper.pid()
        shown = "-" if pid is None else str(pid)
        state = "stopped" if pid is None else "running"
        print(f"{'zk':<6}{'zookeeper':<12}{cluster.zookeeper_port:<7}{shown:<9}{state}")
    for node in cluster.node_ids:
        pid = cluster.pid(node)
        if pid is None:
            state = "stopped"
        elif node in cluster.controller_ports or alive is None:
            state = "running"
        else:
            absent = (
                "running, not registered"
                if cluster.zookeeper_mode
                else "running, fenced"
            )
            state = "running" if node in alive else absent
        shown = "-" if pid is None else str(pid)
        print(
            f"{node:<6}{cluster.role(node):<12}{cluster.port(node):<7}{shown:<9}{state}"
        )
    if partitions:
        print()
        print(f"{'TOPIC':<28}{'PARTITION':<11}{'LEADER':<8}{'REPLICAS':<12}ISR")
        for topic, index, leader, replicas, isr in partitions:
            print(
                f"{topic:<28}{index:<11}{leader:<8}"
                f"{','.join(map(str, replicas)):<12}{','.join(map(str, isr))}"
            )
    _fetcher_status(cluster)


_FETCH_STATES = ("fetching", "truncating", "delayed", "failed")


def _fetcher_status(cluster: ProcessCluster) -> None:
    """Each running broker's replica fetchers, as the broker last wrote them down."""
    reports: dict[int, dict[str, object]] = {}
    for node in cluster.broker_ports:
        if cluster.pid(node) is None:
            continue  # a stopped broker's file says how it stood when it stopped
        for log_dir in cluster.properties(node).get("log.dirs", "").split(","):
            path = Path(log_dir) / FETCHER_STATE_FILE
            try:
                reports[node] = json.loads(path.read_text())
                break
            except (OSError, ValueError):
                continue  # not written yet (it follows nothing), or another dir's
    if not reports:
        return
    print()
    print("REPLICA FETCHERS")
    print(f"{'BROKER':<8}" + "".join(f"{state.upper():<12}" for state in _FETCH_STATES))
    failed: list[str] = []
    for node, report in sorted(reports.items()):
        counts = report.get("states", {})
        assert isinstance(counts, dict)
        print(f"{node:<8}" + "".join(f"{counts.get(s, 0):<12}" for s in _FETCH_STATES))
        rows = report.get("failed", [])
        assert isinstance(rows, list)
        failed += [
            f"broker {node}: {row['topic']}-{row['partition']} from broker "
            f"{row['leader']} at offset {row['fetch_offset']}, failed "
            f"{row['failures']} times: {row['error']}"
            for row in rows
        ]
    for line in failed:
        print(f"FAILED  {line}")


async def _metadata(
    cluster: ProcessCluster,
) -> tuple[set[int], list[tuple[str, int, int, list[int], list[int]]]]:
    config = {
        "bootstrap.servers": parse_bootstrap(cluster.bootstrap),
        "client.id": "minikafka-cluster",
        "request.timeout.ms": 5000,
    }
    async with AsyncAdminClient.open(config) as admin:
        response = await admin.metadata(None)
    rows = [
        (
            str(t.name),
            int(p.partition_index),
            int(p.leader_id),
            [int(r) for r in p.replica_nodes],
            [int(r) for r in p.isr_nodes],
        )
        for t in sorted(response.topics, key=lambda t: str(t.name))
        for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
    ]
    return {int(b.node_id) for b in response.brokers}, rows
