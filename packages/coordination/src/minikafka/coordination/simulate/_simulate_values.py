"""A group simulation's values: its configuration and script in, its timeline out.

What ``_simulate`` takes: the group's size, topic, assignor, consumer timeouts and the
scripted events (``join:4,leave:2,crash:1``), checked up front so a bad one is one clear
message. What it returns: one timeline entry per thing a consumer or the coordinator did,
every generation's assignment as the leader computed it, every change of what a consumer
owns, and one summary per rebalance. The summary answers the question that
separates the two rebalance protocols (seed 000, "重平衡协议"): under EAGER every member
revokes everything before it rejoins, so each one holds nothing until the SyncGroup hands
it an assignment; under COOPERATIVE (KIP-429) members keep what they own, and only the
partitions that move stop between their old owner's revocation and the follow-up
rebalance that gives them to the new one.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

from minikafka.common import TopicPartition

from ..assignors._assignor import PartitionAssignor, RebalanceProtocol
from ..assignors._cooperative_sticky import CooperativeStickyAssignor
from ..assignors._range import RangeAssignor
from ..assignors._round_robin import RoundRobinAssignor
from ..assignors._sticky import StickyAssignor
from ..group._config import GroupConfig
from ..group._consumer_group import ConsumerGroupState
from ..group._group_state import GroupState

__all__ = [
    "ASSIGNORS",
    "EVENT_GAP_MS",
    "PROTOCOLS",
    "EntryKind",
    "EventAction",
    "GenerationAssignment",
    "GroupEvent",
    "OwnershipChange",
    "RebalanceSummary",
    "SimulationConfig",
    "SimulationError",
    "SimulationResult",
    "TimelineEntry",
    "assignor_named",
    "format_partitions",
    "parse_events",
    "render_simulation",
    "summarize_rebalance",
]


EVENT_GAP_MS = 1000
"""How long after the group settles the next scripted event happens."""

PROTOCOLS = ("classic", "consumer")
"""``group.protocol``'s values: the classic protocol and KIP-848's."""

ASSIGNORS: Mapping[str, PartitionAssignor] = {
    assignor.name: assignor
    for assignor in (
        RangeAssignor(),
        RoundRobinAssignor(),
        StickyAssignor(),
        CooperativeStickyAssignor(),
    )
}
"""The assignors by their ``partition.assignment.strategy`` names."""

# Kafka's legal topic names (``Topic.validate``).
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class SimulationError(ValueError):
    """A configuration or script the simulation cannot run, or a group that never settles."""


def assignor_named(name: str) -> PartitionAssignor:
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise SimulationError(
            f"unknown assignor {name!r} (choose {', '.join(ASSIGNORS)})"
        ) from None


class EventAction(enum.Enum):
    JOIN = "join"  # a new consumer starts
    LEAVE = "leave"  # it closes: revokes, then LeaveGroup
    CRASH = "crash"  # it dies right after a heartbeat, telling nobody
    SLOW = "slow"  # from now on it takes ``slow_processing_ms`` over each poll()


@attrs.frozen
class GroupEvent:
    """One scripted event: ``join:4`` starts consumer-4."""

    action: EventAction
    member: int

    def __str__(self) -> str:
        return f"{self.action.value}:{self.member}"


def parse_events(text: str) -> tuple[GroupEvent, ...]:
    """``join:4,leave:2,crash:1`` -> the events in that order; blank -> none."""
    events: list[GroupEvent] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        action, _, number = item.partition(":")
        try:
            kind = EventAction(action.strip().lower())
        except ValueError:
            kind = None
        if kind is None or not number.strip().isdigit() or int(number) < 1:
            raise SimulationError(
                f"bad event {item!r}: expected join:N, leave:N, crash:N or slow:N "
                "with N a member number from 1"
            )
        events.append(GroupEvent(kind, int(number)))
    return tuple(events)


@attrs.frozen
class SimulationConfig:
    """The group to simulate. The consumer settings are Kafka's consumer defaults
    (``max.poll.interval.ms`` is what a consumer sends as its rebalance timeout)."""

    members: int = 3
    partitions: int = 5
    assignor: str = "range"
    events: tuple[GroupEvent, ...] = ()
    seed: int = 0
    topic: str = "topic"
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 300_000
    # Not Kafka settings: how long a consumer works on what one poll() returns (each
    # consumer draws its own from this range, seeded), which is when it gets round to
    # rejoining; and a message's one-way trip between a consumer and the coordinator.
    processing_ms: tuple[int, int] = (100, 1000)
    network_latency_ms: int = 1
    # What a ``slow:N`` event makes member N take over each poll() from then on.
    slow_processing_ms: int = 20_000
    group_id: str = "group"
    group_config: GroupConfig = attrs.field(factory=GroupConfig)
    # ``classic`` (JoinGroup/SyncGroup, the leader assigns) or ``consumer`` (KIP-848:
    # ConsumerGroupHeartbeat, the coordinator assigns with ``remote_assignor``).
    protocol: str = "classic"
    remote_assignor: str = "uniform"

    @property
    def coordinator_config(self) -> GroupConfig:
        """The broker's settings; the consumer protocol's session and heartbeat interval
        are the broker's (KIP-848), here the same as the classic consumer's, so both
        protocols run the same scenario on the same clocks."""
        return attrs.evolve(
            self.group_config,
            group_consumer_session_timeout_ms=self.session_timeout_ms,
            group_consumer_heartbeat_interval_ms=self.heartbeat_interval_ms,
        )

    @property
    def partition_assignor(self) -> PartitionAssignor:
        return assignor_named(self.assignor)

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """The highest protocol the assignor supports, the one ConsumerCoordinator uses."""
        return max(self.partition_assignor.supported_protocols)

    def check(self) -> None:
        """Raise SimulationError, with one line saying what is wrong, for a bad setting."""
        assignor_named(self.assignor)
        if self.members < 1:
            raise SimulationError(f"--members must be at least 1, not {self.members}")
        if self.partitions < 1:
            raise SimulationError(
                f"--partitions must be at least 1, not {self.partitions}"
            )
        if not _TOPIC_NAME.fullmatch(self.topic) or self.topic in (".", ".."):
            raise SimulationError(f"{self.topic!r} is not a legal topic name")
        low = self.group_config.group_min_session_timeout_ms
        high = self.group_config.group_max_session_timeout_ms
        if not low <= self.session_timeout_ms <= high:
            # The coordinator would answer INVALID_SESSION_TIMEOUT to every JoinGroup.
            raise SimulationError(
                f"session.timeout.ms {self.session_timeout_ms} is outside the broker's "
                f"group.min.session.timeout.ms..group.max.session.timeout.ms ({low}..{high})"
            )
        if not 0 < self.heartbeat_interval_ms < self.session_timeout_ms:
            # Kafka's Heartbeat refuses it: "Heartbeat must be set lower than the session timeout".
            raise SimulationError(
                f"heartbeat.interval.ms {self.heartbeat_interval_ms} must be positive "
                f"and lower than session.timeout.ms {self.session_timeout_ms}"
            )
        low, high = self.processing_ms
        if not 0 < low <= high < self.rebalance_timeout_ms:
            # A consumer busier than max.poll.interval.ms would be thrown out of the group.
            raise SimulationError(
                f"processing times {low}..{high} ms must be positive, in order and below "
                f"max.poll.interval.ms {self.rebalance_timeout_ms}"
            )
        if not low <= self.slow_processing_ms < self.rebalance_timeout_ms:
            raise SimulationError(
                f"slow processing time {self.slow_processing_ms} ms must be at least "
                f"{low} and below max.poll.interval.ms {self.rebalance_timeout_ms}"
            )
        if self.protocol not in PROTOCOLS:
            raise SimulationError(
                f"unknown group protocol {self.protocol!r} (choose {', '.join(PROTOCOLS)})"
            )
        if self.remote_assignor not in self.group_config.group_consumer_assignors:
            raise SimulationError(
                f"unknown server assignor {self.remote_assignor!r} (choose "
                f"{', '.join(self.group_config.group_consumer_assignors)})"
            )
        if self.network_latency_ms < 0:
            raise SimulationError("the network latency cannot be negative")
        _check_script(self.members, self.events)


def _check_script(members: int, events: Iterable[GroupEvent]) -> None:
    live = set(range(1, members + 1))
    for event in events:
        if event.action is EventAction.JOIN:
            if event.member in live:
                raise SimulationError(
                    f"{event}: consumer-{event.member} is already running"
                )
            live.add(event.member)
        elif event.member not in live:
            raise SimulationError(
                f"{event}: there is no running consumer-{event.member}"
            )
        elif event.action is not EventAction.SLOW:
            live.discard(event.member)


class EntryKind(enum.Enum):
    """What a timeline entry reports."""

    STARTED = "started"  # a consumer starts and sends its first JoinGroup
    MEMBER_ID_REQUIRED = "member id"  # JoinGroup v4+: rejoin with the id handed out
    JOINED = "joined"  # JoinGroup answered: the member is in a generation
    SYNCED = "synced"  # SyncGroup answered with the member's partitions
    REBALANCE_IN_PROGRESS = "rebalance"  # a Heartbeat told the member to rejoin
    REVOKED = "revoked"  # the member gave partitions up
    REJOINING = "rejoining"  # a cooperative member rejoins, keeping what it owns
    ERROR = "error"  # another error answer, after which the member rejoins
    LEFT = "left"  # LeaveGroup
    CRASHED = "crashed"  # the process stopped without telling the coordinator
    SESSION_EXPIRED = "expired"  # the coordinator dropped a member that went silent


@attrs.frozen
class TimelineEntry:
    """One thing that happened, and the group's state and generation right after it."""

    time_ms: int
    member: str  # the consumer's client id
    kind: EntryKind
    text: str
    state: GroupState | ConsumerGroupState
    generation: int  # the consumer protocol: the group epoch
    partitions: tuple[TopicPartition, ...] = ()  # SYNCED: assigned; REVOKED: given up


@attrs.frozen
class OwnershipChange:
    """From ``time_ms`` on, ``member`` consumes ``partitions`` (and nothing else)."""

    time_ms: int
    member: str
    partitions: frozenset[TopicPartition]


@attrs.frozen
class GenerationAssignment:
    """The leader's assignment of one generation, when its SyncGroup was answered."""

    generation: int
    time_ms: int
    leader: str
    protocol: str
    assignment: tuple[
        tuple[str, tuple[TopicPartition, ...]], ...
    ]  # (member, partitions)

    def partitions_of(self, member: str) -> tuple[TopicPartition, ...]:
        return dict(self.assignment).get(member, ())


@attrs.frozen
class RebalanceSummary:
    """One rebalance, from the event that caused it until every member synced.

    A cooperative rebalance that moves partitions takes two generations (KIP-429), both
    counted here. ``trigger_ms`` is the event (a crash is only noticed a session timeout
    later, at ``start_ms``, when the group leaves Stable); the times without partitions
    are counted from the trigger to the end.
    """

    cause: str
    generations: tuple[int, ...]
    trigger_ms: int
    start_ms: int
    end_ms: int
    members: tuple[str, ...]
    without_partitions_ms: tuple[
        tuple[str, int], ...
    ]  # per member of the last generation
    paused_partitions_ms: tuple[
        tuple[TopicPartition, int], ...
    ]  # those with no consumer


@attrs.frozen
class SimulationResult:
    config: SimulationConfig
    timeline: tuple[TimelineEntry, ...]
    generations: tuple[GenerationAssignment, ...]
    rebalances: tuple[RebalanceSummary, ...]
    ownership: tuple[OwnershipChange, ...]  # in the order the changes happened


def _owned_over(
    changes: Sequence[OwnershipChange], start: int, end: int
) -> list[tuple[int, int, dict[str, frozenset[TopicPartition]]]]:
    """Who owns what in [start, end], as (since, until, owners) steps."""
    times = sorted(
        {start, end} | {c.time_ms for c in changes if start < c.time_ms < end}
    )
    steps = []
    for since, until in itertools.pairwise(times):
        # Later changes override earlier ones; changes at ``since`` already apply.
        owners = {c.member: c.partitions for c in changes if c.time_ms <= since}
        steps.append((since, until, owners))
    return steps


def summarize_rebalance(
    cause: str,
    generations: tuple[int, ...],
    times: tuple[int, int, int],
    members: tuple[str, ...],
    partitions: Iterable[TopicPartition],
    changes: Sequence[OwnershipChange],
) -> RebalanceSummary:
    """Measure from ``changes`` how long, between the trigger and the end of ``times``
    (trigger, start, end), each member owned nothing and each partition had no owner."""
    trigger, start, end = times
    without = dict.fromkeys(members, 0)
    paused: dict[TopicPartition, int] = {}
    for since, until, owners in _owned_over(changes, trigger, end):
        for member in members:
            if not owners.get(member):
                without[member] += until - since
        consumed = frozenset().union(*owners.values())
        for tp in partitions:
            if tp not in consumed:
                paused[tp] = paused.get(tp, 0) + until - since
    return RebalanceSummary(
        cause,
        generations,
        trigger,
        start,
        end,
        members,
        tuple(without.items()),
        tuple(sorted(paused.items())),
    )


def format_partitions(partitions: Iterable[TopicPartition]) -> str:
    """``topic-0,topic-3``, or ``-`` for none."""
    return ",".join(str(tp) for tp in sorted(partitions)) or "-"


def render_timeline(entries: Sequence[TimelineEntry]) -> list[str]:
    width = max((len(e.member) for e in entries), default=6)
    text_width = max((len(e.text) for e in entries), default=5)
    header = f"{'time ms':>9}  {'member':<{width}}  {'event':<{text_width}}  {'state':<19}  gen"
    lines = [header]
    for e in entries:
        lines.append(
            f"{e.time_ms:>9}  {e.member:<{width}}  {e.text:<{text_width}}  "
            f"{e.state.value:<19}  {e.generation:>3}"
        )
    return lines


def render_generations(generations: Sequence[GenerationAssignment]) -> list[str]:
    lines: list[str] = []
    for g in generations:
        lines.append(
            f"generation {g.generation} at {g.time_ms} ms (protocol {g.protocol}, "
            f"leader {g.leader}):"
        )
        width = max((len(member) for member, _ in g.assignment), default=0)
        for member, partitions in g.assignment:
            lines.append(f"  {member:<{width}} -> {format_partitions(partitions)}")
    return lines


def render_rebalances(rebalances: Sequence[RebalanceSummary]) -> list[str]:
    lines: list[str] = []
    for r in rebalances:
        generations = ", ".join(str(g) for g in r.generations) or "none"
        lines.append(
            f"{r.cause}: generation {generations}; event at {r.trigger_ms} ms, rebalance "
            f"{r.start_ms}-{r.end_ms} ms ({r.end_ms - r.start_ms} ms); "
            f"members {', '.join(r.members) or '-'}"
        )
        without = ", ".join(f"{m} {ms} ms" for m, ms in r.without_partitions_ms)
        lines.append(f"  without partitions: {without or '-'}")
        paused = ", ".join(f"{tp} {ms} ms" for tp, ms in r.paused_partitions_ms)
        lines.append(f"  partitions not consumed: {paused or 'none'}")
    return lines


def render_ownership(
    changes: Sequence[OwnershipChange], members: Sequence[str]
) -> list[str]:
    """Each member's partitions after every change: one row per moment something moved."""
    width = max((len(format_partitions(c.partitions)) for c in changes), default=1)
    width = max(width, *(len(m) for m in members)) if members else width
    lines = [f"{'time ms':>9}  " + "  ".join(f"{m:<{width}}" for m in members)]
    owned: dict[str, frozenset[TopicPartition]] = {}
    for time_ms, group in itertools.groupby(changes, key=lambda c: c.time_ms):
        for change in group:
            owned[change.member] = change.partitions
        cells = (format_partitions(owned.get(m, ())) for m in members)
        lines.append(f"{time_ms:>9}  " + "  ".join(f"{c:<{width}}" for c in cells))
    return lines


def _header(c: SimulationConfig) -> str:
    if c.protocol == "classic":
        protocol = (
            f"classic protocol, assignor {c.assignor} ({c.rebalance_protocol.name}), "
            f"session.timeout.ms {c.session_timeout_ms}, heartbeat.interval.ms "
            f"{c.heartbeat_interval_ms}, group.initial.rebalance.delay.ms "
            f"{c.group_config.group_initial_rebalance_delay_ms}"
        )
    else:
        g = c.coordinator_config
        protocol = (
            f"consumer protocol (KIP-848), server assignor {c.remote_assignor}, "
            f"group.consumer.session.timeout.ms {g.group_consumer_session_timeout_ms}, "
            f"group.consumer.heartbeat.interval.ms {g.group_consumer_heartbeat_interval_ms}"
        )
    return (
        f"group {c.group_id!r}: {c.members} consumer{'s' * (c.members != 1)} of {c.topic!r} "
        f"({c.partitions} partition{'s' * (c.partitions != 1)}), {protocol}, seed {c.seed}"
    )


def render_simulation(result: SimulationResult) -> str:
    """The timeline as a table, every generation's (or group epoch's) assignment, each
    member's partitions over time, and the rebalances."""
    members = sorted(
        {e.member for e in result.timeline}, key=lambda m: int(m.rpartition("-")[2])
    )
    title = "generations" if result.config.protocol == "classic" else "group epochs"
    return "\n".join(
        [
            _header(result.config),
            "",
            *render_timeline(result.timeline),
            "",
            f"{title}:",
            *render_generations(result.generations),
            "",
            "owned partitions over time:",
            *render_ownership(result.ownership, members),
            "",
            "rebalances:",
            *render_rebalances(result.rebalances),
        ]
    )
