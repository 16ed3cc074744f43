"""BrokerServer: one process in KRaft combined mode (``process.roles=broker,controller``).

How the packages meet, in start-up order (Kafka's ``KafkaRaftServer``/``BrokerServer``):

1. ``meta.properties`` ties the log dirs to one cluster id and this node id;
2. the LogManager loads every partition's log, recovering what a crash damaged;
3. the metadata quorum (``__cluster_metadata-0``) is replayed into a MetadataImage and
   the QuorumController, which becomes the active controller;
4. the image is applied to the ReplicaManager *declaratively*: for each partition the
   image places here, become its leader (or follower); logs it no longer places here
   are deleted. From now on every committed metadata delta is applied the same way;
5. the broker registers with the controller and heartbeats until it is unfenced;
6. only then do the listeners open, so no client sees a half-started broker.

Shutdown runs the other way: stop accepting, finish requests in flight, stop the
background tasks, then flush every log and write the checkpoints and the clean-shutdown
marker, so the next start needs no recovery.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Mapping

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import ConfigError, TopicPartition
from minikafka.controller import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ConfigResourceType,
    ControllerError,
    ControllerServer,
    LocalPartition,
    MetadataDelta,
    MetadataImage,
)
from minikafka.coordination import OFFSETS_TOPIC, GroupCoordinator, GroupCoordinatorService
from minikafka.log import LogManager
from minikafka.net import Listener, NetConfig, SocketServer
from minikafka.replication import (
    IsrChangeAnswer,
    IsrChangeProposal,
    PartitionState,
    ReplicaManager,
    ReplicaManagerService,
    TopicSettings,
)
from minikafka.trace import Tracer, get_tracer

from ._apis import KafkaApis
from ._config import KafkaConfig
from ._controller_apis import ControllerApis
from ._meta_properties import ensure_formatted
from ._metadata_cache import MetadataCache
from ._offsets_topic import ReplicaOffsetsTopic
from ._producer_ids import ProducerIdManager
from ._roles import PROCESS_ROLES, QUORUM_VOTERS, Roles

_logger = logging.getLogger("minikafka.broker")


@attrs.define(eq=False)
class BrokerServer:
    config: KafkaConfig
    cluster_id: str
    log_manager: LogManager
    controller: ControllerServer
    metadata_cache: MetadataCache
    replica_manager: ReplicaManagerService
    groups: GroupCoordinatorService
    apis: KafkaApis
    socket_server: SocketServer
    tracer: Tracer
    """This node's tracer: every component above was built with it (issue 16)."""
    controller_socket_server: SocketServer | None = None
    """The controller's own listeners (``controller.listener.names``), serving
    ControllerApis; None when every listener is the broker's."""
    incarnation_id: uuid.UUID = attrs.field(factory=uuid.uuid4)
    broker_epoch: int = -1
    _unfenced: trio.Event = attrs.field(init=False, factory=trio.Event)
    _stop: trio.Event = attrs.field(init=False, factory=trio.Event)
    _stopped: trio.Event = attrs.field(init=False, factory=trio.Event)

    @classmethod
    def open(
        cls,
        config: KafkaConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> BrokerServer:
        """Load the logs and the metadata; nothing listens until :meth:`run`.

        Every component emits to ``tracer``, this node's; the default is the process's
        (:func:`minikafka.trace.get_tracer`, which the CLI configures), so several
        brokers in one process each pass their own.
        """
        tracer = get_tracer() if tracer is None else tracer
        dirs = [*config.broker.log_dirs]
        if config.metadata_log_dir not in dirs:
            dirs.append(config.metadata_log_dir)
        roles = config.roles
        cluster_id = ensure_formatted(dirs, config.node_id, create=roles.single_node)
        if not roles.single_node:
            # Formatted and configured as Kafka would have it, but this build has no way
            # yet to reach other nodes: brokers fetching the metadata log from a controller
            # and several voters are issue 18's and 19's next steps.
            raise ConfigError(
                PROCESS_ROLES if not roles.is_combined else QUORUM_VOTERS,
                f"{roles} (voters {_voters(roles)}): this version runs only a single "
                "node, broker,controller and the only voter",
            )
        log_manager = LogManager.startup(
            config.broker.log_dirs, config.log, schedule=config.schedule, tracer=tracer
        )
        controller = ControllerServer.open(config.metadata_log_dir, config.controller, rng, tracer)
        cache = MetadataCache(config.node_id, controller.image)

        def topic_settings(topic: str) -> TopicSettings:
            return TopicSettings(
                cache.log_config(topic, config.log),
                cache.min_insync_replicas(topic, config.broker.min_insync_replicas),
            )

        broker: BrokerServer | None = None

        async def alter_partition(proposals: list[IsrChangeProposal]) -> list[IsrChangeAnswer]:
            assert broker is not None
            return await _alter_partition(
                controller, config.node_id, broker.broker_epoch, proposals
            )

        replica_manager = ReplicaManagerService(
            ReplicaManager(config.node_id, log_manager, topic_settings, tracer=tracer),
            config.broker.replica_high_watermark_checkpoint_interval_ms,
            replica_lag_time_max_ms=config.broker.replica_lag_time_max_ms,
            alter_partition=alter_partition,
        )

        async def allocate_block() -> AllocateProducerIdsResponse:
            assert broker is not None
            request = AllocateProducerIdsRequest(config.node_id, broker.broker_epoch)
            try:
                response = await controller.submit(request)
            except ControllerError as exc:
                return AllocateProducerIdsResponse(exc.error_code)
            assert isinstance(response, AllocateProducerIdsResponse)
            return response

        groups = GroupCoordinatorService(
            GroupCoordinator(config.group, rng or random.Random(), tracer=tracer),
            ReplicaOffsetsTopic(replica_manager, config.broker.offsets_commit_timeout_ms),
        )
        apis = KafkaApis(
            config,
            cluster_id,
            cache,
            replica_manager,
            controller,
            ProducerIdManager(allocate_block),
            groups,
        )
        broker = cls(
            config,
            cluster_id,
            log_manager,
            controller,
            cache,
            replica_manager,
            groups,
            apis,
            SocketServer(_listening(config, controller=False), apis, tracer=tracer),
            tracer,
        )
        controller_net = _listening(config, controller=True)
        if controller_net.listeners:
            # Kafka's combined mode: the controller has a SocketServer of its own, on
            # the listeners brokers on other nodes reach it by.
            broker.controller_socket_server = SocketServer(
                controller_net, ControllerApis(controller, cluster_id), tracer=tracer
            )
        return broker

    def bound_address(self) -> tuple[str, int]:
        return self.socket_server.bound_address()

    def controller_address(self) -> tuple[str, int]:
        """Where the controller listener is bound (KeyError if this node has none)."""
        if self.controller_socket_server is None:
            raise KeyError("no controller listener")
        return self.controller_socket_server.bound_address()

    # --- metadata -------------------------------------------------------------------------

    def _apply_initial_image(self) -> None:
        """Everything the replayed image says, as one delta from an empty image."""
        image = self.controller.image
        delta = MetadataDelta(MetadataImage())
        for record in image.records():
            delta.replay(record)
        delta.offset = image.offset
        self._on_metadata(delta, delta.apply())
        stray = self.replica_manager.remove_stray_logs()
        if stray:
            _logger.info("deleted %d stray log(s): %s", len(stray), ", ".join(map(str, stray)))

    def _on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """A committed delta: update the cache, then make the local replicas match."""
        old_configs = delta.image.configs
        self.metadata_cache.update(image)
        changes = delta.local_changes(self.config.node_id)
        if not changes.empty:
            self.replica_manager.stop_replicas(changes.deleted | changes.stopped)
            self.replica_manager.become_leader_or_follower(
                _states(changes.leaders), _states(changes.followers)
            )
            # The group coordinator follows the leadership of __consumer_offsets.
            for tp in changes.deleted | changes.stopped | set(changes.followers):
                if tp.topic == OFFSETS_TOPIC:
                    self.groups.resign(tp.partition)
            for tp in changes.leaders:
                if tp.topic == OFFSETS_TOPIC:
                    loaded = self.groups.become_leader(tp.partition)
                    if loaded:
                        _logger.info("loaded %d group(s) from %s", loaded, tp)
        for (kind, name), entries in image.configs.items():
            if kind == ConfigResourceType.TOPIC and old_configs.get((kind, name)) != entries:
                self.replica_manager.update_topic_settings(name)

    # --- running ----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start everything, serve until :meth:`shutdown`, then close cleanly."""
        clean = False
        try:
            async with trio.open_nursery() as nursery:
                self._apply_initial_image()
                self.controller.subscribe(self._on_metadata)
                await nursery.start(self.controller.run)
                if self.controller_socket_server is not None:
                    await nursery.start(self.controller_socket_server.serve)
                await nursery.start(self.log_manager.run)
                await nursery.start(self.replica_manager.run)
                await nursery.start(self.groups.run)
                await nursery.start(self.apis.run)
                # Bind now (a port of 0 becomes a real one to register), but requests
                # wait in KafkaApis until the controller has unfenced this broker.
                await nursery.start(self.socket_server.serve)
                await self._register()
                nursery.start_soon(self._heartbeat_loop)
                await self._unfenced.wait()
                self.apis.ready.set()
                host, port = self.bound_address()
                _logger.info(
                    "minikafka broker %d (cluster %s) listening on %s:%d",
                    self.config.node_id,
                    self.cluster_id,
                    host,
                    port,
                )
                task_status.started()
                await self._stop.wait()
                grace = self.config.broker.controlled_shutdown_timeout_ms / 1000
                self.replica_manager.shutdown()  # answer long polls now, not at their deadline
                self.groups.shutdown()  # and JoinGroups parked in a rebalance
                await self.socket_server.shutdown(grace_seconds=grace)
                if self.controller_socket_server is not None:
                    await self.controller_socket_server.shutdown(grace_seconds=grace)
                nursery.cancel_scope.cancel()
                clean = True
        finally:
            if clean:
                # Flush, checkpoint, mark the shutdown clean: the next start recovers nothing.
                self.log_manager.shutdown()
            self._stopped.set()

    async def shutdown(self) -> None:
        """Stop serving and close everything; returns once :meth:`run` has finished."""
        self._stop.set()
        await self._stopped.wait()

    async def _register(self) -> None:
        endpoints = tuple(
            BrokerEndpoint(listener.name, listener.host, self._port_of(listener))
            for listener in self.config.advertised_listeners
        )
        response = await self.controller.submit(
            BrokerRegistrationRequest(self.config.node_id, self.incarnation_id, endpoints)
        )
        assert isinstance(response, BrokerRegistrationResponse)
        if response.error_code is not ErrorCode.none:
            raise RuntimeError(f"broker registration failed: {response.error_code.name}")
        self.broker_epoch = response.broker_epoch

    def _port_of(self, listener: Listener) -> int:
        """The advertised port, or the bound one where the listener asked for port 0."""
        if listener.port != 0:
            return listener.port
        return self.socket_server.bound_address(listener.name)[1]

    async def _heartbeat_loop(self) -> None:
        """Heartbeat at once, then every ``broker.heartbeat.interval.ms``."""
        interval = self.config.broker.broker_heartbeat_interval_ms / 1000
        while True:
            request = BrokerHeartbeatRequest(
                self.config.node_id, self.broker_epoch, self.metadata_cache.image.offset
            )
            try:
                response = await self.controller.submit(request)
            except ControllerError as exc:
                _logger.warning("heartbeat failed: %s", exc.error_code.name)
            else:
                assert isinstance(response, BrokerHeartbeatResponse)
                if response.error_code is ErrorCode.none and not response.is_fenced:
                    self._unfenced.set()
            # The first heartbeat normally unfences (the registration is replayed by
            # then); if it did not, try again soon rather than a whole interval later.
            await trio.sleep(interval if self._unfenced.is_set() else min(interval, 0.1))


def _states(
    partitions: Mapping[TopicPartition, LocalPartition],
) -> dict[TopicPartition, tuple[uuid.UUID, PartitionState]]:
    """The controller's registrations as the replication layer's partition states."""
    return {
        tp: (
            local.topic_id,
            PartitionState(
                local.partition.leader,
                local.partition.leader_epoch,
                local.partition.partition_epoch,
                tuple(local.partition.replicas),
                tuple(local.partition.isr),
            ),
        )
        for tp, local in partitions.items()
    }


def _voters(roles: Roles) -> str:
    return ",".join(str(v) for v in roles.voters) or "(this node alone)"


def _listening(config: KafkaConfig, *, controller: bool) -> NetConfig:
    """The network config of the controller's listeners, or of the broker's (the rest)."""
    names = set(config.roles.controller_listener_names)
    chosen = tuple(lst for lst in config.net.listeners if (lst.name in names) == controller)
    return attrs.evolve(config.net, listeners=chosen)


async def _alter_partition(
    controller: ControllerServer,
    broker_id: int,
    broker_epoch: int,
    proposals: list[IsrChangeProposal],
) -> list[IsrChangeAnswer]:
    """The leader's ISR proposals as one AlterPartition to the controller (KIP-497)."""
    items = tuple(
        AlterPartitionItem(
            p.topic_id, p.topic_partition.partition, p.leader_epoch, p.new_isr, p.partition_epoch
        )
        for p in proposals
    )
    try:
        response = await controller.submit(AlterPartitionRequest(broker_id, broker_epoch, items))
    except ControllerError as exc:
        return [IsrChangeAnswer(p.topic_partition, exc.error_code) for p in proposals]
    assert isinstance(response, AlterPartitionResponse)
    by_partition = {(r.topic_id, r.partition): r for r in response.partitions}
    answers = []
    for p in proposals:
        result = by_partition.get((p.topic_id, p.topic_partition.partition))
        if response.error_code is not ErrorCode.none or result is None:
            error = response.error_code if result is None else result.error_code
            answers.append(IsrChangeAnswer(p.topic_partition, error))
            continue
        answers.append(
            IsrChangeAnswer(
                p.topic_partition,
                result.error_code,
                result.isr,
                result.leader_epoch,
                result.partition_epoch,
            )
        )
    return answers
