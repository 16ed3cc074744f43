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

A metadata log that refuses a write (a full disk) fails the requests whose records it
held, with KAFKA_STORAGE_ERROR, and the controller reverts to just before them; it stays
active and later requests succeed once space is back. An fsync that fails, or an append
that could not be undone, leaves a log that cannot be trusted: the controller resigns
(reverting to the last committed offset, as Kafka's renounce does) and stays inactive
until the process restarts, answering NOT_CONTROLLER; the broker keeps serving data.

On each commit the newly committed records are also replayed into a ``MetadataDelta``
and published as a new ``MetadataImage`` to whoever subscribed (the broker, in combined
mode), and once enough log has accumulated the image is written as a snapshot.

With several voters (:meth:`ControllerServer.open_raft`, issue 19) the quorum is a
:class:`~minikafka.controller.RaftQuorum`, and there is no committer task: a record is
committed when a majority of the controllers has it, and the Raft node says so. Its
reports are events on the same queue: entries committed (the active controller answers
the requests whose whole operation committed; a standby replays them), leadership gained
(``become_leader``, on top of everything committed before) and lost (``resign``: seed
004's revert to the committed state, NOT_CONTROLLER for whoever waits).

Faults, as Kafka's ``QuorumController.handleEventException`` sorts them: an ``ApiError``
in an event is its request's answer. Any other exception answers the request
UNKNOWN_SERVER_ERROR, and the active controller *renounces*: it reverts to the last
committed offset, its waiters hear NOT_CONTROLLER, and the quorum elects again (several
voters: the Raft node resigns; one voter: a standby replaying from the log what it had
appended, it claims again after :data:`RECLAIM_DELAY_S`). A committed record that cannot
be replayed, or a snapshot that cannot be applied, ends the process with
:class:`~minikafka.common.FatalFaultError` (Kafka's fatal fault handler). The other
tasks: the committer's unforeseen fault is a failed fsync (resign until restart); the
timer only sleeps to the deadline the event loop computed; a failed snapshot is logged
and tried again later; a publisher that raises is logged, and the others still hear.
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
from minikafka.trace import NullTracer, Tracer

from ._config import ControllerConfig
from ._controller import Action, AppendRecords, QuorumController, Reply
from ._image import MetadataDelta, MetadataImage
from ._quorum import (
    MetadataLogError,
    NotLeaderError,
    SingleVoterQuorum,
    decode_metadata_records,
    encode_snapshot,
)
from ._raft_quorum import (
    RaftCommitted,
    RaftEvent,
    RaftLeaderReady,
    RaftQuorum,
    RaftResigned,
    RaftSnapshotLoaded,
)
from ._records import decode_record
from ._requests import ControllerRequest, ControllerResponse

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


def load_metadata(
    quorum: SingleVoterQuorum, controller: QuorumController | None = None
) -> MetadataImage:
    """Replay the newest snapshot and the committed log after it.

    Returns the image; if ``controller`` is given it replays the same records, so a
    restarted controller knows exactly what the image says.
    """
    delta = MetadataDelta(MetadataImage())
    snapshot = quorum.latest_snapshot()
    if snapshot is not None:
        snapshot_id, records = snapshot
        for record in records:
            delta.replay(record)
        delta.offset = snapshot_id.end_offset - 1
        if controller is not None:
            controller.load_snapshot(records, snapshot_id.end_offset - 1)
    for batch in quorum.read_committed(delta.offset + 1):
        for offset, record in batch.records:
            delta.replay(record, offset)
        if controller is not None:
            controller.replay_committed(
                (r for _, r in batch.records), batch.last_offset
            )
    return delta.apply()


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
    # log size at the last snapshot
    _snapshot_size: int = attrs.field(init=False, default=0)
    _snapshotting: bool = attrs.field(init=False, default=False)
    # Set while no snapshot is being written; a new one each time a snapshot starts.
    _snapshot_done: trio.Event = attrs.field(init=False, factory=trio.Event)
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    failure: MetadataLogError | None = attrs.field(init=False, default=None)
    """Why the metadata log can no longer be trusted (this node resigned); None if fine."""
    # One voter after an unexpected fault: a standby until it claims again at _reclaim_at.
    _renounced: bool = attrs.field(init=False, default=False)
    _reclaim_at: float | None = attrs.field(init=False, default=None)
    # The timer's deadline, computed by the event loop after each event.
    _deadline: float | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel(math.inf)
        self._snapshot_done.set()

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
        image = load_metadata(quorum, controller)
        return cls(controller, quorum, image)

    @classmethod
    def open_raft(
        cls,
        quorum: RaftQuorum,
        config: ControllerConfig,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> ControllerServer:
        """A controller on a quorum of several voters (issue 19). It starts with nothing
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
        now = trio.current_time()
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
                    self._renounced = True
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
        """One event, its faults sorted as Kafka's ``handleEventException`` does (the
        module's docstring); a FatalFaultError goes on up and ends the process."""
        now = trio.current_time()
        try:
            self._carry_out(self._handle(event, now))
        except FatalFaultError:
            raise
        except Exception as exc:
            self._carry_out(self._event_failed(_event_name(event), event, exc, now))
        try:
            self._deadline = self._next_deadline()
        except FatalFaultError:
            raise
        except Exception as exc:
            self._carry_out(self._event_failed("next_deadline", None, exc, now))
            self._deadline = self._reclaim_at  # no deadline of its own once renounced

    def _handle(self, event: _Event, now: float) -> list[Action]:
        match event:
            case _Request():
                return self.controller.handle(event.request_id, event.request, now)
            case _Committed() if self._renounced:
                self._catch_up_from_log()
                return []
            case _Committed():
                actions = self.controller.handle_commit(event.offset)
                self._publish(event.offset)
                return actions
            case _Tick() if self._renounced:
                due = self._reclaim_at is not None and now >= self._reclaim_at
                return self._reclaim(now) if due else []
            case _Tick():
                return self.controller.on_timer(now)
            case _Claim():
                return self._reclaim(now)
            case _LogFailed():
                return self._resign(event.error)
            case _Raft():
                return self._handle_raft(event.event, now)

    def _next_deadline(self) -> float | None:
        if self._renounced:
            return self._reclaim_at
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
                # Not the disk saying no, but the commit path broken all the same:
                # whether the log is durable is unknown, so it is treated as the fsync
                # that failed (resign until restart).
                _logger.error(
                    "Encountered non-fatal fault: committing the metadata log failed",
                    exc_info=exc,
                )
                failed = MetadataLogError(
                    f"committing the metadata log failed: {type(exc).__name__}: {exc}",
                    error_code=ErrorCode.unknown_server_error,
                    fatal=True,
                )
                self._send.send_nowait(_LogFailed(failed))
                return
            self._wake_fetchers()
            self._send.send_nowait(_Committed(high_watermark - 1))

    async def _timer(self) -> None:
        while True:
            moved = self._queue_moved
            deadline = self._deadline
            with trio.move_on_at(math.inf if deadline is None else deadline):
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
                except NotLeaderError:
                    # The quorum moved on (its RaftResigned is queued behind this event):
                    # these records never reach the log; their requests hear NOT_CONTROLLER.
                    failed = self.controller.append_failed(
                        action.base_offset, ErrorCode.not_controller
                    )
                    self._carry_out(failed)
                    rest = actions[i + 1 :]
                    self._carry_out(
                        [a for a in rest if not isinstance(a, AppendRecords)]
                    )
                    return
                except MetadataLogError as exc:
                    # The rest of this list was decided on top of the refused records:
                    # its appends go with them; its replies are among those failed.
                    self._carry_out(self._append_failed(action, exc))
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
                self._publish(offset)
                return actions
            case RaftCommitted():
                self._replay_committed(event)
            case RaftSnapshotLoaded():
                self._load_snapshot(event)
            case RaftLeaderReady():
                # Everything below the high watermark is committed and was replayed; the
                # LeaderChange entry at its end is the quorum's, not a record.
                controller.replay_committed((), event.high_watermark - 1)
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

    def _replay_committed(self, event: RaftCommitted) -> None:
        """A standby controller replays what the leader committed, as a broker does. A
        committed record that cannot be replayed is fatal (Kafka's "Unable to apply ...
        record on standby controller"): this node's state is no longer the log's."""
        if not event.entries:
            return
        first = event.entries[0].offset
        try:
            records = [(e.offset, decode_record(e.data)) for e in event.entries]
            self.controller.replay_committed((r for _, r in records), records[-1][0])
            delta = MetadataDelta(self.image)
            for offset, record in records:
                delta.replay(record, offset)
        except Exception as exc:
            raise self._fatal(
                f"replaying the committed records from offset {first}", exc
            ) from exc
        self._publish_delta(delta)

    def _load_snapshot(self, event: RaftSnapshotLoaded) -> None:
        """A whole new image, published as a delta from nothing: a subscriber cannot see
        what it dropped (none subscribes on a controller-only node). A snapshot that
        cannot be applied is fatal, as a record that cannot be replayed."""
        snapshot_id = event.snapshot.id
        try:
            records = [r for _, r in decode_metadata_records(event.snapshot.payload)]
            offset = snapshot_id.end_offset - 1
            self.controller.load_snapshot(records, offset)
            delta = MetadataDelta(MetadataImage())
            for record in records:
                delta.replay(record)
            delta.offset = offset
        except Exception as exc:
            raise self._fatal(
                f"applying the snapshot that ends at offset {snapshot_id.end_offset} "
                f"(epoch {snapshot_id.epoch})",
                exc,
            ) from exc
        self._publish_delta(delta)

    # --- faults ----------------------------------------------------------------------------

    def _fatal(self, what: str, exc: BaseException) -> FatalFaultError:
        node_id = self.controller.config.node_id
        return FatalFaultError.caused_by(f"controller {node_id}: {what}", exc, _logger)

    def _event_failed(
        self, name: str, event: _Event | None, exc: Exception, now: float
    ) -> list[Action]:
        """Kafka's ``handleEventException``: an ApiError is the request's answer; anything
        else answers it UNKNOWN_SERVER_ERROR and makes the active controller renounce."""
        node_id = self.controller.config.node_id
        if isinstance(exc, ApiError):
            _logger.info(
                "controller %d: %s failed with %s: %s",
                node_id,
                name,
                exc.error_code.name.upper(),
                exc,
            )
            return self._answer_failed(event, exc.error_code)
        _logger.error(
            "Encountered non-fatal fault: controller %d: %s failed with %s: %s",
            node_id,
            name,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )
        failed = self._answer_failed(event, ErrorCode.unknown_server_error)
        return failed + self._renounce(now)

    @staticmethod
    def _answer_failed(event: _Event | None, error_code: ErrorCode) -> list[Action]:
        if isinstance(event, _Request):
            # Unless the event answered it before it failed: the first answer counts.
            return [Reply(event.request_id, None, error_code)]
        return []

    def _renounce(self, now: float) -> list[Action]:
        """Kafka's ``renounce``: stop being the active controller after a fault, back to
        the last committed state, and let the quorum elect again. A fault while
        renouncing leaves nothing to fall back on: fatal."""
        controller = self.controller
        if not controller.active and not self._renounced:
            return []  # a standby, or resigned until restart: nothing to give up
        try:
            actions = controller.resign()
            self._uncommitted.clear()  # what commits is replayed from the log
            if self.raft is not None:
                self.raft.renounce()
        except Exception as exc:
            raise self._fatal("renouncing leadership", exc) from exc
        if self.raft is None:
            # One voter: nobody else to elect. It claims again once what it appended
            # has committed (replayed meanwhile, as a standby would).
            self._renounced = True
            self._reclaim_at = now + RECLAIM_DELAY_S
        _logger.warning(
            "controller %d renounced leadership: reverted to the last committed offset "
            "%d; requests get NOT_CONTROLLER until %s",
            controller.config.node_id,
            controller.last_committed_offset,
            "the quorum elects a leader"
            if self.raft is not None
            else f"it claims leadership again in {RECLAIM_DELAY_S} s",
        )
        return actions

    def _reclaim(self, now: float) -> list[Action]:
        """One voter: become the active controller again (or for the first time, at
        start) on top of everything in the log, once all of it has committed."""
        quorum = self.quorum
        if self.failure is not None:
            self._renounced, self._reclaim_at = False, None
            return []  # the log failed meanwhile: inactive until restart
        if quorum.high_watermark < quorum.appended_end:
            self._reclaim_at = now + RECLAIM_DELAY_S  # still on its way to disk
            return []
        self._catch_up_from_log()
        actions = self.controller.become_leader(quorum.epoch, now)
        if self._reclaim_at is not None:
            _logger.info(
                "controller %d is active again in epoch %d, from offset %d",
                self.controller.config.node_id,
                quorum.epoch,
                self.controller.last_committed_offset,
            )
        self._renounced, self._reclaim_at = False, None
        return actions

    def _catch_up_from_log(self) -> None:
        """One voter that renounced: replay what has committed since, from the log, as a
        standby replays the leader's records. Fatal if a record cannot be replayed."""
        controller = self.controller
        # The controller and the image are both at the last commit, unless the event
        # that failed moved one and not the other: each takes what it has not seen.
        controller_from = controller.last_committed_offset + 1
        image_from = self.image.offset + 1
        start = min(controller_from, image_from)
        delta = MetadataDelta(self.image)
        try:
            for batch in self.quorum.read_committed(start):
                unseen = [r for o, r in batch.records if o >= controller_from]
                if unseen:
                    controller.replay_committed(unseen, batch.last_offset)
                for offset, record in batch.records:
                    if offset >= image_from:
                        delta.replay(record, offset)
        except Exception as exc:
            raise self._fatal(
                f"replaying the committed metadata log from offset {start}", exc
            ) from exc
        if delta.offset != self.image.offset:
            self._publish_delta(delta)

    def _append_failed(
        self, action: AppendRecords, exc: MetadataLogError
    ) -> list[Action]:
        # The requests whose records were refused hear why; after a fatal failure the
        # ones still waiting for earlier records hear NOT_CONTROLLER from the
        # resignation.
        failed = self.controller.append_failed(action.base_offset, exc.error_code)
        if exc.fatal:
            return failed + self._resign(exc)
        _logger.error(
            "%s; the request(s) writing offsets from %d on get %s, the controller "
            "stays "
            "active and reverts to offset %d",
            exc,
            action.base_offset,
            exc.error_code.name,
            action.base_offset - 1,
        )
        return failed

    def _resign(self, exc: MetadataLogError) -> list[Action]:
        """The metadata log cannot be trusted: stop being the active controller."""
        if self.failure is not None:
            return []
        self.failure = exc
        _logger.error(
            "%s; this node is no longer the active controller (reverted to the last "
            "committed offset %d) until it is restarted: admin requests get NOT_CONTROLLER, "
            "data is still served",
            exc,
            self.controller.last_committed_offset,
        )
        self._uncommitted.clear()  # never published in this process
        self._renounced, self._reclaim_at = False, None
        return self.controller.resign()

    def _publish(self, offset: int) -> None:
        delta = MetadataDelta(self.image)
        while self._uncommitted and self._uncommitted[0].last_offset <= offset:
            append = self._uncommitted.popleft()
            try:
                for i, record in enumerate(append.records):
                    delta.replay(record, append.base_offset + i)
            except Exception as exc:
                raise self._fatal(
                    f"replaying the committed records from offset {append.base_offset}",
                    exc,
                ) from exc
        if delta.offset == self.image.offset:
            return
        self._publish_delta(delta)

    def _publish_delta(self, delta: MetadataDelta) -> None:
        try:
            self.image = delta.apply()
        except Exception as exc:
            raise self._fatal(
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
        self._maybe_snapshot()

    def _maybe_snapshot(self) -> None:
        threshold = (
            self.controller.config.metadata_log_max_record_bytes_between_snapshots
        )
        if self._snapshotting or self._nursery is None:
            return
        if self._log_size() - self._snapshot_size < threshold:
            return
        self._snapshotting = True
        self._snapshot_done = trio.Event()
        self._nursery.start_soon(self._write_snapshot, self.image)

    def _log_size(self) -> int:
        return self.raft.log_size if self.raft is not None else self.quorum.log.size

    async def _write_snapshot(self, image: MetadataImage) -> None:
        try:
            records = list(image.records())
            if self.raft is not None:
                # The Raft log keeps the snapshot (and drops the log below it); the
                # payload is the image's records in a batch, as the one-voter quorum's.
                payload = await trio.to_thread.run_sync(encode_snapshot, records)
                self.raft.create_snapshot(image.offset + 1, payload)
            else:
                snapshot = await trio.to_thread.run_sync(
                    self.quorum.write_snapshot, image.offset + 1, records
                )
                self.quorum.snapshot_written(snapshot)
        except (OSError, ValueError) as exc:
            # A snapshot only shortens the next start's replay: try again after as much
            # log again, rather than fail the controller over it.
            _logger.warning("writing a metadata snapshot failed: %s", exc)
        except FatalFaultError:
            raise
        except Exception as exc:
            # The same, for a fault nobody foresaw (Kafka's snapshot generator logs it
            # and goes on); with its traceback, since it is a bug.
            _logger.error(
                "Encountered non-fatal fault: writing a metadata snapshot at offset %d "
                "failed",
                image.offset,
                exc_info=exc,
            )
        self._snapshot_size = self._log_size()
        self._snapshotting = False
        self._snapshot_done.set()

    async def wait_snapshot_written(self) -> None:
        """Until no metadata snapshot is being written (at once if none is). A request's
        answer comes after the commit that may start one, so a caller that waits here
        after its last request finds the snapshot of that request's image or a later one."""
        await self._snapshot_done.wait()
