"""Timeline data structures: state kept from a log that can be read as of an offset and
rolled back.

This is Kafka's ``org.apache.kafka.timeline`` package (server-common): ``SnapshotRegistry``,
``TimelineHashMap``, ``TimelineHashSet``, ``TimelineObject``, ``TimelineInteger`` and
``TimelineLong``. Seed 004 section 2.1 explains why the KRaft controller needs them; the
group coordinator keeps its state in them for the same reason, which is why they live
here, below both.

The active controller handles one request at a time on a single thread. Waiting for the Raft
quorum to commit each request's records before starting the next would cap it at one request
per quorum round trip, so it pipelines: a request's records are replayed into the in-memory
state as soon as they are generated and handed to Raft, and the next request is served from
that already-updated state. Two problems follow, and these structures solve both:

* **Dirty reads.** Whatever is answered to the outside world must have been committed. So after
  replaying each batch the controller takes a *snapshot* whose epoch is the batch's last Raft
  offset, and reads that must only see committed data pass the committed offset as the epoch:
  ``get(key, epoch=committed_offset)``. Reads with ``LATEST_EPOCH`` see everything replayed so
  far, committed or not (that is what the controller validates the next request against).
* **Dirty writes.** If the controller loses leadership, the records it replayed but Raft did not
  commit will never be committed (seed 004's CAS(1, 2) story: memory says 2, the quorum says 1).
  It reverts every structure to the snapshot at the last committed offset, and the state is
  again exactly what the log says.

When an offset commits, the snapshots below it are no longer needed and are deleted, so in
steady state only the snapshots of in-flight batches are alive.

How it is stored (Kafka's delta approach, simplified):

* The current state is an ordinary ``dict`` (or one value), so writes and latest reads cost
  what a dict costs.
* A snapshot copies nothing when it is taken. Instead, the first time a key is written after
  the newest snapshot was taken, its old value (or "absent") is recorded in that snapshot's
  delta for this structure. So snapshot S holds "the value at S" for exactly the keys changed
  between S and the next snapshot; memory is proportional to the changes since the oldest live
  snapshot, not to the size of the state.
* A read of key k at epoch E walks the snapshots from E towards the newest: the first one whose
  delta mentions k holds k's value at E (k did not change between E and that snapshot); if none
  does, k has not changed since E and the current value is the answer.
* Deleting snapshot S merges its delta into the previous (older) snapshot P, keeping P's entry
  where both have one: for keys P does not mention, the value at P equals the value at S.
  The oldest snapshot's delta is simply dropped.
* Reverting to S first deletes every newer snapshot (merging their deltas into S, which then
  records the value at S of every key changed since S) and then writes those values back.
"""

from __future__ import annotations

import bisect
import enum
import itertools
from collections.abc import Iterator
from typing import Final, Generic, Literal, Protocol, TypeAlias, TypeVar, cast

import attrs

__all__ = [
    "LATEST_EPOCH",
    "Snapshot",
    "SnapshotRegistry",
    "TimelineHashMap",
    "TimelineHashSet",
    "TimelineInteger",
    "TimelineLong",
    "TimelineObject",
]

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

LATEST_EPOCH: Final = 2**63 - 1
"""The epoch of the current state, committed or not (Kafka: ``SnapshotRegistry.LATEST_EPOCH``,
``Long.MAX_VALUE``). Snapshot epochs are Raft offsets, always lower than this."""


class _Absent(enum.Enum):
    """'No entry' in a delta, distinct from a stored ``None``."""

    ABSENT = enum.auto()


_ABSENT: Final = _Absent.ABSENT
_Maybe: TypeAlias = V | Literal[_Absent.ABSENT]  # a value, or "no entry"


class _Delta(Protocol):
    """What one structure changed after one snapshot (Kafka: ``Delta``)."""

    def absorb(self, newer: _Delta) -> None:
        """Merge the delta of the next (newer) snapshot, which is being deleted, into this one."""

    def revert(self) -> None:
        """Put the owning structure back into its state at this delta's snapshot."""


class _Revertable(Protocol):
    """A structure registered with a SnapshotRegistry (Kafka: ``Revertable``)."""

    def _reset(self) -> None: ...


@attrs.define(eq=False)
class Snapshot:
    """The changes made to each structure after this snapshot's epoch, until the next snapshot."""

    epoch: int
    # Keyed by the structure itself (identity hash): only structures written since this
    # snapshot was taken appear, so deleting or reverting costs what changed, not what exists.
    _deltas: dict[object, _Delta] = attrs.field(init=False, factory=dict)

    def _delta(self, owner: object) -> _Delta | None:
        return self._deltas.get(owner)

    def delta(self, owner: object) -> _Delta | None:
        """What ``owner`` (a timeline structure) saved at this snapshot: its old values,
        or None when it has not changed since (Kafka: ``Snapshot.getDelta``)."""
        return self._delta(owner)

    def _merge_from(self, newer: Snapshot) -> None:
        for owner, delta in newer._deltas.items():
            mine = self._deltas.get(owner)
            if mine is None:
                # The owner did not change between self and newer, so its state at newer is its
                # state at self too: newer's delta can be adopted as it is.
                self._deltas[owner] = delta
            else:
                mine.absorb(delta)
        newer._deltas.clear()

    def _revert(self) -> None:
        for delta in self._deltas.values():
            delta.revert()
        self._deltas.clear()


@attrs.define(eq=False)
class SnapshotRegistry:
    """The live snapshots, oldest first, and the structures that take part in them."""

    _snapshots: list[Snapshot] = attrs.field(init=False, factory=list)
    _epochs: list[int] = attrs.field(init=False, factory=list)  # parallel to _snapshots
    _revertables: list[_Revertable] = attrs.field(init=False, factory=list)

    def _register(self, revertable: _Revertable) -> None:
        self._revertables.append(revertable)

    # --- queries ----------------------------------------------------------------------

    def epochs(self) -> list[int]:
        """The epochs of the live snapshots, in increasing order (Kafka: ``epochsList``)."""
        return list(self._epochs)

    def snapshots(self) -> list[Snapshot]:
        """The live snapshots, oldest first (Kafka: ``SnapshotRegistry.iterator``)."""
        return list(self._snapshots)

    def has_snapshot(self, epoch: int) -> bool:
        return self._index(epoch) is not None

    def latest_epoch(self) -> int | None:
        """The epoch of the newest snapshot, None if there is none."""
        return self._epochs[-1] if self._epochs else None

    def _index(self, epoch: int) -> int | None:
        i = bisect.bisect_left(self._epochs, epoch)
        if i < len(self._epochs) and self._epochs[i] == epoch:
            return i
        return None

    def _require(self, epoch: int) -> int:
        i = self._index(epoch)
        if i is None:
            raise ValueError(
                f"no in-memory snapshot for epoch {epoch}; snapshot epochs are {self._epochs}"
            )
        return i

    def _newest(self) -> Snapshot | None:
        """The snapshot that records the next first-writes (the hot path asks this per write)."""
        return self._snapshots[-1] if self._snapshots else None

    def _from(self, epoch: int) -> Iterator[Snapshot]:
        """The snapshots at ``epoch`` and newer, oldest first; ``epoch`` must exist."""
        return itertools.islice(self._snapshots, self._require(epoch), None)

    # --- changes ----------------------------------------------------------------------

    def get_or_create_snapshot(self, epoch: int) -> Snapshot:
        """Take a snapshot of every registered structure at ``epoch`` (a Raft offset).

        Epochs only grow: asking again for the newest epoch returns that snapshot, asking for
        an older one is an error (its state is gone: later writes were not recorded against it).
        """
        latest = self.latest_epoch()
        if latest is not None and epoch < latest:
            raise ValueError(
                f"can't create an in-memory snapshot at epoch {epoch}: there is already one at "
                f"epoch {latest}; snapshot epochs are {self._epochs}"
            )
        if epoch >= LATEST_EPOCH:
            raise ValueError(f"snapshot epoch {epoch} must be lower than LATEST_EPOCH")
        if latest == epoch:
            return self._snapshots[-1]
        snapshot = Snapshot(epoch)
        self._snapshots.append(snapshot)
        self._epochs.append(epoch)
        return snapshot

    def revert_to_snapshot(self, epoch: int) -> None:
        """Return every structure to its state at ``epoch``; newer snapshots are
        dropped.

        The target snapshot stays, so the controller can revert to it again.
        """
        i = self._require(epoch)
        # Dropping the newer snapshots newest first folds all their deltas into the
        # target, which then knows the value at ``epoch`` of every key changed since.
        while len(self._snapshots) > i + 1:
            self._delete_at(len(self._snapshots) - 1)
        self._snapshots[i]._revert()

    def delete_snapshot(self, epoch: int) -> None:
        """Forget one snapshot; reads at the other snapshots are unaffected."""
        self._delete_at(self._require(epoch))

    def delete_snapshots_up_to(self, epoch: int) -> None:
        """Forget every snapshot older than ``epoch`` (the controller passes the committed
        offset: nothing will be reverted to, or read at, an offset below it again)."""
        count = bisect.bisect_left(self._epochs, epoch)
        # The oldest snapshot's delta is simply dropped, so deleting from the oldest up
        # never merges anything: the cost is the number of snapshots deleted.
        for snapshot in self._snapshots[:count]:
            snapshot._deltas.clear()
        del self._snapshots[:count]
        del self._epochs[:count]

    def reset(self) -> None:
        """Drop every snapshot and empty every registered structure (Kafka does this before
        the controller loads its state from a metadata snapshot)."""
        self.delete_snapshots_up_to(LATEST_EPOCH)
        for revertable in self._revertables:
            revertable._reset()

    def _delete_at(self, i: int) -> None:
        snapshot = self._snapshots[i]
        if i > 0:
            self._snapshots[i - 1]._merge_from(snapshot)
        else:
            snapshot._deltas.clear()
        del self._snapshots[i]
        del self._epochs[i]


# --- hash tables ------------------------------------------------------------------------


@attrs.define(eq=False)
class _TableDelta(Generic[K, V]):
    """One table's state at one snapshot, for the keys changed after it."""

    owner: _SnapshottableTable[K, V]
    size: int  # the table's size at the snapshot
    old: dict[K, _Maybe[V]] = attrs.field(factory=dict)

    def absorb(self, newer: _Delta) -> None:
        for key, value in cast("_TableDelta[K, V]", newer).old.items():
            # A key this delta already holds changed before the newer snapshot: keep ours.
            self.old.setdefault(key, value)

    def revert(self) -> None:
        current = self.owner._current
        for key, value in self.old.items():
            if value is _ABSENT:
                current.pop(key, None)
            else:
                current[key] = value


@attrs.define(eq=False)
class _SnapshottableTable(Generic[K, V]):
    """The machinery shared by TimelineHashMap and TimelineHashSet (Kafka:
    ``SnapshottableHashTable``): a dict for now, deltas for the past."""

    _registry: SnapshotRegistry
    _current: dict[K, V] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        self._registry._register(self)

    def _record(self, key: K) -> None:
        """Called before every change of ``key``: save its old value on the first write
        after the newest snapshot. O(1); nothing to do when there is no snapshot."""
        snapshot = self._registry._newest()
        if snapshot is None:
            return
        delta = cast("_TableDelta[K, V] | None", snapshot._delta(self))
        if delta is None:
            delta = _TableDelta(self, len(self._current))
            snapshot._deltas[self] = delta
        if key not in delta.old:
            delta.old[key] = self._current.get(key, _ABSENT)

    def _lookup(self, key: K, epoch: int) -> _Maybe[V]:
        if epoch == LATEST_EPOCH:
            return self._current.get(key, _ABSENT)
        for snapshot in self._registry._from(epoch):
            delta = cast("_TableDelta[K, V] | None", snapshot._delta(self))
            if delta is not None and key in delta.old:
                return delta.old[key]
        return self._current.get(key, _ABSENT)

    def _size(self, epoch: int) -> int:
        if epoch == LATEST_EPOCH:
            return len(self._current)
        for snapshot in self._registry._from(epoch):
            delta = cast("_TableDelta[K, V] | None", snapshot._delta(self))
            if delta is not None:
                return delta.size
        return len(self._current)

    def _view(self, epoch: int) -> dict[K, V]:
        """The whole table as of ``epoch``: the current dict with the deltas undone, newest
        first, down to ``epoch``. O(size + changes since epoch)."""
        if epoch == LATEST_EPOCH:
            return self._current
        newer_first = reversed(list(self._registry._from(epoch)))
        view = dict(self._current)
        for snapshot in newer_first:
            delta = cast("_TableDelta[K, V] | None", snapshot._delta(self))
            if delta is None:
                continue
            for key, value in delta.old.items():
                if value is _ABSENT:
                    view.pop(key, None)
                else:
                    view[key] = value
        return view

    def _set(self, key: K, value: V) -> _Maybe[V]:
        self._record(key)
        previous = self._current.get(key, _ABSENT)
        self._current[key] = value
        return previous

    def _remove(self, key: K) -> _Maybe[V]:
        if key not in self._current:
            return _ABSENT
        self._record(key)
        return self._current.pop(key)

    def clear(self) -> None:
        """Remove every entry (recorded key by key, so older snapshots still see them)."""
        for key in list(self._current):
            self._remove(key)

    def _reset(self) -> None:
        self._current.clear()


@attrs.define(eq=False)
class TimelineHashMap(_SnapshottableTable[K, V]):
    """A dict whose past states at every live snapshot can be read (Kafka: ``TimelineHashMap``).

    Mutations change the current state only; reads take an ``epoch`` (a live snapshot's epoch,
    or ``LATEST_EPOCH`` for the current state).
    """

    def get(self, key: K, epoch: int = LATEST_EPOCH) -> V | None:
        value = self._lookup(key, epoch)
        return None if value is _ABSENT else value

    def __getitem__(self, key: K) -> V:
        value = self._current.get(key, _ABSENT)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    def contains_key(self, key: K, epoch: int = LATEST_EPOCH) -> bool:
        return self._lookup(key, epoch) is not _ABSENT

    def __contains__(self, key: object) -> bool:
        return key in self._current

    def put(self, key: K, value: V) -> V | None:
        """Set ``key`` to ``value``; returns the previous value (None if there was none)."""
        previous = self._set(key, value)
        return None if previous is _ABSENT else previous

    def remove(self, key: K) -> V | None:
        """Remove ``key``; returns its value (None if it was absent)."""
        previous = self._remove(key)
        return None if previous is _ABSENT else previous

    def size(self, epoch: int = LATEST_EPOCH) -> int:
        return self._size(epoch)

    def __len__(self) -> int:
        return len(self._current)

    def items(self, epoch: int = LATEST_EPOCH) -> list[tuple[K, V]]:
        """The entries as of ``epoch`` (a list: the current state may change while it is used)."""
        return list(self._view(epoch).items())

    def keys(self, epoch: int = LATEST_EPOCH) -> list[K]:
        return list(self._view(epoch))

    def values(self, epoch: int = LATEST_EPOCH) -> list[V]:
        return list(self._view(epoch).values())

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._current))


@attrs.define(eq=False)
class TimelineHashSet(_SnapshottableTable[T, None]):
    """A set whose past states at every live snapshot can be read (Kafka: ``TimelineHashSet``)."""

    def add(self, element: T) -> bool:
        """Add ``element``; True if it was not there yet."""
        if element in self._current:
            return False
        self._set(element, None)
        return True

    def remove(self, element: T) -> bool:
        """Remove ``element``; True if it was there."""
        return self._remove(element) is not _ABSENT

    def contains(self, element: T, epoch: int = LATEST_EPOCH) -> bool:
        return self._lookup(element, epoch) is not _ABSENT

    def __contains__(self, element: object) -> bool:
        return element in self._current

    def size(self, epoch: int = LATEST_EPOCH) -> int:
        return self._size(epoch)

    def __len__(self) -> int:
        return len(self._current)

    def iterate(self, epoch: int = LATEST_EPOCH) -> Iterator[T]:
        """The elements as of ``epoch``."""
        return iter(list(self._view(epoch)))

    def __iter__(self) -> Iterator[T]:
        return self.iterate()


# --- single values ----------------------------------------------------------------------


@attrs.define(eq=False)
class _ValueDelta(Generic[T]):
    """One object's value at one snapshot."""

    owner: TimelineObject[T]
    value: T

    def absorb(self, newer: _Delta) -> None:
        # This object changed after our snapshot already, so our value is the older one.
        pass

    def revert(self) -> None:
        self.owner._value = self.value


@attrs.define(eq=False)
class TimelineObject(Generic[T]):
    """One value with a history (Kafka: ``TimelineObject``); a reset restores the initial value."""

    _registry: SnapshotRegistry
    _initial_value: T
    _value: T = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._check(self._initial_value)
        self._value = self._initial_value
        self._registry._register(self)

    def _check(self, value: T) -> None:
        """Validate a value before it is stored (subclasses restrict the range)."""

    def get(self, epoch: int = LATEST_EPOCH) -> T:
        if epoch == LATEST_EPOCH:
            return self._value
        for snapshot in self._registry._from(epoch):
            delta = cast("_ValueDelta[T] | None", snapshot._delta(self))
            if delta is not None:
                return delta.value
        return self._value

    def set(self, value: T) -> None:
        self._check(value)
        snapshot = self._registry._newest()
        if snapshot is not None and snapshot._delta(self) is None:
            snapshot._deltas[self] = _ValueDelta(self, self._value)
        self._value = value

    def _reset(self) -> None:
        self._value = self._initial_value


_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)


@attrs.define(eq=False)
class _TimelineNumber(TimelineObject[int]):
    _initial_value: int = 0
    _bounds: tuple[int, int] = attrs.field(init=False, default=_INT64)

    def _check(self, value: int) -> None:
        low, high = self._bounds
        if not low <= value <= high:
            raise ValueError(
                f"{value} is outside the range [{low}, {high}] of {type(self).__name__}"
            )

    def increment(self) -> None:
        self.set(self._value + 1)

    def decrement(self) -> None:
        self.set(self._value - 1)


@attrs.define(eq=False)
class TimelineInteger(_TimelineNumber):
    """A Java ``int`` with a history (Kafka: ``TimelineInteger``): values are signed 32-bit."""

    _bounds: tuple[int, int] = attrs.field(init=False, default=_INT32)


@attrs.define(eq=False)
class TimelineLong(_TimelineNumber):
    """A Java ``long`` with a history (Kafka: ``TimelineLong``): values are signed 64-bit."""

    _bounds: tuple[int, int] = attrs.field(init=False, default=_INT64)
