"""Wrong on purpose: the timeline's record, lookup, merge and revert, each function
wrong in one way (mutants.toml switches one in at a time, in place of minikafka's)."""

from __future__ import annotations

from typing import Any

from minikafka.common.timeline import (
    _ABSENT,
    LATEST_EPOCH,
    Snapshot,
    SnapshotRegistry,
    _TableDelta,
)

# --- record ---------------------------------------------------------------------------


def _delta_of(self: Any, snapshot: Snapshot, size: int) -> Any:
    delta = snapshot._delta(self)
    if delta is None:
        delta = _TableDelta(self, size)
        snapshot._deltas[self] = delta
    return delta


def record_in_the_oldest(self: Any, key: Any) -> None:
    """The old value goes to the oldest snapshot, not the newest."""
    snapshots = self._registry._snapshots
    if not snapshots:
        return
    delta = _delta_of(self, snapshots[0], len(self._current))
    if key not in delta.old:
        delta.old[key] = self._current.get(key, _ABSENT)


def record_every_write(self: Any, key: Any) -> None:
    """Every write records the value it replaces, not only the first after the
    snapshot: the delta ends up with a later value than the snapshot's."""
    snapshot = self._registry._newest()
    if snapshot is None:
        return
    delta = _delta_of(self, snapshot, len(self._current))
    delta.old[key] = self._current.get(key, _ABSENT)


def record_absent_as_none(self: Any, key: Any) -> None:
    """A key that had no value is recorded as None, not as absent."""
    snapshot = self._registry._newest()
    if snapshot is None:
        return
    delta = _delta_of(self, snapshot, len(self._current))
    if key not in delta.old:
        delta.old[key] = self._current.get(key)


def record_wrong_size(self: Any, key: Any) -> None:
    """The delta's size is the table's after the write, not at the snapshot."""
    snapshot = self._registry._newest()
    if snapshot is None:
        return
    grows = key not in self._current
    delta = _delta_of(self, snapshot, len(self._current) + grows)
    if key not in delta.old:
        delta.old[key] = self._current.get(key, _ABSENT)


# --- lookup ---------------------------------------------------------------------------


def _walk(self: Any, key: Any, snapshots: Any, default: Any) -> Any:
    for snapshot in snapshots:
        delta = snapshot._delta(self)
        if delta is not None and key in delta.old:
            return delta.old[key]
    return default


def lookup_latest_from_snapshots(self: Any, key: Any, epoch: int) -> Any:
    """A read at LATEST_EPOCH looks at the snapshots too (and finds an old value)."""
    if epoch == LATEST_EPOCH:
        snapshots = self._registry._snapshots
        return _walk(self, key, snapshots, self._current.get(key, _ABSENT))
    return _walk(
        self, key, self._registry._from(epoch), self._current.get(key, _ABSENT)
    )


def lookup_newest_delta_wins(self: Any, key: Any, epoch: int) -> Any:
    """Of the deltas that mention the key, the newest answers, not the first."""
    if epoch == LATEST_EPOCH:
        return self._current.get(key, _ABSENT)
    newest_first = reversed(list(self._registry._from(epoch)))
    return _walk(self, key, newest_first, self._current.get(key, _ABSENT))


def lookup_unmentioned_is_absent(self: Any, key: Any, epoch: int) -> Any:
    """A key no delta mentions is absent at the epoch (not the current value)."""
    if epoch == LATEST_EPOCH:
        return self._current.get(key, _ABSENT)
    return _walk(self, key, self._registry._from(epoch), _ABSENT)


def lookup_from_the_oldest(self: Any, key: Any, epoch: int) -> Any:
    """The walk starts at the oldest snapshot, whatever the epoch asked."""
    if epoch == LATEST_EPOCH:
        return self._current.get(key, _ABSENT)
    self._registry._require(epoch)
    snapshots = self._registry._snapshots
    return _walk(self, key, snapshots, self._current.get(key, _ABSENT))


# --- revert ---------------------------------------------------------------------------


def merge_drops_unshared(self: Snapshot, newer: Snapshot) -> None:
    """A structure only the newer snapshot has a delta for loses it."""
    for owner, delta in newer._deltas.items():
        mine = self._deltas.get(owner)
        if mine is not None:
            mine.absorb(delta)
    newer._deltas.clear()


def merge_newer_wins(self: Snapshot, newer: Snapshot) -> None:
    """Where both snapshots hold a key, the newer one's value wins."""
    for owner, delta in newer._deltas.items():
        mine = self._deltas.get(owner)
        if mine is None:
            self._deltas[owner] = delta
        else:
            mine.old.update(delta.old)  # type: ignore[attr-defined]
    newer._deltas.clear()


def revert_only_the_newest(self: SnapshotRegistry, epoch: int) -> None:
    """Undoes only what changed after the newest snapshot, then drops the newer
    snapshots without folding their deltas into the target."""
    i = self._require(epoch)
    newest = self._snapshots[-1]
    del self._snapshots[i + 1 :]
    del self._epochs[i + 1 :]
    newest._revert()


def revert_drops_the_target(self: SnapshotRegistry, epoch: int) -> None:
    """Right state, but the snapshot at the epoch is dropped too."""
    i = self._require(epoch)
    while len(self._snapshots) > i + 1:
        self._delete_at(len(self._snapshots) - 1)
    self._snapshots[i]._revert()
    del self._snapshots[i]
    del self._epochs[i]


def revert_keeps_newer_snapshots(self: SnapshotRegistry, epoch: int) -> None:
    """Right state, but the newer snapshots stay (and can be read or reverted to)."""
    i = self._require(epoch)
    target = self._snapshots[i]
    for newer in self._snapshots[i + 1 :]:
        for owner, delta in newer._deltas.items():
            mine = target._deltas.get(owner)
            if mine is None:
                target._deltas[owner] = delta
            else:
                mine.absorb(delta)
    for newer in self._snapshots[i + 1 :]:
        newer._deltas = {}
    target._revert()


def revert_unknown_epoch_to_newest(self: SnapshotRegistry, epoch: int) -> None:
    """An epoch with no snapshot reverts to the newest one instead of failing."""
    i = self._index(epoch)
    if i is None:
        if not self._snapshots:
            return
        i = len(self._snapshots) - 1
    while len(self._snapshots) > i + 1:
        self._delete_at(len(self._snapshots) - 1)
    self._snapshots[i]._revert()
