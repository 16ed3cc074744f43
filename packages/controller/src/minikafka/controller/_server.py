"""ControllerServer: the QuorumController's event queue, run by one trio task (seed 004 §2.1).

The shell around the core. Every request, every commit and every timer tick becomes an
event on one queue, and one task takes them off in order and hands them to the
QuorumController, which is how Kafka's controller avoids locks. The actions that come
back are carried out here: records are appended to the quorum (the page cache, cheap),
and replies are handed to the callers waiting in ``submit``.

Committing is a second task, so the event loop never waits for a disk: it fsyncs in a
worker thread whatever has been appended, then queues a commit event. That is the
pipeline of seed 004 — requests keep being decided while earlier records are still on
their way to disk, and no answer leaves before its records are durable.

On each commit the newly committed records are also replayed into a ``MetadataDelta``
(``_replay.py``) and published as a new ``MetadataImage`` to whoever subscribed (the
broker, in combined mode), and once enough log has accumulated the image is written as
a snapshot (``_snapshots.py``: Kafka's ``SnapshotGenerator``).

With several voters (:meth:`ControllerServer.open_raft`) the quorum is a
:class:`~minikafka.controller.RaftQuorum`, and there is no committer task: a record is
committed when a majority of the controllers has it, and the Raft node says so. Its
reports are events on the same queue: entries committed (the active controller answers
the requests whose whole operation committed; a standby replays them), leadership gained
(``become_leader``, on top of everything committed before) and lost (``resign``: seed
004's revert to the committed state, NOT_CONTROLLER for whoever waits).

Faults in the event loop are sorted as Kafka's ``QuorumController.handleEventException``
sorts them, by the server's ``EventFaults`` (``_event_faults.py``): an ``ApiError`` is
the request's answer; anything else answers UNKNOWN_SERVER_ERROR and the active
controller *renounces* (one voter claims again after :data:`RECLAIM_DELAY_S`); a
metadata log that refused a write fails the requests it held, and one that cannot be
trusted makes the controller resign until restart; a committed record that cannot be
replayed is fatal.
The other tasks: the committer's unforeseen fault is a failed fsync (resign until
restart); the timer only sleeps to the deadline the event loop computed; a failed
snapshot is logged and tried again later; a publisher that raises is logged, and the
others still hear.
"""

from __future__ import annotations

import collections
import logging
import math
import random
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError, FatalFaultError
from minikafka.raft import QuorumInfo, ReplicaInfo
from minikafka.trace import EpochClock, NullTracer, Tracer

from ._config import ControllerConfig
from ._controller import Action, AppendRecords, QuorumController, Reply
from ._event_faults import EventFaults
from ._image import MetadataDelta, MetadataImage
from ._quorum import MetadataLogError, NotLeaderError, SingleVoterQuorum
from ._raft_quorum import (
    RaftCommitted,
    RaftEvent,
    RaftLeaderReady,
    RaftQuorum,
    RaftResigned,
    RaftSnapshotLoaded,
)
from ._replay import load_metadata as load_metadata  # once defined here: re-exported
from ._replay import (
    replay_appends,
    replay_entries,
    replay_log,
    replay_snapshot,
)
from ._requests import ControllerRequest, ControllerResponse
from ._snapshots import SnapshotGenerator

Publisher = Callable[[MetadataDelta, MetadataImage], None]

_logger = logging.getLogger("minikafka.controller")

RECLAIM_DELAY_S = 0.2
"""How long a single voter that renounced stays a standby before it claims leadership
again, as a resigned Raft voter waits out an election timeout: a fault that strikes every
claim makes five attempts a second, not a busy loop."""


class ControllerError(ApiError):
    """A request the controller could not answer (NOT_CONTROLLER after a resignation)."""

    def __init__(self, error_code: ErrorCode) -> None:
        super().__init__(error_code.name)
        self.error_code = error_code


@attrs.frozen
class _Request:
    request_id: int
    request: ControllerRequest


@attrs.frozen
class _Committed:
    offset: int


@attrs.frozen
class _Tick:
    pass


@attrs.frozen
class _LogFailed:
    error: MetadataLogError


@attrs.frozen
class _Raft:
    event: RaftEvent


@attrs.frozen
class _Claim:
    """One voter: become the active controller (at start, and after renouncing)."""


_Event = _Request | _Committed | _Tick | _LogFailed | _Raft | _Claim


def _event_name(event: _Event) -> str:
    """What an event is, for the log (Kafka names its controller events the same way)."""
    match event:
        case _Request():
            return f"{type(event.request).__name__} (request {event.request_id})"
        case _Committed():
            return f"handleCommit[offset={event.offset}]"
        case _Raft():
            return f"{type(event.event).__name__}"
    return type(event).__name__.lstrip("_")


@attrs.define(eq=False)
class ControllerServer:
    controller: QuorumController
    single: SingleVoterQuorum | None
    """The one-voter quorum, or None when ``raft`` holds several voters' quorum."""
    image: MetadataImage
    raft: RaftQuorum | None = None
    _publishers: list[Publisher] = attrs.field(init=False, factory=list)
    _send: trio.MemorySendChannel[_Event] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[_Event] = attrs.field(init=False)
    _waiting: dict[int, tuple[trio.Event, list[Reply]]] = attrs.field(
        init=False, factory=dict
    )
    _next_request_id: int = attrs.field(init=False, default=0)
    _uncommitted: collections.deque[AppendRecords] = attrs.field(
        init=False, factory=collections.deque
    )
    _commit_wanted: trio.Event = attrs.field(init=False, factory=trio.Event)
    _queue_moved: trio.Event = attrs.field(init=False, factory=trio.Event)
    _log_moved: trio.Event = attrs.field(init=False, factory=trio.Event)
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    # The timer's deadline, computed by the event loop after each event.
    _deadline: float | None = attrs.field(init=False, default=None)
    # What to do when an event fails, and whether this node renounced or resigned.
    _faults: EventFaults = attrs.field(init=False)
    _snapshots: SnapshotGenerator = attrs.field(init=False)
    _clock: EpochClock | None = attrs.field(init=False, default=None)

    def _now(self) -> float:
        """The controller core's ``now``: trio's clock moved to the epoch, the time its
        trace events carry (made at the first call, which is inside trio)."""
        if self._clock is None:
            self._clock = EpochClock(trio.current_time)
        return self._clock()

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel(math.inf)
        # RECLAIM_DELAY_S is read now, not at import: a test may shorten it first.
        self._faults = EventFaults(
            self.controller,
            self.single,
            self.raft,
            self._uncommitted,
            self._catch_up_from_log,
            RECLAIM_DELAY_S,
        )
        self._snapshots = SnapshotGenerator(
            self.controller.config, self.single, self.raft
        )

    @classmethod
    def open(
        cls,
        metadata_dir: Path,
        config: ControllerConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> ControllerServer:
        """Open the metadata log in ``metadata_dir`` and rebuild the state it holds.

        ``tracer`` is the node's (default: none); the quorum, its log and the controller
        all emit through it.
        """
        tracer = NullTracer(config.node_id) if tracer is None else tracer
        quorum = SingleVoterQuorum.open(metadata_dir, config.node_id, tracer)
        controller = QuorumController(config, rng or random.Random(), tracer)
        # Before the event loop runs, the wall clock: what its EpochClock reads too.
        image = load_metadata(quorum, controller, time.time())
        return cls(controller, quorum, image)

    @classmethod
    def open_raft(
        cls,
        quorum: RaftQuorum,
        config: ControllerConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> ControllerServer:
        """A controller on a quorum of several voters. It starts with nothing
        and learns the state from the quorum: the latest snapshot and the committed
        entries the Raft node hands over once it knows the high watermark."""
        tracer = NullTracer(config.node_id) if tracer is None else tracer
        controller = QuorumController(config, rng or random.Random(), tracer)
        return cls(controller, None, MetadataImage(), quorum)

    @property
    def quorum(self) -> SingleVoterQuorum:
        """The one-voter quorum (LookupError on a controller of several voters)."""
        if self.single is None:
            raise LookupError("this controller is one of several voters: see .raft")
        return self.single

    def describe_quorum(self) -> tuple[QuorumInfo, float] | None:
        """DescribeQuorum's answer and the wall clock minus the clock its times were read
        on; None unless this node leads the quorum (only the leader knows the others)."""
        now = self._now()
        if self.raft is not None:
            info = self.raft.describe()
            return None if info is None else (info, self.raft.wall_clock_offset)
        # One voter: the leader, always caught up with itself.
        quorum = self.quorum
        me = ReplicaInfo(quorum.node_id, quorum.log_end_offset, now, now)
        info = QuorumInfo(
            quorum.node_id, quorum.epoch, quorum.high_watermark, (me,), ()
        )
        return info, time.time() - now

    @property
    def failure(self) -> MetadataLogError | None:
        """Why the metadata log can no longer be trusted (this node resigned)."""
        return self._faults.failure

    @property
    def is_active(self) -> bool:
        """Whether this node is the active controller (it leads the quorum)."""
        return self.controller.active

    def subscribe(self, publisher: Publisher) -> None:
        """Call ``publisher(delta, image)`` after every commit."""
        self._publishers.append(publisher)

    # --- running -----------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until cancelled, then close the log: with one voter as the active
        controller from the start; with several, active while this node leads."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if self.raft is not None:
                    # Active once the quorum elects this node: RaftLeaderReady.
                    await nursery.start(self.raft.run, self._on_raft)
                else:
                    # The election this start won (the quorum's epoch), handled as an
                    # event: a fault in it is one like any other.
                    self._faults.renounced = True
                    self._process(_Claim())
                    nursery.start_soon(self._committer)
                nursery.start_soon(self._event_loop)
                nursery.start_soon(self._timer)
                task_status.started()
        finally:
            self._nursery = None
            for event, replies in self._waiting.values():
                replies.append(Reply(-1, None, ErrorCode.not_controller))
                event.set()
            if self.single is not None:
                self.single.close(commit=self.failure is None)

    async def resign(self) -> None:
        """A controlled shutdown of one of several voters: hand leadership over first
        (EndQuorumEpoch), so the next leader is elected without waiting for a timeout."""
        if self.raft is not None:
            await self.raft.resign()

    def _on_raft(self, event: RaftEvent) -> None:
        self._send.send_nowait(_Raft(event))

    async def submit(self, request: ControllerRequest) -> ControllerResponse:
        """Queue ``request`` and wait for the answer, which comes after its records commit."""
        request_id = self._next_request_id
        self._next_request_id += 1
        done = trio.Event()
        replies: list[Reply] = []
        self._waiting[request_id] = (done, replies)
        self._send.send_nowait(_Request(request_id, request))
        await done.wait()
        reply = replies[0]
        if reply.response is None:
            raise ControllerError(reply.error_code)
        return reply.response

    # --- the three tasks ---------------------------------------------------------------

    async def _event_loop(self) -> None:
        async for event in self._receive:
            self._process(event)
            self._queue_moved.set()
            self._queue_moved = trio.Event()

    def _process(self, event: _Event) -> None:
        """One event, its faults sorted as Kafka's ``handleEventException`` does (by
        ``EventFaults``); a FatalFaultError goes on up and ends the process."""
        now = self._now()
        faults = self._faults
        try:
            self._carry_out(self._handle(event, now))
        except FatalFaultError:
            raise
        except Exception as exc:
            request_id = event.request_id if isinstance(event, _Request) else None
            name = _event_name(event)
            self._carry_out(faults.event_failed(name, request_id, exc, now))
        try:
            self._deadline = self._next_deadline()
        except FatalFaultError:
            raise
        except Exception as exc:
            self._carry_out(faults.event_failed("next_deadline", None, exc, now))
            self._deadline = faults.reclaim_at  # no deadline of its own once renounced

    def _handle(self, event: _Event, now: float) -> list[Action]:
        match event:
            case _Request():
                return self.controller.handle(event.request_id, event.request, now)
            case _Committed() if self._faults.renounced:
                self._catch_up_from_log()
                return []
            case _Committed():
                actions = self.controller.handle_commit(event.offset)
                self._publish_appends(event.offset)
                return actions
            case _Tick() if self._faults.renounced:
                return self._faults.tick(now)
            case _Tick():
                return self.controller.on_timer(now)
            case _Claim():
                return self._faults.reclaim(now)
            case _LogFailed():
                return self._faults.resign(event.error)
            case _Raft():
                return self._handle_raft(event.event, now)

    def _next_deadline(self) -> float | None:
        if self._faults.renounced:
            return self._faults.reclaim_at
        return self.controller.next_deadline()

    async def _committer(self) -> None:
        while True:
            await self._commit_wanted.wait()
            self._commit_wanted = trio.Event()
            if self.failure is not None:
                return  # nothing commits in this process any more
            try:
                end = await trio.to_thread.run_sync(self.quorum.fsync)
                high_watermark = self.quorum.mark_committed(end)
            except MetadataLogError as exc:
                self._send.send_nowait(_LogFailed(exc))
                return
            except Exception as exc:
                # Not the disk saying no, but treated as a failed fsync all the same.
                self._send.send_nowait(_LogFailed(EventFaults.commit_failed(exc)))
                return
            self._wake_fetchers()
            self._send.send_nowait(_Committed(high_watermark - 1))

    async def _timer(self) -> None:
        while True:
            moved = self._queue_moved
            deadline = self._deadline
            self._now()  # the clock exists: the deadline is on it
            assert self._clock is not None
            at = math.inf if deadline is None else self._clock.to_source(deadline)
            with trio.move_on_at(at):
                await moved.wait()
                continue  # something happened: the deadline may have changed
            self._send.send_nowait(_Tick())
            await moved.wait()  # do not tick again before the tick was handled

    # --- the metadata log's fetchers ------------------------------------------------------

    @property
    def log_moved(self) -> trio.Event:
        """Set at the next append to the metadata log or move of its high watermark: what
        a long-polling Fetch of ``__cluster_metadata`` waits for."""
        return self._log_moved

    def _wake_fetchers(self) -> None:
        self._log_moved.set()
        self._log_moved = trio.Event()

    # --- actions -----------------------------------------------------------------------

    def _carry_out(self, actions: list[Action]) -> None:
        for i, action in enumerate(actions):
            if isinstance(action, AppendRecords):
                try:
                    last = self._append(action)
                except (NotLeaderError, MetadataLogError) as exc:
                    # The rest of this list was decided on top of the refused records:
                    # its appends go with them; its replies are among those failed.
                    self._carry_out(self._faults.append_failed(action, exc))
                    rest = actions[i + 1 :]
                    self._carry_out(
                        [a for a in rest if not isinstance(a, AppendRecords)]
                    )
                    return
                # The core numbered the records itself (broker epochs are offsets): the
                # log must agree, or the controller's state is wrong.
                if last != action.last_offset:
                    raise RuntimeError(
                        f"metadata log put {action} at last offset {last}"
                    )
                self._uncommitted.append(action)
                if self.single is not None:
                    self._commit_wanted.set()
                    self._wake_fetchers()
            else:
                waiter = self._waiting.pop(action.request_id, None)
                if waiter is not None:
                    waiter[1].append(action)
                    waiter[0].set()

    def _append(self, action: AppendRecords) -> int:
        if self.raft is not None:
            return self.raft.append(action.epoch, action.records)
        return self.quorum.append(action.epoch, action.records)

    # --- several voters: what the Raft node reports ----------------------------------------

    def _handle_raft(self, event: RaftEvent, now: float) -> list[Action]:
        controller = self.controller
        match event:
            case RaftCommitted() if controller.active:
                # Our own records: answer the requests whose operations committed. An
                # operation is one unit of the Raft log, committed whole, so the high
                # watermark ends one of the appends waiting here.
                offset = -1
                for append in self._uncommitted:
                    if append.last_offset >= event.high_watermark:
                        break
                    offset = append.last_offset
                if offset < 0:
                    return []
                actions = controller.handle_commit(offset)
                self._publish_appends(offset)
                return actions
            case RaftCommitted():
                self._publish(
                    replay_entries(controller, self.image, event.entries, now)
                )
            case RaftSnapshotLoaded():
                self._publish(replay_snapshot(controller, event.snapshot, now))
            case RaftLeaderReady():
                # Everything below the high watermark is committed and was replayed; the
                # LeaderChange entry at its end is the quorum's, not a record.
                controller.replay_committed((), event.high_watermark - 1, now)
                _logger.info(
                    "controller %d is active in epoch %d",
                    self.controller.config.node_id,
                    event.epoch,
                )
                return controller.become_leader(event.epoch, now)
            case RaftResigned():
                # Seed 004's revert: what was applied but not committed is undone, and
                # the requests waiting on it hear NOT_CONTROLLER; the new leader serves
                # them.
                _logger.info(
                    "controller %d is no longer active (epoch %d); reverted to offset "
                    "%d",
                    self.controller.config.node_id,
                    event.epoch,
                    controller.last_committed_offset,
                )
                self._uncommitted.clear()
                return controller.resign()
        return []

    # --- publishing: committed records into the image (_replay.py), then to subscribers

    def _publish_appends(self, offset: int) -> None:
        """The active controller's own records, committed up to ``offset``."""
        appends = self._uncommitted
        self._publish(replay_appends(self.controller, self.image, appends, offset))

    def _catch_up_from_log(self) -> None:
        """One voter that renounced: what committed since, replayed from its own log."""
        self._publish(replay_log(self.controller, self.image, self.quorum, self._now()))

    def _publish(self, delta: MetadataDelta | None) -> None:
        """The image ``delta`` makes, to the subscribers and the snapshot generator
        (None: nothing new)."""
        if delta is None:
            return
        try:
            self.image = delta.apply()
        except Exception as exc:
            raise self._faults.fatal(
                f"applying the committed records up to offset {delta.offset}", exc
            ) from exc
        for publisher in self._publishers:
            try:
                publisher(delta, self.image)
            except Exception as exc:
                # The subscriber's fault, not the controller's (Kafka's metadata
                # publishing fault handler is not fatal): the others still hear it.
                _logger.error(
                    "Encountered non-fatal fault: publishing the metadata image at "
                    "offset %d to %r failed",
                    self.image.offset,
                    publisher,
                    exc_info=exc,
                )
        self._snapshots.maybe_start(self.image, self._nursery)

    async def wait_snapshot_written(self) -> None:
        """Until no metadata snapshot is being written (at once if none is). A request's
        answer comes after the commit that may start one, so a caller that waits here
        after its last request finds the snapshot of that request's image or a later one."""
        await self._snapshots.wait_written()
