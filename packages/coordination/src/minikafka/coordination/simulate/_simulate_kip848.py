"""A consumer-protocol group on virtual time: the real GroupCoordinator's
ConsumerGroupHeartbeat and the client's ``ConsumerProtocolMember`` (KIP-848).

``python -m minikafka.coordination simulate --protocol consumer`` runs the same script as
the classic simulation (``_simulate``) in the same world: a clock, a network where
every message takes ``network_latency_ms`` each way, ``__consumer_offsets`` where every
append commits at once, and the events ``EVENT_GAP_MS`` after the group settled. What
differs is the protocol: there is no JoinGroup barrier and no leader; the coordinator
computes each group epoch's target assignment itself, and every member
(``_simulate_kip848_member``) reconciles towards its own target on its own heartbeats.

The group has settled when it is Stable (every member at the target assignment epoch,
owning its target) with exactly the live members in it.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import random
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.trace import Tracer

from ..group._consumer_group import ConsumerGroup, ConsumerGroupState
from ..group._coordinator import GroupCoordinator
from ..group._results import GroupResult
from ._simulate_kip848_member import MemberCall, SimulatedMember
from ._simulate_values import (
    EVENT_GAP_MS,
    EntryKind,
    EventAction,
    GenerationAssignment,
    GroupEvent,
    OwnershipChange,
    RebalanceSummary,
    SimulationConfig,
    SimulationError,
    SimulationResult,
    TimelineEntry,
    summarize_rebalance,
)

__all__ = ["ConsumerProtocolSimulator"]

_MAX_STEPS = 1_000_000


@attrs.define
class _OpenRebalance:
    """A rebalance under way: what caused it, when, and the group epochs it went through."""

    cause: str
    trigger: float
    epoch_before: int
    start: float | None = None
    epochs: list[int] = attrs.field(factory=list)


@attrs.define(eq=False)
class ConsumerProtocolSimulator:
    config: SimulationConfig
    tracer: Tracer
    now: float = 0.0  # seconds, the coordinator's unit
    coordinator: GroupCoordinator = attrs.field(init=False)
    _processing_rng: random.Random = attrs.field(init=False)
    _members: dict[int, SimulatedMember] = attrs.field(init=False, factory=dict)
    _timers: list[tuple[float, int, Callable[[], None]]] = attrs.field(
        init=False, factory=list
    )
    _seq: itertools.count[int] = attrs.field(init=False, factory=itertools.count)
    _in_flight: dict[int, SimulatedMember] = attrs.field(init=False, factory=dict)
    _events: list[GroupEvent] = attrs.field(init=False, factory=list)
    _event_scheduled: bool = False
    _open: _OpenRebalance | None = None
    _entries: list[TimelineEntry] = attrs.field(init=False, factory=list)
    _ownership: list[OwnershipChange] = attrs.field(init=False, factory=list)
    _targets: list[GenerationAssignment] = attrs.field(init=False, factory=list)
    _rebalances: list[RebalanceSummary] = attrs.field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        c = self.config
        self.coordinator = GroupCoordinator(
            c.coordinator_config, random.Random(c.seed), tracer=self.tracer
        )
        partition = self.coordinator.manager.partition_for(c.group_id)
        self.coordinator.begin_loading(partition)
        self.coordinator.load_partition(partition, [], self.now)
        # the same draws as the classic simulation: the same members, as slow
        self._processing_rng = random.Random(f"processing-{c.seed}")
        self._events = list(reversed(c.events))

    # --- the loop ----------------------------------------------------------------------

    def run(self) -> SimulationResult:
        self._open = _OpenRebalance("initial join", 0.0, 0)
        for number in range(1, self.config.members + 1):
            self._start(number)
        for _ in range(_MAX_STEPS):
            self._track_rebalance()
            if self._settled():
                self._close_rebalance()
                if not self._event_scheduled:
                    if not self._events:
                        return self._result()
                    self._event_scheduled = True
                    event = functools.partial(self._apply, self._events.pop())
                    self.at(self.now + EVENT_GAP_MS / 1000, event)
            self._step()
        raise SimulationError(f"the group did not settle within {_MAX_STEPS} steps")

    def _step(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline is not None and (
            not self._timers or deadline <= self._timers[0][0]
        ):
            self.now = max(self.now, deadline)
            before = self._member_ids()
            self._deliver(self.coordinator.on_timer(self.now))
            self._expired(before - self._member_ids())
            return
        if not self._timers:
            raise SimulationError(
                "nothing left to happen, but the group has not settled"
            )
        self.now, _, action = heapq.heappop(self._timers)
        action()

    def at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (when, next(self._seq), action))

    def send(self, member: SimulatedMember, call: MemberCall) -> None:
        """A heartbeat travels to the coordinator, which answers it on arrival."""
        request_id = next(self._seq)
        self._in_flight[request_id] = member

        def arrive() -> None:
            member.last_heard = self.now
            self._deliver(call(self.coordinator, request_id, self.now))

        self.at(self.now + self.config.network_latency_ms / 1000, arrive)

    def _deliver(self, result: GroupResult) -> None:
        """Answers travel back; every append to ``__consumer_offsets`` commits at once."""
        self._note_target()
        for reply in result.replies:
            member = self._in_flight.pop(reply.request_id)
            when = self.now + self.config.network_latency_ms / 1000
            self.at(when, functools.partial(member.handle, reply.response))
        for write in result.records:
            self._deliver(
                self.coordinator.complete_write(
                    write.write_id, ErrorCode.none, self.now
                )
            )

    def _expired(self, gone: set[str]) -> None:
        for member in self._members.values():
            if member.member_id in gone:
                silent = round((self.now - member.last_heard) * 1000)
                text = f"coordinator: session expired, no heartbeat for {silent} ms"
                self.record(member, EntryKind.SESSION_EXPIRED, text)

    # --- the script --------------------------------------------------------------------

    def _apply(self, event: GroupEvent) -> None:
        self._event_scheduled = False
        if event.action is EventAction.SLOW:
            self._members[event.member].processing_ms = self.config.slow_processing_ms
            return
        self._open = _OpenRebalance(str(event), self.now, self._group_epoch())
        if event.action is EventAction.JOIN:
            return self._start(event.member)
        member = self._members[event.member]
        if event.action is EventAction.LEAVE:
            return member.leave()
        member.crash_after_heartbeat = True

    def _start(self, number: int) -> None:
        low, high = self.config.processing_ms
        processing_ms = self._processing_rng.randint(low, high)
        member = SimulatedMember(self, self.config, number, processing_ms)
        self._members[number] = member
        member.start()

    # --- the group as the coordinator sees it ------------------------------------------

    def _group(self) -> ConsumerGroup | None:
        return self.coordinator.consumer_group(self.config.group_id)

    def _group_epoch(self) -> int:
        group = self._group()
        return 0 if group is None else group.group_epoch

    def _member_ids(self) -> set[str]:
        group = self._group()
        return set() if group is None else set(group.members)

    def _settled(self) -> bool:
        """Stable, with exactly the live members in it, each owning its target."""
        group = self._group()
        live = [m for m in self._members.values() if not m.stopped]
        if group is None:
            return not live
        if group.state is not ConsumerGroupState.STABLE and live:
            return False
        return set(group.members) == {m.member_id for m in live} and all(
            m.settled and m.owned == group.target.get(m.member_id, frozenset())
            for m in live
        )

    def _note_target(self) -> None:
        """A new target assignment epoch: the coordinator's assignment, as a generation."""
        group = self._group()
        last = self._targets[-1].generation if self._targets else 0
        if group is None or group.assignment_epoch <= last:
            return
        names = {m.member_id: m.client_id for m in self._members.values()}
        assignment = tuple(
            sorted(
                (names.get(member_id, member_id), tuple(sorted(partitions)))
                for member_id, partitions in group.target.items()
            )
        )
        self._targets.append(
            GenerationAssignment(
                group.assignment_epoch,
                self.time_ms,
                "the coordinator",
                self.config.remote_assignor,
                assignment,
            )
        )

    def _track_rebalance(self) -> None:
        epoch = self._group_epoch()
        if self._open is None:
            if self._settled():
                return
            self._open = _OpenRebalance("unscripted", self.now, epoch)
        r = self._open
        if r.start is None and epoch > r.epoch_before:
            r.start = self.now
        if epoch > max(r.epochs, default=r.epoch_before):
            r.epochs.append(epoch)

    def _close_rebalance(self) -> None:
        r, self._open = self._open, None
        if r is None:
            return
        trigger = round(r.trigger * 1000)
        start = trigger if r.start is None else round(r.start * 1000)
        live = sorted(n for n, m in self._members.items() if not m.stopped)
        c = self.config
        self._rebalances.append(
            summarize_rebalance(
                r.cause,
                tuple(r.epochs),
                (trigger, start, self.time_ms),
                tuple(self._members[n].client_id for n in live),
                [TopicPartition(c.topic, p) for p in range(c.partitions)],
                self._ownership,
            )
        )

    # --- the record --------------------------------------------------------------------

    @property
    def time_ms(self) -> int:
        return round(self.now * 1000)

    def record(
        self,
        member: SimulatedMember,
        kind: EntryKind,
        text: str,
        partitions: tuple[TopicPartition, ...] = (),
    ) -> None:
        group = self._group()
        state = ConsumerGroupState.EMPTY if group is None else group.state
        entry = TimelineEntry(
            self.time_ms, member.client_id, kind, text, state, self._group_epoch(),
            partitions,
        )  # fmt: skip
        self._entries.append(entry)
        if kind is EntryKind.CRASHED and self._open is not None:
            self._open.trigger = self.now

    def owned_changed(self, member: SimulatedMember) -> None:
        self._ownership.append(
            OwnershipChange(self.time_ms, member.client_id, member.owned)
        )

    def _result(self) -> SimulationResult:
        return SimulationResult(
            self.config,
            tuple(self._entries),
            tuple(self._targets),
            tuple(self._rebalances),
            tuple(self._ownership),
        )
