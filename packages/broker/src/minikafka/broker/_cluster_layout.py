"""The layout of a cluster of processes on one machine, written once and read back:
which nodes there are, where each listens, what each node's ``server.properties`` says
and where its files are (:class:`ClusterLayout`; :class:`~._process_cluster.ProcessCluster`
runs the nodes it describes).

One controller-only node (``process.roles=controller``, node id 0) and N broker-only nodes
(ids 1..N), each a ``minikafka broker`` process of its own, laid out under one root
directory the way an operator would lay out separate machines. With ``controllers=3``
(or 5) the controllers are a Raft quorum: node ids 0..C-1 on ports counting
down from the first controller's (9090, 9089, 9088), and the brokers' ids follow them
(C..C+N-1), as Kafka's own multi-node examples number controllers first:

.. code-block:: text

    cluster/
      cluster.json              the layout: cluster id, ports, broker overrides
      node-0.properties         each node's server.properties
      node-0/                   its log.dirs (and metadata.log.dir)
      node-0.log                its stdout and stderr, appended across restarts
      node-0.pid                the pid of its running process
      traces/                   every node's trace files (``--trace-dir``)

With ``zookeeper=True`` the cluster is in ZooKeeper mode instead: no controller node,
brokers numbered from 0, and a ZooKeeper server under ``zookeeper/`` on
``zookeeper_port``.

The layout is written once (:meth:`ClusterLayout.create`: a cluster id from
``storage random-uuid``, every node formatted with it, as kafka-storage.sh would) and
read back by each later command (:meth:`ClusterLayout.load`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

import attrs

from ._config import KafkaConfig
from ._meta_properties import format_storage, new_cluster_id

CONTROLLER_ID = 0
LAYOUT_FILE = "cluster.json"
DEFAULT_BROKER_PORT = 9092
DEFAULT_CONTROLLER_PORT = 9090
DEFAULT_ZOOKEEPER_PORT = 2181
CLUSTER_DEFAULTS: Mapping[str, str] = {
    # Kafka's defaults for a cluster (its sample configs set 1 for a single node).
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
}


@attrs.define(eq=False)
class ClusterLayout:
    """A cluster's nodes, ports and settings, as the files under ``root`` record them:
    what each node's ``server.properties`` says, and where its files are."""

    root: Path
    cluster_id: str
    controller_ports: dict[int, int]
    broker_ports: dict[int, int]
    overrides: dict[str, str] = attrs.field(factory=dict)
    """Applied to every node's properties (the brokers' and the controller's)."""
    replication_ports: dict[int, tuple[int, int]] = attrs.field(factory=dict)
    """Broker -> (port, advertised port) of a REPLICATION listener that brokers reach each
    other by (``inter.broker.listener.name``); a test advertises a fault proxy's port to
    put the proxy on every link into that broker. Empty: PLAINTEXT for everything."""
    controller_listen_ports: dict[int, int] = attrs.field(factory=dict)
    """Controller -> the port it listens on when that is not the one the voters name (a
    test puts a fault proxy on the named port). Empty: each listens where it is named."""
    zookeeper_port: int | None = None
    """ZooKeeper mode's server port; None: a KRaft cluster."""
    racks: dict[int, str] = attrs.field(factory=dict)
    """Broker -> its ``broker.rack``; a broker not named has none."""
    host: str = "127.0.0.1"
    security_protocol: str = "PLAINTEXT"
    """What every listener speaks; the brokers' listener is named after it (``SSL://``,
    ``SASL_SSL://``) and the controllers' ``CONTROLLER`` maps to it. The keys it needs
    (stores, JAAS lines) come in ``overrides`` (:mod:`._secure_cluster` writes them)."""

    @classmethod
    def create(
        cls,
        root: Path,
        brokers: int = 3,
        *,
        broker_port: int = DEFAULT_BROKER_PORT,
        controller_port: int = DEFAULT_CONTROLLER_PORT,
        broker_ports: Sequence[int] | None = None,
        controllers: int = 1,
        controller_ports: Sequence[int] | None = None,
        replication_ports: Mapping[int, tuple[int, int]] | None = None,
        controller_listen_ports: Mapping[int, int] | None = None,
        overrides: Mapping[str, str] | None = None,
        zookeeper: bool = False,
        zookeeper_port: int = DEFAULT_ZOOKEEPER_PORT,
        racks: Mapping[int, str] | None = None,
        security_protocol: str = "PLAINTEXT",
    ) -> Self:
        """Write the layout and every node's properties, and format every node. Brokers
        listen on consecutive ports from ``broker_port``, or on ``broker_ports``; the
        controllers on ports down from ``controller_port``, or on ``controller_ports``."""
        root = Path(root).resolve()
        ports = list(broker_ports or range(broker_port, broker_port + brokers))
        if zookeeper:
            controllers = 0  # the brokers elect their controller through ZooKeeper
        cports = list(
            controller_ports
            or range(controller_port, controller_port - controllers, -1)
        )
        cluster = cls(
            root,
            "" if zookeeper else new_cluster_id(),  # ZooKeeper mode's is /cluster/id's
            {c: cports[c] for c in range(controllers)},
            {controllers + b: ports[b] for b in range(brokers)},
            {**CLUSTER_DEFAULTS, **(overrides or {})},
            dict(replication_ports or {}),
            dict(controller_listen_ports or {}),
            zookeeper_port if zookeeper else None,
            dict(racks or {}),
            security_protocol=security_protocol,
        )
        root.mkdir(parents=True, exist_ok=True)
        (root / "traces").mkdir(exist_ok=True)
        layout = {
            "cluster_id": cluster.cluster_id,
            "controller_ports": {
                str(c): p for c, p in cluster.controller_ports.items()
            },
            "broker_ports": {str(b): p for b, p in cluster.broker_ports.items()},
            "overrides": cluster.overrides,
            "replication_ports": {
                str(b): list(p) for b, p in cluster.replication_ports.items()
            },
            "controller_listen_ports": {
                str(c): p for c, p in cluster.controller_listen_ports.items()
            },
            "zookeeper_port": cluster.zookeeper_port,
            "racks": {str(b): rack for b, rack in cluster.racks.items()},
            "security_protocol": cluster.security_protocol,
        }
        (root / LAYOUT_FILE).write_text(json.dumps(layout, indent=2) + "\n")
        for node in cluster.node_ids:
            cluster.add_node(node)
        return cluster

    @classmethod
    def load(cls, root: Path) -> Self:
        root = Path(root).resolve()
        layout = json.loads((root / LAYOUT_FILE).read_text())
        if "controller_ports" in layout:
            controllers = {
                int(c): int(p) for c, p in layout["controller_ports"].items()
            }
        else:  # a layout written before several controllers existed
            controllers = {CONTROLLER_ID: int(layout["controller_port"])}
        return cls(
            root,
            layout["cluster_id"],
            controllers,
            {int(b): int(p) for b, p in layout["broker_ports"].items()},
            dict(layout["overrides"]),
            {
                int(b): (int(p[0]), int(p[1]))
                for b, p in layout["replication_ports"].items()
            },
            {
                int(c): int(p)
                for c, p in layout.get("controller_listen_ports", {}).items()
            },
            layout.get("zookeeper_port"),
            {int(b): str(rack) for b, rack in layout.get("racks", {}).items()},
            security_protocol=layout.get("security_protocol", "PLAINTEXT"),
        )

    def add_node(self, node: int) -> None:
        """Write ``node``'s properties and format its directory (a new broker joins with
        the cluster's id, as an operator adds a machine)."""
        if node not in self.controller_ports and node not in self.broker_ports:
            self.broker_ports[node] = max(self.broker_ports.values()) + 1
            self._save_ports()
        props = self.properties(node)
        self.properties_file(node).write_text(
            "".join(f"{key}={value}\n" for key, value in props.items())
        )
        config = KafkaConfig.from_properties(props)
        if config.zookeeper_mode:
            return  # ZooKeeper mode's directories need no formatting
        format_storage(
            config.broker.log_dirs,
            config.metadata_log_dir,
            self.cluster_id,
            node,
            ignore_formatted=True,
        )

    def _save_ports(self) -> None:
        path = self.root / LAYOUT_FILE
        layout = json.loads(path.read_text())
        layout["broker_ports"] = {str(b): p for b, p in self.broker_ports.items()}
        path.write_text(json.dumps(layout, indent=2) + "\n")

    @property
    def node_ids(self) -> list[int]:
        return [*sorted(self.controller_ports), *sorted(self.broker_ports)]

    @property
    def controller_ids(self) -> list[int]:
        return sorted(self.controller_ports)

    @property
    def controller_port(self) -> int:
        """The first controller's port."""
        return self.controller_ports[min(self.controller_ports)]

    @property
    def bootstrap(self) -> str:
        return ",".join(
            f"{self.host}:{p}" for _, p in sorted(self.broker_ports.items())
        )

    @property
    def zookeeper_mode(self) -> bool:
        return self.zookeeper_port is not None

    def properties(self, node: int) -> dict[str, str]:
        if self.zookeeper_port is not None:
            return self._zookeeper_mode_properties(node, self.zookeeper_port)
        voters = ",".join(
            f"{c}@{self.host}:{p}" for c, p in sorted(self.controller_ports.items())
        )
        common = {
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": self._protocol_map("CONTROLLER"),
            "log.dirs": str(self.node_dir(node)),
        }
        if node in self.controller_ports:
            role = {
                "process.roles": "controller",
                "listeners": f"CONTROLLER://{self.host}:{self.listen_port(node)}",
            }
        elif node in self.replication_ports:
            port, advertised = self.replication_ports[node]
            client = f"{self.client_listener}://{self.host}:{self.broker_ports[node]}"
            role = {
                "process.roles": "broker",
                "listeners": f"{client},REPLICATION://{self.host}:{port}",
                "advertised.listeners": (
                    f"{client},REPLICATION://{self.host}:{advertised}"
                ),
                "listener.security.protocol.map": self._protocol_map(
                    "REPLICATION", "CONTROLLER"
                ),
                "inter.broker.listener.name": "REPLICATION",
            }
        else:
            client = f"{self.client_listener}://{self.host}:{self.broker_ports[node]}"
            role = {
                "process.roles": "broker",
                "listeners": client,
                "inter.broker.listener.name": self.client_listener,
            }
        return {**common, **role, **self._rack(node), **self.overrides}

    def _zookeeper_mode_properties(
        self, node: int, zookeeper_port: int
    ) -> dict[str, str]:
        client = f"{self.client_listener}://{self.host}:{self.broker_ports[node]}"
        props = {
            "broker.id": str(node),
            "zookeeper.connect": f"{self.host}:{zookeeper_port}",
            "listeners": client,
            "log.dirs": str(self.node_dir(node)),
        }
        if self.security_protocol != "PLAINTEXT":
            props |= {
                "listener.security.protocol.map": self._protocol_map(),
                "inter.broker.listener.name": self.client_listener,
            }
        if node in self.replication_ports:
            port, advertised = self.replication_ports[node]
            props |= {
                "listeners": f"{client},REPLICATION://{self.host}:{port}",
                "advertised.listeners": f"{client},REPLICATION://{self.host}:{advertised}",
                "listener.security.protocol.map": self._protocol_map("REPLICATION"),
                "inter.broker.listener.name": "REPLICATION",
            }
        return {**props, **self._rack(node), **self.overrides}

    @property
    def client_listener(self) -> str:
        """The brokers' listener (clients' and, without a REPLICATION one, the brokers'
        own): named after the protocol every listener speaks."""
        return self.security_protocol

    def _protocol_map(self, *others: str) -> str:
        """``listener.security.protocol.map``: every listener speaks the cluster's
        protocol."""
        names = (self.client_listener, *others)
        return ",".join(f"{name}:{self.security_protocol}" for name in names)

    def _rack(self, node: int) -> dict[str, str]:
        return {"broker.rack": self.racks[node]} if node in self.racks else {}

    def listen_port(self, node: int) -> int:
        """Where ``node`` listens (a controller behind a proxy listens apart from the
        port the voters name)."""
        return self.controller_listen_ports.get(node) or self.port(node)

    def node_dir(self, node: int) -> Path:
        return self.root / f"node-{node}"

    def properties_file(self, node: int) -> Path:
        return self.root / f"node-{node}.properties"

    def log_file(self, node: int) -> Path:
        return self.root / f"node-{node}.log"

    def pid_file(self, node: int) -> Path:
        return self.root / f"node-{node}.pid"

    def role(self, node: int) -> str:
        return "controller" if node in self.controller_ports else "broker"

    def port(self, node: int) -> int:
        return self.controller_ports.get(node) or self.broker_ports[node]
