"""The metadata quorum, of one controller or several: the trio shell of a Raft node
(KIP-595).

:class:`~minikafka.raft.RaftNode` decides everything (elections, replication, the high
watermark) and does no I/O; this shell carries its decisions out, the way Kafka's
``KafkaRaftClient`` is driven by its ``KafkaRaftClientDriver`` thread:

- **time**: one task sleeps until the node's ``next_deadline()`` and calls ``on_timer``;
- **the leader's flush**: in a worker thread (:class:`LeaderFlushedLog`), never on the
  event loop, then ``on_log_flushed``;
- **requests out** (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot): each
  goes to the other voter's controller listener in Kafka's wire format
  (:mod:`minikafka.raft.wire` encodes them) through a :class:`QuorumTransport` (the
  controller never touches the network layer: the broker package gives it one over its
  NetworkClient), and the answer, or the failure, goes back into the node; the node keeps
  one request in flight per destination;
- **requests in**: ControllerApis hands what arrived on the controller listener to
  :meth:`RaftNodeShell.handle`, which waits for the node's answer (a Fetch with nothing new
  is held up to 500 ms, a long poll);
- **what the state machine must hear**, passed to ``deliver`` in log order: the node's
  replies, entries that became committed (:class:`RaftCommitted`) and a snapshot fetched
  from the leader (:class:`RaftSnapshotLoaded`); and what this shell sees in the node's
  state: this node becoming the leader once everything before its epoch is committed and
  handed over (:class:`RaftLeaderReady`: Kafka's ``handleLeaderChange`` fires only then,
  so the new active controller starts from the whole committed state), and leadership
  lost (:class:`RaftResigned`).

Each entry of the log is one metadata record, so Raft's offsets are the records' offsets,
as in Kafka's ``__cluster_metadata``; the LeaderChange entry a new leader writes first is
a control batch the controller never sees.

Faults. A request to another voter that fails (no connection, no answer in time, an
answer that cannot be read, or anything else the transport raises) is a failed send:
the node hears of it (``handle_disconnect``) and sends again after its backoff. An
exception from the node itself (its timer, a message in or an answer, an append to its
log, the leader's flush) leaves a Raft state nobody can vouch for: Kafka runs
``KafkaRaftClient`` on a thread whose uncaught exception ends the process through the
fatal fault handler, and so does this shell, with
:class:`~minikafka.common.FatalFaultError`. Per background task:

- the driver (``_drive``: the node's timer): fatal, and it also raises the fault a
  request handler met in the node (:meth:`RaftNodeShell.handle` answers that request
  itself with QuorumUnavailableError);
- each request out (``_send``): the transport's failure is a failed send; the node's
  fault on the answer is fatal;
- the flusher (``_flusher``): a failed fsync is fatal, never retried (fsyncgate).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import attrs
import trio
from kio.static.protocol import RequestPayload

from minikafka.common import FatalFaultError
from minikafka.common.shell import Waiters
from minikafka.log import Log
from minikafka.raft import (
    BeginQuorumEpochRequest,
    Committed,
    EndQuorumEpochRequest,
    Entry,
    Envelope,
    FetchRequest,
    FetchSnapshotRequest,
    FileStateStore,
    LoadSnapshot,
    Message,
    NotLeaderError,
    QuorumInfo,
    RaftConfig,
    RaftNode,
    RaftResult,
    Request,
    Snapshot,
    SnapshotId,
    State,
    VoteRequest,
)
from minikafka.raft import wire as raft_wire
from minikafka.trace import EpochClock, NullTracer, Tracer

from ._metadata_log import (
    MAX_BATCH_SIZE_BYTES,
    METADATA_LOG_CONFIG,
    METADATA_PARTITION_DIR,
    MetadataBatch,
    RecordBatchTooLargeError,
    decode_metadata_records,
    read_committed,
    split_into_batches,
)
from ._raft_io import LeaderFlushedLog as LeaderFlushedLog
from ._raft_io import NoOtherVoters as NoOtherVoters
from ._raft_io import QuorumTransport as QuorumTransport
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


class QuorumUnavailableError(Exception):
    """The node did not answer a request in time (or is not running yet)."""


@attrs.define(eq=False)
class RaftNodeShell:
    node_id: int
    voters: tuple[int, ...]
    transport: QuorumTransport
    raft_log: LeaderFlushedLog
    store: FileStateStore
    cluster_id: str
    config: RaftConfig
    endpoints: tuple[ListenerEndpoint, ...] = ()
    rng: random.Random = attrs.field(factory=random.Random)
    tracer: Tracer = attrs.field(factory=NullTracer)
    node: RaftNode | None = attrs.field(init=False, default=None)
    _clock: EpochClock = attrs.field(
        init=False, factory=lambda: EpochClock(trio.current_time)
    )
    """The node's ``now``: trio's clock moved to the epoch, as every core's."""
    _deliver: Callable[[RaftEvent], None] = attrs.field(
        init=False, default=lambda _: None
    )
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    _wake: trio.Event = attrs.field(init=False, factory=trio.Event)
    _waiters: Waiters[Message | None] = attrs.field(init=False, factory=Waiters)
    """The requests from other voters the node has not answered yet (None: it never
    will, the node stopped)."""
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
    ) -> RaftNodeShell:
        path = Path(metadata_dir) / METADATA_PARTITION_DIR
        quorum: list[RaftNodeShell] = []

        def leading() -> bool:
            # The node is built inside run(): a voter alone elects itself (and appends
            # its LeaderChange) in its constructor, before ``node`` is set.
            node = quorum[0].node if quorum else None
            return node is None or node.state is State.LEADER

        raft_log = LeaderFlushedLog(path, METADATA_LOG_CONFIG, leading)
        store = FileStateStore(path, sorted(voters))
        made = cls(
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
        quorum.append(made)
        return made

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

    @property
    def log(self) -> Log:
        """The ``__cluster_metadata-0`` log itself (the Raft log's segments)."""
        return self.raft_log.log

    @property
    def dir(self) -> Path:
        return self.raft_log.dir

    @property
    def log_end_offset(self) -> int:
        return self.raft_log.end_offset

    def read_committed(self, start_offset: int) -> Iterator[MetadataBatch]:
        """The committed metadata records from ``start_offset`` (a MetadataQuorum's read)."""
        return read_committed(self.raft_log.log, start_offset, self.high_watermark)

    def latest_snapshot(self) -> tuple[SnapshotId, list[MetadataRecord]] | None:
        """The newest snapshot and the records it holds."""
        snapshot = self.raft_log.latest_snapshot()
        if snapshot is None:
            return None
        records = [r for _, r in decode_metadata_records(snapshot.payload)]
        return snapshot.id, records

    def close(self) -> None:
        """Close the log of a quorum that never ran (``run`` closes it when it ends)."""
        self.raft_log.close()

    def describe(self) -> QuorumInfo | None:
        """DescribeQuorum's answer, in the node's clock; None unless this node leads."""
        if self.node is None:
            return None
        return self.node.describe_quorum(self._clock())

    # --- running ---------------------------------------------------------------------------

    async def run(
        self,
        deliver: Callable[[RaftEvent], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Drive the node until cancelled; ``deliver`` hears the state machine's events."""
        now = self._clock()
        self._deliver = deliver
        self.node = RaftNode(
            self.node_id,
            self.voters,
            self.raft_log,
            self.store,
            now,
            config=self.config,
            rng=self.rng,
            tracer=self.tracer,
        )
        self._idle.set()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._flusher)
                task_status.started()
                await self._drive()
        finally:
            self._nursery = None
            for correlation_id in self._waiters.unanswered():
                self._waiters.answer(correlation_id, None)  # handle() raises
            self.raft_log.close()

    async def _drive(self) -> None:
        node = self.node
        assert node is not None
        while True:
            if self._fault is not None:
                raise self._fault
            wake = self._wake
            try:
                deadline = node.next_deadline()
            except Exception as exc:
                raise self._fatal("reading the Raft node's timer", exc) from exc
            with trio.move_on_at(
                math.inf if deadline is None else self._clock.to_source(deadline)
            ):
                await wake.wait()
            if wake.is_set():
                self._wake = trio.Event()  # something happened: look at the timer again
                continue
            try:
                self._carry_out(node.on_timer(self._clock()))
            except Exception as exc:
                raise self._fatal("the Raft node's timer", exc) from exc

    async def _flusher(self) -> None:
        """The leader's flush, in a worker thread: everything appended when it starts,
        then the node hears of it. A failed fsync leaves a log nobody can vouch for:
        fatal, as a failed flush is in Kafka's Raft thread."""
        node, log = self.node, self.raft_log
        assert node is not None
        while True:
            await log.flush_wanted.wait()
            log.flush_wanted = trio.Event()
            end = log.end_offset
            if end <= log.flushed_end_offset:
                continue
            try:
                await trio.to_thread.run_sync(log.fsync_up_to, end)
                log.mark_flushed(end)
                self._carry_out(node.on_log_flushed(self._clock()))
            except Exception as exc:
                raise self._fatal(f"flushing the Raft log up to {end}", exc) from exc

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
            self._carry_out(node.resign(self._clock()))

    async def resign(self) -> None:
        """Step down gracefully (a controlled shutdown): EndQuorumEpoch to the voters, and
        wait a little for it to leave."""
        if self.node is None or self.node.state is not State.LEADER:
            return
        self._carry_out(self.node.resign(self._clock()))
        with trio.move_on_after(SHUTDOWN_GRACE):
            await self._idle.wait()

    def append(self, epoch: int, records: Sequence[MetadataRecord]) -> int:
        """Append one operation's records as the leader of ``epoch`` (one entry each);
        returns the last one's offset. They commit when a majority has them, all of them
        or none (one unit of the Raft log, one batch: RecordBatchTooLargeError if they
        would not fit one, and nothing is appended). Any other failure of the node (a disk error
        in the Raft log) is a FatalFaultError that stops this controller (Kafka's fatal
        fault handler): the other voters go on."""
        node = self.node
        if node is None or node.epoch != epoch:
            raise NotLeaderError(
                f"append in epoch {epoch}; the quorum is in epoch {self.epoch}"
            )
        entries = [encode_record(r) for r in records]
        if len(split_into_batches(entries, MAX_BATCH_SIZE_BYTES)) > 1:
            raise RecordBatchTooLargeError(
                f"{len(entries)} records of one operation take more than one batch of "
                f"the metadata log ({MAX_BATCH_SIZE_BYTES} bytes)"
            )
        try:
            result = node.append(entries, self._clock())
            # Asked before the result is carried out: the state machine it reaches may
            # append in turn.
            last = node.log.end_offset - 1
            self._carry_out(result)
        except NotLeaderError:
            raise
        except Exception as exc:
            raise self._fatal(
                f"appending {len(entries)} entries to the Raft log", exc
            ) from exc
        return last

    async def create_snapshot(self, end_offset: int, payload: bytes) -> None:
        """Keep the state machine's snapshot of everything below ``end_offset``: its file
        written and fsynced in a worker thread, then the log below it dropped; nothing
        if the log already starts there or later (a snapshot fetched from the leader
        while this one was being encoded covers it)."""
        node, log = self.node, self.raft_log
        if node is None or end_offset <= log.start_offset:
            return
        node.create_snapshot(end_offset, payload)  # the log only takes note of it
        snapshot, log.pending_snapshot = log.pending_snapshot, None
        if snapshot is not None:
            await trio.to_thread.run_sync(log.write_snapshot_file, snapshot)
            log.snapshot_written(snapshot)

    async def handle(self, source: int, message: Request) -> Message:
        """A request that arrived from ``source``; returns the node's answer."""
        node = self.node
        if node is None or self._nursery is None:
            raise QuorumUnavailableError(
                f"the Raft node of controller {self.node_id} is not up"
            )
        correlation_id = self._waiters.open()
        answer: Message | None = None
        try:
            envelope = Envelope(source, self.node_id, correlation_id, message)
            try:
                self._carry_out(node.receive(envelope, self._clock()))
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
                answer = await self._waiters.wait(correlation_id)
        finally:
            self._waiters.close(correlation_id)
        if answer is None:
            raise QuorumUnavailableError(
                f"controller {self.node_id} did not answer {message}"
            )
        return answer

    # --- carrying a result out ----------------------------------------------------------

    def _carry_out(self, result: RaftResult) -> None:
        node = self.node
        assert node is not None
        for envelope in result.messages:
            if envelope.is_request:
                if self._nursery is not None and envelope.destination in self.voters:
                    if self._sending == 0:
                        self._idle = trio.Event()
                    self._sending += 1
                    self._nursery.start_soon(self._send, envelope)
            else:
                self._waiters.answer(envelope.correlation_id, envelope.message)
        for reply in result.replies:  # in order: a snapshot first, then entries
            match reply:
                case LoadSnapshot(snapshot):
                    self._deliver(RaftSnapshotLoaded(snapshot))
                case Committed(entries):
                    self._deliver(RaftCommitted(entries, node.high_watermark))
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
            now, correlation_id = self._clock(), envelope.correlation_id
            try:
                if message is None:
                    result = node.handle_disconnect(peer, now, correlation_id)
                else:
                    reply = Envelope(peer, self.node_id, correlation_id, message)
                    result = node.receive(reply, now)
                self._carry_out(result)
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
