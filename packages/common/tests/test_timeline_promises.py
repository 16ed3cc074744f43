"""Timeline structures: what the timeline lab promises, one quick deterministic case
each (the hypothesis model in test_timeline.py covers the same ground at
random, more slowly)."""

from __future__ import annotations

from minikafka.common.timeline import SnapshotRegistry, TimelineHashMap


def test_the_size_at_an_epoch_is_the_size_the_table_had_then() -> None:
    registry = SnapshotRegistry()
    numbers = TimelineHashMap[str, int](registry)
    numbers.put("a", 1)
    numbers.put("b", 2)
    registry.get_or_create_snapshot(1)
    numbers.put("c", 3)  # the first write after snapshot 1 adds a key
    numbers.put("d", 4)
    assert numbers.size(1) == 2
    assert numbers.size() == 4
    registry.get_or_create_snapshot(2)
    numbers.remove("a")  # the first write after snapshot 2 removes one
    assert (numbers.size(1), numbers.size(2), numbers.size()) == (2, 4, 3)


def test_deleting_a_snapshot_keeps_what_only_it_saved() -> None:
    """Merging a deleted snapshot into the older one adopts the deltas of structures the
    older one has none for: their state at the older epoch is their state at the newer."""
    registry = SnapshotRegistry()
    first = TimelineHashMap[str, int](registry)
    second = TimelineHashMap[str, int](registry)
    second.put("kept", 0)
    registry.get_or_create_snapshot(1)
    first.put("x", 1)  # only ``first`` changes after snapshot 1
    registry.get_or_create_snapshot(2)
    second.put("y", 2)  # ``second`` changes only after snapshot 2
    second.remove("kept")
    registry.delete_snapshot(2)
    assert dict(second.items(1)) == {"kept": 0}
    assert dict(first.items(1)) == {}
    registry.revert_to_snapshot(1)
    assert dict(first.items()) == {}
    assert dict(second.items()) == {"kept": 0}
