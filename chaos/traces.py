"""What the brokers' and controllers' traces must never show, checked after a run.

The traces are the JSON lines ``minikafka.trace`` writes (``read_trace(directory)``
yields them): each line has the envelope ``ts``, ``node``, ``component``, ``event`` and
the event's fields. The rules read these events:

- ``replication.become_leader`` (a broker leads a partition from ``leader_epoch`` on,
  with ``isr``), ``replication.isr_change`` (the leader applied a new ``isr``),
  ``replication.hw_advance`` (the leader moved the high watermark: what answers an
  ``acks=all`` produce);
- ``replication.become_follower`` (a broker follows from ``leader_epoch`` on: it no
  longer leads);
- ``controller.election`` (the active controller chose ``leader`` at ``leader_epoch``
  with ``isr``; KRaft and ZooKeeper mode alike);
- ``raft.state_change`` (a KRaft voter became ``Leader`` at ``epoch``: the active
  controller) and ``zk_controller.elected`` (a broker won ``/controller`` at ``epoch``).

The rules:

- ``two_leaders``: two brokers became leader of one partition at the same leader epoch,
  or the controller chose two leaders for one epoch (KIP-101's epochs exist to make a
  leader unique per epoch). A KRaft controller's choice counts only while no other voter
  has become the quorum's leader since it did: one made after that, by a leader deposed
  without knowing it yet (paused, or cut off until check-quorum resigns it), can never
  be committed (Raft truncates an old epoch's entries the new leader lacks), and no
  broker acts on it.
- ``two_controllers``: two voters were the quorum's leader in one Raft epoch (KIP-595),
  or two brokers won ``/controller`` at one controller epoch.
- ``empty_isr_ack``: a leader moved its high watermark while its ISR was empty, or a
  history's ``acks=all`` send was acknowledged while the partition's ISR (the latest any
  trace gave) was empty from the send's invoke to its completion, when the broker
  answered it: acknowledged by no in-sync replica at all.

Not an anomaly, but evidence the history checker asks for: :func:`stale_leaderships`
finds each span in which a broker still led a partition at a leader epoch the controller
had already replaced (from the election of the newer epoch to the broker's own next
``become_leader`` or ``become_follower``). Every failover has one, usually milliseconds
long, until the old leader hears of the new epoch; in ZooKeeper mode a leader cut off
from the controller (and so from its LeaderAndIsr) keeps serving reads for as long as
the cut lasts, as Kafka's does.

A topic deleted and created again under its name starts its leader epochs over; each
``controller.election`` with reason ``new_partition`` starts a new incarnation of the
partition, and events are compared within one incarnation (by ``ts``: the nodes of a
run share one machine's clock).

Pure functions over the records: :func:`check_traces` returns the anomalies.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, TypeAlias

import attrs

from .history import ACKS_ALL, Op, TopicPartition

TraceAnomalyKind: TypeAlias = Literal["two_leaders", "two_controllers", "empty_isr_ack"]
TRACE_ANOMALY_KINDS: tuple[TraceAnomalyKind, ...] = (
    "two_leaders",
    "two_controllers",
    "empty_isr_ack",
)


@attrs.frozen
class TraceEvent:
    """The envelope of one trace line, what an anomaly names it by."""

    ts: float
    node: int
    kind: str
    """``component.event``."""

    def __str__(self) -> str:
        return f"{self.kind} on node {self.node} at {self.ts:.3f}"


@attrs.frozen
class TraceAnomaly:
    kind: TraceAnomalyKind
    detail: str
    events: tuple[TraceEvent, ...]
    ops: tuple[int, ...] = ()
    """The history's operations involved (``empty_isr_ack`` of a send)."""


Record: TypeAlias = Mapping[str, object]


def _int(record: Record, key: str) -> int:
    value = record.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"trace line without an integer {key!r}: {dict(record)!r}")
    return value


def _ints(record: Record, key: str) -> tuple[int, ...]:
    value = record.get(key)
    if not isinstance(value, list) or not all(isinstance(x, int) for x in value):
        raise ValueError(f"trace line without a list of integers {key!r}")
    return tuple(value)


def _envelope(record: Record) -> TraceEvent:
    ts = record.get("ts")
    if not isinstance(ts, int | float):
        raise ValueError(f"trace line without a ts: {dict(record)!r}")
    return TraceEvent(float(ts), _int(record, "node"), _kind(record))


def _kind(record: Record) -> str:
    return f"{record.get('component')}.{record.get('event')}"


def _tp(record: Record) -> TopicPartition:
    topic = record.get("topic")
    if not isinstance(topic, str):
        raise ValueError(f"trace line without a topic: {dict(record)!r}")
    return (topic, _int(record, "partition"))


class _Incarnations:
    """When each partition was created (its ``new_partition`` elections), so an event
    is placed in the incarnation that was current at its ``ts``."""

    def __init__(self, records: Sequence[Record]) -> None:
        self._starts: defaultdict[TopicPartition, list[float]] = defaultdict(list)
        for record in records:
            if (
                _kind(record) == "controller.election"
                and record.get("reason") == "new_partition"
            ):
                self._starts[_tp(record)].append(_envelope(record).ts)
        for starts in self._starts.values():
            starts.sort()

    def of(self, tp: TopicPartition, ts: float) -> int:
        return bisect.bisect_right(self._starts.get(tp, []), ts)


class _QuorumLeaders:
    """When each voter became the KRaft quorum's leader (``raft.state_change`` to
    Leader), to tell a controller's decision from a deposed one's."""

    def __init__(self, records: Sequence[Record]) -> None:
        became = sorted(
            (_envelope(r).ts, _int(r, "node"))
            for r in records
            if _kind(r) == "raft.state_change" and r.get("new") == "Leader"
        )
        self._times = [ts for ts, _ in became]
        self._nodes = [node for _, node in became]

    def deposed(self, node: int, ts: float) -> bool:
        """Whether another voter became the leader after ``node`` last did, by ``ts``
        (False where no voter's Raft is traced: ZooKeeper mode's one controller)."""
        latest = bisect.bisect_right(self._times, ts) - 1
        return latest >= 0 and self._nodes[latest] != node


def _two_leaders(
    records: Sequence[Record], incarnations: _Incarnations
) -> list[TraceAnomaly]:
    quorum = _QuorumLeaders(records)
    leaders: defaultdict[
        tuple[str, TopicPartition, int, int], defaultdict[int, list[TraceEvent]]
    ] = defaultdict(lambda: defaultdict(list))
    for record in records:
        kind = _kind(record)
        if kind == "replication.become_leader":
            leader = _int(record, "node")
        elif kind == "controller.election":
            leader = _int(record, "leader")
            if leader < 0:  # no replica may lead: the partition went offline
                continue
            if quorum.deposed(_int(record, "node"), _envelope(record).ts):
                continue  # never committed: a newer quorum leader was elected
        else:
            continue
        event = _envelope(record)
        tp = _tp(record)
        source = "broker" if kind.startswith("replication") else "controller"
        key = (source, tp, incarnations.of(tp, event.ts), _int(record, "leader_epoch"))
        leaders[key][leader].append(event)
    found = []
    for (source, (topic, partition), _, epoch), by_leader in sorted(leaders.items()):
        if len(by_leader) < 2:
            continue
        who = " and ".join(f"broker {leader}" for leader in sorted(by_leader))
        said = (
            "became leaders" if source == "broker" else "were elected by the controller"
        )
        events = tuple(e for leader in sorted(by_leader) for e in by_leader[leader])
        detail = f"{topic}-{partition}: {who} {said} at leader epoch {epoch}"
        found.append(TraceAnomaly("two_leaders", detail, events))
    return found


def _two_controllers(records: Sequence[Record]) -> list[TraceAnomaly]:
    active: defaultdict[tuple[str, int], defaultdict[int, list[TraceEvent]]]
    active = defaultdict(lambda: defaultdict(list))
    for record in records:
        kind = _kind(record)
        if kind == "raft.state_change" and record.get("new") == "Leader":
            key, node = ("raft epoch", _int(record, "epoch")), _int(record, "node_id")
        elif kind == "zk_controller.elected" and record.get("resigned") is False:
            key = ("controller epoch", _int(record, "epoch"))
            node = _int(record, "controller_id")
        else:
            continue
        active[key][node].append(_envelope(record))
    found = []
    for (what, epoch), by_node in sorted(active.items()):
        if len(by_node) < 2:
            continue
        who = " and ".join(f"node {node}" for node in sorted(by_node))
        events = tuple(e for node in sorted(by_node) for e in by_node[node])
        detail = f"{who} were the active controller at {what} {epoch}"
        found.append(TraceAnomaly("two_controllers", detail, events))
    return found


IsrTimeline: TypeAlias = dict[
    tuple[TopicPartition, int], list[tuple[float, tuple[int, ...]]]
]


def _empty_isr_acks(
    records: Sequence[Record], incarnations: _Incarnations, history: Sequence[Op]
) -> list[TraceAnomaly]:
    found = []
    # The leader's own view: its ISR from become_leader and isr_change, in its order.
    views: dict[tuple[int, TopicPartition], tuple[tuple[int, ...], TraceEvent]] = {}
    timeline: IsrTimeline = defaultdict(list)  # every node's word on the ISR, by time
    for record in sorted(records, key=lambda r: _envelope(r).ts):
        kind = _kind(record)
        if kind not in (
            "replication.become_leader",
            "replication.isr_change",
            "replication.hw_advance",
            "controller.election",
        ):
            continue
        event, tp = _envelope(record), _tp(record)
        if kind == "replication.hw_advance":
            view = views.get((event.node, tp))
            if view is not None and not view[0]:
                detail = (
                    f"{tp[0]}-{tp[1]}: broker {event.node} moved the high watermark to "
                    f"{_int(record, 'high_watermark')} with an empty ISR"
                )
                found.append(TraceAnomaly("empty_isr_ack", detail, (view[1], event)))
            continue
        isr = _ints(record, "isr")
        if kind != "controller.election":
            views[(event.node, tp)] = (isr, event)
        timeline[(tp, incarnations.of(tp, event.ts))].append((event.ts, isr))
    for op in history:
        if op.kind != "send" or op.outcome != "ok" or op.acks != ACKS_ALL:
            continue
        # The broker answered somewhere between invoke and complete: only an ISR empty
        # over that whole span is sure to have been empty when it answered.
        changes = timeline.get((op.tp, incarnations.of(op.tp, op.invoke)), [])
        first = bisect.bisect_right(changes, op.invoke, key=lambda change: change[0])
        last = bisect.bisect_right(changes, op.complete, key=lambda change: change[0])
        span = changes[max(first - 1, 0) : last]
        if first and not any(isr for _, isr in span):
            detail = (
                f"{op.topic}-{op.partition}: op {op.index} was acknowledged (acks=all) "
                f"between {op.invoke:.3f} and {op.complete:.3f}, while the ISR was "
                f"empty (since {changes[first - 1][0]:.3f})"
            )
            found.append(TraceAnomaly("empty_isr_ack", detail, (), (op.index,)))
    return found


@attrs.frozen
class StaleLeadership:
    """Broker ``node`` led ``topic``-``partition`` at ``epoch`` after the controller had
    elected ``newer_epoch`` (at ``since``), until its next leadership change
    (``until``; infinity if the traces show none)."""

    topic: str
    partition: int
    node: int
    epoch: int
    newer_epoch: int
    since: float
    until: float
    events: tuple[TraceEvent, ...]
    """The broker's ``become_leader`` and the controller's newer ``election``."""

    def covers(self, start: float, end: float) -> bool:
        """Whether the span overlaps ``[start, end]``."""
        return self.since <= end and start <= self.until


def stale_leaderships(records: Iterable[Record]) -> list[StaleLeadership]:
    """Every span in which a broker led a partition at a replaced leader epoch, by
    partition and time."""
    kept = sorted(
        (r for r in records if _kind(r) in _LEADERSHIP), key=lambda r: _envelope(r).ts
    )
    incarnations = _Incarnations(kept)
    by_partition: defaultdict[tuple[TopicPartition, int], list[Record]]
    by_partition = defaultdict(list)
    for record in kept:
        tp = _tp(record)
        by_partition[(tp, incarnations.of(tp, _envelope(record).ts))].append(record)
    found = []
    for ((topic, partition), _), events in sorted(by_partition.items()):
        for i, record in enumerate(events):
            if _kind(record) != "replication.become_leader":
                continue
            node, epoch = _int(record, "node"), _int(record, "leader_epoch")
            later = events[i + 1 :]
            until = next(
                (
                    _envelope(r).ts
                    for r in later
                    if _kind(r) != "controller.election" and _int(r, "node") == node
                ),
                float("inf"),
            )
            newer = next(
                (
                    r
                    for r in later
                    if _kind(r) == "controller.election"
                    and _int(r, "leader_epoch") > epoch
                    and _envelope(r).ts < until
                ),
                None,
            )
            if newer is not None:
                found.append(
                    StaleLeadership(
                        topic,
                        partition,
                        node,
                        epoch,
                        _int(newer, "leader_epoch"),
                        _envelope(newer).ts,
                        until,
                        (_envelope(record), _envelope(newer)),
                    )
                )
    return found


_LEADERSHIP = frozenset(
    {
        "replication.become_leader",
        "replication.become_follower",
        "controller.election",
    }
)


def offset_lookups(records: Iterable[Record]) -> list[TraceEvent]:
    """Every ListOffsets request a broker answered (``net.request``), by time: what a
    consumer whose position was reset asks (the request's trace line names no
    partition)."""
    return sorted(
        (_envelope(r) for r in records if _is_offset_lookup(r)),
        key=lambda event: event.ts,
    )


def _is_offset_lookup(record: Record) -> bool:
    return _kind(record) == "net.request" and record.get("api_name") == "ListOffsets"


def kept_records(records: Iterable[Record]) -> list[Record]:
    """The lines of a run's traces that :func:`check_traces`,
    :func:`stale_leaderships` and :func:`offset_lookups` read, so a run's traces are
    read once and held small."""
    return [r for r in records if _kind(r) in _READ or _is_offset_lookup(r)]


def check_traces(
    records: Iterable[Record], history: Sequence[Op] = ()
) -> list[TraceAnomaly]:
    """Every anomaly the trace ``records`` show, and with a run's ``history`` the
    ``acks=all`` sends acknowledged while the ISR was empty; by kind in
    :data:`TRACE_ANOMALY_KINDS` order."""
    kept = [r for r in records if _kind(r) in _READ]
    incarnations = _Incarnations(kept)
    return [
        *_two_leaders(kept, incarnations),
        *_two_controllers(kept),
        *_empty_isr_acks(kept, incarnations, history),
    ]


_READ = frozenset(
    {
        "replication.become_leader",
        "replication.isr_change",
        "replication.hw_advance",
        "replication.become_follower",
        "controller.election",
        "raft.state_change",
        "zk_controller.elected",
    }
)
"""The events the rules read; every other line of a trace is passed over."""
