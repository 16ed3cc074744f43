"""Assignors: what the assignors lab promises beyond test_assignors.py's properties.

Members are taken static ones first (by ``group.instance.id``), so a restarted static
member finds its partitions again; and the page's worked example (three members
reading twelve partitions of two topics, a fourth joining) gives the numbers it prints.
The parameter ids name the assignor, so each exercise's ``select`` picks its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from minikafka.common import TopicPartition
from minikafka.coordination.assignors._assignor import Assignment, Subscription
from minikafka.coordination.assignors._cooperative_sticky import (
    CooperativeStickyAssignor,
)
from minikafka.coordination.assignors._range import RangeAssignor
from minikafka.coordination.assignors._round_robin import RoundRobinAssignor
from minikafka.coordination.assignors._sticky import StickyAssignor

Assign = Callable[
    [Mapping[str, int], Mapping[str, Subscription]], dict[str, Assignment]
]


def _assign(name: str) -> Assign:
    # Looked up at call time: a lab's switch may have replaced the classes.
    assignors: dict[str, Assign] = {
        "range": RangeAssignor().assign,
        "roundrobin": RoundRobinAssignor().assign,
        "sticky": StickyAssignor().assign,
        "cooperative": CooperativeStickyAssignor().assign,
    }
    return assignors[name]


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative"])
def test_static_members_are_taken_first_by_instance_id(name: str) -> None:
    """Member z, with an instance id, is placed as a first member a would be: a restarted
    static member (a new member id each time) keeps its place."""
    cluster = {"t": 3, "u": 5}
    topics = ("t", "u")
    static = _assign(name)(
        cluster,
        {
            "a": Subscription(topics),
            "z": Subscription(topics, group_instance_id="i-z"),
        },
    )
    dynamic = _assign(name)(
        cluster, {"a": Subscription(topics), "b": Subscription(topics)}
    )
    assert static["z"].partitions == dynamic["a"].partitions
    assert static["a"].partitions == dynamic["b"].partitions


@pytest.mark.parametrize(
    ("name", "moved", "loads"),
    [
        ("range", 2, {"c1": 4, "c2": 4, "c3": 2, "c4": 2}),
        ("roundrobin", 9, {"c1": 3, "c2": 3, "c3": 3, "c4": 3}),
        ("sticky", 3, {"c1": 3, "c2": 3, "c3": 3, "c4": 3}),
    ],
)
def test_the_pages_example_of_a_fourth_member_joining(
    name: str, moved: int, loads: dict[str, int]
) -> None:
    cluster = {"orders": 6, "payments": 6}
    topics = ("orders", "payments")
    assign = _assign(name)
    three = {m: Subscription(topics) for m in ("c1", "c2", "c3")}
    before = assign(cluster, three)
    owned = {
        m: Subscription(topics, owned_partitions=before[m].partitions, generation_id=1)
        for m in three
    }
    after = assign(cluster, {**owned, "c4": Subscription(topics)})
    owner: dict[TopicPartition, str] = {
        tp: m for m, a in before.items() for tp in a.partitions
    }
    changed = sum(
        1 for m, a in after.items() for tp in a.partitions if owner.get(tp) != m
    )
    assert changed == moved
    assert {m: len(a.partitions) for m, a in sorted(after.items())} == loads


@pytest.mark.parametrize("name", ["sticky", "cooperative"])
def test_a_group_that_did_not_change_keeps_its_partitions(name: str) -> None:
    cluster = {"orders": 5, "payments": 3}
    topics = ("orders", "payments")
    assign = _assign(name)
    members = {m: Subscription(topics) for m in ("c1", "c2", "c3")}
    first = assign(cluster, members)
    rejoined = {
        m: Subscription(topics, owned_partitions=first[m].partitions, generation_id=4)
        for m in members
    }
    assert assign(cluster, rejoined) == first
