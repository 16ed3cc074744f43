"""ZkBrokerServer: one broker process in ZooKeeper mode (seed 001; Kafka 2.8's ``KafkaServer``).

Start-up, in order:

1. the LogManager loads every partition's log (as in KRaft mode);
2. the broker connects to ZooKeeper (``zookeeper.connect``), reads the cluster id from
   ``/cluster/id`` (the first broker of a cluster creates it);
3. its listeners bind, and it registers as the ephemeral ``/brokers/ids/<broker.id>``
   with Kafka's JSON: the znode's creation (its czxid) is the broker epoch, new at each
   registration; the znode lives as long as the session, so a broker that dies or is
   cut off past ``zookeeper.session.timeout.ms`` leaves the cluster by itself;
4. it tries to become the controller (:mod:`._controller_shell`); one broker wins;
5. it serves clients once the controller's first UpdateMetadata has arrived, and from
   then on obeys the controller: UpdateMetadata fills the MetadataCache clients are
   answered from, LeaderAndIsr makes it lead or follow (the same path as KRaft mode,
   :mod:`.._local_replicas`), StopReplica stops and deletes replicas.

A topic's configs are read from ``/config/topics/<topic>`` when the broker first hosts
the topic, and the dynamic broker configs (KIP-226) from ``/config/brokers/<default>``
and ``/config/brokers/<id>`` before it registers; each again at its change
notifications, which every broker follows under ``/config/changes`` from before it
registers (:mod:`._config_changes`, :mod:`._config_handlers`).

ZooKeeper's events come on one channel: watches go to the controller shell, but
``/config/changes``' to the config change listener; a session
that is lost (expired) ends the controller role and the registration, and when the
client has a new session the broker registers again (a new broker epoch) and stands for
election again.

Shutdown is Kafka's controlled shutdown: the broker asks the controller to move its
leaderships away (ControlledShutdown) before it stops serving.

No exception in applying the controller's requests or ZooKeeper's events ends the
broker: each runs under a non-fatal ``LoggingFaultHandler`` (:attr:`ZkBrokerServer.
metadata_faults`), which logs it at ERROR and counts it. A LeaderAndIsr whose partition
fails to lead or follow reports it KAFKA_STORAGE_ERROR (the ReplicaManager marked it
offline) and applies the others; one that fails as a whole, and an UpdateMetadata or
StopReplica that raises, is answered UNKNOWN_SERVER_ERROR, as Kafka's KafkaApis answers
a request whose handler threw; a ZooKeeper event that raises is logged and the next
one handled (a re-registration that failed is tried again at the next reconnection).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import uuid
from collections.abc import Mapping

import attrs
import trio
from kazoo.exceptions import ConnectionLoss, KazooException, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from kio.schema.errors import ErrorCode

from minikafka.common import ConfigError
from minikafka.controller import (
    ControllerError,
)
from minikafka.controller.zk import (
    LeaderAndIsr,
    StopReplica,
    UpdateMetadata,
)
from minikafka.coordination import GroupCoordinatorShell
from minikafka.log import LogManager
from minikafka.net import SocketServer
from minikafka.net import leader_and_isr_v5 as lai
from minikafka.net import stop_replica_v3 as sr
from minikafka.net import update_metadata_v7 as umr
from minikafka.replication import (
    ReplicaManagerShell,
)
from minikafka.trace import Tracer, get_tracer
from minikafka.zk import (
    ACL_CHANGES,
    CONFIG_CHANGES,
    SESSION_CONNECTED,
    SESSION_LOST,
    SESSION_SUSPENDED,
    BrokerRegistration,
    NodeExistsError,
    SessionChanged,
    WatchFired,
    ZkClient,
    register_broker,
)

from .._broker_parts import broker_parts
from .._config import ZOOKEEPER_CONNECT, KafkaConfig
from .._controller_channel import ControllerLocator, RemoteController
from .._coordinators import Coordinators
from .._local_replicas import LoggingFaultHandler, apply_replica_changes
from .._meta_properties import check_and_write_zk_meta, new_cluster_id
from .._metadata_cache import MetadataCache
from .._replica_fetchers import ReplicaFetcherManager
from .._scram_apis import image_scram_lookup
from ._apis import ZkControllerChannel, ZkKafkaApis
from ._config_changes import DynamicConfigManager
from ._config_handlers import ZkConfigHandlers
from ._controlled_shutdown import ask_controlled_shutdown
from ._controller_shell import ZkControllerShell
from ._metadata import ZkBrokerMetadata
from ._security import ZkSecuritySource
from ._wire import leader_and_isr_response, stop_replica_response

_logger = logging.getLogger("minikafka.broker")
CLUSTER_ID_PATH = "/cluster/id"


@attrs.define(eq=False)
class ZkBrokerServer:
    config: KafkaConfig
    log_manager: LogManager
    zk: ZkClient
    metadata: ZkBrokerMetadata
    metadata_cache: MetadataCache
    replica_manager: ReplicaManagerShell
    fetchers: ReplicaFetcherManager
    coordinators: Coordinators
    shell: ZkControllerShell
    channel: ZkControllerChannel
    apis: ZkKafkaApis
    socket_server: SocketServer
    tracer: Tracer
    cluster_id: str = ""
    _stop: trio.Event = attrs.field(init=False, factory=trio.Event)
    _stopped: trio.Event = attrs.field(init=False, factory=trio.Event)
    _registration_lock: trio.Lock = attrs.field(init=False, factory=trio.Lock)
    _first_metadata: trio.Event = attrs.field(init=False, factory=trio.Event)
    metadata_faults: LoggingFaultHandler = attrs.field(
        init=False, factory=lambda: LoggingFaultHandler("metadata publishing")
    )
    """Every fault in applying the controller's requests and ZooKeeper's events."""
    configs: ZkConfigHandlers = attrs.field(init=False)
    """Reads the topics' and this broker's configs and applies them."""
    config_changes: DynamicConfigManager = attrs.field(init=False)
    """Follows ``/config/changes``: each topic's or broker's config change, applied
    here."""
    security: ZkSecuritySource = attrs.field(init=False)
    """The SCRAM credentials and ACLs ZooKeeper holds, kept in the image."""

    def __attrs_post_init__(self) -> None:
        self.configs = ZkConfigHandlers(
            self.config.node_id,
            self.zk,
            self.metadata,
            self.replica_manager,
            self.shell,
            self._publish,
            self.config.broker.zookeeper_session_timeout_ms / 1000,
        )
        self.security = ZkSecuritySource(
            self.zk,
            self.metadata,
            lambda: self.metadata_cache.update(self.metadata.image),
            self.metadata_faults,
        )
        self.config_changes = DynamicConfigManager(
            self.zk,
            self.configs.on_topic_config_change,
            self.metadata_faults,
            on_broker_config=self.configs.on_broker_config_change,
            on_user_config=self.security.on_user_config_change,
        )

    @classmethod
    def open(
        cls,
        config: KafkaConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> ZkBrokerServer:
        """Load the logs; nothing touches ZooKeeper or listens until :meth:`run`."""
        hosts = config.broker.zookeeper_connect
        if hosts is None:
            raise ConfigError(
                ZOOKEEPER_CONNECT, "is required for a ZooKeeper-mode broker"
            )
        tracer = get_tracer() if tracer is None else tracer
        node_id = config.node_id
        settings = config.broker
        log_manager = LogManager.startup(
            settings.log_dirs, config.log, schedule=config.schedule, tracer=tracer
        )
        session = settings.zookeeper_session_timeout_ms / 1000
        zk = ZkClient(hosts, session_timeout=session)
        metadata = ZkBrokerMetadata(node_id)
        # No controller known until the first UpdateMetadata (Kafka's -1, not this broker).
        cache = MetadataCache(node_id, metadata.image, controller_id=-1)
        listener = config.roles.inter_broker_listener_name or "PLAINTEXT"
        shell = ZkControllerShell(
            node_id,
            zk,
            config.controller,
            listener,
            tracer,
            client_id=f"controller-{node_id}",
            security=config.channels.inter_broker,
            broker_has_topic=lambda name: cache.topic(name) is not None,
        )
        remote = RemoteController(
            ControllerLocator(()),
            "",
            client_id=f"broker-{node_id}-to-controller",
            security=config.channels.inter_broker,
            retries=False,
        )
        channel = ZkControllerChannel(shell, remote, metadata, listener)

        parts = broker_parts(
            config,
            log_manager,
            cache,
            channel,
            lambda: metadata.broker_epoch,
            tracer,
            rng,
        )
        replica_manager, fetchers, coordinators = (
            parts.replica_manager,
            parts.fetchers,
            parts.coordinators,
        )
        apis = ZkKafkaApis(
            config,
            "",
            cache,
            replica_manager,
            channel,
            parts.producer_ids,
            coordinators.groups,
            coordinators.transactions,
            coordinators.verifier,
            zk_channel=channel,
        )
        server = cls(
            config,
            log_manager,
            zk,
            metadata,
            cache,
            replica_manager,
            fetchers,
            coordinators,
            shell,
            channel,
            apis,
            SocketServer(
                config.net, apis, tracer=tracer, scram_lookup=image_scram_lookup(cache)
            ),
            tracer,
        )
        apis.node = server
        return server

    @property
    def groups(self) -> GroupCoordinatorShell:
        """This broker's group coordinator."""
        return self.coordinators.groups

    def bound_address(self) -> tuple[str, int]:
        return self.socket_server.bound_address()

    # --- running ---------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        clean = False
        settings = self.config.broker
        connect_ms = (
            settings.zookeeper_connection_timeout_ms
            or settings.zookeeper_session_timeout_ms
        )
        try:
            try:
                await self.zk.connect(connect_timeout=connect_ms / 1000)
            except KazooTimeoutError:
                # The user's to fix (a server down, a wrong address): one line, no traceback.
                raise ConnectionError(
                    f"no ZooKeeper answered at {ZOOKEEPER_CONNECT}={self.zk.hosts} "
                    f"within {connect_ms / 1000:.0f} s"
                ) from None
            self.cluster_id = await _cluster_id(self.zk)
            # Before any log is written: these directories must be this cluster's and
            # this broker's (or new), and then say so in meta.properties version 0.
            check_and_write_zk_meta(
                list(settings.log_dirs), self.config.node_id, self.cluster_id
            )
            self.apis.cluster_id = self.cluster_id
            self.channel.remote.cluster_id = self.cluster_id
            async with trio.open_nursery() as nursery:
                await nursery.start(self.log_manager.run)
                await nursery.start(self.replica_manager.run)
                await nursery.start(self.fetchers.run)
                await nursery.start(self.coordinators.run)
                await nursery.start(self.apis.run)
                await nursery.start(self.shell.run)
                await nursery.start(self.channel.remote.run)
                try:
                    await self._start_up(nursery)
                except (SessionExpiredError, ConnectionLoss):
                    # ZooKeeper silent past the session mid-start-up: Kafka's start-up
                    # fails on SESSIONEXPIRED too. One line; a supervisor restarts it.
                    raise ConnectionError(
                        f"no ZooKeeper answered at {ZOOKEEPER_CONNECT}={self.zk.hosts} "
                        "while starting: the session expired"
                    ) from None
                host, port = self.bound_address()
                _logger.info(
                    "minikafka broker %d (ZooKeeper mode, cluster %s) listening on %s:%d",
                    self.config.node_id,
                    self.cluster_id,
                    host,
                    port,
                )
                task_status.started()
                await self._stop.wait()
                grace = settings.controlled_shutdown_timeout_ms / 1000
                await self._controlled_shutdown(grace)
                self.fetchers.shutdown()
                self.replica_manager.shutdown()
                self.coordinators.shutdown()
                await self.socket_server.shutdown(grace_seconds=grace)
                nursery.cancel_scope.cancel()
                clean = True
        finally:
            with contextlib.suppress(Exception):
                await self.zk.close()
            if clean:
                self.log_manager.shutdown()
            self._stopped.set()

    async def shutdown(self) -> None:
        self._stop.set()
        await self._stopped.wait()

    async def _register(self) -> None:
        """The ephemeral ``/brokers/ids/<id>``; its czxid is the new broker epoch."""
        async with self._registration_lock:
            endpoints = []
            protocols = {}
            for listener in self.config.advertised_listeners:
                port = (
                    listener.port or self.socket_server.bound_address(listener.name)[1]
                )
                endpoints.append(f"{listener.name}://{listener.host}:{port}")
                protocols[listener.name] = listener.security_protocol
            registration = BrokerRegistration(
                self.config.node_id,
                tuple(endpoints),
                protocols,
                rack=self.config.broker.broker_rack,
            )
            while True:
                try:
                    self.metadata.broker_epoch = await register_broker(
                        self.zk, registration
                    )
                    break
                except NodeExistsError:
                    # The previous session's znode lingers until ZooKeeper expires it.
                    _logger.warning(
                        "broker.id %d is registered by another session; waiting for it to go",
                        self.config.node_id,
                    )
                    await trio.sleep(1.0)
            _logger.info("registered, broker epoch %d", self.metadata.broker_epoch)

    async def _zookeeper_events(self) -> None:
        session = _Session()
        async for event in self.zk.events:
            with self.metadata_faults.guard(
                f"Error handling the ZooKeeper event {event}", key="ZooKeeper events"
            ):
                await self._on_zookeeper_event(event, session)

    async def _start_up(self, nursery: trio.Nursery) -> None:
        """The start-up steps that use ZooKeeper, up to the controller's first word."""
        # Before the controller knows this broker (it would send LeaderAndIsr,
        # whose topics' configs are read then): every change after that read is
        # a notification this broker handles.
        await self.config_changes.start()
        await nursery.start(self.config_changes.run)
        # Before any client connects: the credentials SASL listeners check and
        # the ACLs the authorizer reads.
        await self.security.start()
        await nursery.start(self.security.run)
        await nursery.start(self.socket_server.serve)
        self.apis.ready.set()  # the controller's first requests may come at once
        # The dynamic broker configs before any partition is hosted here: a
        # restarted broker's topics start with them.
        await self.configs.load_broker_configs()
        await self._register()
        nursery.start_soon(self._zookeeper_events)
        self.shell.elect()
        # Ready once the controller has told this broker the cluster: before
        # that, Metadata would list no broker and no controller, and a client
        # that asked then might wait long before asking again.
        await self._first_metadata.wait()

    async def _on_zookeeper_event(
        self, event: WatchFired | SessionChanged, session: _Session
    ) -> None:
        match event:
            case WatchFired(_, path) if path == CONFIG_CHANGES:
                self.config_changes.notify()
            case WatchFired(_, path) if path in ACL_CHANGES:
                self.security.notify()
            case WatchFired():
                self.shell.watch_fired(event)
            case SessionChanged(state) if state == SESSION_SUSPENDED:
                session.suspended = True
            case SessionChanged(state) if state == SESSION_LOST:
                session.lost = True
                self.shell.resign("ZooKeeper session expired")
            case SessionChanged(state) if state == SESSION_CONNECTED and session.lost:
                # A new session: the old one's znodes and watches are gone. Until the
                # registration succeeds the session counts as lost, so that the next
                # connection registers again.
                await self._register()
                session.lost = session.suspended = False
                self.shell.elect()
                self.config_changes.notify()  # the old session's watch is gone
                self.security.notify()
            case SessionChanged(state) if (
                state == SESSION_CONNECTED and session.suspended
            ):
                # The same session: its znodes are there, its watches may not be.
                session.suspended = False
                self.shell.reconnected()
                self.config_changes.notify()
                self.security.notify()

    async def _controlled_shutdown(self, grace: float) -> None:
        """Kafka 2.8's controlled shutdown (:func:`ask_controlled_shutdown`), then stop
        anyway, within ``grace`` in all."""
        settings = self.config.broker

        async def ask() -> tuple[ErrorCode, int]:
            try:
                return await self.channel.controlled_shutdown(
                    self.config.node_id, self.metadata.broker_epoch
                )
            except ControllerError as exc:
                return exc.error_code, -1

        with trio.move_on_after(grace) as scope:
            if not await ask_controlled_shutdown(
                ask,
                settings.controlled_shutdown_max_retries,
                settings.controlled_shutdown_retry_backoff_ms / 1000,
            ):
                _logger.warning(
                    "controlled shutdown did not move every leadership; stopping"
                )
        if scope.cancelled_caught:
            _logger.warning("controlled shutdown did not finish within %.0f s", grace)

    # --- the controller's requests ----------------------------------------------------------

    async def on_leader_and_isr(
        self, request: LeaderAndIsr
    ) -> lai.LeaderAndIsrResponse:
        ids = {p.topic: p.topic_id for p in request.partitions}
        with self.metadata_faults.guard(
            f"Error applying LeaderAndIsr from controller {request.controller_id} "
            f"at epoch {request.controller_epoch}"
        ):
            return await self._leader_and_isr(request, ids)
        return leader_and_isr_response(ErrorCode.unknown_server_error, {}, ids)

    async def _leader_and_isr(
        self, request: LeaderAndIsr, ids: Mapping[str, uuid.UUID | None]
    ) -> lai.LeaderAndIsrResponse:
        # A topic's settings (retention, segment size, min.insync.replicas...) are read
        # from ZooKeeper when the broker first hosts one of its partitions, as Kafka
        # does; before anything else, so that a failed read changes nothing.
        try:
            await self.configs.load_topic_configs({p.topic for p in request.partitions})
        except KazooException as exc:
            _logger.warning(_CONFIGS_UNREADABLE, _said(exc))
            return leader_and_isr_response(ErrorCode.kafka_storage_error, {}, ids)
        error, outcome = self.metadata.leader_and_isr(request)
        if error is not ErrorCode.none:
            return leader_and_isr_response(error, {}, ids)
        applied = apply_replica_changes(
            self.replica_manager,
            self.fetchers,
            self.coordinators,
            leaders=outcome.leaders,
            followers=outcome.followers,
            leader_nodes=outcome.leader_nodes,
            faults=self.metadata_faults,
            where=f"for LeaderAndIsr from controller {request.controller_id}",
        )
        if not applied:
            return leader_and_isr_response(ErrorCode.unknown_server_error, {}, ids)
        errors = dict(outcome.errors)
        for tp in (*outcome.leaders, *outcome.followers):
            if self.replica_manager.is_offline(tp):
                # Kafka's becomeLeaderOrFollower answers a partition it marked offline
                # KAFKA_STORAGE_ERROR, so the controller learns the replica is offline.
                errors[tp] = ErrorCode.kafka_storage_error
        return leader_and_isr_response(ErrorCode.none, errors, ids)

    def on_update_metadata(self, request: UpdateMetadata) -> umr.UpdateMetadataResponse:
        with self.metadata_faults.guard(
            f"Error applying UpdateMetadata from controller {request.controller_id} "
            f"at epoch {request.controller_epoch}"
        ):
            error = self.metadata.update_metadata(request)
            if error is ErrorCode.none:
                self._publish()
                self._first_metadata.set()
            return umr.UpdateMetadataResponse(error_code=error)
        return umr.UpdateMetadataResponse(error_code=ErrorCode.unknown_server_error)

    def on_stop_replica(self, request: StopReplica) -> sr.StopReplicaResponse:
        with self.metadata_faults.guard(
            f"Error applying StopReplica from controller {request.controller_id} "
            f"at epoch {request.controller_epoch}"
        ):
            error, outcome = self.metadata.stop_replica(request)
            if error is ErrorCode.none and not apply_replica_changes(
                self.replica_manager,
                self.fetchers,
                self.coordinators,
                leaders={},
                followers={},
                leader_nodes={},
                deleted=outcome.deleted,
                stopped=outcome.stopped - outcome.deleted,
                faults=self.metadata_faults,
                where=f"for StopReplica from controller {request.controller_id}",
            ):
                error = ErrorCode.unknown_server_error
            return stop_replica_response(error, outcome.errors)
        return stop_replica_response(ErrorCode.unknown_server_error, {})

    def _publish(self) -> None:
        self.metadata_cache.update(self.metadata.image)
        self.metadata_cache.controller_id = self.metadata.controller_id
        self.shell.metadata_applied()


_CONFIGS_UNREADABLE = "LeaderAndIsr refused: topic configs unreadable (%s)"


def _said(exc: BaseException) -> str:
    """An exception's type, and its text if it has one: kazoo's ConnectionLoss and
    SessionExpiredError carry none."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@attrs.define
class _Session:
    """What the ZooKeeper session went through since the broker last registered."""

    lost: bool = False
    suspended: bool = False


async def _cluster_id(zk: ZkClient) -> str:
    """``/cluster/id``, created by the first broker (Kafka's JSON: version and id)."""

    await zk.ensure_path("/cluster")
    with contextlib.suppress(NodeExistsError):
        data = json.dumps({"version": "1", "id": new_cluster_id()}).encode()
        await zk.create(CLUSTER_ID_PATH, data)
    data, _ = await zk.get(CLUSTER_ID_PATH)
    try:
        return str(json.loads(data)["id"])
    except (ValueError, KeyError, TypeError):
        return data.decode(errors="replace")
