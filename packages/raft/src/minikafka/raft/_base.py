"""What every part of a KRaft quorum member shares (Kafka's ``KafkaRaftClient`` and
``QuorumState``, KIP-595, KIP-630, KIP-996): its state, the durable ``quorum-state``, the
moves between states, the timers, the requests in flight, and the calls a shell makes
(but ``resign`` and ``create_snapshot``, which belong to two of the parts below).

:class:`RaftNodeBase` leaves five rules to the classes :class:`~._node.RaftNode` is
made of, each in a module of its own, with the hooks below as their seams:

- :class:`~._election.Election`: votes granted and written down, votes counted, the new
  leader's first entry;
- :class:`~._replication.LeaderReplication`: the leader's answer to a fetch, the
  followers' progress and the high watermark;
- :class:`~._follower.FollowerFetch`: what a follower asks for, and what it does with
  the answer (append, or truncate to a diverging epoch and fetch again);
- :class:`~._snapshots.SnapshotTransfer`: snapshots (KIP-630) taken, served by the
  leader in chunks, copied and installed by a follower (into ``_download``);
- :class:`~._resignation.Resignation`: a leader stepping down (asked to, or by
  check-quorum) and naming its successors, and a voter told so.

A leader announces itself (BeginQuorumEpoch) to every voter when it is elected, and
again, every half fetch timeout, to each voter that has not fetched for that long
(KIP-996): a voter stranded at a higher epoch by an election it lost answers with that
epoch, and the leader steps down to it, as every node does on seeing a higher epoch.
"""

from __future__ import annotations

import abc
import random
from collections.abc import Sequence

import attrs

from minikafka.trace import NullTracer, Tracer

from ._config import RaftConfig
from ._describe import QuorumInfo
from ._events import HighWatermarkAdvanced, StateChanged
from ._leader import LeaderState
from ._log import Entry, RaftLog, SnapshotId
from ._messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Envelope,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    VoteRequest,
    VoteResponse,
)
from ._requests import RequestManager
from ._result import Committed, LoadSnapshot, RaftReply, RaftResult
from ._states import RaftStateError, State, after_election_timeout, check_transition
from ._store import ElectionState, QuorumStateStore

NO_LEADER = -1
_WAITING = frozenset({State.UNATTACHED, State.VOTED, State.RESIGNED})
_LEADERLESS = frozenset(
    {State.UNATTACHED, State.VOTED, State.PROSPECTIVE, State.CANDIDATE}
)


class NotLeaderError(Exception):
    """``append`` on a node that is not the leader."""


@attrs.define
class SnapshotDownload:
    id: SnapshotId
    data: bytearray


class RaftNodeBase(abc.ABC):
    """One member of a KRaft quorum, without its five rules (the abstract hooks at the
    end, which :class:`~._node.RaftNode`'s parts fill in): a voter if ``node_id`` is in
    ``voters``, else an observer (a broker following the metadata log)."""

    def __init__(
        self,
        node_id: int,
        voters: Sequence[int],
        log: RaftLog,
        store: QuorumStateStore,
        now: float,
        *,
        config: RaftConfig | None = None,
        rng: random.Random | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.node_id = node_id
        self.voters = tuple(sorted(voters))
        self.is_voter = node_id in self.voters
        self.log = log
        self.store = store
        self.config = config or RaftConfig()
        self.rng = rng or random.Random(node_id)
        self.tracer: Tracer = tracer or NullTracer()
        self._requests = RequestManager(
            self.config.request_timeout, self.config.retry_backoff
        )
        self._outbox: list[Envelope] = []
        self._leader: LeaderState | None = None
        self._download: SnapshotDownload | None = None
        # Per state: who answered this round's (pre-)vote requests, how.
        self._granted: set[int] = set()
        self._rejected: set[int] = set()
        self._granting: frozenset[int] = frozenset()  # who made this node the leader
        self._election_retries = 0
        self._election_deadline: float | None = None
        self._fetch_deadline: float | None = None
        self._last_leader_contact: float | None = None
        self._leaderless_since: float | None = now
        self._ended: set[int] = set()  # voters told of our resignation
        self._successors: tuple[int, ...] = ()
        # The high watermark this node knows (not durable: learned again after a crash),
        # and how far the state machine has been given the log.
        self.high_watermark = 0
        snapshot = log.latest_snapshot()
        self._applied = 0
        self._pending_snapshot = snapshot
        if snapshot is not None:
            self.high_watermark = snapshot.id.end_offset
        durable = store.read() or ElectionState(0)
        self.epoch = durable.epoch
        self.leader_id: int | None = durable.leader_id
        self.voted_id: int | None = durable.voted_id
        self.state = State.UNATTACHED
        self._enter_after_restart(durable, now)
        self._started: float | None = now  # the first on_timer sends what is needed

    # -- what the shell calls ------------------------------------------------------

    def receive(self, envelope: Envelope, now: float) -> RaftResult:
        message = envelope.message
        if envelope.is_request:
            self._handle_request(envelope, now)
        else:
            if not self._requests.answered(envelope.source, envelope.correlation_id):
                return self._result(now)  # late or duplicated: its request was given up
            self._handle_response(envelope.source, message, now)
        return self._result(now)

    def handle_disconnect(
        self, destination: int, now: float, correlation_id: int | None = None
    ) -> RaftResult:
        """The connection to ``destination`` failed (refused, reset): its request is
        given up at once and asked again after the retry backoff, not the request timeout.
        ``correlation_id`` names the request that failed: if another has been sent since
        (a new state forgets old requests), the failure is old news and changes nothing."""
        self._requests.failed(destination, now, correlation_id)
        return self._result(now)

    def next_deadline(self) -> float | None:
        """When ``on_timer`` must next be called (aioquic's ``get_timer``)."""
        deadlines = [self._started, self._election_deadline, self._fetch_deadline]
        deadlines += self._requests.deadlines()
        if self._leader is not None:
            deadlines.append(
                self._leader.check_quorum_deadline(self.config.fetch_timeout)
            )
            deadlines += [expiry for _, expiry in self._leader.parked.values()]
            deadlines.append(self._leader.announce_deadline)
        found = [d for d in deadlines if d is not None]
        return min(found) if found else None

    def on_timer(self, now: float) -> RaftResult:
        self._started = None
        for _ in self._requests.expire(now):  # given up: asked again after the backoff
            if not self.is_voter:
                self._observer_lost_leader(now)
        if self._leader is not None:
            for replica, (request, expiry) in list(self._leader.parked.items()):
                if expiry <= now:
                    del self._leader.parked[replica]
                    self._answer_fetch(request, now, park=False)
            announce = self._leader.announce_deadline
            if announce is not None and announce <= now:  # KIP-996 (module docstring)
                self._leader.announce_again(now, self.config.fetch_timeout / 2)
            if self._leader.check_quorum_deadline(self.config.fetch_timeout) <= now:
                self._resign(
                    "check-quorum: no majority fetched within 1.5 fetch timeouts", now
                )
        if self._fetch_deadline is not None and self._fetch_deadline <= now:
            self._fetch_deadline = None
            if self.is_voter:
                self._become(
                    State.PROSPECTIVE,
                    now,
                    why="fetch timeout: the leader did not answer",
                )
            else:
                self._observer_lost_leader(now)
        if self._election_deadline is not None and self._election_deadline <= now:
            self._election_deadline = None
            self._election_timed_out(now)
        return self._result(now)

    def append(self, data: Sequence[bytes], now: float) -> RaftResult:
        """Append ``data`` as the leader, as one unit (it commits whole or not at all).
        The last entry's offset is ``log.end_offset - 1`` once this returns: a question
        the shell asks apart from the work it is handed, as Kafka's ``prepareAppend``
        answers the offset apart from the append it schedules. The entries are committed
        once the high watermark passes them (a :class:`Committed` reply says when)."""
        if self.state is not State.LEADER:
            raise NotLeaderError(
                f"node {self.node_id} is {self.state.value}, not the leader"
            )
        start, last = self.log.end_offset, len(data) - 1
        entries = [
            Entry(start + i, self.epoch, value, continued=i < last)
            for i, value in enumerate(data)
        ]
        self._append_as_leader(entries, now)
        return self._result(now)

    @property
    def _known_leader(self) -> int | None:
        """The leader answers name: none once that leader (this node) has resigned."""
        return None if self.state is State.RESIGNED else self.leader_id

    def describe_quorum(self, now: float) -> QuorumInfo | None:
        """What DescribeQuorum answers (only the leader can): None on any other node."""
        if self._leader is None:
            return None
        return self._leader.describe(
            self.epoch, self.high_watermark, self.log.end_offset, now
        )

    @property
    def applied_offset(self) -> int:
        """Every entry below this has been handed to the state machine."""
        return self._applied

    # -- requests --------------------------------------------------------------------

    def _handle_request(self, envelope: Envelope, now: float) -> None:
        message = envelope.message
        if isinstance(message, VoteRequest):
            self._reply(envelope, self._handle_vote(message, now))
        elif isinstance(message, BeginQuorumEpochRequest):
            self._reply(envelope, self._handle_begin_quorum_epoch(message, now))
        elif isinstance(message, EndQuorumEpochRequest):
            self._reply(envelope, self._handle_end_quorum_epoch(message, now))
        elif isinstance(message, FetchRequest):
            self._answer_fetch(envelope, now, park=True)
        elif isinstance(message, FetchSnapshotRequest):
            self._reply(envelope, self._handle_fetch_snapshot(message))

    def _hears_from_leader(self, now: float) -> bool:
        contact = self._last_leader_contact
        return (
            self.state is State.FOLLOWER
            and contact is not None
            and now - contact < self.config.fetch_timeout
        )

    def _handle_begin_quorum_epoch(
        self, request: BeginQuorumEpochRequest, now: float
    ) -> BeginQuorumEpochResponse:
        if request.leader_epoch < self.epoch:
            return BeginQuorumEpochResponse(
                Errors.FENCED_LEADER_EPOCH, self.epoch, self._known_leader
            )
        self._observe_epoch(request.leader_epoch, request.leader_id, now)
        if self.state is State.FOLLOWER and self.leader_id == request.leader_id:
            self._heard_from_leader(now)
        return BeginQuorumEpochResponse(Errors.NONE, self.epoch, self._known_leader)

    # -- responses -------------------------------------------------------------------

    def _handle_response(self, source: int, message: Message, now: float) -> None:
        if isinstance(message, VoteResponse):
            self._handle_vote_response(source, message, now)
        elif isinstance(message, BeginQuorumEpochResponse):
            self._observe_epoch(message.leader_epoch, message.leader_id, now)
            if self._leader is not None and message.error is Errors.NONE:
                self._leader.unannounced.discard(source)
        elif isinstance(message, EndQuorumEpochResponse):
            self._observe_epoch(message.leader_epoch, message.leader_id, now)
            if message.error is Errors.NONE:
                self._ended.add(source)
        elif isinstance(message, FetchResponse):
            self._handle_fetch_response(source, message, now)
        elif isinstance(message, FetchSnapshotResponse):
            self._handle_fetch_snapshot_response(source, message, now)

    # -- state changes ---------------------------------------------------------------

    def _observe_epoch(self, epoch: int, leader_id: int | None, now: float) -> None:
        """What every message tells: an epoch, maybe its leader. A higher epoch, or the
        leader of our epoch when we did not know it, moves us."""
        if epoch > self.epoch:
            if leader_id is not None and leader_id != self.node_id:
                self._become(
                    State.FOLLOWER,
                    now,
                    epoch=epoch,
                    leader_id=leader_id,
                    why="learns the leader",
                )
            else:
                self._become(
                    State.UNATTACHED, now, epoch=epoch, why="sees a higher epoch"
                )
        elif (
            epoch == self.epoch
            and leader_id not in (None, self.node_id)
            # Only news moves it: a Prospective that already knows this leader stood
            # because it lost touch with it.
            and self.leader_id is None
            and self.state in _LEADERLESS
        ):
            self._become(
                State.FOLLOWER, now, leader_id=leader_id, why="learns the leader"
            )

    def _observer_lost_leader(self, now: float) -> None:
        if self.state is State.FOLLOWER:
            self._become(State.UNATTACHED, now, why="the leader stopped answering")

    def _election_timed_out(self, now: float) -> None:
        if self.is_voter and self.state not in (State.LEADER, State.FOLLOWER):
            new, why = after_election_timeout(self.state, self.leader_id, self.node_id)
            self._become(new, now, leader_id=self.leader_id, why=why)

    def _election_backoff(self) -> float:
        """Binary exponential backoff after a lost election, randomized."""
        self._election_retries += 1
        ceiling = min(
            self.config.retry_backoff * 2**self._election_retries,
            self.config.election_backoff_max,
        )
        return self.rng.uniform(0, ceiling)

    def _random_election_timeout(self) -> float:
        return self.config.election_timeout * (1 + self.rng.random())

    def _heard_from_leader(self, now: float) -> None:
        self._last_leader_contact = now
        self._fetch_deadline = now + self.config.fetch_timeout

    def _enter_after_restart(self, durable: ElectionState, now: float) -> None:
        """Where a (re)started node resumes, from what it wrote down."""
        if durable.leader_id == self.node_id:
            # It led this epoch before the crash; it must not lead it again (its log may
            # lack what it acknowledged as appended but never flushed).
            self.state = State.RESIGNED
            self._election_deadline = now + self._random_election_timeout()
        elif durable.leader_id is not None:
            self.state = State.FOLLOWER
            self._fetch_deadline = now + self.config.fetch_timeout
        elif durable.voted_id is not None:
            self.state = State.VOTED
            self._election_deadline = now + self._random_election_timeout()
        else:
            self.state = State.UNATTACHED
            if self.is_voter:
                self._election_deadline = now + self._random_election_timeout()
        if len(self.voters) == 1 and self.is_voter and self.state is not State.LEADER:
            # A quorum of one elects itself at once.
            self._become(State.PROSPECTIVE, now, why="the only voter")

    def _become(
        self,
        new: State,
        now: float,
        *,
        why: str,
        epoch: int | None = None,
        leader_id: int | None = None,
        voted_id: int | None = None,
    ) -> None:
        old = self.state
        check_transition(old, new, self.is_voter)
        epoch = self.epoch if epoch is None else epoch
        if epoch < self.epoch:
            raise RaftStateError(f"node {self.node_id} cannot go back to epoch {epoch}")
        if epoch > self.epoch:
            self.leader_id = self.voted_id = None
        if old is State.LEADER:
            self._leave_leadership(now)
        self.epoch = epoch
        if new is State.LEADER:
            self._granting = frozenset(self._granted)
        self._granted.clear()
        self._rejected.clear()
        self._election_deadline = self._fetch_deadline = None
        self._download = None
        self._requests.forget()  # answers to the old state's requests no longer matter
        if new is State.CANDIDATE:
            self.epoch += 1
            self.leader_id, self.voted_id = None, self.node_id
            self._granted.add(self.node_id)
        elif new is State.VOTED:
            self.voted_id = voted_id
        elif new is State.LEADER:
            self.leader_id = self.node_id
        elif new is State.FOLLOWER and leader_id is not None:
            self.leader_id = leader_id
        elif new is State.UNATTACHED:
            self.leader_id = None  # by definition: it knows no leader of its epoch
        self._persist(ElectionState(self.epoch, self.leader_id, self.voted_id), why)
        self.state = new
        if new is State.PROSPECTIVE:
            self._granted.add(self.node_id)
            self._election_deadline = now + self._random_election_timeout()
        elif new is State.CANDIDATE or (new in _WAITING and self.is_voter):
            self._election_deadline = now + self._random_election_timeout()
        elif new is State.FOLLOWER:
            self._fetch_deadline = now + self.config.fetch_timeout
            self._last_leader_contact = None  # until the leader itself answers
        if new is State.RESIGNED:
            self._ended = set()
        leaderless = -1.0
        if new in (State.FOLLOWER, State.LEADER):
            if self._leaderless_since is not None:
                leaderless = now - self._leaderless_since
            self._leaderless_since = None
        elif self._leaderless_since is None:
            self._leaderless_since = now
        if self.tracer.enabled:
            leader = NO_LEADER if self.leader_id is None else self.leader_id
            self.tracer.emit(
                StateChanged(
                    self.node_id,
                    old.value,
                    new.value,
                    self.epoch,
                    leader,
                    why,
                    leaderless if new is State.LEADER else -1.0,
                ),
                ts=now,
            )
        if new is State.LEADER:
            self._begin_leadership(now)
        elif new is State.PROSPECTIVE and len(self._granted) > len(self.voters) // 2:
            self._become(State.CANDIDATE, now, why="a majority granted pre-votes")
        elif new is State.CANDIDATE and len(self._granted) > len(self.voters) // 2:
            self._become(State.LEADER, now, why="a majority voted for it")

    def _persist(self, state: ElectionState, why: str) -> None:
        """Write ``quorum-state`` (durably) if it changed: before any answer leaves."""
        if self.store.read() != state:
            self.store.write(state)

    def _leave_leadership(self, now: float) -> None:
        leader = self._leader
        assert leader is not None
        self._leader = None
        for request, _ in leader.parked.values():
            self._reply(
                request, FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, self.epoch, None)
            )

    def _advance_hw(self, offset: int, now: float) -> bool:
        if offset <= self.high_watermark:
            return False
        old, self.high_watermark = self.high_watermark, offset
        if self.tracer.enabled:
            self.tracer.emit(
                HighWatermarkAdvanced(self.node_id, self.epoch, old, offset), ts=now
            )
        return True

    # -- sending ---------------------------------------------------------------------

    def _send(self, destination: int, message: Message, now: float) -> None:
        if not self._requests.ready(destination):
            return
        correlation_id = self._requests.sent(destination, now)
        self._outbox.append(
            Envelope(self.node_id, destination, correlation_id, message)
        )

    def _reply(self, request: Envelope, message: Message) -> None:
        self._outbox.append(
            Envelope(self.node_id, request.source, request.correlation_id, message)
        )

    def _send_what_the_state_needs(self, now: float) -> None:
        state = self.state
        others = [v for v in self.voters if v != self.node_id]
        if state in (State.PROSPECTIVE, State.CANDIDATE):
            vote = self._vote_request(pre_vote=state is State.PROSPECTIVE)
            for voter in others:
                if voter not in self._granted and voter not in self._rejected:
                    self._send(voter, vote, now)
        elif state is State.LEADER:
            assert self._leader is not None
            for voter in self._leader.unannounced:
                self._send(
                    voter, BeginQuorumEpochRequest(self.epoch, self.node_id), now
                )
        elif state is State.RESIGNED:
            end = EndQuorumEpochRequest(self.epoch, self.node_id, self._successors)
            for voter in others:
                if voter not in self._ended:
                    self._send(voter, end, now)
        elif state is State.FOLLOWER and self.leader_id is not None:
            # A follower copying the leader's snapshot asks for it before any entry.
            request = self._fetch_snapshot_request() or self._fetch_request()
            self._send(self.leader_id, request, now)
        elif state is State.UNATTACHED and not self.is_voter and self._requests.idle:
            # An observer looks for the leader: any voter's answer names it.
            voter = self.rng.choice(self.voters)
            self._send(voter, self._fetch_request(), now)

    def _result(self, now: float) -> RaftResult:
        """What every call hands back: what to send now, and for the state machine the
        snapshot to load (if any, first) and the data entries that became committed."""
        self._send_what_the_state_needs(now)
        messages, self._outbox = tuple(self._outbox), []
        replies: list[RaftReply] = []
        if (
            self._pending_snapshot is not None
            and self.high_watermark >= self._pending_snapshot.id.end_offset
        ):
            snapshot, self._pending_snapshot = self._pending_snapshot, None
            self._applied = snapshot.id.end_offset
            replies.append(LoadSnapshot(snapshot))
        committed: list[Entry] = []
        end = min(self.high_watermark, self.log.end_offset)
        while self._applied < end and self._applied >= self.log.start_offset:
            # Units never straddle the high watermark (every log ends between units), so
            # the cut at ``end`` only guards what must never be handed out: uncommitted.
            batch = [
                e
                for e in self.log.read(self._applied, end - self._applied)
                if e.offset < end
            ]
            if not batch:
                break
            committed += (e for e in batch if not e.control)
            self._applied = batch[-1].offset + 1
        if committed:
            replies.append(Committed(tuple(committed)))
        return RaftResult(replies=tuple(replies), messages=messages)

    # -- the hooks: what the parts write --------------------------------------------

    @abc.abstractmethod
    def _vote_request(self, pre_vote: bool) -> VoteRequest:
        """Election: what a Prospective (``pre_vote``) or a Candidate asks the voters."""

    @abc.abstractmethod
    def _handle_vote(self, request: VoteRequest, now: float) -> VoteResponse:
        """Election: answer a (pre-)vote request; a granted vote is durable first."""

    @abc.abstractmethod
    def _handle_vote_response(
        self, source: int, response: VoteResponse, now: float
    ) -> None:
        """Election: count an answer to this node's (pre-)vote request."""

    @abc.abstractmethod
    def _begin_leadership(self, now: float) -> None:
        """Election: what a node does the moment it becomes the leader."""

    @abc.abstractmethod
    def _append_as_leader(self, entries: Sequence[Entry], now: float) -> None:
        """LeaderReplication: append to the leader's log (and commit what that allows)."""

    @abc.abstractmethod
    def _answer_fetch(self, envelope: Envelope, now: float, *, park: bool) -> None:
        """LeaderReplication: answer a Fetch (``park``: it just arrived, and may wait)."""

    @abc.abstractmethod
    def _fetch_request(self) -> FetchRequest:
        """FollowerFetch: the Fetch a follower (or an observer) sends next."""

    @abc.abstractmethod
    def _handle_fetch_response(
        self, source: int, response: FetchResponse, now: float
    ) -> None:
        """FollowerFetch: what a follower does with the leader's answer to its fetch."""

    @abc.abstractmethod
    def _resign(self, why: str, now: float) -> None:
        """Resignation: the leader steps down for ``why``, naming its successors."""

    @abc.abstractmethod
    def _handle_end_quorum_epoch(
        self, request: EndQuorumEpochRequest, now: float
    ) -> EndQuorumEpochResponse:
        """Resignation: what a voter does when its leader says it has stepped down."""

    @abc.abstractmethod
    def _handle_fetch_snapshot(
        self, request: FetchSnapshotRequest
    ) -> FetchSnapshotResponse:
        """SnapshotTransfer: the leader's answer to a FetchSnapshot, one chunk."""

    @abc.abstractmethod
    def _fetch_snapshot_request(self) -> FetchSnapshotRequest | None:
        """SnapshotTransfer: the FetchSnapshot a follower copying a snapshot sends next."""

    @abc.abstractmethod
    def _handle_fetch_snapshot_response(
        self, source: int, response: FetchSnapshotResponse, now: float
    ) -> None:
        """SnapshotTransfer: add the chunk to the copy; install the snapshot once whole."""
