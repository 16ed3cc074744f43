"""A consumer group on virtual time: the real GroupCoordinator and simulated consumers.

``python -m minikafka.coordination simulate`` (seed 002 §§1-3 "状态机" and "rebalance
场景", seed 000 "消费组重平衡" and "重平衡协议", KIP-429). The coordinator is the sans-IO
core the broker runs; each consumer (``_simulate_consumer``) is the member core the
client's consumer runs, ``ConsumerCoordinator``. This module is their world: a clock, a network
where every message takes ``network_latency_ms`` each way, the group's
``__consumer_offsets`` partition (every append commits at once), the script of events
(``join:4``, ``leave:2``, ``crash:1``, each ``EVENT_GAP_MS`` after the group settled)
and the timeline it all leaves.

Everything is a timer, so the output depends only on the configuration and the seed
(the coordinator draws member ids from the seeded ``random.Random`` it is given).
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
from minikafka.trace import Tracer, get_tracer

from ..assignors._consumer_protocol import decode_assignment
from ..group._coordinator import GroupCoordinator
from ..group._group_state import GroupState
from ..group._results import GroupResult
from ._simulate_consumer import Call, SimulatedConsumer
from ._simulate_kip848 import ConsumerProtocolSimulator
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

__all__ = ["simulate"]

_MAX_STEPS = 1_000_000


def simulate(
    config: SimulationConfig, tracer: Tracer | None = None
) -> SimulationResult:
    """Run ``config``'s group from its first JoinGroup (or, with the consumer protocol,
    its first ConsumerGroupHeartbeat) until the last event has settled.

    The coordinator's events go to ``tracer``; the simulator is a shell, so its default is
    the process's tracer (what ``python -m minikafka.trace`` and the labs configure)."""
    config.check()
    tracer = get_tracer() if tracer is None else tracer
    if config.protocol == "consumer":
        return ConsumerProtocolSimulator(config, tracer).run()
    return _Simulator(config, tracer).run()


@attrs.define
class _OpenRebalance:
    """A rebalance under way: what caused it, when, and the generations it went through."""

    cause: str
    trigger: float
    generation_before: int
    start: float | None = None
    generations: list[int] = attrs.field(factory=list)


@attrs.define(eq=False)
class _Simulator:
    config: SimulationConfig
    tracer: Tracer
    now: float = 0.0  # seconds, the coordinator's unit
    coordinator: GroupCoordinator = attrs.field(init=False)
    _processing_rng: random.Random = attrs.field(init=False)
    _consumers: dict[int, SimulatedConsumer] = attrs.field(init=False, factory=dict)
    _timers: list[tuple[float, int, Callable[[], None]]] = attrs.field(
        init=False, factory=list
    )
    _seq: itertools.count[int] = attrs.field(init=False, factory=itertools.count)
    _in_flight: dict[int, SimulatedConsumer] = attrs.field(init=False, factory=dict)
    _events: list[GroupEvent] = attrs.field(init=False, factory=list)
    _event_scheduled: bool = False
    _open: _OpenRebalance | None = None
    _entries: list[TimelineEntry] = attrs.field(init=False, factory=list)
    _ownership: list[OwnershipChange] = attrs.field(init=False, factory=list)
    _generations: list[GenerationAssignment] = attrs.field(init=False, factory=list)
    _rebalances: list[RebalanceSummary] = attrs.field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        c = self.config
        self.coordinator = GroupCoordinator(
            c.group_config, random.Random(c.seed), tracer=self.tracer
        )
        # The coordinator serves a group only from the __consumer_offsets partition it
        # leads and has replayed: this one leads the group's partition, empty so far.
        partition = self.coordinator.manager.partition_for(c.group_id)
        self.coordinator.begin_loading(partition)
        self.coordinator.load_partition(partition, [], self.now)
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
        """Move virtual time to the next timer: the coordinator's or a consumer's."""
        deadline = self.coordinator.next_deadline()
        if deadline is not None and (
            not self._timers or deadline <= self._timers[0][0]
        ):
            self.now = max(self.now, deadline)
            self._fire_coordinator_timers()
            return
        if not self._timers:
            raise SimulationError(
                "nothing left to happen, but the group has not settled"
            )
        self.now, _, action = heapq.heappop(self._timers)
        action()

    def at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (when, next(self._seq), action))

    def _after_latency(self, action: Callable[[], None]) -> None:
        self.at(self.now + self.config.network_latency_ms / 1000, action)

    def send(self, consumer: SimulatedConsumer, call: Call) -> None:
        """A request travels to the coordinator, which takes it on arrival."""
        request_id = next(self._seq)
        self._in_flight[request_id] = consumer

        def arrive() -> None:
            consumer.last_heard = self.now
            self._deliver(call(self.coordinator, request_id, self.now))

        self._after_latency(arrive)

    def _deliver(self, result: GroupResult) -> None:
        """The one way out of the coordinator: each answer travels back to its consumer.

        The coordinator answers some requests only once what it decided is stored in
        ``__consumer_offsets`` (the leader's SyncGroup waits for the group record); here
        every append commits at once, and what its completion answers goes out here too.
        """
        for reply in result.replies:
            consumer = self._in_flight.pop(reply.request_id)
            self._after_latency(functools.partial(consumer.handle, reply.response))
        for write in result.records:
            self._deliver(
                self.coordinator.complete_write(
                    write.write_id, ErrorCode.none, self.now
                )
            )

    def _fire_coordinator_timers(self) -> None:
        _, _, before = self._group_state()
        self._deliver(self.coordinator.on_timer(self.now))
        _, _, after = self._group_state()
        for consumer in self._consumers.values():
            if consumer.member_id in before - after:
                silent = round((self.now - consumer.last_heard) * 1000)
                text = f"coordinator: session expired, no heartbeat for {silent} ms"
                self.record(consumer, EntryKind.SESSION_EXPIRED, text)

    # --- the script --------------------------------------------------------------------

    def _apply(self, event: GroupEvent) -> None:
        self._event_scheduled = False
        if event.action is EventAction.SLOW:
            # No rebalance of its own: it shows in how the next one goes.
            self._consumers[event.member].processing_ms = self.config.slow_processing_ms
            return
        self._open = _OpenRebalance(str(event), self.now, self._group_state()[1])
        if event.action is EventAction.JOIN:
            return self._start(event.member)
        consumer = self._consumers[event.member]
        if event.action is EventAction.LEAVE:
            return consumer.leave()
        # The worst moment to crash: right after a heartbeat, so the coordinator needs
        # the whole session.timeout.ms to notice (seed 002 §3.2).
        consumer.crash_after_heartbeat = True

    def _start(self, number: int) -> None:
        low, high = self.config.processing_ms
        processing_ms = self._processing_rng.randint(low, high)
        consumer = SimulatedConsumer(self, self.config, number, processing_ms)
        self._consumers[number] = consumer
        consumer.start()

    # --- the group as the coordinator sees it ------------------------------------------

    def _group_state(self) -> tuple[GroupState, int, set[str]]:
        group = self.coordinator.group(self.config.group_id)
        if group is None:
            return GroupState.EMPTY, 0, set()
        return group.state, group.generation_id, set(group.members)

    def _settled(self) -> bool:
        """Stable with every live consumer synced in the current generation, and nobody
        else (a crashed member stays in the group until its session expires)."""
        state, generation, members = self._group_state()
        live = [c for c in self._consumers.values() if not c.stopped]
        if not live:
            return state is GroupState.EMPTY and not members
        return (
            state is GroupState.STABLE
            and members == {c.member_id for c in live}
            and all(
                c.synced
                and c.generation == generation
                and not (c.rejoin_needed or c.crash_after_heartbeat)
                for c in live
            )
        )

    def _track_rebalance(self) -> None:
        state, generation, _ = self._group_state()
        if self._open is None:
            if self._settled():
                return
            # not expected
            self._open = _OpenRebalance("unscripted", self.now, generation)
        r = self._open
        rebalancing = state in (
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
        )
        if r.start is None and (rebalancing or generation > r.generation_before):
            r.start = self.now
        if generation > max(r.generations, default=r.generation_before):
            r.generations.append(generation)

    def _close_rebalance(self) -> None:
        r, self._open = self._open, None
        if r is None:
            return
        trigger = round(r.trigger * 1000)
        times = (
            trigger,
            trigger if r.start is None else round(r.start * 1000),
            self.time_ms,
        )
        live = sorted(n for n, c in self._consumers.items() if not c.stopped)
        c = self.config
        summary = summarize_rebalance(
            r.cause,
            tuple(r.generations),
            times,
            tuple(self._consumers[n].client_id for n in live),
            [TopicPartition(c.topic, p) for p in range(c.partitions)],
            self._ownership,
        )
        self._rebalances.append(summary)

    # --- the record --------------------------------------------------------------------

    @property
    def time_ms(self) -> int:
        return round(self.now * 1000)

    def record(
        self,
        consumer: SimulatedConsumer,
        kind: EntryKind,
        text: str,
        partitions: tuple[TopicPartition, ...] = (),
    ) -> None:
        state, generation, _ = self._group_state()
        entry = TimelineEntry(
            self.time_ms, consumer.client_id, kind, text, state, generation, partitions
        )
        self._entries.append(entry)
        if kind is EntryKind.CRASHED and self._open is not None:
            self._open.trigger = self.now  # the script asked for it a little earlier

    def owned_changed(self, consumer: SimulatedConsumer) -> None:
        change = OwnershipChange(self.time_ms, consumer.client_id, consumer.owned)
        self._ownership.append(change)

    def generation_assigned(
        self, leader: SimulatedConsumer, plan: tuple[tuple[str, bytes], ...]
    ) -> None:
        numbers = {c.member_id: c.number for c in self._consumers.values()}
        by_number = sorted(
            (numbers[member], decode_assignment(data).partitions)
            for member, data in plan
        )
        assignment = tuple((f"consumer-{n}", partitions) for n, partitions in by_number)
        self._generations.append(
            GenerationAssignment(
                leader.generation,
                self.time_ms,
                leader.client_id,
                self.config.assignor,
                assignment,
            )
        )

    def _result(self) -> SimulationResult:
        return SimulationResult(
            self.config,
            tuple(self._entries),
            tuple(self._generations),
            tuple(self._rebalances),
            tuple(self._ownership),
        )
