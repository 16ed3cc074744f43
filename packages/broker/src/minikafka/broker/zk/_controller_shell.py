"""The ZooKeeper-mode controller's trio shell: the election, the one event queue, the writes
and the channel to each broker (seed 001; Kafka 2.8's ``KafkaController``,
``ControllerEventManager`` and ``ControllerChannelManager``).

Every broker of a ZooKeeper-mode cluster runs one of these; at most one is *active*. The
shell keeps Kafka's shape:

- **one event queue, one consumer.** Watches that fire (the broker list, the topic list or
  a topic's assignment, the deletion list, ``/controller`` itself), requests from brokers
  and clients (AlterPartition, ControlledShutdown, CreateTopics...) and StopReplica answers
  are all events, taken one at a time by :meth:`_process_events`, so the core
  (:class:`~minikafka.controller.ZkController`) never sees two at once;
- **an election** whenever ``/controller`` is free: the winner reads the cluster from
  ZooKeeper (setting every watch), builds the core, and carries out what taking over
  asks; the losers watch ``/controller`` and try again when it goes;
- **the writes of an event in one transaction** (or several of at most
  :data:`MAX_OPS`, for an event that moves thousands of partitions), each guarded by a
  check that ``/controller_epoch`` still has the version this controller wrote when it
  won. If
  another controller has been elected meanwhile the check fails, nothing is written, and
  this one resigns: the fence that keeps a zombie controller from changing ZooKeeper
  (brokers fence its requests with STALE_CONTROLLER_EPOCH);
- **one queue and one sender task per broker** (Kafka's RequestSendThread, in
  :mod:`._channel_manager`): requests to a broker go in order, each retried until it
  is answered or the broker is gone.

Faults, per background task, as Kafka 2.8's controller meets them:

- **the event loop** (:meth:`ZkControllerShell._process_events`, Kafka's
  ``ControllerEventThread`` and ``KafkaController.process``): a write refused because
  ``/controller_epoch`` moved, or a znode another controller wrote, means another
  controller took over: this one resigns. ZooKeeper failing mid-event resigns too (the
  core may hold more than ZooKeeper does; the next controller reads it again). An
  ``ApiError`` is the request's answer. Any other exception is logged at ERROR as
  "Uncaught error processing event", the event's request (if any) hears
  UNKNOWN_SERVER_ERROR, and the next event is processed: this broker stays the
  controller. Only an election (becoming the controller) that fails moves the
  controller, as Kafka's ``elect`` does (``triggerControllerMove``): it gives
  ``/controller`` up and every broker, this one too, stands again after
  :data:`ELECTION_RETRY_S`;
- **the imbalance check's timer**: sleeps and queues an event; nothing in it can fail;
- **a sender per broker** (:mod:`._channel_manager`): see there; a broker that cannot
  be reached, or a send that fails in any other way, is retried after a backoff, and a
  fault in handling an answer is logged and the next request goes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs
import trio
from kazoo.exceptions import KazooException
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError
from minikafka.controller import (
    AllocateProducerIdsRequest,
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    ControllerConfig,
    ControllerError,
    ControllerRequest,
    ControllerResponse,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from minikafka.controller.zk import (
    LATEST_PRODUCER_ID_BLOCK,
    ControlledShutdownResult,
    ZkController,
    ZkControllerElected,
    ZkControllerResult,
    ZkResponse,
    ZkWatchFired,
    decode_producer_id_block,
)
from minikafka.net import NetworkClient, Node
from minikafka.trace import Tracer
from minikafka.zk import (
    CONTROLLER,
    CONTROLLER_EPOCH,
    DELETE_TOPICS,
    TOPICS,
    BadVersionError,
    Check,
    Elected,
    Lost,
    NodeExistsError,
    NoNodeError,
    WatchFired,
    ZkClient,
    read_brokers,
    read_cluster,
    read_topic_configs,
    read_topics,
    try_to_elect,
)

from ._channel_manager import ControllerChannelManager
from ._controller_events import (
    CheckLeaderImbalance,
    ControllerEvent,
    ControllerMovedError,
    Elect,
    Reconnected,
    Resign,
    Shutdown,
    StopReplicaAnswered,
    Submit,
    Watch,
    event_log_name,
    event_name,
    fail_event,
)

_logger = logging.getLogger("minikafka.broker.zk_controller")
ADMIN_WAIT_S = 20.0
"""How long CreateTopics and DeleteTopics wait for the controller to finish the job
(Kafka's request ``timeout``, which the controller's requests do not carry here)."""
MAX_OPS = 1000
"""The most ZooKeeper writes in one transaction (each about 200 bytes: well under the 1 MB
ZooKeeper accepts in one request)."""
ELECTION_RETRY_S = 1.0
"""How long after an election that failed (a fault while becoming the controller) this
broker stands again: a fault that strikes every election cannot spin against
ZooKeeper."""


@attrs.define(eq=False)
class ZkControllerShell:
    broker_id: int
    zk: ZkClient
    config: ControllerConfig
    listener: str
    """The inter-broker listener, where requests to brokers go."""
    tracer: Tracer
    client_id: str = "minikafka-zk-controller"
    on_active: Callable[[bool], None] = lambda active: None
    """Told when this broker becomes the controller (True) and stops being it (False)."""
    core: ZkController | None = attrs.field(init=False, default=None)
    _epoch_version: int = attrs.field(init=False, default=-1)
    _events: trio.MemorySendChannel[ControllerEvent] = attrs.field(init=False)
    _queue: trio.MemoryReceiveChannel[ControllerEvent] = attrs.field(init=False)
    _processed: trio.Event = attrs.field(init=False, factory=trio.Event)
    """Set (and replaced) after each event: what admin requests wait on."""
    _channels: ControllerChannelManager | None = attrs.field(init=False, default=None)
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    # After an election that failed: when this broker may stand again (trio's clock).
    _elect_not_before: float = attrs.field(init=False, default=-math.inf)

    def __attrs_post_init__(self) -> None:
        self._events, self._queue = trio.open_memory_channel(math.inf)

    @property
    def active(self) -> bool:
        return self.core is not None

    @property
    def epoch(self) -> int:
        return -1 if self.core is None else self.core.context.epoch

    # --- what the broker hands in -----------------------------------------------------------

    def elect(self) -> None:
        """Try to become the controller (at start, and when ``/controller`` was deleted)."""
        self._events.send_nowait(Elect())

    def watch_fired(self, fired: WatchFired) -> None:
        name = event_name(fired.path, fired.kind)
        if self.tracer.enabled:
            self.tracer.emit(ZkWatchFired(fired.kind, fired.path, name or ""))
        if name == "Reelect":
            self.elect()
        elif name is not None:
            self._events.send_nowait(Watch(fired))

    def reconnected(self) -> None:
        """The session survived a lost connection (ZooKeeper restarted, or reached
        through another server). Kazoo does not set the watches again as ZooKeeper's own
        client does, and whatever changed meanwhile fired no watch here: read everything
        again, with watches."""
        self._events.send_nowait(Reconnected())

    def resign(self, why: str) -> None:
        """The session was lost: whatever this broker controlled, it no longer does."""
        self._events.send_nowait(Resign(why))

    async def submit(self, request: ControllerRequest) -> ControllerResponse:
        """One request for the controller (this broker must be it: NOT_CONTROLLER
        otherwise). CreateTopics and DeleteTopics wait until the job is done, as a
        client expects the topic usable (or gone) once answered."""
        send, receive = trio.open_memory_channel[ZkResponse | ControllerError](1)
        self._events.send_nowait(Submit(request, send))
        answer = await receive.receive()
        if isinstance(answer, ControllerError):
            raise answer
        if answer is None:
            raise ControllerError(ErrorCode.unknown_server_error)
        validate_only = (
            isinstance(request, CreateTopicsRequest) and request.validate_only
        )
        if isinstance(answer, CreateTopicsResponse) and not validate_only:
            created = {t.name for t in answer.topics if t.error_code is ErrorCode.none}
            late = await self._wait_for(
                created, lambda core, name: _created(core, name)
            )
            answer = CreateTopicsResponse(
                tuple(_timed_out(t) if t.name in late else t for t in answer.topics)
            )
        elif isinstance(answer, DeleteTopicsResponse):
            deleted = {
                t.name
                for t in answer.topics
                if t.error_code is ErrorCode.none and t.name
            }
            late = await self._wait_for(
                deleted, lambda core, name: name not in core.context.topics
            )
            answer = DeleteTopicsResponse(
                tuple(_timed_out(t) if t.name in late else t for t in answer.topics)
            )
        # not a submitted request's
        assert not isinstance(answer, ControlledShutdownResult)
        return answer

    async def _wait_for(
        self, names: set[str], done: Callable[[ZkController, str], bool]
    ) -> set[str]:
        """Wait until ``done`` holds for every name; those for which it does not within
        :data:`ADMIN_WAIT_S` are answered REQUEST_TIMED_OUT, as Kafka's purgatory does
        (a deletion waits for a replica's broker that is down, for one)."""
        with trio.move_on_after(ADMIN_WAIT_S):
            while self.core is not None and not all(done(self.core, n) for n in names):
                await self._processed.wait()
        core = self.core
        return set(names) if core is None else {n for n in names if not done(core, n)}

    # --- the event loop ---------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with (
            NetworkClient.open(client_id=self.client_id) as client,
            trio.open_nursery() as nursery,
        ):
            self._nursery = nursery
            self._channels = ControllerChannelManager(
                client, nursery, self.tracer, self._stop_replica_answered
            )
            if self.config.auto_leader_rebalance_enable:
                nursery.start_soon(self._post_leader_imbalance_checks)
            task_status.started()
            try:
                await self._process_events()
            finally:
                self._stop_channels()
                nursery.cancel_scope.cancel()

    async def _post_leader_imbalance_checks(self) -> None:
        """``auto.leader.rebalance.enable``: every ``leader.imbalance.check.interval.seconds``
        the check goes into the event queue, behind whatever is there (Kafka's controller
        schedules it on its ``KafkaScheduler`` the same way); while this broker is not the
        controller there is nothing to check."""
        while True:
            await trio.sleep(self.config.leader_imbalance_check_interval_seconds)
            if self.core is not None:
                self._events.send_nowait(CheckLeaderImbalance())

    async def _process_events(self) -> None:
        """Kafka's ControllerEventThread: one event at a time; whatever one raises is
        logged and answered, and the next event is taken."""
        async for event in self._queue:
            try:
                await self._process_one(event)
            except Exception:
                _logger.exception(
                    "Uncaught error processing event %s", event_log_name(event)
                )
                fail_event(event, ErrorCode.unknown_server_error)
            self._processed.set()
            self._processed = trio.Event()

    async def _process_one(self, event: ControllerEvent) -> None:
        """Kafka's ``KafkaController.process``: the failures that mean something."""
        try:
            await self._process(event)
        except ControllerMovedError as exc:
            self._resign_now(str(exc))
        except KazooException as exc:
            # ZooKeeper could not be reached mid-event (restarting, or the connection
            # dropped). The core may have decided more than ZooKeeper now holds, so an
            # active controller resigns and gives /controller up, and the next one
            # (perhaps itself) starts again from what ZooKeeper says (Kafka's
            # triggerControllerMove).
            _logger.warning(
                "controller event %s failed: %r", event_log_name(event), exc
            )
            fail_event(event, ErrorCode.request_timed_out)
            self._resign_now(f"ZooKeeper failed mid-event: {exc!r}")
        except ApiError as exc:
            # A known Kafka error (a request this controller does not serve): the answer.
            _logger.info("controller event %s failed: %s", event_log_name(event), exc)
            fail_event(event, exc.error_code)

    async def _process(self, event: ControllerEvent) -> None:
        match event:
            case Elect():
                if self.core is None:
                    await self._try_to_elect()
            case Resign(why):
                self._resign_now(why)
            case Reconnected():
                await self._catch_up()
            case Submit(request, reply):
                if self.core is None:
                    reply.send_nowait(ControllerError(ErrorCode.not_controller))
                    return
                await self._answer(self._submitted(self.core, request), reply)
            case Shutdown(broker_id, broker_epoch, reply):
                if self.core is None:
                    reply.send_nowait(ControllerError(ErrorCode.not_controller))
                    return
                await self._answer(
                    self.core.on_controlled_shutdown(broker_id, broker_epoch), reply
                )
            case Watch(fired) if self.core is not None:
                await self._on_watch(self.core, fired)
            case StopReplicaAnswered(broker_id, errors) if self.core is not None:
                await self._carry_out(
                    self.core.on_stop_replica_response(broker_id, errors)
                )
            case CheckLeaderImbalance() if self.core is not None:
                await self._carry_out(self.core.on_auto_leader_rebalance())

    async def _answer(
        self,
        result: ZkControllerResult,
        reply: trio.MemorySendChannel[ZkResponse | ControllerError],
    ) -> None:
        try:
            await self._carry_out(result)
        except ControllerMovedError:
            reply.send_nowait(ControllerError(ErrorCode.not_controller))
            raise
        reply.send_nowait(result.response)

    def _submitted(
        self, core: ZkController, request: ControllerRequest
    ) -> ZkControllerResult:
        match request:
            case AlterPartitionRequest():
                return core.on_alter_partition(request)
            case CreateTopicsRequest():
                return core.on_create_topics(request)
            case CreatePartitionsRequest():
                return core.on_create_partitions(request)
            case DeleteTopicsRequest():
                return core.on_delete_topics(request)
            case AllocateProducerIdsRequest():
                return core.on_allocate_producer_ids(request)
            case ElectLeadersRequest():
                return core.on_elect_leaders(request)
            case AlterPartitionReassignmentsRequest():
                return core.on_alter_partition_reassignments(request)
            case ListPartitionReassignmentsRequest():
                return ZkControllerResult(response=core.list_reassignments())
        raise ControllerError(ErrorCode.unsupported_version)

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> ControlledShutdownResult:
        """A broker's ControlledShutdown, on the event loop like any request."""
        send, receive = trio.open_memory_channel[ZkResponse | ControllerError](1)
        self._events.send_nowait(Shutdown(broker_id, broker_epoch, send))
        answer = await receive.receive()
        if isinstance(answer, ControllerError):
            raise answer
        assert isinstance(answer, ControlledShutdownResult)
        return answer

    async def _catch_up(self) -> None:
        if self.core is None:
            await self._try_to_elect()
            return
        await self.zk.exists(CONTROLLER, watch=True)
        cluster = await read_cluster(self.zk, watch=True)
        await self._carry_out(self.core.on_broker_change(cluster.brokers))
        if self.core is not None:
            await self._carry_out(
                self.core.on_topic_change(cluster.topics, cluster.configs)
            )
        if self.core is not None:
            await self._carry_out(self.core.on_topic_deletion(cluster.deleting))

    async def _on_watch(self, core: ZkController, fired: WatchFired) -> None:
        """ZooKeeper says only that something changed: read it again, re-arming the
        watch, but only what the event is about (a cluster of 10,000 partitions is not
        read again for every new topic: Kafka reads the new topics' assignments only)."""
        name = event_name(fired.path, fired.kind)
        if name == "BrokerChange":
            await self._carry_out(core.on_broker_change(await read_brokers(self.zk)))
        elif name == "TopicChange":
            names = await self.zk.get_children(TOPICS, watch=True)
            wanted = [n for n in names if n not in core.context.topics]
            changed = fired.path.removeprefix(TOPICS + "/")
            if fired.path != TOPICS and changed in names and changed not in wanted:
                wanted.append(changed)  # an assignment rewritten: partitions added
            read = await read_topics(self.zk, wanted, watch=True)
            # Each topic's config was written before its assignment (as Kafka's
            # AdminZkClient does), so it is there to read with it.
            configs = await read_topic_configs(self.zk, read)
            await self._carry_out(
                core.on_topic_change({**core.context.topics, **read}, configs)
            )
        elif name == "TopicDeletion":
            listed = await self.zk.get_children(DELETE_TOPICS, watch=True)
            await self._carry_out(core.on_topic_deletion(listed))

    # --- becoming the controller, and stopping --------------------------------------------------

    async def _try_to_elect(self) -> None:
        """Stand for controller. A fault while becoming it (other than ZooKeeper's, or
        another controller's writes, which the event loop meets) moves the controller, as
        Kafka's ``elect`` does (``triggerControllerMove``): resign, give ``/controller``
        up so that every broker elects again, and stand again only after
        :data:`ELECTION_RETRY_S`."""
        wait = self._elect_not_before - trio.current_time()
        if wait > 0:
            self._elect_later(wait)
            return
        try:
            await self._elect()
        except (ControllerMovedError, KazooException):
            raise
        except Exception as exc:
            _logger.exception(
                "Error while electing or becoming controller on broker %d; the "
                "controller moves",
                self.broker_id,
            )
            self._elect_not_before = trio.current_time() + ELECTION_RETRY_S
            self._resign_now(f"{type(exc).__name__}: {exc}", elect=False)
            self._elect_later(ELECTION_RETRY_S)
            await self._release_controller()

    def _elect_later(self, delay: float) -> None:
        async def elect_later() -> None:
            await trio.sleep(delay)
            self.elect()

        if self._nursery is not None:
            self._nursery.start_soon(elect_later)

    async def _elect(self) -> None:
        outcome = await try_to_elect(self.zk, self.broker_id)
        if isinstance(outcome, Lost) and outcome.controller_id == self.broker_id:
            # /controller is this broker's, left from before it resigned (its session
            # lives on): give it up, so that every broker elects again, this one too.
            await self._release_controller()
            outcome = await try_to_elect(self.zk, self.broker_id)
        if not isinstance(outcome, Elected):
            # Someone else controls; hear when /controller goes (or try again if it just did).
            if await self.zk.exists(CONTROLLER, watch=True) is None:
                self.elect()
            return
        self._epoch_version = outcome.epoch_version
        cluster = await read_cluster(self.zk, watch=True)
        await self.zk.exists(CONTROLLER, watch=True)
        block: tuple[int, int] | None = None
        try:
            data, stat = await self.zk.get(LATEST_PRODUCER_ID_BLOCK)
            block = (decode_producer_id_block(data), stat.version)
        except NoNodeError:
            pass
        core, result = ZkController.become_active(
            self.broker_id,
            outcome.epoch,
            cluster,
            config=self.config,
            listener=self.listener,
            tracer=self.tracer,
            producer_id_block=block,
        )
        self.core = core
        _logger.info(
            "broker %d is the controller, epoch %d", self.broker_id, outcome.epoch
        )
        if self.tracer.enabled:
            self.tracer.emit(ZkControllerElected(self.broker_id, outcome.epoch, False))
        self.on_active(True)
        await self._carry_out(result)

    async def _release_controller(self) -> None:
        try:
            _, stat = await self.zk.get(CONTROLLER)
            if stat.ephemeral_owner == self.zk.session_id:
                await self.zk.delete(CONTROLLER, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass  # gone already, or another broker's by now

    def _resign_now(self, why: str, *, elect: bool = True) -> None:
        if self.core is None:
            return
        epoch = self.core.context.epoch
        _logger.warning(
            "broker %d resigns as controller (epoch %d): %s", self.broker_id, epoch, why
        )
        self.core = None
        self._stop_channels()
        if self.tracer.enabled:
            self.tracer.emit(ZkControllerElected(self.broker_id, epoch, True))
        self.on_active(False)
        if elect:
            # the watch on /controller may be gone with the session: look again
            self.elect()

    # --- carrying out what the core decided -------------------------------------------------------

    async def _carry_out(self, result: ZkControllerResult) -> None:
        # At most MAX_OPS writes a transaction: ZooKeeper refuses a request over
        # jute.maxbuffer (1 MB), and a failover of thousands of partitions writes each
        # one's state. Every chunk carries the epoch check; Kafka, too, fences each
        # write and not a whole event at once.
        writes = result.writes
        for start in range(0, len(writes), MAX_OPS):
            chunk = writes[start : start + MAX_OPS]
            try:
                await self.zk.transaction(
                    [Check(CONTROLLER_EPOCH, self._epoch_version), *chunk]
                )
            except (BadVersionError, NodeExistsError, NoNodeError) as exc:
                # The epoch check failed (another controller was elected), or a znode is
                # not as this controller left it (another controller wrote it).
                raise ControllerMovedError(
                    f"a write failed ({type(exc).__name__}): {exc}"
                ) from exc
        if self.core is None or self._channels is None:
            return
        self._sync_channels(self.core)
        self._channels.send(result.requests)

    def _sync_channels(self, core: ZkController) -> None:
        """A channel to every live broker, at its current address (inter-broker listener)."""
        assert self._channels is not None
        brokers: dict[int, Node] = {}
        for broker_id, live in core.context.brokers.items():
            address = live.registration.addresses().get(self.listener)
            if address is not None:
                brokers[broker_id] = Node(broker_id, *address)
        self._channels.sync(brokers)

    def _stop_channels(self) -> None:
        if self._channels is not None:
            self._channels.stop()

    def _stop_replica_answered(
        self, broker_id: int, errors: Mapping[tuple[str, int], ErrorCode]
    ) -> None:
        self._events.send_nowait(StopReplicaAnswered(broker_id, errors))


T = TypeVar("T", CreatableTopicResult, DeletableTopicResult)


def _timed_out(result: T) -> T:
    return attrs.evolve(
        result, error_code=ErrorCode.request_timed_out, error_message=None
    )


def _created(core: ZkController, name: str) -> bool:
    """The topic exists and every partition has its state znode (a leader, or none live)."""
    assignment = core.context.topics.get(name)
    if assignment is None:
        return False
    return all((name, p) in core.context.leadership for p in assignment.partitions)
