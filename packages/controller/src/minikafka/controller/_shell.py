"""QuorumControllerShell: the QuorumController's event queue, run by one trio task (seed 004 §2.1).

The shell around the core. Every request, every commit and every timer tick becomes an
event on one queue, and one task takes them off in order and hands them to the
QuorumController, which is how Kafka's controller avoids locks. What comes back, a
``QuorumControllerResult``, is carried out here: its records are appended to the quorum
(the page cache, cheap), and its replies are handed to the callers waiting in
``submit``.

The quorum is one :class:`~minikafka.controller.RaftNodeShell`, of one voter (this node:
:meth:`QuorumControllerShell.open`, what ``make run`` uses; it elects itself at once, as
Kafka's Raft client with one voter does) or of several (:meth:`QuorumControllerShell.open_raft`).
A record is committed when a majority of the voters has it on disk (one voter: its own
disk), and the Raft node says so; the leader's fsync runs in a worker thread, so the
event loop never waits for the disk, and requests decided meanwhile are made durable by
the next fsync: the pipeline of seed 004, no answer leaving before its records are
durable. The node's reports are events on the same queue: entries committed (the active
controller answers the requests whose whole operation committed; a standby replays
them), leadership gained (``become_leader``, on top of everything committed before) and
lost (``resign``: seed 004's revert to the committed state, NOT_CONTROLLER for whoever
waits).

On each commit the newly committed records are also replayed into a ``MetadataDelta``
(``_replay.py``) and published as a new ``MetadataImage`` to whoever subscribed (the
broker, in combined mode), and once enough log has accumulated the image is written as
a snapshot (``_snapshots.py``: Kafka's ``SnapshotGenerator``).

Faults in the event loop are sorted as Kafka's ``QuorumController.handleEventException``
sorts them, by the server's ``EventFaults`` (``_event_faults.py``): an ``ApiError`` is
the request's answer; anything else answers UNKNOWN_SERVER_ERROR and the active
controller *renounces* (the Raft node resigns and the quorum elects again, a lone voter
itself in a new epoch); a committed record that cannot be replayed is fatal, and so is
a metadata log that refused a write or an fsync (the Raft node's fault: Kafka's fatal
fault handler). The other tasks: the timer only sleeps to the deadline the event loop
computed; a failed snapshot is logged and tried again later; a publisher that raises is
logged, and the others still hear.
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

from minikafka.common import ApiError, CoreResult, FatalFaultError
from minikafka.common.shell import Waiters
from minikafka.raft import QuorumInfo, RaftConfig
from minikafka.trace import EpochClock, NullTracer, Tracer

from ._bootstrap import read_bootstrap
from ._config import ControllerConfig
from ._controller import (
    AppendRecords,
    QuorumController,
    QuorumControllerResult,
    Reply,
)
from ._event_faults import EventFaults
from ._image import MetadataDelta, MetadataImage
from ._metadata_log import NotLeaderError, RecordBatchTooLargeError
from ._raft_shell import (
    NoOtherVoters,
    RaftCommitted,
    RaftEvent,
    RaftLeaderReady,
    RaftNodeShell,
    RaftResigned,
    RaftSnapshotLoaded,
)
from ._replay import load_metadata as load_metadata  # once defined here: re-exported
from ._replay import replay_appends, replay_entries, replay_log, replay_snapshot
from ._requests import ControllerRequest, ControllerResponse
from ._snapshots import SnapshotGenerator

Publisher = Callable[[MetadataDelta, MetadataImage], None]

_logger = logging.getLogger("minikafka.controller")


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
class _Tick:
    pass


@attrs.frozen
class _Raft:
    event: RaftEvent


_Event = _Request | _Tick | _Raft


def _event_name(event: _Event) -> str:
    """What an event is, for the log (Kafka names its controller events the same way)."""
    match event:
        case _Request():
            return f"{type(event.request).__name__} (request {event.request_id})"
        case _Raft():
            return f"{type(event.event).__name__}"
    return type(event).__name__.lstrip("_")


@attrs.define(eq=False)
class QuorumControllerShell:
    controller: QuorumController
    quorum: RaftNodeShell
    """The metadata quorum: of one voter (this node) or of several."""
    image: MetadataImage
    _publishers: list[Publisher] = attrs.field(init=False, factory=list)
    _send: trio.MemorySendChannel[_Event] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[_Event] = attrs.field(init=False)
    _waiters: Waiters[Reply] = attrs.field(init=False, factory=Waiters)
    _uncommitted: collections.deque[AppendRecords] = attrs.field(
        init=False, factory=collections.deque
    )
    _active: trio.Event = attrs.field(init=False, factory=trio.Event)
    _queue_moved: trio.Event = attrs.field(init=False, factory=trio.Event)
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    # The timer's deadline, computed by the event loop after each event.
    _deadline: float | None = attrs.field(init=False, default=None)
    # What to do when an event fails.
    _faults: EventFaults = attrs.field(init=False)
    _snapshots: SnapshotGenerator = attrs.field(init=False)
    _clock: EpochClock | None = attrs.field(init=False, default=None)
    # The last offset ``open`` loaded (a lone voter's log): the Raft node hands it over
    # again when it runs, and it is not replayed twice.
    _loaded: int = attrs.field(init=False, default=-1)

    def _now(self) -> float:
        """The controller core's ``now``: trio's clock moved to the epoch, the time its
        trace events carry (made at the first call, which is inside trio)."""
        if self._clock is None:
            self._clock = EpochClock(trio.current_time)
        return self._clock()

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel(math.inf)
        self._faults = EventFaults(self.controller, self.quorum, self._uncommitted)
        self._snapshots = SnapshotGenerator(self.controller.config, self.quorum)

    @classmethod
    def open(
        cls,
        metadata_dir: Path,
        config: ControllerConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
        raft: RaftConfig | None = None,
    ) -> QuorumControllerShell:
        """The only voter, this node, on the metadata log in ``metadata_dir``: a Raft
        quorum of one, which elects itself when it runs (``run`` returns started once
        it leads), with the state its log holds loaded now.

        ``tracer`` is the node's (default: none); the quorum, its log and the controller
        all emit through it.
        """
        tracer = NullTracer(config.node_id) if tracer is None else tracer
        node_id = config.node_id
        quorum = RaftNodeShell.open(
            metadata_dir,
            node_id,
            [node_id],
            NoOtherVoters(),
            "",
            raft or RaftConfig(),
            rng=rng,
            tracer=tracer,
        )
        server = cls.open_raft(quorum, config, rng, tracer)
        # Everything in a lone voter's log is committed by its election (no other voter
        # can differ): the state is loaded now, so that it is there before the server
        # runs, and the Raft node's hand-over of the same records is skipped. Before the
        # event loop runs, the wall clock: what its EpochClock reads too.
        server.image = load_metadata(
            quorum, server.controller, time.time(), end_offset=quorum.log_end_offset
        )
        server._loaded = server.controller.last_committed_offset
        return server

    @classmethod
    def open_raft(
        cls,
        quorum: RaftNodeShell,
        config: ControllerConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> QuorumControllerShell:
        """A controller on ``quorum``. It starts with nothing and learns the state from
        the quorum: the latest snapshot and the committed entries the Raft node hands
        over once it knows the high watermark."""
        tracer = NullTracer(config.node_id) if tracer is None else tracer
        controller = QuorumController(
            config,
            rng or random.Random(),
            tracer,
            bootstrap_records=read_bootstrap(quorum.dir.parent),
        )
        return cls(controller, quorum, MetadataImage())

    def describe_quorum(self) -> tuple[QuorumInfo, float] | None:
        """DescribeQuorum's answer and the wall clock minus the clock its times were read
        on (none: the Raft node's now is seconds since the epoch); None unless this node
        leads the quorum (only the leader knows the others)."""
        info = self.quorum.describe()
        return None if info is None else (info, 0.0)

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
        """Serve until cancelled (the quorum closes its log): active while this node
        leads the quorum. A lone voter elects itself at once, with nobody to ask: it is
        started once it leads, so that its first request finds it active."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                # Active once the quorum elects this node: RaftLeaderReady.
                await nursery.start(self.quorum.run, self._on_raft)
                nursery.start_soon(self._event_loop)
                nursery.start_soon(self._timer)
                if self.quorum.voters == (self.controller.config.node_id,):
                    await self._active.wait()
                task_status.started()
        finally:
            self._nursery = None
            for request_id in self._waiters.unanswered():
                self._waiters.answer(
                    request_id, Reply(request_id, None, ErrorCode.not_controller)
                )

    async def resign(self) -> None:
        """A controlled shutdown: hand leadership over first (EndQuorumEpoch), so the
        next leader is elected without waiting for a timeout."""
        await self.quorum.resign()

    def _on_raft(self, event: RaftEvent) -> None:
        self._send.send_nowait(_Raft(event))

    async def submit(self, request: ControllerRequest) -> ControllerResponse:
        """Queue ``request`` and wait for the answer, which comes after its records commit."""
        request_id = self._waiters.open()
        self._send.send_nowait(_Request(request_id, request))
        reply = await self._waiters.wait(request_id)
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
            self._deadline = None  # renounced: no deadline of its own

    def _handle(self, event: _Event, now: float) -> QuorumControllerResult:
        match event:
            case _Request():
                return self.controller.handle(event.request_id, event.request, now)
            case _Tick():
                return self.controller.on_timer(now)
            case _Raft():
                return self._handle_raft(event.event, now)

    def _next_deadline(self) -> float | None:
        return self.controller.next_deadline()

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

    # --- carrying out the controller's results -------------------------------------------

    def _carry_out(self, result: QuorumControllerResult) -> None:
        """The appends, in order, then the replies (a result that appends holds none)."""
        for append in result.records:
            try:
                last = self.quorum.append(append.epoch, append.records)
            except (NotLeaderError, RecordBatchTooLargeError) as exc:
                # The rest of the appends were decided on top of the refused records: they
                # go with them; the requests that rested on them fail.
                self._carry_out(self._faults.append_failed(append, exc))
                break
            # The core numbered the records itself (broker epochs are offsets): the
            # log must agree, or the controller's state is wrong.
            if last != append.last_offset:
                raise RuntimeError(f"metadata log put {append} at last offset {last}")
            self._uncommitted.append(append)
        for reply in result.replies:
            self._waiters.answer(reply.request_id, reply)

    # --- what the Raft node reports ---------------------------------------------------------

    def _handle_raft(self, event: RaftEvent, now: float) -> QuorumControllerResult:
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
                    return CoreResult()
                released = controller.handle_commit(offset)
                self._publish_appends(offset)
                return released
            case RaftCommitted():
                # Not what ``open`` loaded already.
                entries = tuple(e for e in event.entries if e.offset > self._loaded)
                self._publish(replay_entries(controller, self.image, entries, now))
            case RaftSnapshotLoaded() if (
                event.snapshot.id.end_offset <= self._loaded + 1
            ):
                pass  # ``open`` loaded it already
            case RaftSnapshotLoaded():
                self._publish(replay_snapshot(controller, event.snapshot, now))
            case RaftLeaderReady():
                # Everything below the high watermark is committed; what of it this
                # controller reverted (it renounced after a fault) is in its own log.
                # The LeaderChange entry at its end is the quorum's, not a record.
                self._publish(replay_log(controller, self.image, self.quorum, now))
                controller.replay_committed((), event.high_watermark - 1, now)
                _logger.info(
                    "controller %d is active in epoch %d",
                    self.controller.config.node_id,
                    event.epoch,
                )
                self._active.set()
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
        return CoreResult()

    # --- publishing: committed records into the image (_replay.py), then to subscribers

    def _publish_appends(self, offset: int) -> None:
        """The active controller's own records, committed up to ``offset``."""
        appends = self._uncommitted
        self._publish(replay_appends(self.controller, self.image, appends, offset))

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
