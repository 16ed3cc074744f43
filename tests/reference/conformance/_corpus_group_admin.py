"""Scenarios of a group's administration: OffsetDelete (KIP-496) and ListGroups filtered
by state (v4, KIP-518) and by type (v5, KIP-848), at every version minikafka advertises.

OffsetDelete: a group with committed offsets and no members (committed by a standalone
OffsetCommit, generation -1, as ``kafka-consumer-groups --reset-offsets`` does) loses one
partition's offset and keeps the other; an unknown group; a partition of an unknown
topic and one past a topic's last; a stable group subscribed to the topic keeps it.

ListGroups: an empty group (committed offsets, no members) and a stable one, each
scenario with groups of its own, listed with each filter.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import Case
from ._corpus_groups import commit_body, fetch_offsets_body, gid, scenarios_for, stable
from ._fixtures import DATA, MISSING
from ._scenario import Scenario, Session


def offset_delete_body(group: str, parts: list[tuple[str, int]]) -> Any:
    topics: dict[str, list[dict[str, int]]] = {}
    for topic, partition in parts:
        topics.setdefault(topic, []).append({"partition_index": partition})
    return make(
        ApiKey.OFFSET_DELETE,
        0,
        group_id=group,
        topics=[{"name": t, "partitions": p} for t, p in topics.items()],
    )


def _delete_committed(s: Session, v: int) -> None:
    group = gid("offset-delete", v, "committed")
    s.call(commit_body(7, group, [(DATA, 0, 3), (DATA, 2, 1)]))
    s.check(offset_delete_body(group, [(DATA, 0)]))
    s.check(fetch_offsets_body(5, group, [(DATA, 0), (DATA, 2)]), "fetched")


def _delete_unknown_partitions(s: Session, v: int) -> None:
    group = gid("offset-delete", v, "unknown-partitions")
    s.call(commit_body(7, group, [(DATA, 0, 3)]))
    s.check(offset_delete_body(group, [(MISSING, 0), (DATA, 9), (DATA, 0)]))


def _delete_subscribed(s: Session, v: int) -> None:
    group = gid("offset-delete", v, "subscribed")
    member = stable(s, group)
    s.call(commit_body(7, group, [(DATA, 0, 3)], member))
    s.check(offset_delete_body(group, [(DATA, 0)]))


OFFSET_DELETE_CASES = {
    "committed-no-members": (_delete_committed, False),
    "unknown-group": (
        lambda s, v: s.check(
            offset_delete_body(gid("offset-delete", v, "unknown"), [(DATA, 0)])
        ),
        False,
    ),
    "unknown-topic-partition": (_delete_unknown_partitions, False),
    "subscribed": (_delete_subscribed, True),
}


def _list(filters: list[tuple[str, list[str], list[str]]]) -> Case:
    """Forms ``conf-listed-vN-<first label>-empty`` and ``-stable``, then lists with each
    (label, states, types) filter."""

    def run(s: Session, v: int) -> None:
        # Not conf-list-vN-: the unfiltered scenario lists those, concurrently.
        prefix = f"conf-listed-v{v}-{filters[0][0]}-"
        s.call(commit_body(7, prefix + "empty", [(DATA, 0, 1)]))
        stable(s, prefix + "stable")
        for label, states, types in filters:
            body = make(ApiKey.LIST_GROUPS, v, states_filter=states, types_filter=types)
            s.check(body, label, trim=prefix)

    return run


LIST_CASES = {
    "states-filter": (
        _list(
            [
                ("states", ["Empty"], []),
                ("stable", ["Stable"], []),
                ("lower-case", ["empty", "stable"], []),
                ("unknown-state", ["Bogus"], []),
                ("dead", ["Dead"], []),
            ]
        ),
        True,
    ),
    "types-filter": (
        _list(
            [
                ("types", [], ["classic"]),
                ("consumer", [], ["consumer"]),
                ("upper-case", [], ["Classic"]),
                ("unknown-type", [], ["bogus"]),
                ("both", ["Stable"], ["classic"]),
            ]
        ),
        True,
    ),
}
LIST_SINCE = {"states-filter": 4, "types-filter": 5}


def scenarios() -> Iterator[Scenario]:
    yield from scenarios_for(ApiKey.OFFSET_DELETE, "offset-delete", OFFSET_DELETE_CASES)
    yield from scenarios_for(ApiKey.LIST_GROUPS, "list-groups", LIST_CASES, LIST_SINCE)
