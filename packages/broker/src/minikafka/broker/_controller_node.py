"""ControllerNode: a process with ``process.roles=controller`` (Kafka's ``QuorumControllerShell``
in a KRaft node of its own).

It hosts no partitions and serves no clients: the QuorumController, replaying and
writing ``__cluster_metadata-0`` in ``metadata.log.dir``, and a SocketServer on the
``controller.listener.names`` listeners answering the brokers (ControllerApis: the
metadata log by Fetch and FetchSnapshot, registrations, heartbeats, AlterPartition,
producer id blocks and forwarded admin requests). ``make cluster`` runs one beside
three broker-only nodes. The metadata log is a Raft quorum (:mod:`minikafka.raft`,
driven by :class:`~minikafka.controller.RaftNodeShell`), and the listener also serves Vote,
BeginQuorumEpoch and EndQuorumEpoch. With one voter it elects itself at once and is the
active controller from the start. With several (``controller.quorum.voters`` naming
three or five controllers, ``make cluster CONTROLLERS=3``) this node is the active
controller while it leads the quorum, a standby replaying the log otherwise.

Faults: each task of :meth:`ControllerNode.run` keeps its own policy (the controller's
event loop renounces leadership on an unexpected error, the Raft node's transport retries
a failed send, the socket server answers a request that failed). What none of them can
go on after, a :class:`~minikafka.common.FatalFaultError` (a committed record that cannot
be replayed, a fault in the Raft node), ends ``run``, and the process with it: the
command's top level says it in one line and exits 1 (Kafka's fatal fault handler).
"""

from __future__ import annotations

import logging
import random

import attrs
import trio

from minikafka.common import ConfigError
from minikafka.controller import ListenerEndpoint, QuorumControllerShell, RaftNodeShell
from minikafka.net import Node, SocketServer
from minikafka.trace import Tracer, get_tracer

from ._config import KafkaConfig
from ._controller_apis import ControllerApis
from ._controller_raft_apis import quorum_nodes
from ._meta_properties import ensure_formatted
from ._quorum_transport import NetworkTransport
from ._roles import PROCESS_ROLES, QUORUM_VOTERS

_logger = logging.getLogger("minikafka.broker")


def open_raft_controller(
    config: KafkaConfig,
    cluster_id: str,
    rng: random.Random | None,
    tracer: Tracer,
) -> tuple[QuorumControllerShell, NetworkTransport]:
    """This node's controller as one voter of several (a controller-only node, or a
    combined one): the Raft quorum on ``metadata.log.dir``, and the transport its
    requests to the other voters go through, on their controller listeners."""
    roles = config.roles
    me = next(v for v in roles.voters if v.node_id == config.node_id)
    transport = NetworkTransport(
        {v.node_id: Node(v.node_id, v.host, v.port) for v in roles.voters},
        f"raft-{config.node_id}",
        config.raft.request_timeout,
        security=config.channels.controller,
    )
    quorum = RaftNodeShell.open(
        config.metadata_log_dir,
        config.node_id,
        [v.node_id for v in roles.voters],
        transport,
        cluster_id,
        config.raft,
        endpoints=[
            ListenerEndpoint(roles.controller_listener_names[0], me.host, me.port)
        ],
        rng=rng,
        tracer=tracer,
    )
    controller = QuorumControllerShell.open_raft(quorum, config.controller, rng, tracer)
    return controller, transport


@attrs.define(eq=False)
class ControllerNode:
    config: KafkaConfig
    cluster_id: str
    controller: QuorumControllerShell
    socket_server: SocketServer
    transport: NetworkTransport | None = None
    """How the Raft node reaches the other voters (None with one voter)."""
    _stop: trio.Event = attrs.field(init=False, factory=trio.Event)
    _stopped: trio.Event = attrs.field(init=False, factory=trio.Event)

    @classmethod
    def open(
        cls,
        config: KafkaConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> ControllerNode:
        tracer = get_tracer() if tracer is None else tracer
        roles = config.roles
        if roles.is_broker:
            raise ConfigError(
                PROCESS_ROLES, f"{roles}: a node with the broker role is a broker"
            )
        if config.node_id not in {v.node_id for v in roles.voters}:
            raise ConfigError(
                QUORUM_VOTERS, f"node.id {config.node_id} is not one of the voters"
            )
        cluster_id = ensure_formatted(
            [config.metadata_log_dir], config.node_id, create=False
        )
        transport: NetworkTransport | None = None
        if len(roles.voters) == 1:
            controller = QuorumControllerShell.open(
                config.metadata_log_dir, config.controller, rng, tracer, config.raft
            )
        else:
            controller, transport = open_raft_controller(
                config, cluster_id, rng, tracer
            )
        apis = ControllerApis(
            controller, cluster_id, roles.voters, quorum_nodes(roles), config
        )
        server = SocketServer(config.net, apis, tracer=tracer)
        return cls(config, cluster_id, controller, server, transport)

    def bound_address(self) -> tuple[str, int]:
        return self.socket_server.bound_address()

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            async with trio.open_nursery() as nursery:
                if self.transport is not None:
                    await nursery.start(self.transport.run)
                await nursery.start(self.controller.run)
                await nursery.start(self.socket_server.serve)
                host, port = self.bound_address()
                _logger.info(
                    "minikafka controller %d (cluster %s) listening on %s:%d",
                    self.config.node_id,
                    self.cluster_id,
                    host,
                    port,
                )
                task_status.started()
                await self._stop.wait()
                # A leader hands over first (EndQuorumEpoch), while it can still answer.
                await self.controller.resign()
                await self.socket_server.shutdown(grace_seconds=1.0)
                nursery.cancel_scope.cancel()
        finally:
            self._stopped.set()

    async def shutdown(self) -> None:
        self._stop.set()
        await self._stopped.wait()
