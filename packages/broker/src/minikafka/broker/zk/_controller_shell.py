"""The ZooKeeper-mode controller's trio shell: the election, the one event queue, the writes
and the channel to each broker (seed 001; Kafka 2.8's ``KafkaController``,
``ControllerEventManager`` and ``ControllerChannelManager``).

Every broker of a ZooKeeper-mode cluster runs one of these; at most one is *active*. The
shell keeps Kafka's shape:

- **one event queue, one consumer.** Watches that fire (the broker list, the topic list or
  a topic's assignment, the deletion list, ``/controller`` itself), requests from brokers
  and clients (AlterPartition, ControlledShutdown, CreateTopics...) and StopReplica answers
  are all events, taken one at a time by :meth:`_process_events`, so the core
  (:class:`~minikafka.controller.ZkController`) never sees two at once; a request
  waits for its event's answer by id, through the shell runtime's ``Waiters``
  (:mod:`minikafka.common.shell`), as every core's shell does;
- **an election** whenever ``/controller`` is free: the winner reads the cluster from
  ZooKeeper (setting every watch), builds the core, and carries out what taking over
  asks; the losers watch ``/controller`` and try again when it goes;
- **the writes of an event in one transaction** (or several of at most
  :data:`~._controller_zk.MAX_OPS`, for an event that moves thousands of partitions),
  each guarded by a check that ``/controller_epoch`` still has the version this
  controller wrote when it won. If another controller has been elected meanwhile the
  check fails, nothing is written, and this one resigns: the fence that keeps a zombie
  controller from changing ZooKeeper (brokers fence its requests with
  STALE_CONTROLLER_EPOCH). How each step reads and writes ZooKeeper (the election, the
  reads a watch asks for, the fenced writes) is :mod:`._controller_zk`'s;
- **one queue and one sender task per broker** (Kafka's RequestSendThread, in
  :mod:`._channel_manager`): requests to a broker go in order, each retried until it
  is answered or the broker is gone.

Faults, per background task, as Kafka 2.8's controller meets them:

- **the event loop** (:meth:`ZkControllerShell._process_events`, Kafka's
  ``ControllerEventThread`` and ``KafkaController.process``): a write refused because
  ``/controller_epoch`` moved, or a znode another controller wrote, means another
  controller took over: this one resigns. A lost connection to ZooKeeper does not end
  an event: the request it failed is sent again once the connection is back
  (:mod:`._controller_zk`, Kafka's ``retryRequestsUntilConnected``), and this broker
  stays the controller. The session expiring meanwhile, or ZooKeeper failing any other
  way mid-event, resigns (the core may hold more than ZooKeeper does; the next
  controller reads it again). An ``ApiError`` is the request's answer. Any other
  exception is logged at ERROR as "Uncaught error processing event", the event's
  request (if any) hears UNKNOWN_SERVER_ERROR, and the next event is processed: this
  broker stays the controller. Only an election (becoming the controller) that fails moves the
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
from minikafka.common.shell import Waiters
from minikafka.controller import (
    ControllerConfig,
    ControllerError,
    ControllerRequest,
    ControllerResponse,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsResponse,
)
from minikafka.controller.zk import (
    ControlledShutdownResult,
    ZkController,
    ZkControllerElected,
    ZkControllerResult,
    ZkWatchFired,
)
from minikafka.net import ClientSecurity, NetworkClient, Node
from minikafka.trace import EpochClock, Tracer
from minikafka.zk import WatchFired, ZkClient

from ._channel_manager import ControllerChannelManager
from ._controller_events import (
    Answer,
    BrokerConfigChanged,
    CheckLeaderImbalance,
    ControllerEvent,
    ControllerMovedError,
    Elect,
    Reconnected,
    Resign,
    Shutdown,
    StopReplicaAnswered,
    Submit,
    TopicConfigChanged,
    Watch,
    event_log_name,
    event_name,
    fail_event,
    process_request,
)
from ._controller_zk import ControllerZkClient

_logger = logging.getLogger("minikafka.broker.zk_controller")
ADMIN_WAIT_S = 20.0
"""How long CreateTopics and DeleteTopics wait for the controller to finish the job
(Kafka's request ``timeout``, which the controller's requests do not carry here)."""
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
    security: ClientSecurity = attrs.field(factory=ClientSecurity, kw_only=True)
    """TLS and SASL towards the brokers (:mod:`.._security_channels`)."""
    on_active: Callable[[bool], None] = lambda active: None
    """Told when this broker becomes the controller (True) and stops being it (False)."""
    broker_has_topic: Callable[[str], bool] = lambda name: False
    """Whether this broker's metadata (what UpdateMetadata told it) holds the topic:
    what an admin request waits on once the controller it was submitted to has moved."""
    clock: Callable[[], float] = attrs.field(
        factory=lambda: EpochClock(trio.current_time)
    )
    """The core's ``now`` (seconds since the epoch, as every broker-side shell's): each
    event is handed the time it is processed at, which its trace events carry."""
    core: ZkController | None = attrs.field(init=False, default=None)
    _controller_zk: ControllerZkClient = attrs.field(init=False)
    """How the controller reads ZooKeeper and writes it, fenced by its epoch."""
    _events: trio.MemorySendChannel[ControllerEvent] = attrs.field(init=False)
    _queue: trio.MemoryReceiveChannel[ControllerEvent] = attrs.field(init=False)
    _waiters: Waiters[Answer] = attrs.field(init=False, factory=Waiters)
    """The requests on the queue, each waiting for its event's answer."""
    _changed: trio.Event = attrs.field(init=False, factory=trio.Event)
    """Set (and replaced) after each event and each UpdateMetadata this broker
    applied: what admin requests wait on."""
    _channels: ControllerChannelManager | None = attrs.field(init=False, default=None)
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    # After an election that failed: when this broker may stand again (trio's clock).
    _elect_not_before: float = attrs.field(init=False, default=-math.inf)

    def __attrs_post_init__(self) -> None:
        self._events, self._queue = trio.open_memory_channel(math.inf)
        self._controller_zk = ControllerZkClient(self.broker_id, self.zk)

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

    def topic_config_changed(self, topic: str) -> None:
        """This broker read a change notification for ``topic``: if it is the
        controller, it reads the topic's config again, in the event queue's order
        (:meth:`~minikafka.controller.zk.ZkController.on_topic_config_change`). Posted
        whether or not it controls now: an election queued before it reads the
        configs itself, and one that completes before it is processed gets this one."""
        self._events.send_nowait(TopicConfigChanged(topic))

    def broker_config_changed(self, name: str) -> None:
        """The same for a dynamic broker config: ``""``, the cluster-wide default, or
        this broker's own id (:meth:`~minikafka.controller.zk.ZkController.
        on_broker_config_change`)."""
        self._events.send_nowait(BrokerConfigChanged(name))

    def resign(self, why: str) -> None:
        """The session was lost: whatever this broker controlled, it no longer does."""
        self._events.send_nowait(Resign(why))

    async def submit(self, request: ControllerRequest) -> ControllerResponse:
        """One request for the controller (this broker must be it: NOT_CONTROLLER
        otherwise). CreateTopics and DeleteTopics wait until the job is done, as a
        client expects the topic usable (or gone) once answered."""
        request_id = self._waiters.open()
        self._events.send_nowait(Submit(request, request_id))
        answer = await self._waiters.wait(request_id)
        if isinstance(answer, ControllerError):
            raise answer
        if answer is None:
            raise ControllerError(ErrorCode.unknown_server_error)
        validate_only = (
            isinstance(request, CreateTopicsRequest) and request.validate_only
        )
        if isinstance(answer, CreateTopicsResponse) and not validate_only:
            created = {t.name for t in answer.topics if t.error_code is ErrorCode.none}
            late = await self._wait_for(created, _created, present=True)
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
                deleted,
                lambda core, name: name not in core.context.topics,
                present=False,
            )
            answer = DeleteTopicsResponse(
                tuple(_timed_out(t) if t.name in late else t for t in answer.topics)
            )
        # not a submitted request's
        assert not isinstance(answer, ControlledShutdownResult)
        return answer

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> ControlledShutdownResult:
        """A broker's ControlledShutdown, on the event loop like any request."""
        request_id = self._waiters.open()
        self._events.send_nowait(Shutdown(broker_id, broker_epoch, request_id))
        answer = await self._waiters.wait(request_id)
        if isinstance(answer, ControllerError):
            raise answer
        assert isinstance(answer, ControlledShutdownResult)
        return answer

    async def _wait_for(
        self,
        names: set[str],
        done: Callable[[ZkController, str], bool],
        *,
        present: bool,
    ) -> set[str]:
        """Wait until ``done`` holds for every name; those for which it does not within
        :data:`ADMIN_WAIT_S` are answered REQUEST_TIMED_OUT, as Kafka's purgatory does
        (a deletion waits for a replica's broker that is down, for one). While this
        broker controls, ``done`` asks the controller's state; once it no longer does
        (its ZooKeeper session expired), the job is the next controller's, and the wait
        goes on until this broker's metadata has the topic (``present``) or has it no
        more, as Kafka's DelayedCreatePartitions and DelayedDeleteTopics watch the
        broker's metadata cache whoever controls."""

        def settled(name: str) -> bool:
            if self.core is not None:
                return done(self.core, name)
            return self.broker_has_topic(name) is present

        with trio.move_on_after(ADMIN_WAIT_S):
            while not all(settled(n) for n in names):
                await self._changed.wait()
        return {n for n in names if not settled(n)}

    def metadata_applied(self) -> None:
        """This broker applied an UpdateMetadata: admin requests may be done."""
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    # --- the event loop ---------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with (
            NetworkClient.open(
                client_id=self.client_id, security=self.security
            ) as client,
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
                fail_event(event, ErrorCode.unknown_server_error, self._waiters)
            self._wake()

    async def _process_one(self, event: ControllerEvent) -> None:
        """Kafka's ``KafkaController.process``: the failures that mean something."""
        try:
            await self._process(event)
        except ControllerMovedError as exc:
            self._resign_now(str(exc))
        except KazooException as exc:
            # A lost connection was waited out (the request sent again) below: this is
            # the session expiring meanwhile, or another ZooKeeper failure. The core may
            # have decided more than ZooKeeper now holds, so an active controller
            # resigns, and the next one (perhaps itself) starts again from what
            # ZooKeeper says (Kafka's controller resigns at its session's expiry).
            _logger.warning(
                "controller event %s failed: %r", event_log_name(event), exc
            )
            fail_event(event, ErrorCode.request_timed_out, self._waiters)
            self._resign_now(f"ZooKeeper failed mid-event: {exc!r}")
        except ApiError as exc:
            # A known Kafka error (a request this controller does not serve): the answer.
            _logger.info("controller event %s failed: %s", event_log_name(event), exc)
            fail_event(event, exc.error_code, self._waiters)

    async def _process(self, event: ControllerEvent) -> None:
        match event:
            case Elect():
                if self.core is None:
                    await self._try_to_elect()
            case Resign(why):
                self._resign_now(why)
            case Reconnected():
                await self._catch_up()
            case Submit(request, request_id):
                if self.core is None:
                    self._not_controller(request_id)
                    return
                await self._answer(
                    process_request(self.core, request, self.clock()), request_id
                )
            case Shutdown(broker_id, broker_epoch, request_id):
                if self.core is None:
                    self._not_controller(request_id)
                    return
                await self._answer(
                    self.core.on_controlled_shutdown(
                        broker_id, broker_epoch, self.clock()
                    ),
                    request_id,
                )
            case Watch(fired) if self.core is not None:
                await self._on_watch(self.core, fired)
            case StopReplicaAnswered(broker_id, errors) if self.core is not None:
                await self._carry_out(
                    self.core.on_stop_replica_response(broker_id, errors, self.clock())
                )
            case CheckLeaderImbalance() if self.core is not None:
                await self._carry_out(self.core.on_auto_leader_rebalance(self.clock()))
            case TopicConfigChanged(topic) if self.core is not None:
                config = await self._controller_zk.read_topic_config(topic)
                await self._carry_out(
                    self.core.on_topic_config_change(topic, config, self.clock())
                )
            case BrokerConfigChanged(name) if self.core is not None:
                configs = await self._controller_zk.read_broker_config(name)
                await self._carry_out(
                    self.core.on_broker_config_change(name, configs, self.clock())
                )

    async def _answer(self, result: ZkControllerResult, request_id: int) -> None:
        try:
            await self._carry_out(result)
        except ControllerMovedError:
            self._not_controller(request_id)
            raise
        # An event a broker sent has its one reply; none would be a bug, which
        # ``submit`` answers UNKNOWN_SERVER_ERROR.
        self._waiters.answer(request_id, result.replies[0] if result.replies else None)

    def _not_controller(self, request_id: int) -> None:
        self._waiters.answer(request_id, ControllerError(ErrorCode.not_controller))

    async def _catch_up(self) -> None:
        if self.core is None:
            await self._try_to_elect()
            return
        cluster = await self._controller_zk.read_all()
        await self._carry_out(self.core.on_broker_change(cluster.brokers, self.clock()))
        if self.core is not None:
            await self._carry_out(
                self.core.on_topic_change(
                    cluster.topics, self.clock(), configs=cluster.configs
                )
            )
        if self.core is not None:
            await self._carry_out(
                self.core.on_topic_deletion(cluster.deleting, self.clock())
            )

    async def _on_watch(self, core: ZkController, fired: WatchFired) -> None:
        """ZooKeeper says only that something changed: read it again, re-arming the
        watch, but only what the event is about (:mod:`._controller_zk`)."""
        zk = self._controller_zk
        name = event_name(fired.path, fired.kind)
        if name == "BrokerChange":
            brokers = await zk.read_brokers()
            await self._carry_out(core.on_broker_change(brokers, self.clock()))
        elif name == "TopicChange":
            known = core.context.topics
            read, configs = await zk.read_topic_change(known, fired.path)
            await self._carry_out(
                core.on_topic_change({**known, **read}, self.clock(), configs=configs)
            )
        elif name == "TopicDeletion":
            listed = await zk.read_deletions()
            await self._carry_out(core.on_topic_deletion(listed, self.clock()))

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
            await self._controller_zk.release()

    def _elect_later(self, delay: float) -> None:
        async def elect_later() -> None:
            await trio.sleep(delay)
            self.elect()

        if self._nursery is not None:
            self._nursery.start_soon(elect_later)

    async def _elect(self) -> None:
        takeover = await self._controller_zk.stand()
        if takeover is None:
            # Someone else controls; hear when /controller goes (or try again if it just did).
            if not await self._controller_zk.watch_controller():
                self.elect()
            return
        core, result = ZkController.become_active(
            self.broker_id,
            takeover.epoch,
            takeover.cluster,
            self.clock(),
            config=self.config,
            listener=self.listener,
            tracer=self.tracer,
            producer_id_block=takeover.producer_id_block,
        )
        self.core = core
        _logger.info(
            "broker %d is the controller, epoch %d", self.broker_id, takeover.epoch
        )
        if self.tracer.enabled:
            self.tracer.emit(ZkControllerElected(self.broker_id, takeover.epoch, False))
        self.on_active(True)
        await self._carry_out(result)

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
        """The writes first, fenced by the epoch (ControllerMovedError if another
        controller has written since); only once they succeeded, the requests, each
        queued for its broker's sender."""
        await self._controller_zk.write(result.records)
        if self.core is None or self._channels is None:
            return
        self._sync_channels(self.core)
        self._channels.send(result.messages)

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
