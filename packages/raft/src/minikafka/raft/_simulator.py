"""Whole quorums in one process, in virtual time, under faults: Raft's invariants
checked after every step (Kafka's ``RaftEventSimulationTest``, and Jack Vanlightly's
TLA+ invariants of KRaft, as properties of a run).

A :class:`Simulation` runs voters and observers as :class:`RaftNode` cores over a
simulated network that drops, duplicates and delays messages (random delays reorder
them), and a *fault schedule*: crashes (a node loses everything it had not flushed, then
restarts from its disk), restarts, partitions (one group of nodes cut off from the rest)
and heals. A client appends a value to whoever leads, every ``append_interval``; each
node applies what its node commits to a state machine, the list of values, and snapshots
it now and then.

After every event the simulation checks:

1. **Election safety**: at most one leader per epoch, ever.
2. **Committed means durable**: an entry below some node's high watermark is the same
   entry, at the same offset, in every log that holds that offset below its own high
   watermark, and no node ever removes one (a truncation below a high watermark).
3. **The high watermark never goes back** on a node, for as long as it runs.
4. **State machine safety**: every node applies the same values in the same order.

Then the faults stop, the network heals and crashed nodes restart, and the simulation
checks **liveness**: within ``settle`` virtual seconds every entry the leader has is
committed and applied by every voter and observer.

Everything random comes from the seed: one failing seed fails the same way again. A
failing schedule is shrunk (:func:`shrink`): faults are removed one at a time for as
long as the run still fails, leaving a schedule with no fault to spare.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from minikafka.trace import NullTracer, Tracer

from ._config import RaftConfig
from ._log import Entry, MemoryLog, RaftLog
from ._messages import Envelope, VoteResponse
from ._node import NotLeaderError, RaftNode
from ._result import Committed, LoadSnapshot, RaftResult
from ._scenarios import Fault, Scenario, Trigger
from ._states import RaftStateError, State
from ._store import MemoryStateStore, QuorumStateStore


class CrashableLog(RaftLog, Protocol):
    def crash(self) -> CrashableLog:
        """The log a restarted node finds: what was flushed, nothing after."""
        ...


class NodeFactory(Protocol):
    def __call__(
        self,
        node_id: int,
        voters: Sequence[int],
        log: CrashableLog,
        store: QuorumStateStore,
        now: float,
        *,
        config: RaftConfig,
        rng: random.Random,
        tracer: Tracer,
    ) -> RaftNode: ...


class Violation(AssertionError):
    """An invariant failed; ``at`` is the virtual time."""

    def __init__(self, message: str, at: float) -> None:
        super().__init__(f"t={at:.3f}s: {message}")
        self.at = at


@attrs.frozen
class Result:
    seed: int
    scenario: Scenario
    violation: Violation | None
    events: int
    commits: int  # entries committed by the end
    elections: int  # epochs that had a leader
    wall_seconds: float

    @property
    def ok(self) -> bool:
        return self.violation is None


@attrs.define
class _SimNode:
    """A node's disk (log and quorum-state), which survives crashes, and its process."""

    node_id: int
    log: CrashableLog
    store: MemoryStateStore
    raft: RaftNode | None = None
    life: int = 0
    timer_at: float | None = None
    hw_seen: int = 0  # the high watermark as last checked, in this life
    checked: int = 0  # entries below this were compared with the committed ones
    applied: list[tuple[int, bytes]] = attrs.Factory(list)  # the state machine
    since_snapshot: int = 0


class Simulation:
    """One seeded run of a scenario. ``node_factory`` builds each node (tests pass a
    broken one to show the invariants catch it); ``tracer_for(node_id)`` traces it;
    ``log_for(node_id)`` is its disk (a :class:`MemoryLog` unless given)."""

    def __init__(
        self,
        scenario: Scenario,
        seed: int,
        *,
        config: RaftConfig | None = None,
        node_factory: NodeFactory = RaftNode,
        tracer_for: Callable[[int], Tracer] | None = None,
        log_for: Callable[[int], CrashableLog] | None = None,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.config = config or RaftConfig()
        self.node_factory = node_factory
        self.tracer_for = tracer_for or (lambda _: NullTracer())
        self.now = 0.0
        self.network = random.Random(f"network-{seed}")
        log_for = log_for or (lambda _: MemoryLog())
        self.nodes = {
            n: _SimNode(n, log_for(n), MemoryStateStore()) for n in scenario.node_ids
        }
        self.isolated: frozenset[int] = frozenset()
        self.healed = False
        self.leaders: dict[int, int] = {}  # epoch -> the one leader it had
        self.committed: dict[int, Entry] = {}  # offset -> the entry committed there
        self.commit_times: dict[
            int, float
        ] = {}  # offset -> when a node first had it committed
        self.appended = 0
        self.events = 0
        self.armed: dict[int, Fault] = {}  # node -> the crash point it will crash at
        self._queue: list[tuple[float, int, str, object]] = []
        self._seq = itertools.count()

    # -- the run ---------------------------------------------------------------------

    def run(self) -> Result:
        started = time.perf_counter()
        violation = None
        try:
            self._run()
        except Violation as v:
            violation = v
        except RaftStateError as e:
            violation = Violation(f"a node broke a rule: {e}", self.now)
        return Result(
            self.seed,
            self.scenario,
            violation,
            self.events,
            len(self.committed),
            len(self.leaders),
            time.perf_counter() - started,
        )

    def _run(self) -> None:
        scenario = self.scenario
        for node in self.nodes.values():
            self._start(node)
        for fault in scenario.faults:
            self._push(fault.at, "fault", fault)
        self._push(scenario.append_interval, "append", None)
        if scenario.heals:
            self._push(scenario.duration, "heal_all", None)
        end = scenario.duration + scenario.settle
        while self._queue:
            at, _, kind, payload = heapq.heappop(self._queue)
            if at > end:
                break
            self.now = at
            self.events += 1
            self._step(kind, payload)
            self._check()
        self._check_liveness()

    def _push(self, at: float, kind: str, payload: object) -> None:
        heapq.heappush(self._queue, (at, next(self._seq), kind, payload))

    def _step(self, kind: str, payload: object) -> None:
        if kind == "deliver":
            assert isinstance(payload, Envelope)
            node = self.nodes[payload.destination]
            if node.raft is not None:
                self._carry_out(node, node.raft.receive(payload, self.now))
            elif payload.is_request:
                # Nothing listens there: the sender's connection is refused.
                self._push(self.now + self.scenario.max_delay, "refused", payload)
        elif kind == "refused":
            assert isinstance(payload, Envelope)
            sender = self.nodes[payload.source]
            if sender.raft is not None:
                result = sender.raft.handle_disconnect(payload.destination, self.now)
                self._carry_out(sender, result)
        elif kind == "timer":
            assert isinstance(payload, tuple)
            node_id, life = payload
            node = self.nodes[node_id]
            due = node.timer_at is not None and node.timer_at <= self.now
            if node.raft is not None and node.life == life and due:
                node.timer_at = None
                self._carry_out(node, node.raft.on_timer(self.now))
        elif kind == "fault":
            assert isinstance(payload, Fault)
            self._fault(payload)
        elif kind == "append":
            self._client_append()
        elif kind == "heal_all":
            self.healed = True
            self.isolated = frozenset()
            for node in self.nodes.values():
                if node.raft is None:
                    self._start(node)

    def _fault(self, fault: Fault) -> None:
        if not fault.nodes and fault.kind in ("crash", "partition", "crash-after"):
            # Aimed at whoever leads now (nothing happens if no one does).
            leader = self.leader()
            if leader is None:
                return
            fault = attrs.evolve(fault, nodes=(leader.node_id,))
        if fault.kind == "crash":
            self._crash(self.nodes[fault.nodes[0]])
        elif fault.kind == "crash-after":
            self.armed[fault.nodes[0]] = fault
        elif fault.kind == "restart":
            # No nodes: every crashed node.
            for node_id in fault.nodes or tuple(self.nodes):
                node = self.nodes[node_id]
                if node.raft is None:
                    self._start(node)
        elif fault.kind == "partition":
            self.isolated = frozenset(fault.nodes)
        else:
            self.isolated = frozenset()

    def leader(self) -> RaftNode | None:
        """The leader of the highest epoch among the running nodes, if any."""
        leaders = [
            n.raft
            for n in self.nodes.values()
            if n.raft and n.raft.state is State.LEADER
        ]
        return max(leaders, key=lambda r: r.epoch) if leaders else None

    def _crash(self, node: _SimNode) -> None:
        if node.raft is not None:
            node.raft = None
            node.log = node.log.crash()  # what was not flushed is gone
            node.timer_at = None

    def _crash_point(self, node: _SimNode, trigger: Trigger) -> bool:
        """Crash ``node`` now if it is armed for ``trigger``; True if it crashed."""
        fault = self.armed.get(node.node_id)
        if fault is None or fault.trigger != trigger or self.healed:
            return False
        del self.armed[node.node_id]
        self._crash(node)
        self._push(
            self.now + fault.down,
            "fault",
            Fault(self.now + fault.down, "restart", fault.nodes),
        )
        return True

    def _start(self, node: _SimNode) -> None:
        node.life += 1
        node.hw_seen = node.checked = 0
        node.applied = []
        node.since_snapshot = 0
        rng = random.Random(f"node-{self.seed}-{node.node_id}-{node.life}")
        node.raft = self.node_factory(
            node.node_id,
            self.scenario.voter_ids,
            node.log,
            node.store,
            self.now,
            config=self.config,
            rng=rng,
            tracer=self.tracer_for(node.node_id),
        )
        self._carry_out(node, RaftResult())

    def _client_append(self) -> None:
        scenario = self.scenario
        if self.now < scenario.duration + scenario.settle / 2:
            leader = self.leader()
            if leader is not None:
                self.appended += 1
                try:
                    result = leader.append([b"v%d" % self.appended], self.now)
                except NotLeaderError:
                    pass
                else:
                    node = self.nodes[leader.node_id]
                    self._carry_out(node, result)
                    self._crash_point(node, "append")
            self._push(self.now + scenario.append_interval, "append", None)

    def _carry_out(self, node: _SimNode, result: RaftResult) -> None:
        """What a shell does with a node's result: send, apply, and set the timer."""
        assert node.raft is not None
        hw = node.hw_seen
        for envelope in result.messages:
            self._send(envelope)
        granted = any(
            isinstance(e.message, VoteResponse)
            and e.message.vote_granted
            and not e.message.pre_vote
            for e in result.messages
        )
        if granted and self._crash_point(node, "vote"):
            return
        leading = node.raft.state is State.LEADER
        if (
            leading
            and node.raft.high_watermark > hw
            and self._crash_point(node, "commit")
        ):
            return
        for reply in result.replies:  # in order: a snapshot first, then entries
            if isinstance(reply, LoadSnapshot):
                state = _decode_state(reply.snapshot.payload)
                node.applied = []  # the snapshot replaces the state machine
                self._check_applied(node, state)
                node.applied = state
            else:
                self._apply(node, reply)
        deadline = node.raft.next_deadline()
        if deadline is not None and (
            node.timer_at is None
            or deadline < node.timer_at
            or node.timer_at < self.now
        ):
            node.timer_at = max(deadline, self.now)
            self._push(node.timer_at, "timer", (node.node_id, node.life))

    def _apply(self, node: _SimNode, committed: Committed) -> None:
        """The state machine applies committed entries, and snapshots now and then."""
        assert node.raft is not None
        fresh = [(e.offset, e.data) for e in committed.entries]
        self._check_applied(node, fresh, entries=committed.entries)
        node.applied += fresh
        node.since_snapshot += len(fresh)
        if node.since_snapshot >= self.scenario.snapshot_every:
            node.since_snapshot = 0
            node.raft.create_snapshot(
                node.raft.applied_offset, _encode_state(node.applied)
            )

    def _send(self, envelope: Envelope) -> None:
        scenario, network = self.scenario, self.network
        a, b = envelope.source, envelope.destination
        if (a in self.isolated) != (b in self.isolated):
            return  # partitioned
        lossy = not self.healed
        if lossy and network.random() < scenario.drop:
            return
        copies = 2 if lossy and network.random() < scenario.duplicate else 1
        for _ in range(copies):
            delay = network.uniform(0.0001, scenario.max_delay)
            self._push(self.now + delay, "deliver", envelope)

    def first_commit_after(self, at: float) -> float:
        """When the first entry committed after virtual time ``at`` was (failover
        time)."""
        return min(t for t in self.commit_times.values() if t > at)

    # -- the invariants ---------------------------------------------------------------

    def _check(self) -> None:
        for node in self.nodes.values():
            raft = node.raft
            if raft is None:
                continue
            if raft.state is State.LEADER:
                other = self.leaders.setdefault(raft.epoch, raft.node_id)
                if other != raft.node_id:
                    raise Violation(
                        f"two leaders in epoch {raft.epoch}: {other} and "
                        f"{raft.node_id}",
                        self.now,
                    )
            if raft.high_watermark < node.hw_seen:
                raise Violation(
                    f"node {node.node_id}'s high watermark went back from "
                    f"{node.hw_seen} "
                    f"to {raft.high_watermark}",
                    self.now,
                )
            node.hw_seen = raft.high_watermark
            log = node.log
            if log.end_offset < node.checked and log.end_offset < raft.high_watermark:
                raise Violation(
                    f"node {node.node_id} removed committed entries: its log ends at "
                    f"{log.end_offset}, below its high watermark {raft.high_watermark}",
                    self.now,
                )
            high = min(raft.high_watermark, log.end_offset)
            low = max(node.checked, log.start_offset)
            if low < high:
                for entry in log.read(low, high - low):
                    self._check_committed(node.node_id, entry)
            node.checked = max(node.checked, high)

    def _check_committed(self, node_id: int, entry: Entry) -> None:
        known = self.committed.setdefault(entry.offset, entry)
        self.commit_times.setdefault(entry.offset, self.now)
        if known != entry:
            raise Violation(
                f"offset {entry.offset} committed as epoch {known.epoch} "
                f"{known.data!r}, but "
                f"node {node_id} has epoch {entry.epoch} {entry.data!r} there below "
                "its "
                f"high watermark",
                self.now,
            )

    def _check_applied(
        self,
        node: _SimNode,
        applied: Sequence[tuple[int, bytes]],
        entries: Sequence[Entry] = (),
    ) -> None:
        for entry in entries:
            self._check_committed(node.node_id, entry)
        for offset, data in applied:
            known = self.committed.get(offset)
            if known is not None and known.data != data:
                raise Violation(
                    f"node {node.node_id} applied {data!r} at {offset}, committed "
                    f"{known.data!r}",
                    self.now,
                )
        offsets = [o for o, _ in node.applied] + [o for o, _ in applied]
        if any(a >= b for a, b in itertools.pairwise(offsets)):
            raise Violation(
                f"node {node.node_id} applied entries out of order", self.now
            )

    def _check_liveness(self) -> None:
        live = [n for n in self.nodes.values() if n.raft is not None]
        leaders = [n.raft for n in live if n.raft and n.raft.state is State.LEADER]
        if not leaders:
            raise Violation(
                f"no leader {self.scenario.settle:g}s after the faults ended", self.now
            )
        leader = max(leaders, key=lambda r: r.epoch)
        end = leader.log.end_offset
        if leader.high_watermark < end:
            raise Violation(
                f"leader {leader.node_id} has committed {leader.high_watermark} of "
                f"{end} "
                f"entries {self.scenario.settle:g}s after the faults ended",
                self.now,
            )
        for node in live:
            assert node.raft is not None
            if node.raft.applied_offset < end:
                raise Violation(
                    f"node {node.node_id} ({node.raft.state.value}) applied "
                    f"{node.raft.applied_offset} of {end} committed entries "
                    f"{self.scenario.settle:g}s after the faults ended",
                    self.now,
                )


def _encode_state(applied: Sequence[tuple[int, bytes]]) -> bytes:
    return json.dumps([[o, d.decode()] for o, d in applied]).encode()


def _decode_state(payload: bytes) -> list[tuple[int, bytes]]:
    return [(int(o), str(d).encode()) for o, d in json.loads(payload)]


def shrink(
    scenario: Scenario,
    seed: int,
    fails: Callable[[Scenario], bool] | None = None,
) -> Scenario:
    """The scenario with as few faults as still make the run fail: each fault is dropped
    in turn and stays dropped if the run (same seed) still fails."""
    if fails is None:

        def fails(candidate: Scenario) -> bool:
            return not Simulation(candidate, seed).run().ok

    faults = list(scenario.faults)
    changed = True
    while changed:
        changed = False
        for i in range(len(faults)):
            candidate = attrs.evolve(
                scenario, faults=tuple(faults[:i] + faults[i + 1 :])
            )
            if fails(candidate):
                faults = list(candidate.faults)
                changed = True
                break
    return attrs.evolve(scenario, faults=tuple(faults))
