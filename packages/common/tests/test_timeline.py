"""Timeline structures: reads at a snapshot epoch, revert, deletion (seed 004 section 2.1)."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from minikafka.common.timeline import (
    LATEST_EPOCH,
    SnapshotRegistry,
    TimelineHashMap,
    TimelineHashSet,
    TimelineInteger,
    TimelineLong,
    TimelineObject,
)

# --- the story of seed 004 ----------------------------------------------------------------


def test_cas_1_2_is_reverted_when_leadership_is_lost() -> None:
    """CAS(1, 2): the leader replays value=2 before Raft commits it, then loses leadership."""
    registry = SnapshotRegistry()
    value = TimelineInteger(registry, 1)
    registry.get_or_create_snapshot(9)  # offset 9 (value=1) is committed
    committed = 9

    # CAS(1, 2) succeeds against the latest state; its record goes to Raft at offset 10 and
    # is replayed at once, then a snapshot is taken at the batch's last offset.
    assert value.get() == 1
    value.set(2)
    registry.get_or_create_snapshot(10)
    assert value.get() == 2
    # Whatever is answered to the outside is read at the committed offset: still 1.
    assert value.get(committed) == 1

    # Leadership is lost before offset 10 commits: back to the last committed snapshot.
    registry.revert_to_snapshot(committed)
    assert value.get() == 1
    assert registry.epochs() == [9]


def test_commit_deletes_older_snapshots_and_reads_move_on() -> None:
    registry = SnapshotRegistry()
    value = TimelineInteger(registry, 1)
    registry.get_or_create_snapshot(9)
    value.set(2)
    registry.get_or_create_snapshot(10)
    value.set(3)
    registry.get_or_create_snapshot(11)
    # Offset 10 commits: snapshots below it are not needed any more.
    registry.delete_snapshots_up_to(10)
    assert registry.epochs() == [10, 11]
    assert (value.get(10), value.get(11), value.get()) == (2, 3, 3)
    with pytest.raises(ValueError, match="no in-memory snapshot for epoch 9"):
        value.get(9)


# --- SnapshotRegistry ---------------------------------------------------------------------


def test_registry_snapshot_epochs_only_grow() -> None:
    registry = SnapshotRegistry()
    assert registry.latest_epoch() is None
    assert registry.epochs() == []
    first = registry.get_or_create_snapshot(-1)  # the controller starts at offset -1
    assert first.epoch == -1
    assert registry.get_or_create_snapshot(-1) is first
    second = registry.get_or_create_snapshot(5)
    assert registry.get_or_create_snapshot(5) is second
    assert registry.epochs() == [-1, 5]
    assert registry.latest_epoch() == 5
    assert registry.has_snapshot(-1)
    assert not registry.has_snapshot(0)
    with pytest.raises(ValueError, match="already one at epoch 5"):
        registry.get_or_create_snapshot(4)
    with pytest.raises(ValueError, match="already one at epoch 5"):
        registry.get_or_create_snapshot(-1)  # not the newest: an error, as in Kafka
    with pytest.raises(ValueError, match="LATEST_EPOCH"):
        registry.get_or_create_snapshot(LATEST_EPOCH)


def test_registry_unknown_epochs_are_errors() -> None:
    registry = SnapshotRegistry()
    registry.get_or_create_snapshot(3)
    with pytest.raises(ValueError, match=r"epoch 4; snapshot epochs are \[3\]"):
        registry.revert_to_snapshot(4)
    with pytest.raises(ValueError, match="epoch 2"):
        registry.delete_snapshot(2)
    registry.delete_snapshots_up_to(100)  # deleting up to an epoch never fails
    assert registry.epochs() == []


def test_revert_keeps_the_target_and_drops_newer_snapshots() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[str, int](registry)
    numbers.put("a", 1)
    registry.get_or_create_snapshot(1)
    numbers.put("a", 2)
    numbers.put("b", 2)
    registry.get_or_create_snapshot(2)
    numbers.remove("a")
    registry.get_or_create_snapshot(3)
    numbers.put("c", 3)

    registry.revert_to_snapshot(1)
    assert registry.epochs() == [1]
    assert numbers.items() == [("a", 1)]
    # The target stays: write again and revert again.
    numbers.put("d", 4)
    registry.revert_to_snapshot(1)
    assert numbers.items() == [("a", 1)]
    # Later snapshots may reuse the dropped epochs.
    numbers.put("a", 7)
    registry.get_or_create_snapshot(2)
    assert (numbers.get("a", 1), numbers.get("a", 2)) == (1, 7)


def test_delete_snapshot_merges_history_into_the_older_one() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[str, int](registry)
    numbers.put("a", 1)
    registry.get_or_create_snapshot(1)
    numbers.put("a", 2)  # recorded against snapshot 1
    registry.get_or_create_snapshot(2)
    numbers.put("b", 20)  # recorded against snapshot 2
    numbers.put("a", 3)
    registry.get_or_create_snapshot(3)
    numbers.remove("b")

    registry.delete_snapshot(2)
    assert registry.epochs() == [1, 3]
    assert dict(numbers.items(1)) == {"a": 1}
    assert dict(numbers.items(3)) == {"a": 3, "b": 20}
    assert dict(numbers.items()) == {"a": 3}
    registry.revert_to_snapshot(1)
    assert dict(numbers.items()) == {"a": 1}

    # Deleting the oldest snapshot forgets its history; the others still read correctly.
    registry.get_or_create_snapshot(4)
    numbers.put("z", 26)
    registry.delete_snapshot(1)
    assert dict(numbers.items(4)) == {"a": 1}
    assert numbers.size(4) == 1


def test_reset_drops_snapshots_and_empties_everything() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[str, int](registry)
    members = TimelineHashSet[int](registry)
    count = TimelineLong(registry, 5)
    name = TimelineObject(registry, "initial")
    numbers.put("a", 1)
    members.add(1)
    registry.get_or_create_snapshot(1)
    count.increment()
    name.set("changed")
    registry.reset()
    assert registry.epochs() == []
    assert (len(numbers), len(members), count.get(), name.get()) == (0, 0, 5, "initial")
    # The structures still work against the same registry afterwards.
    registry.get_or_create_snapshot(10)
    numbers.put("b", 2)
    assert numbers.get("b", 10) is None
    assert numbers.get("b") == 2


# --- TimelineHashMap ------------------------------------------------------------------------


def test_map_latest_reads_and_writes() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[str, int | None](registry)
    assert numbers.put("a", 1) is None
    assert numbers.put("a", 2) == 1
    assert numbers.put("n", None) is None  # None is a value like any other
    assert numbers["a"] == 2
    assert numbers["n"] is None
    assert "n" in numbers
    assert numbers.contains_key("n")
    assert not numbers.contains_key("x")
    assert numbers.get("x") is None
    with pytest.raises(KeyError):
        numbers["x"]
    assert len(numbers) == numbers.size() == 2
    assert sorted(numbers) == ["a", "n"]
    assert sorted(numbers.keys()) == ["a", "n"]
    assert sorted(numbers.values(), key=str) == [2, None]
    assert numbers.remove("a") == 2
    assert numbers.remove("a") is None
    numbers.clear()
    assert len(numbers) == 0
    assert numbers.items() == []


def test_map_reads_at_an_epoch() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[str, int | None](registry)
    numbers.put("a", 1)
    numbers.put("n", None)
    registry.get_or_create_snapshot(100)
    numbers.put("a", 2)
    numbers.remove("n")
    numbers.put("b", 3)
    registry.get_or_create_snapshot(200)
    numbers.clear()

    assert numbers.get("a", 100) == 1
    assert numbers.contains_key("n", 100)
    assert numbers.get("n", 100) is None
    assert not numbers.contains_key("b", 100)
    assert numbers.size(100) == 2
    assert sorted(numbers.keys(100)) == ["a", "n"]
    assert dict(numbers.items(200)) == {"a": 2, "b": 3}
    assert sorted(numbers.values(200), key=str) == [2, 3]
    assert numbers.size(200) == 2
    assert numbers.size() == 0
    assert numbers.items() == []
    with pytest.raises(ValueError, match="epoch 150"):
        numbers.get("a", 150)
    with pytest.raises(ValueError, match="epoch 150"):
        numbers.items(150)
    with pytest.raises(ValueError, match="epoch 150"):
        numbers.size(150)


def test_map_iteration_is_safe_while_writing() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[int, int](registry)
    for i in range(5):
        numbers.put(i, i)
    for key in numbers:
        numbers.remove(key)
        numbers.put(key + 10, key)
    assert sorted(numbers) == [10, 11, 12, 13, 14]


def test_writes_without_snapshots_keep_no_history() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[int, int](registry)
    for i in range(100):
        numbers.put(i % 3, i)
    snapshot = registry.get_or_create_snapshot(0)
    assert snapshot._deltas == {}
    numbers.put(0, -1)
    numbers.put(0, -2)  # only the first write after the snapshot is recorded
    delta = snapshot._deltas[numbers]
    assert delta.old == {0: 99}  # type: ignore[attr-defined]


# --- TimelineHashSet ------------------------------------------------------------------------


def test_set_operations_and_reads_at_an_epoch() -> None:
    registry = SnapshotRegistry()
    members = TimelineHashSet[str](registry)
    assert members.add("a")
    assert not members.add("a")
    assert members.add("b")
    registry.get_or_create_snapshot(1)
    assert members.remove("a")
    assert not members.remove("a")
    members.add("c")
    assert "c" in members
    assert "a" not in members
    assert members.contains("a", 1)
    assert not members.contains("c", 1)
    assert not members.contains("a")
    assert (len(members), members.size(), members.size(1)) == (2, 2, 2)
    assert sorted(members) == ["b", "c"]
    assert sorted(members.iterate()) == ["b", "c"]
    assert sorted(members.iterate(1)) == ["a", "b"]
    members.clear()
    assert len(members) == 0
    assert sorted(members.iterate(1)) == ["a", "b"]
    with pytest.raises(ValueError, match="epoch 2"):
        members.contains("a", 2)


# --- TimelineObject, TimelineInteger, TimelineLong -------------------------------------------


def test_object_reads_at_an_epoch() -> None:
    registry = SnapshotRegistry()
    leader = TimelineObject[int | None](registry, None)
    assert leader.get() is None
    registry.get_or_create_snapshot(1)
    leader.set(1000)
    registry.get_or_create_snapshot(2)
    leader.set(1001)
    leader.set(1002)
    assert (leader.get(1), leader.get(2), leader.get()) == (None, 1000, 1002)
    with pytest.raises(ValueError, match="epoch 3"):
        leader.get(3)
    registry.revert_to_snapshot(2)
    assert leader.get() == 1000


def test_integer_increment_decrement_and_bounds() -> None:
    registry = SnapshotRegistry()
    counter = TimelineInteger(registry)
    assert counter.get() == 0
    counter.increment()
    counter.increment()
    counter.decrement()
    assert counter.get() == 1
    counter.set(2**31 - 1)
    with pytest.raises(ValueError, match="outside the range"):
        counter.increment()  # Java's int would wrap; we refuse instead
    assert counter.get() == 2**31 - 1
    counter.set(-(2**31))
    with pytest.raises(ValueError, match="TimelineInteger"):
        counter.decrement()
    with pytest.raises(ValueError, match="outside the range"):
        TimelineInteger(registry, 2**31)


def test_long_bounds() -> None:
    registry = SnapshotRegistry()
    counter = TimelineLong(registry, 2**31)  # too big for an int, fine for a long
    counter.increment()
    assert counter.get() == 2**31 + 1
    counter.set(2**63 - 1)
    with pytest.raises(ValueError, match="TimelineLong"):
        counter.increment()
    counter.set(-(2**63))
    with pytest.raises(ValueError, match="outside the range"):
        counter.decrement()


# --- property: every structure against a model of full copies ---------------------------------

Model = tuple[dict[int, int | None], frozenset[int], int]


class TimelineModel(RuleBasedStateMachine):
    """Random operations on a map, a set and an integer sharing one registry, checked after
    every step against full copies of the state taken at each snapshot."""

    @initialize()
    def start(self) -> None:
        self.registry = SnapshotRegistry()
        self.map = TimelineHashMap[int, int | None](self.registry)
        self.set = TimelineHashSet[int](self.registry)
        self.integer = TimelineInteger(self.registry)
        self.model_map: dict[int, int | None] = {}
        self.model_set: set[int] = set()
        self.model_integer = 0
        self.snapshots: list[
            tuple[int, Model]
        ] = []  # (epoch, state at that epoch), oldest first
        self.next_epoch = 0

    def current(self) -> Model:
        return dict(self.model_map), frozenset(self.model_set), self.model_integer

    @rule(key=st.integers(0, 6), value=st.none() | st.integers(0, 3))
    def put(self, key: int, value: int | None) -> None:
        expected = self.model_map.get(key)
        assert self.map.put(key, value) == expected
        self.model_map[key] = value

    @rule(key=st.integers(0, 6))
    def remove(self, key: int) -> None:
        assert self.map.remove(key) == self.model_map.pop(key, None)

    @rule(element=st.integers(0, 6))
    def add(self, element: int) -> None:
        assert self.set.add(element) == (element not in self.model_set)
        self.model_set.add(element)

    @rule(element=st.integers(0, 6))
    def discard(self, element: int) -> None:
        assert self.set.remove(element) == (element in self.model_set)
        self.model_set.discard(element)

    @rule(value=st.integers(-5, 5))
    def set_integer(self, value: int) -> None:
        self.integer.set(value)
        self.model_integer = value

    @rule(up=st.booleans())
    def step_integer(self, up: bool) -> None:
        if up:
            self.integer.increment()
            self.model_integer += 1
        else:
            self.integer.decrement()
            self.model_integer -= 1

    @rule()
    def clear(self) -> None:
        self.map.clear()
        self.set.clear()
        self.model_map.clear()
        self.model_set.clear()

    @rule(gap=st.integers(0, 3))
    def snapshot(self, gap: int) -> None:
        epoch = self.next_epoch + gap
        self.registry.get_or_create_snapshot(epoch)
        if self.snapshots and self.snapshots[-1][0] == epoch:
            # Same epoch again: the existing snapshot, taken before the writes since.
            return
        self.snapshots.append((epoch, self.current()))
        self.next_epoch = epoch

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data())
    def revert(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.snapshots) - 1))
        epoch, (map_state, set_state, integer) = self.snapshots[index]
        self.registry.revert_to_snapshot(epoch)
        del self.snapshots[index + 1 :]
        self.model_map = dict(map_state)
        self.model_set = set(set_state)
        self.model_integer = integer

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data())
    def delete_one(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.snapshots) - 1))
        self.registry.delete_snapshot(self.snapshots.pop(index)[0])

    @rule(offset=st.integers(-1, 4))
    def commit(self, offset: int) -> None:
        up_to = self.next_epoch + offset - 2
        self.registry.delete_snapshots_up_to(up_to)
        self.snapshots = [(e, state) for e, state in self.snapshots if e >= up_to]

    @rule()
    def reset(self) -> None:
        self.registry.reset()
        self.snapshots.clear()
        self.model_map, self.model_set, self.model_integer = {}, set(), 0

    @invariant()
    def every_epoch_reads_as_its_copy(self) -> None:
        assert self.registry.epochs() == [epoch for epoch, _ in self.snapshots]
        for epoch, (map_state, set_state, integer) in [
            *self.snapshots,
            (LATEST_EPOCH, self.current()),
        ]:
            assert dict(self.map.items(epoch)) == map_state
            assert len(self.map.items(epoch)) == self.map.size(epoch) == len(map_state)
            assert sorted(self.map.keys(epoch)) == sorted(map_state)
            assert sorted(map(str, self.map.values(epoch))) == sorted(
                map(str, map_state.values())
            )
            assert set(self.set.iterate(epoch)) == set_state
            assert self.set.size(epoch) == len(set_state)
            assert self.integer.get(epoch) == integer
            for key in range(7):
                assert self.map.contains_key(key, epoch) == (key in map_state)
                assert self.map.get(key, epoch) == map_state.get(key)
                assert self.set.contains(key, epoch) == (key in set_state)
        assert dict(self.map.items()) == {key: self.map[key] for key in self.map}
        assert len(self.map) == len(self.model_map)
        assert set(self.set) == self.model_set
        assert len(self.set) == len(self.model_set)


TimelineModel.TestCase.settings = settings(
    max_examples=300, stateful_step_count=40, deadline=None
)
test_timeline_against_full_copies = TimelineModel.TestCase
