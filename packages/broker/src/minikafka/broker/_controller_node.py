"""ControllerNode: a process with ``process.roles=controller`` (Kafka's ``ControllerServer``
in a KRaft node of its own).

It hosts no partitions and serves no clients: the QuorumController, replaying and
writing ``__cluster_metadata-0`` in ``metadata.log.dir``, and a SocketServer on the
``controller.listener.names`` listeners answering the brokers (ControllerApis: the
metadata log by Fetch and FetchSnapshot, registrations, heartbeats, AlterPartition,
producer id blocks and forwarded admin requests). ``make cluster`` runs one beside
three broker-only nodes. With one voter it is the active controller from the start;
several voters are the Raft quorum's business (issue 19).
"""

from __future__ import annotations

import logging
import random

import attrs
import trio

from minikafka.common import ConfigError
from minikafka.controller import ControllerServer
from minikafka.net import SocketServer
from minikafka.trace import Tracer, get_tracer

from ._config import KafkaConfig
from ._controller_apis import ControllerApis
from ._meta_properties import ensure_formatted
from ._roles import PROCESS_ROLES, QUORUM_VOTERS

_logger = logging.getLogger("minikafka.broker")


@attrs.define(eq=False)
class ControllerNode:
    config: KafkaConfig
    cluster_id: str
    controller: ControllerServer
    socket_server: SocketServer
    _stop: trio.Event = attrs.field(init=False, factory=trio.Event)
    _stopped: trio.Event = attrs.field(init=False, factory=trio.Event)

    @classmethod
    def open(
        cls, config: KafkaConfig, rng: random.Random | None = None, tracer: Tracer | None = None
    ) -> ControllerNode:
        tracer = get_tracer() if tracer is None else tracer
        roles = config.roles
        if roles.is_broker:
            raise ConfigError(PROCESS_ROLES, f"{roles}: a node with the broker role is a broker")
        if [v.node_id for v in roles.voters] != [config.node_id]:
            raise ConfigError(
                QUORUM_VOTERS,
                "this version runs one controller: the voters must be this node alone",
            )
        cluster_id = ensure_formatted([config.metadata_log_dir], config.node_id, create=False)
        controller = ControllerServer.open(config.metadata_log_dir, config.controller, rng, tracer)
        apis = ControllerApis(controller, cluster_id)
        return cls(config, cluster_id, controller, SocketServer(config.net, apis, tracer=tracer))

    def bound_address(self) -> tuple[str, int]:
        return self.socket_server.bound_address()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
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
                await self.socket_server.shutdown(grace_seconds=1.0)
                nursery.cancel_scope.cancel()
        finally:
            self._stopped.set()

    async def shutdown(self) -> None:
        self._stop.set()
        await self._stopped.wait()
