"""The group coordinator's timers in one heap (``minikafka.common.Deadlines``).

A group has up to four kinds of timer, Kafka's delayed operations: the join phase's end
(``DelayedJoin``, ``InitialDelayedJoin``), the sync phase's end (``DelayedSync``), each
member's session (``DelayedHeartbeat``) and each pending member id's expiry. The group
keeps them as plain deadlines (``GroupMetadata``, ``MemberMetadata``); after a call has
changed a group, the coordinator re-arms that group's entries here (``rearm``), so
``next_deadline`` is the heap's top and ``on_timer`` pops only what is due, whatever the
number of groups. Offset expiry (``offsets.retention.check.interval.ms``) is one more key.

Timers due at the same instant fire in the order the coordinator always used: groups in
the order they were created, and in a group the join, the sync, pending ids, sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias

from minikafka.common import Deadlines

from ._group import GroupMetadata

__all__ = ["OFFSETS_EXPIRY", "GroupTimers", "MemberDeadlines", "TimerKey"]

TimerKind: TypeAlias = Literal["join", "sync", "pending", "session", "expiry"]
TimerKey: TypeAlias = tuple[TimerKind, str, str]
"""(kind, group id, member id); the member id is empty for a group's own timers."""

OFFSETS_EXPIRY: TimerKey = ("expiry", "", "")

_KIND_ORDER = {"join": 0, "sync": 1, "pending": 2, "session": 3, "expiry": 4}


def _wanted(group: GroupMetadata) -> dict[TimerKey, float]:
    gid = group.group_id
    wanted: dict[TimerKey, float] = {}
    if (join := group.join_deadline) is not None:
        wanted["join", gid, ""] = join
    if (sync := group.sync_deadline) is not None:
        wanted["sync", gid, ""] = sync
    for member_id, expiry in group.pending_members.items():
        wanted["pending", gid, member_id] = expiry
    for member in group.members.values():
        if (session := member.session_deadline) is not None:
            wanted["session", gid, member.member_id] = session
    return wanted


class GroupTimers:
    def __init__(self) -> None:
        self._deadlines: Deadlines[TimerKey] = Deadlines()
        self._keys: dict[str, set[TimerKey]] = {}  # group id -> its scheduled keys

    def rearm(self, group_id: str, group: GroupMetadata | None) -> None:
        """Bring ``group``'s entries in line with its deadlines (None: it is gone).
        Costs the group's size, never the number of groups."""
        wanted = {} if group is None else _wanted(group)
        for key in self._keys.pop(group_id, set()) - wanted.keys():
            self._deadlines.cancel(key)
        for key, when in wanted.items():
            if self._deadlines.due_at(key) != when:
                self._deadlines.schedule(key, when)
        if wanted:
            self._keys[group_id] = set(wanted)

    def schedule_expiry(self, when: float) -> None:
        self._deadlines.schedule(OFFSETS_EXPIRY, when)

    def expiry_due(self, now: float) -> bool:
        due = self._deadlines.due_at(OFFSETS_EXPIRY)
        return due is not None and due <= now

    @property
    def expiry_scheduled(self) -> bool:
        return OFFSETS_EXPIRY in self._deadlines

    def next_deadline(self) -> float | None:
        return self._deadlines.next_deadline()

    def pop_earliest(
        self, now: float, groups: Mapping[str, GroupMetadata]
    ) -> TimerKey | None:
        """The group timer due first at or before ``now``, unscheduled; None if none is."""
        when = self._deadlines.next_deadline()
        if when is None or when > now:
            return None
        tied = self._deadlines.pop_due(when)
        if len(tied) > 1:
            tied.sort(key=_order(groups))
            for key in tied[1:]:
                self._deadlines.schedule(key, when)
        key = tied[0]
        # the coordinator fires it first and reschedules it
        assert key != OFFSETS_EXPIRY
        self._keys.get(key[1], set()).discard(key)
        return key


def _order(
    groups: Mapping[str, GroupMetadata],
) -> Callable[[TimerKey], tuple[int, int, int]]:
    """Sort key of tied timers: the order a scan of every group would meet them in."""
    group_rank = {gid: i for i, gid in enumerate(groups)}

    def rank(key: TimerKey) -> tuple[int, int, int]:
        kind, gid, member_id = key
        group = groups.get(gid)
        position = 0
        if group is not None and kind in ("pending", "session"):
            members = group.pending_members if kind == "pending" else group.members
            position = next((i for i, m in enumerate(members) if m == member_id), 0)
        return group_rank.get(gid, len(group_rank)), _KIND_ORDER[kind], position

    return rank


class MemberDeadlines:
    """The consumer-protocol members' deadlines (KIP-848), one per member: its session
    or, while it is revoking, its rebalance timeout, whichever comes first. Keyed by
    (group id, member id); re-armed per group as the classic timers are."""

    def __init__(self) -> None:
        self._deadlines: Deadlines[tuple[str, str]] = Deadlines()
        self._keys: dict[str, set[tuple[str, str]]] = {}

    def rearm(self, group_id: str, wanted: Mapping[str, float]) -> None:
        """``wanted``: member id -> its deadline, for every member that has one."""
        keys = {(group_id, m): when for m, when in wanted.items()}
        for key in self._keys.pop(group_id, set()) - keys.keys():
            self._deadlines.cancel(key)
        for key, when in keys.items():
            if self._deadlines.due_at(key) != when:
                self._deadlines.schedule(key, when)
        if keys:
            self._keys[group_id] = set(keys)

    def next_deadline(self) -> float | None:
        return self._deadlines.next_deadline()

    def pop_due(self, now: float) -> list[tuple[str, str]]:
        """Every member whose deadline is at or before ``now``, unscheduled."""
        due = self._deadlines.pop_due(now)
        for key in due:
            self._keys.get(key[0], set()).discard(key)
        return due
