"""BrokerServer: one broker process in KRaft mode, combined with the controller or not.

How the packages meet, in start-up order (Kafka's ``KafkaRaftServer``/``BrokerServer``):

1. ``meta.properties`` ties the log dirs to one cluster id and this node id;
2. the LogManager loads every partition's log, recovering what a crash damaged;
3. the metadata: in combined mode (``process.roles=broker,controller``, minikafka's single
   node) the quorum's ``__cluster_metadata-0`` is replayed into a MetadataImage and the
   QuorumController in this process, which becomes the active controller. A broker-only
   node (``process.roles=broker``) is instead an observer of the controller named by
   ``controller.quorum.voters``: it keeps its own copy of the log, fetched over the
   network (:mod:`._metadata_fetcher`), and publishes its first image only once it has
   caught up with the controller's high watermark (Kafka's MetadataLoader). A combined
   node among several voters has its controller on the Raft quorum: its broker applies
   each delta that controller replays, leader or standby, from the first (so it never
   takes a partial image for the whole one: logs of partitions deleted before a
   snapshot it fetched stay on disk), and asks the active controller, wherever it is,
   over the controller listener;
4. each published image is applied to the ReplicaManager *declaratively*: for each
   partition the image places here, become its leader or follower (a follower fetches
   from its leader, :mod:`._replica_fetchers`); logs it no longer places here are
   deleted. Every committed metadata delta afterwards is applied the same way, by the
   broker's :class:`~._metadata_publisher.BrokerMetadataPublisher`;
5. the broker registers with the controller and heartbeats until it is unfenced (in
   process, or over the controller listener: :mod:`._controller_channel`); one that has
   not registered within ``initial.broker.registration.timeout.ms`` gives up and exits;
6. only then do the listeners open to requests, so no client sees a half-started broker.

Shutdown runs the other way. A node whose active controller may be elsewhere (all but
the single node) first asks it to move its leaderships away (a heartbeat with
``wantShutDown``, KIP-631's controlled shutdown), and a combined voter that leads the
quorum hands leadership over (EndQuorumEpoch); then it stops accepting, finishes
requests in flight, stops the background tasks, and flushes every log and writes the
checkpoints and the clean-shutdown marker, so the next start needs no recovery.

No exception in the metadata path ends the broker (Kafka's brokers publish metadata
with a non-fatal ``LoggingFaultHandler``, :attr:`BrokerServer.metadata_faults`): a
record that cannot be replayed, or a delta that cannot be published, is logged at ERROR
("Error publishing broker metadata at offset N") and counted, and the rest is applied
(:mod:`._metadata_publisher` says how). The metadata fetch loop survives
what it does not expect (an answer that does not decode) by logging it and fetching
again after a backoff; a heartbeat that fails for any reason is tried again at the next
interval (both under :attr:`BrokerServer.task_faults`, which logs a repeated failure
once).
"""

from __future__ import annotations

import errno
import logging
import random
import uuid
from collections.abc import Awaitable, Callable

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import ConfigError, FatalFaultError
from minikafka.controller import (
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CommittedDivergenceError,
    ControllerError,
    MetadataImage,
    MetadataObserver,
    QuorumControllerShell,
)
from minikafka.coordination import GroupCoordinatorShell
from minikafka.log import KafkaStorageError, LogManager
from minikafka.net import Listener, NetConfig, NetworkClient, Node, SocketServer
from minikafka.replication import ReplicaManagerShell
from minikafka.trace import Tracer, get_tracer

from ._apis import KafkaApis
from ._broker_parts import broker_parts
from ._config import KafkaConfig
from ._controller_apis import ControllerApis
from ._controller_channel import ControllerChannel, ControllerLocator, RemoteController
from ._controller_node import open_raft_controller
from ._controller_raft_apis import quorum_nodes
from ._coordinators import Coordinators
from ._local_replicas import LoggingFaultHandler
from ._meta_properties import ensure_formatted
from ._metadata_cache import MetadataCache
from ._metadata_fetcher import fetch_metadata_forever
from ._metadata_publisher import BrokerMetadataPublisher, image_of
from ._quorum_transport import NetworkTransport
from ._replica_fetchers import ReplicaFetcherManager
from ._roles import PROCESS_ROLES
from ._scram_apis import image_scram_lookup

_logger = logging.getLogger("minikafka.broker")
_RETRY_S = 0.1
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
"""A write refused by the disk itself (a snapshot file's, outside the log)."""


def lifecycle_timeout(config: KafkaConfig) -> float:
    """Seconds a registration or heartbeat may take: half ``broker.session.timeout.ms``,
    at most ``controller.socket.timeout.ms`` (30 s), as Kafka's ``heartbeat`` channel."""
    return min(30.0, config.controller.broker_session_timeout_ms / 2 / 1000)


def _disk_failed(exc: OSError) -> bool:
    return isinstance(exc, KafkaStorageError) or exc.errno in _DISK_ERRNOS


def _metadata_dir_failed(config: KafkaConfig, exc: OSError) -> FatalFaultError:
    """A broker-only node's metadata log refused by its disk (full, or failed): fatal,
    as Kafka halts a broker whose metadata log dir has failed (KIP-858, "Shutdown
    broker because the metadata log dir ... has failed"), since its image could no
    longer follow the quorum; the controller fences it and its partitions move."""
    return FatalFaultError.caused_by(
        f"the metadata log dir {config.metadata_log_dir} has failed: "
        "writing the metadata log",
        exc,
        _logger,
    )


"""How soon a failed registration or an unfencing heartbeat is tried again."""


class RegistrationTimeoutError(Exception):
    """The broker could not register with the controller quorum in time."""


async def register_within(
    register: Callable[[], Awaitable[None]], timeout_ms: int
) -> None:
    """Kafka's ``initial.broker.registration.timeout.ms``: a KRaft broker that has not
    registered with the controller quorum this long after it began to try (a controller
    that refuses its login, say, which each retry logs) says so and stops, rather than
    waiting for ever; a supervisor sees it exit."""
    with trio.move_on_after(timeout_ms / 1000):
        await register()
        return
    _logger.error(
        "Shutting down because we were unable to register with the controller quorum."
    )
    raise RegistrationTimeoutError(
        f"not registered with the controller quorum within "
        f"initial.broker.registration.timeout.ms={timeout_ms}"
    )


@attrs.define(eq=False)
class BrokerServer:
    config: KafkaConfig
    cluster_id: str
    log_manager: LogManager
    controller: QuorumControllerShell | None
    """The QuorumController in this process (combined mode); None on a broker-only node."""
    channel: ControllerChannel
    """Where this broker's requests to the controller go: ``controller`` itself (the
    single node), or a RemoteController to the active one over the controller listener."""
    metadata_cache: MetadataCache
    replica_manager: ReplicaManagerShell
    fetchers: ReplicaFetcherManager
    coordinators: Coordinators
    publisher: BrokerMetadataPublisher
    """What this broker does with each image and delta of the metadata it replays."""
    apis: KafkaApis
    socket_server: SocketServer
    tracer: Tracer
    """This node's tracer: every component above was built with it."""
    observer: MetadataObserver | None = None
    """A broker-only node's copy of the metadata log; None in combined mode."""
    controller_socket_server: SocketServer | None = None
    """The controller's own listeners (``controller.listener.names``), serving
    ControllerApis; None when every listener is the broker's."""
    transport: NetworkTransport | None = None
    """How the Raft quorum in this process reaches the other voters (a combined node
    among several); None otherwise."""
    incarnation_id: uuid.UUID = attrs.field(factory=uuid.uuid4)
    broker_epoch: int = -1
    _unfenced: trio.Event = attrs.field(init=False, factory=trio.Event)
    _stop: trio.Event = attrs.field(init=False, factory=trio.Event)
    _stopped: trio.Event = attrs.field(init=False, factory=trio.Event)
    task_faults: LoggingFaultHandler = attrs.field(
        init=False, factory=lambda: LoggingFaultHandler("broker background task")
    )
    """The faults of the loops that retry (the metadata fetch, the heartbeat)."""

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
        if not roles.is_broker:
            raise ConfigError(
                PROCESS_ROLES, f"{roles}: a controller-only node is a ControllerNode"
            )
        cluster_id = ensure_formatted(dirs, config.node_id, create=roles.single_node)
        log_manager = LogManager.startup(
            config.broker.log_dirs, config.log, schedule=config.schedule, tracer=tracer
        )
        controller: QuorumControllerShell | None = None
        transport: NetworkTransport | None = None
        observer: MetadataObserver | None = None
        channel: ControllerChannel
        image = MetadataImage()
        if roles.single_node:
            controller = QuorumControllerShell.open(
                config.metadata_log_dir, config.controller, rng, tracer, config.raft
            )
            channel, image = controller, controller.image
        else:
            locator = ControllerLocator(
                tuple(Node(v.node_id, v.host, v.port) for v in roles.voters)
            )
            channel = RemoteController(
                locator,
                cluster_id,
                client_id=f"broker-{config.node_id}-to-controller",
                security=config.channels.controller,
                lifecycle_timeout=lifecycle_timeout(config),
            )
            if roles.is_controller:
                # One voter of several: the active controller may be on another node,
                # so this broker asks whichever leads, as a broker-only node does
                # (Kafka's combined node too), and learns the metadata from the Raft
                # quorum in this process.
                controller, transport = open_raft_controller(
                    config, cluster_id, rng, tracer
                )
                locator.quorum = controller.quorum
            else:
                observer, snapshot = MetadataObserver.open(
                    config.metadata_log_dir, tracer
                )
                image = image_of(snapshot, observer.applied_offset)
        cache = MetadataCache(config.node_id, image)

        broker: BrokerServer | None = None

        def broker_epoch() -> int:
            assert broker is not None
            return broker.broker_epoch

        parts = broker_parts(
            config, log_manager, cache, channel, broker_epoch, tracer, rng
        )
        replica_manager, fetchers, coordinators = (
            parts.replica_manager,
            parts.fetchers,
            parts.coordinators,
        )
        apis = KafkaApis(
            config,
            cluster_id,
            cache,
            replica_manager,
            channel,
            parts.producer_ids,
            coordinators.groups,
            coordinators.transactions,
            coordinators.verifier,
        )
        broker = cls(
            config,
            cluster_id,
            log_manager,
            controller,
            channel,
            cache,
            replica_manager,
            fetchers,
            coordinators,
            BrokerMetadataPublisher(
                config, cache, replica_manager, fetchers, coordinators, observer, image
            ),
            apis,
            SocketServer(
                _listening(config, controller=False),
                apis,
                tracer=tracer,
                scram_lookup=image_scram_lookup(cache),
            ),
            tracer,
            observer,
            transport=transport,
        )
        controller_net = _listening(config, controller=True)
        if controller is not None and controller_net.listeners:
            # Kafka's combined mode: the controller has a SocketServer of its own, on
            # the listeners brokers on other nodes reach it by.
            broker.controller_socket_server = SocketServer(
                controller_net,
                ControllerApis(
                    controller, cluster_id, roles.voters, quorum_nodes(roles), config
                ),
                tracer=tracer,
            )
        return broker

    def bound_address(self) -> tuple[str, int]:
        return self.socket_server.bound_address()

    def controller_address(self) -> tuple[str, int]:
        """Where the controller listener is bound (KeyError if this node has none)."""
        if self.controller_socket_server is None:
            raise KeyError("no controller listener")
        return self.controller_socket_server.bound_address()

    @property
    def groups(self) -> GroupCoordinatorShell:
        """This broker's group coordinator."""
        return self.coordinators.groups

    @property
    def single_node(self) -> bool:
        """The only voter, its controller in this process: minikafka's single node."""
        return self.controller is not None and self.channel is self.controller

    @property
    def local_controller(self) -> QuorumControllerShell:
        """The QuorumController in this process; a broker-only node has none."""
        if self.controller is None:
            raise LookupError(
                f"broker {self.config.node_id} is broker-only: no controller here"
            )
        return self.controller

    @property
    def is_fenced(self) -> bool:
        return not self._unfenced.is_set()

    @property
    def metadata_faults(self) -> LoggingFaultHandler:
        """Every fault in loading and publishing metadata: logged and counted (``count``:
        Kafka's ``metadata-apply-error-count``)."""
        return self.publisher.faults

    # --- metadata -------------------------------------------------------------------------

    async def _follow_metadata(self, locator: ControllerLocator) -> None:
        """Fetch the metadata log until cancelled. The fetch loop retries what it
        expects (a controller unreachable, an error answer); anything else (an answer
        that does not decode) is logged once here and the loop starts again after a
        backoff, as Kafka's raft client backs off a failed fetch. A write the metadata
        log's disk refuses (full, failed) ends the process: fatal, as in Kafka."""
        assert self.observer is not None
        async with NetworkClient.open(
            client_id=f"raft-observer-{self.config.node_id}",
            security=self.config.channels.controller,
            # quorum.request.timeout.ms, as KafkaRaftClient times an observer's Fetch
            # out: a leader cut off is given up after 2 s, not the client's 30, and
            # the next voter names the new one
            request_timeout=self.config.raft.request_timeout,
        ) as client:
            while True:
                with self.task_faults.guard(
                    "Error fetching the metadata log from the controller",
                    key="fetching the metadata log",
                ):
                    try:
                        await fetch_metadata_forever(
                            client,
                            locator,
                            self.observer,
                            self.publisher.on_observer_update,
                            node_id=self.config.node_id,
                            cluster_id=self.cluster_id,
                        )
                    except OSError as exc:
                        if not _disk_failed(exc):
                            raise
                        # Kafka halts a broker whose metadata log dir has failed.
                        raise _metadata_dir_failed(self.config, exc) from exc
                    except CommittedDivergenceError as exc:
                        # Not a fetch to try again: this copy holds committed records
                        # the quorum disowns, and replaying on would mix two histories.
                        # Kafka's raft client treats it as fatal; so does this node.
                        raise FatalFaultError.caused_by(
                            "following the metadata log", exc, _logger
                        ) from exc
                await trio.sleep(_RETRY_S)

    # --- running ----------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Start everything, serve until :meth:`shutdown`, then close cleanly."""
        clean = False
        try:
            async with trio.open_nursery() as nursery:
                # aside: the controller: in this process, or a channel to the quorum
                await self._start_controller(nursery)
                await nursery.start(self.log_manager.run)
                await nursery.start(self.replica_manager.run)
                await nursery.start(self.fetchers.run)
                await nursery.start(self.coordinators.run)
                await nursery.start(self.apis.run)
                # Bind now (a port of 0 becomes a real one to register), but requests
                # wait in KafkaApis until the controller has unfenced this broker.
                await nursery.start(self.socket_server.serve)
                timeout_ms = self.config.broker.initial_broker_registration_timeout_ms
                await register_within(self._register, timeout_ms)
                nursery.start_soon(self._heartbeat_loop)
                await self._unfenced.wait()
                self.apis.ready.set()
                host, port = self.bound_address()
                # aside: log where it listens
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
                if not self.single_node:
                    await self._controlled_shutdown(grace)
                self.fetchers.shutdown()
                # Answer long polls now, not at their deadline.
                self.replica_manager.shutdown()
                self.coordinators.shutdown()  # and JoinGroups parked in a rebalance
                await self.socket_server.shutdown(grace_seconds=grace)
                # aside: and the controllers' listener
                if self.controller_socket_server is not None:
                    await self.controller_socket_server.shutdown(grace_seconds=grace)
                nursery.cancel_scope.cancel()
                clean = True
        finally:
            # aside: flush and checkpoint the logs after a clean stop
            if clean:
                # Flush, checkpoint, mark the shutdown clean: the next start recovers
                # nothing.
                self.log_manager.shutdown()
            # aside: the metadata log closed, even after a fault
            if self.observer is not None:
                try:
                    self.observer.close()
                except OSError as exc:
                    if clean:
                        raise
                    # Stopping on a fault, most often the disk's: closing the metadata
                    # log can fail the same way, and must not hide the fault itself.
                    _logger.warning("closing the metadata log failed too: %s", exc)
            self._stopped.set()

    async def _start_controller(self, nursery: trio.Nursery) -> None:
        """The controller in this process, with its quorum's transport (one voter of
        several) and its listener; the channel to the active controller wherever that may
        be elsewhere; a broker-only node's fetch of the metadata log."""
        if self.controller is not None:
            if self.transport is not None:
                await nursery.start(self.transport.run)
            if self.single_node:
                self.publisher.publish_whole(self.controller.image)
            self.controller.subscribe(self.publisher.on_metadata_update)
            await nursery.start(self.controller.run)
            if self.controller_socket_server is not None:
                await nursery.start(self.controller_socket_server.serve)
        if isinstance(self.channel, RemoteController):
            await nursery.start(self.channel.run)
        if self.observer is not None:
            assert isinstance(self.channel, RemoteController)
            nursery.start_soon(self._follow_metadata, self.channel.locator)

    async def shutdown(self) -> None:
        """Stop serving and close everything; returns once :meth:`run` has finished."""
        self._stop.set()
        await self._stopped.wait()

    async def _register(self) -> None:
        """BrokerRegistration, until the controller takes it (it may not be up yet)."""
        endpoints = tuple(
            BrokerEndpoint(listener.name, listener.host, self._port_of(listener))
            for listener in self.config.advertised_listeners
        )
        request = BrokerRegistrationRequest(
            self.config.node_id,
            self.incarnation_id,
            endpoints,
            rack=self.config.broker.broker_rack,
        )
        while True:
            reason = ""
            try:
                response = await self.channel.submit(request)
            except ControllerError as exc:
                error = exc.error_code
                # Why the controller could not be asked (a refused login, say): said
                # with every retry, so a broker that cannot register tells why.
                reason = f": {exc.__cause__}" if exc.__cause__ is not None else ""
            else:
                assert isinstance(response, BrokerRegistrationResponse)
                if response.error_code is ErrorCode.none:
                    self.broker_epoch = response.broker_epoch
                    return
                error = response.error_code
            if self.single_node:
                raise RuntimeError(f"broker registration failed: {error.name}")
            _logger.warning(
                "broker registration failed (%s%s); retrying", error.name, reason
            )
            await trio.sleep(_RETRY_S)

    def _port_of(self, listener: Listener) -> int:
        """The advertised port, or the bound one where the listener asked for port 0."""
        if listener.port != 0:
            return listener.port
        return self.socket_server.bound_address(listener.name)[1]

    async def _heartbeat_loop(self) -> None:
        """Heartbeat at once, then every ``broker.heartbeat.interval.ms``."""
        interval = self.config.broker.broker_heartbeat_interval_ms / 1000
        while True:
            await self._heartbeat()
            # The first heartbeat normally unfences (the registration is replayed by
            # then); if it did not, try again soon rather than a whole interval later.
            await trio.sleep(
                interval if self._unfenced.is_set() else min(interval, _RETRY_S)
            )

    async def _heartbeat(
        self, *, want_shutdown: bool = False
    ) -> BrokerHeartbeatResponse | None:
        request = BrokerHeartbeatRequest(
            self.config.node_id,
            self.broker_epoch,
            self.metadata_cache.image.offset,
            want_shutdown=want_shutdown,
        )
        # Whatever fails, the heartbeat is sent again at the next interval (Kafka's
        # BrokerLifecycleManager schedules the next one on any failure).
        with self.task_faults.guard("Error sending a heartbeat", key="heartbeat"):
            try:
                response = await self.channel.submit(request)
            except ControllerError as exc:
                _logger.warning("heartbeat failed: %s", exc.error_code.name)
                return None
            assert isinstance(response, BrokerHeartbeatResponse)
            if response.error_code is not ErrorCode.none:
                _logger.warning("heartbeat refused: %s", response.error_code.name)
            elif not response.is_fenced:
                self._unfenced.set()
            return response
        return None

    async def _controlled_shutdown(self, grace: float) -> None:
        """KIP-631's controlled shutdown: ask to be fenced with ``wantShutDown``, which
        moves every leadership here to another in-sync replica, and wait until this
        broker's own image shows it leads nothing, so producers move before it stops."""
        # A controller that does not answer is asked again at the heartbeat interval,
        # not faster: each failure is logged.
        retry = min(self.config.broker.broker_heartbeat_interval_ms / 1000, 0.5)
        with trio.move_on_after(grace) as scope:
            while True:
                response = await self._heartbeat(want_shutdown=True)
                if response is not None and response.should_shut_down:
                    break
                await trio.sleep(retry)
            while self._leads_anything():
                await self.publisher.wait_for_next_delta()
        if scope.cancelled_caught:
            _logger.warning("controlled shutdown did not finish within %.0f s", grace)
        if self.controller is not None:
            # A voter that leads the quorum hands it over too (EndQuorumEpoch), while it
            # can still answer, so the next leader needs no election timeout.
            await self.controller.resign()

    def _leads_anything(self) -> bool:
        me = self.config.node_id
        return any(
            p.leader == me
            for topic in self.metadata_cache.image.topics.values()
            for p in topic.partitions.values()
        )


def _listening(config: KafkaConfig, *, controller: bool) -> NetConfig:
    """The network config of the controller's listeners, or of the broker's (the rest)."""
    names = set(config.roles.controller_listener_names)
    chosen = tuple(
        lst for lst in config.net.listeners if (lst.name in names) == controller
    )
    return attrs.evolve(config.net, listeners=chosen)
