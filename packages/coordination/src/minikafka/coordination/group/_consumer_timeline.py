"""The consumer groups between the last write made and the last one committed: a failed
write is reverted, as Kafka's ``CoordinatorRuntime`` reverts its ``SnapshotRegistry``.

The offsets have their timeline (``SnapshottableCoordinator`` in
``_snapshottable_coordinator.py``): a write's records are replayed at once, and a failed
one is taken out by going back to the state before it and replaying the writes made
after it.
A consumer group keeps the same model with the same rule, over its records rather than
snapshots: its state is wholly described by its records (``_consumer_records.py``), so
this keeps, per group, the records as committed and each write not committed yet, in
order. When a write fails, the group becomes what the committed records plus the other
pending writes replay to: what the log will hold. A write commits with every write made
before it (a log commits a prefix).

Everything a write does to a consumer group is in its records, the classic group it
replaced too (an upgrade writes that group's tombstone): :meth:`failed` says what the
group is now, and the coordinator puts the classic group back when the consumer group
is gone. Pure bookkeeping: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from ._consumer_group import ConsumerGroup
from ._consumer_records import (
    ConsumerGroupLoader,
    Record,
    group_records,
    is_consumer_record,
)

__all__ = ["ConsumerGroupTimeline"]


@attrs.define(eq=False)
class ConsumerGroupTimeline:
    # group id -> its records as of the last committed write
    _committed: dict[str, dict[bytes, bytes]] = attrs.field(factory=dict)
    # write id -> the consumer-group records it carries, by group, in write order
    _pending: dict[int, dict[str, list[Record]]] = attrs.field(factory=dict)

    def loaded(self, group: ConsumerGroup) -> None:
        """A load replayed ``group``: its records are committed."""
        self._committed[group.group_id] = group_records(group, group.topic_ids)

    def forget(self, which: Callable[[str], bool]) -> None:
        """This coordinator no longer serves the groups ``which`` names (their
        partition moved): drop what it kept of them."""
        for group_id in [g for g in self._committed if which(g)]:
            del self._committed[group_id]
        for write_id, groups in list(self._pending.items()):
            for group_id in [g for g in groups if which(g)]:
                del groups[group_id]
            if not groups:
                del self._pending[write_id]

    def written(self, write_id: int, records: Iterable[Record]) -> None:
        """A write was made: keep its consumer-group records until it is reported."""
        by_group: dict[str, list[Record]] = {}
        for key, value in records:
            if is_consumer_record(key):
                _, group_id, _ = ConsumerGroupLoader.key_group(key)
                by_group.setdefault(group_id, []).append((key, value))
        if by_group:
            self._pending[write_id] = by_group

    def committed(self, write_id: int) -> None:
        """``write_id`` is in the log, and with it every write of its groups made
        before it."""
        write = self._pending.get(write_id)
        if write is None:
            return
        for earlier in [w for w in self._pending if w <= write_id]:
            groups = self._pending[earlier]
            for group_id in list(groups):
                if group_id in write:
                    _apply(
                        self._committed.setdefault(group_id, {}), groups.pop(group_id)
                    )
            if not groups:
                del self._pending[earlier]

    def failed(
        self, write_id: int, now: float, session_timeout_ms: int
    ) -> dict[str, ConsumerGroup | None]:
        """``write_id`` will not be in the log: each group it wrote, as the committed
        records and the writes still pending replay to (None: no such group)."""
        write = self._pending.pop(write_id, None)
        if write is None:
            return {}
        out: dict[str, ConsumerGroup | None] = {}
        for group_id in write:
            state = dict(self._committed.get(group_id, {}))
            for later in self._pending.values():
                _apply(state, later.get(group_id, ()))
            loader = ConsumerGroupLoader()
            for key, value in state.items():
                loader.replay(key, value)
            groups = loader.groups(now, session_timeout_ms)
            out[group_id] = groups[0] if groups else None
        return out


def _apply(state: dict[bytes, bytes], records: Iterable[Record]) -> None:
    for key, value in records:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
