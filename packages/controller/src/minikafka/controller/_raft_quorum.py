"""The metadata quorum with several controllers: the trio shell of a Raft node (KIP-595).

:class:`~minikafka.raft.RaftNode` decides everything (elections, replication, the high
watermark) and does no I/O; this shell carries its decisions out, the way Kafka's
``KafkaRaftClient`` is driven by its ``KafkaRaftClientDriver`` thread:

- **time**: one task sleeps until the node's ``timer()`` and calls ``handle_timer``;
- **requests out** (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot): each
  goes to the other voter's controller listener in Kafka's wire format
  (:mod:`minikafka.raft.wire` encodes them) through a :class:`QuorumTransport` (the
  controller never touches the network layer: the broker package gives it one over its
  NetworkClient), and the answer, or the failure, goes back into the node; the node keeps
  one request in flight per destination;
- **requests in**: ControllerApis hands what arrived on the controller listener to
  :meth:`RaftQuorum.handle`, which waits for the node's answer (a Fetch with nothing new
  is held up to 500 ms, a long poll);
- **what the state machine must hear**, passed to ``deliver`` in log order: entries that
  became committed (:class:`RaftCommitted`), a snapshot fetched from the leader
  (:class:`RaftSnapshotLoaded`), this node becoming the leader once everything before its
  epoch is committed and handed over (:class:`RaftLeaderReady`: Kafka's
  ``handleLeaderChange`` fires only then, so the new active controller starts from the
  whole committed state), and leadership lost (:class:`RaftResigned`).

Each entry of the log is one metadata record, so Raft's offsets are the records' offsets,
as in Kafka's ``__cluster_metadata``; the LeaderChange entry a new leader writes first is
a control batch the controller never sees.

Faults. A request to another voter that fails (no connection, no answer in time, an
answer that cannot be read, or anything else the transport raises) is a failed send:
the node hears of it (``handle_disconnect``) and sends again after its backoff. An
exception from the node itself (its timer, a message in or an answer, an append to its
log) leaves a Raft state nobody can vouch for: Kafka runs ``KafkaRaftClient`` on a thread
whose uncaught exception ends the process through the fatal fault handler, and so does
this shell, with :class:`~minikafka.common.FatalFaultError`. Per background task:

- the driver (``_drive``: the node's timer): fatal, and it also raises the fault a
  request handler met in the node (:meth:`RaftQuorum.handle` answers that request
  itself with QuorumUnavailableError);
- each request out (``_send``): the transport's failure is a failed send; the node's
  fault on the answer is fatal.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import attrs
import trio
from kio.static.protocol import RequestPayload

from minikafka.common import FatalFaultError
from minikafka.log import LogConfig
from minikafka.raft import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    Entry,
    Envelope,
    FetchRequest,
    FetchSnapshotRequest,
    FileRaftLog,
    FileStateStore,
    Message,
    NotLeaderError,
    Output,
    QuorumInfo,
    RaftConfig,
    RaftNode,
    Request,
    Snapshot,
    State,
    VoteRequest,
)
from minikafka.raft import wire as raft_wire
from minikafka.trace import NullTracer, TraceEvent, Tracer

from ._quorum import MAX_BATCH_SIZE_BYTES, METADATA_PARTITION_DIR
from ._records import MetadataRecord, encode_record

_logger = logging.getLogger("minikafka.controller")

SHUTDOWN_GRACE = 1.0
"""How long a leader that is shutting down waits for its EndQuorumEpoch to be sent."""


@attrs.frozen
class ListenerEndpoint:
    """Where this controller listens (sent with BeginQuorumEpoch and EndQuorumEpoch)."""

    name: str
    host: str
    port: int


@attrs.frozen
class RaftCommitted:
    """Entries became committed; ``high_watermark`` is the node's, after them."""

    entries: tuple[Entry, ...]
    high_watermark: int


@attrs.frozen
class RaftSnapshotLoaded:
    """The node copied the leader's snapshot (it was behind the leader's log start): the
    state machine starts again from it."""

    snapshot: Snapshot


@attrs.frozen
class RaftLeaderReady:
    """This node leads ``epoch`` and every entry below ``high_watermark`` is committed."""

    epoch: int
    high_watermark: int


@attrs.frozen
class RaftResigned:
    """This node no longer leads ``epoch``: what it appended and did not see committed may
    be lost or kept by the next leader, which decides; commits after this are replayed."""

    epoch: int


RaftEvent = RaftCommitted | RaftSnapshotLoaded | RaftLeaderReady | RaftResigned


class QuorumTransport(Protocol):
    """How requests reach the other voters' controller listeners."""

    async def send(self, destination: int, body: RequestPayload) -> object:
        """Send ``body`` to voter ``destination`` and return its answer; raises
        ConnectionError if it cannot be reached or the connection breaks."""
        ...

    def disconnect(self, destination: int) -> None:
        """Drop the connection (a request was given up: its late answer must not be
        read as the next one's)."""
        ...


@attrs.frozen
class WallClockTracer:
    """The node's tracer, its timestamps moved from the node's clock (trio's, which the
    core stamps its events with) to the wall clock every other trace event uses."""

    inner: Tracer
    offset: float

    @property
    def node(self) -> int:
        return self.inner.node

    @property
    def enabled(self) -> bool:
        return self.inner.enabled

    def emit(self, event: TraceEvent, ts: float | None = None) -> None:
        self.inner.emit(event, None if ts is None else ts + self.offset)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()


class QuorumUnavailableError(Exception):
    """The node did not answer a request in time (or is not running yet)."""


@attrs.define(eq=False)
class RaftQuorum:
    node_id: int
    voters: tuple[int, ...]
    transport: QuorumTransport
    raft_log: FileRaftLog
    store: FileStateStore
    cluster_id: str
    config: RaftConfig
    endpoints: tuple[ListenerEndpoint, ...] = ()
    rng: random.Random = attrs.field(factory=random.Random)
    tracer: Tracer = attrs.field(factory=NullTracer)
    node: RaftNode | None = attrs.field(init=False, default=None)
    wall_clock_offset: float = attrs.field(init=False, default=0.0)
    """``time.time()`` minus the node's clock (trio's), for timestamps on the wire."""
    _deliver: Callable[[RaftEvent], None] = attrs.field(
        init=False, default=lambda _: None
    )
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    _wake: trio.Event = attrs.field(init=False, factory=trio.Event)
    _answers: dict[int, tuple[trio.Event, list[Message]]] = attrs.field(
        init=False, factory=dict
    )
    _next_id: int = attrs.field(init=False, default=0)
    # The epoch this node was announced ready to lead in (RaftLeaderReady), None if not.
    _leading: int | None = attrs.field(init=False, default=None)
    # (epoch, log end just after that epoch's LeaderChange entry): once the high watermark
    # reaches it, everything before this node's epoch is committed.
    _leader_end: tuple[int, int] | None = attrs.field(init=False, default=None)
    # Requests on their way to other voters, and an event set when there are none (a
    # resigning leader waits on it for its EndQuorumEpoch to leave).
    _sending: int = attrs.field(init=False, default=0)
    _idle: trio.Event = attrs.field(init=False, factory=trio.Event)
    # A fault met in the node by a task that is not the driver, which raises it.
    _fault: FatalFaultError | None = attrs.field(init=False, default=None)

    @classmethod
    def open(
        cls,
        metadata_dir: Path,
        node_id: int,
        voters: Sequence[int],
        transport: QuorumTransport,
        cluster_id: str,
        config: RaftConfig,
        *,
        endpoints: Sequence[ListenerEndpoint] = (),
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> RaftQuorum:
        path = Path(metadata_dir) / METADATA_PARTITION_DIR
        # Never trimmed by time or size, only below a snapshot (as the one-voter quorum).
        log_config = LogConfig(
            retention_ms=-1, retention_bytes=-1, max_message_bytes=MAX_BATCH_SIZE_BYTES
        )
        raft_log = FileRaftLog(path, log_config)
        store = FileStateStore(path, sorted(voters))
        return cls(
            node_id,
            tuple(sorted(voters)),
            transport,
            raft_log,
            store,
            cluster_id,
            config,
            tuple(endpoints),
            rng or random.Random(node_id),
            tracer or NullTracer(node_id),
        )

    # --- what the controller reads --------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.node.epoch if self.node is not None else 0

    @property
    def leader_id(self) -> int | None:
        return self.node.leader_id if self.node is not None else None

    @property
    def high_watermark(self) -> int:
        return self.node.high_watermark if self.node is not None else 0

    @property
    def log_size(self) -> int:
        return self.raft_log.log.size

    def describe(self) -> QuorumInfo | None:
        """DescribeQuorum's answer, in the node's clock; None unless this node leads."""
        if self.node is None:
            return None
        return self.node.describe_quorum(trio.current_time())

    # --- running ---------------------------------------------------------------------------

    async def run(
        self,
        deliver: Callable[[RaftEvent], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Drive the node until cancelled; ``deliver`` hears the state machine's events."""
        now = trio.current_time()
        self.wall_clock_offset = time.time() - now
        self._deliver = deliver
        self.node = RaftNode(
            self.node_id,
            self.voters,
            self.raft_log,
            self.store,
            now,
            config=self.config,
            rng=self.rng,
            tracer=WallClockTracer(self.tracer, self.wall_clock_offset),
        )
        self._idle.set()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await self._drive()
        finally:
            self._nursery = None
            for event, _ in self._answers.values():
                event.set()  # unanswered: handle() raises
            self.raft_log.close()

    async def _drive(self) -> None:
        node = self.node
        assert node is not None
        while True:
            if self._fault is not None:
                raise self._fault
            wake = self._wake
            try:
                deadline = node.timer()
            except Exception as exc:
                raise self._fatal("reading the Raft node's timer", exc) from exc
            with trio.move_on_at(math.inf if deadline is None else deadline):
                await wake.wait()
            if wake.is_set():
                self._wake = trio.Event()  # something happened: look at the timer again
                continue
            try:
                self._carry_out(node.handle_timer(trio.current_time()))
            except Exception as exc:
                raise self._fatal("the Raft node's timer", exc) from exc

    def _fatal(self, what: str, exc: BaseException) -> FatalFaultError:
        return FatalFaultError.caused_by(
            f"the Raft node of controller {self.node_id}: {what}", exc, _logger
        )

    def _fail(self, fault: FatalFaultError) -> None:
        """A fault met in a task that cannot end the process itself (a request
        handler's): the driver raises it."""
        if self._fault is None:
            self._fault = fault
        self._wake.set()

    def renounce(self) -> None:
        """The controller met a fault as the leader: step down (Kafka's
        ``raftClient.resign(epoch)``), EndQuorumEpoch to the voters, so the quorum elects
        again (this node too, perhaps, in a new epoch). RaftResigned follows."""
        node = self.node
        if node is not None and node.state is State.LEADER:
            self._carry_out(node.resign(trio.current_time()))

    async def resign(self) -> None:
        """Step down gracefully (a controlled shutdown): EndQuorumEpoch to the voters, and
        wait a little for it to leave."""
        if self.node is None or self.node.state is not State.LEADER:
            return
        self._carry_out(self.node.resign(trio.current_time()))
        with trio.move_on_after(SHUTDOWN_GRACE):
            await self._idle.wait()

    def append(self, epoch: int, records: Sequence[MetadataRecord]) -> int:
        """Append one operation's records as the leader of ``epoch`` (one entry each);
        returns the last one's offset. They commit when a majority has them, all of them
        or none (one unit of the Raft log). Any other failure of the node (a disk error
        in the Raft log) is a FatalFaultError that stops this controller (Kafka's fatal
        fault handler): the other voters go on."""
        node = self.node
        if node is None or node.epoch != epoch:
            raise NotLeaderError(
                f"append in epoch {epoch}; the quorum is in epoch {self.epoch}"
            )
        entries = [encode_record(r) for r in records]
        try:
            last, output = node.append(entries, trio.current_time())
            self._carry_out(output)
        except NotLeaderError:
            raise
        except Exception as exc:
            raise self._fatal(
                f"appending {len(entries)} entries to the Raft log", exc
            ) from exc
        return last

    def create_snapshot(self, end_offset: int, payload: bytes) -> None:
        """Keep the state machine's snapshot of everything below ``end_offset``; nothing
        if the log already starts there or later (a snapshot fetched from the leader
        while this one was being encoded covers it)."""
        if self.node is not None and end_offset > self.raft_log.start_offset:
            self.node.create_snapshot(end_offset, payload)

    async def handle(self, source: int, message: Request) -> Message:
        """A request that arrived from ``source``; returns the node's answer."""
        node = self.node
        if node is None or self._nursery is None:
            raise QuorumUnavailableError(
                f"the Raft node of controller {self.node_id} is not up"
            )
        correlation_id = self._next_id
        self._next_id += 1
        answered = trio.Event()
        answer: list[Message] = []
        self._answers[correlation_id] = (answered, answer)
        try:
            envelope = Envelope(source, self.node_id, correlation_id, message)
            try:
                self._carry_out(node.receive(envelope, trio.current_time()))
            except Exception as exc:
                # Fatal, but this is the request handler's task: the driver ends the
                # process, and the asker hears that this node could not answer.
                what = f"handling {type(message).__name__} from {source}"
                self._fail(self._fatal(what, exc))
                raise QuorumUnavailableError(
                    f"controller {self.node_id} failed on {type(message).__name__}"
                ) from exc
            # A held fetch is answered within fetch_max_wait; anything else at once.
            with trio.move_on_after(
                self.config.request_timeout + self.config.fetch_max_wait
            ):
                await answered.wait()
        finally:
            self._answers.pop(correlation_id, None)
        if not answer:
            raise QuorumUnavailableError(
                f"controller {self.node_id} did not answer {message}"
            )
        return answer[0]

    # --- carrying an Output out ----------------------------------------------------------

    def _carry_out(self, output: Output) -> None:
        node = self.node
        assert node is not None
        for envelope in output.messages:
            if envelope.is_request:
                if self._nursery is not None and envelope.destination in self.voters:
                    if self._sending == 0:
                        self._idle = trio.Event()
                    self._sending += 1
                    self._nursery.start_soon(self._send, envelope)
            else:
                waiting = self._answers.pop(envelope.correlation_id, None)
                if waiting is not None:
                    waiting[1].append(envelope.message)
                    waiting[0].set()
        if output.snapshot is not None:
            self._deliver(RaftSnapshotLoaded(output.snapshot))
        if output.committed:
            self._deliver(RaftCommitted(output.committed, node.high_watermark))
        self._follow_leadership(node)
        self._wake.set()

    def _follow_leadership(self, node: RaftNode) -> None:
        leading = node.state is State.LEADER
        if self._leading is not None and (not leading or node.epoch != self._leading):
            self._deliver(RaftResigned(self._leading))
            self._leading = None
        if not leading:
            self._leader_end = None
            return
        if self._leader_end is None or self._leader_end[0] != node.epoch:
            # Just elected: the log ends with this epoch's LeaderChange entry; once the
            # high watermark passes it, everything before the epoch is committed.
            self._leader_end = (node.epoch, node.log.end_offset)
        if self._leading is None and node.high_watermark >= self._leader_end[1]:
            self._leading = node.epoch
            self._deliver(RaftLeaderReady(node.epoch, node.high_watermark))

    async def _send(self, envelope: Envelope) -> None:
        node, peer = self.node, envelope.destination
        assert node is not None
        try:
            message = await self._exchange(envelope)
            now, correlation_id = trio.current_time(), envelope.correlation_id
            try:
                if message is None:
                    output = node.handle_disconnect(peer, now, correlation_id)
                else:
                    reply = Envelope(peer, self.node_id, correlation_id, message)
                    output = node.receive(reply, now)
                self._carry_out(output)
            except Exception as exc:
                name = type(envelope.message).__name__
                raise self._fatal(
                    f"handling the answer to {name} to {peer}", exc
                ) from exc
        finally:
            self._sending -= 1
            if self._sending == 0:
                self._idle.set()

    async def _exchange(self, envelope: Envelope) -> Message | None:
        """Send the request and read its answer; None if that failed, whatever the
        reason (the node sends again after its backoff, as after a disconnect)."""
        peer = envelope.destination
        try:
            body = self._encode(envelope)
            with trio.fail_after(self.config.request_timeout):
                response = await self.transport.send(peer, body)
            return raft_wire.decode_response(envelope.message, response)
        except (ConnectionError, ValueError, trio.TooSlowError) as exc:
            if isinstance(exc, trio.TooSlowError):
                self.transport.disconnect(peer)  # a late answer is not the next one's
            _logger.debug("raft %s to %d failed: %s", envelope.message, peer, exc)
        except Exception as exc:
            # A fault of the transport, not of the node: a failed send all the same.
            self.transport.disconnect(peer)
            name = type(envelope.message).__name__
            _logger.warning("raft %s to %d failed: %r", name, peer, exc)
            _logger.debug("raft %s to %d failed", name, peer, exc_info=exc)
        return None

    def _encode(self, envelope: Envelope) -> RequestPayload:
        message, cluster_id = envelope.message, self.cluster_id
        match message:
            case VoteRequest():
                return raft_wire.encode_vote_request(
                    message, cluster_id=cluster_id, voter_id=envelope.destination
                )
            case BeginQuorumEpochRequest():
                return raft_wire.encode_begin_quorum_epoch_request(
                    message,
                    cluster_id=cluster_id,
                    voter_id=envelope.destination,
                    leader_endpoints=self.endpoints,
                )
            case EndQuorumEpochRequest():
                return raft_wire.encode_end_quorum_epoch_request(
                    message, cluster_id=cluster_id, leader_endpoints=self.endpoints
                )
            case FetchRequest():
                return raft_wire.encode_fetch_request(
                    message, cluster_id=cluster_id, max_wait=self.config.fetch_max_wait
                )
            case FetchSnapshotRequest():
                return raft_wire.encode_fetch_snapshot_request(
                    message,
                    cluster_id=cluster_id,
                    max_bytes=self.config.snapshot_chunk_bytes,
                )
        raise ValueError(f"not a request: {message}")
