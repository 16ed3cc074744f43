"""Scenarios of consumer groups (the classic protocol): FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups
and DeleteGroups, with the rebalance errors (unknown member, illegal generation,
rebalance in progress, inconsistent protocols) at every version minikafka advertises.

Each scenario has groups of its own (``conf-<api>-v<N>-<case>``). A scenario that needs
a stable group forms it first (JoinGroup, the rejoin KIP-394 asks for, SyncGroup by the
leader); that join waits for ``group.initial.rebalance.delay.ms`` on both brokers, so
such scenarios are marked ``parks`` and run concurrently.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import Case, versions
from ._fixtures import DATA, MISSING
from ._scenario import Scenario, Session
from ._wire import Connection

# ConsumerProtocolSubscription v0 of [conf-data], and an assignment of conf-data-0.
SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x09conf-data\xff\xff\xff\xff"
ASSIGNMENT = (
    b"\x00\x00\x00\x00\x00\x01\x00\x09conf-data"
    + b"\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
)
SESSION_MS = 10_000
REBALANCE_MS = 10_000


def join_body(
    v: int,
    group: str,
    member: str = "",
    *,
    protocol_type: str = "consumer",
    session_ms: int = SESSION_MS,
    instance: str | None = None,
    protocols: list[dict[str, object]] | None = None,
) -> Any:
    return make(
        ApiKey.JOIN_GROUP,
        v,
        group_id=group,
        session_timeout=session_ms,
        rebalance_timeout=REBALANCE_MS,
        member_id=member,
        group_instance_id=instance,
        protocol_type=protocol_type,
        protocols=[{"name": "range", "metadata": SUBSCRIPTION}]
        if protocols is None
        else protocols,
    )


@attrs.frozen
class Member:
    member_id: str
    generation: int


def join(
    s: Session,
    group: str,
    v: int = 5,
    *,
    compare: bool = False,
    conn: Connection | None = None,
    instance: str | None = None,
) -> Member:
    """Joins ``group`` as its only member: the MEMBER_ID_REQUIRED round of v4+, then
    the join that completes after the initial rebalance delay."""
    send: Callable[[Any], Any] = (
        (lambda b: s.check(b)) if compare else (conn or s.connection).call
    )
    answer = send(join_body(v, group, instance=instance))
    member = str(answer.member_id)
    if int(answer.error_code) == 79:  # MEMBER_ID_REQUIRED
        answer = send(join_body(v, group, member, instance=instance))
    return Member(str(answer.member_id), int(answer.generation_id))


def sync_body(
    v: int, group: str, m: Member, assign: bool = True, generation: int | None = None
) -> Any:
    return make(
        ApiKey.SYNC_GROUP,
        v,
        group_id=group,
        generation_id=m.generation if generation is None else generation,
        member_id=m.member_id,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[{"member_id": m.member_id, "assignment": ASSIGNMENT}]
        if assign
        else [],
    )


def stable(s: Session, group: str, conn: Connection | None = None) -> Member:
    member = join(s, group, conn=conn)
    (conn or s.connection).call(sync_body(3, group, member))
    return member


def gid(api: str, v: int, case: str) -> str:
    return f"conf-{api}-v{v}-{case}"


def scenarios_for(
    api: ApiKey,
    prefix: str,
    cases: Mapping[str, tuple[Case, bool]],
    since: dict[str, int] | None = None,
) -> Iterator[Scenario]:
    for name, (case, parks) in cases.items():
        for v in versions(api):
            if v < (since or {}).get(name, 0):
                continue
            yield Scenario(f"{prefix}.v{v}.{name}", _bind(case, v), parks=parks)


def _bind(case: Case, v: int) -> Callable[[Session], None]:
    return lambda s: case(s, v)


# --- FindCoordinator ----------------------------------------------------------------


def _find(keys: list[str], key_type: int) -> Case:
    """One key up to v3; from v4 (KIP-699) the request's list of keys."""

    def run(s: Session, v: int) -> None:
        if v >= 4:
            body = make(
                ApiKey.FIND_COORDINATOR, v, coordinator_keys=keys, key_type=key_type
            )
        else:
            body = make(ApiKey.FIND_COORDINATOR, v, key=keys[0], key_type=key_type)
        s.check(body)

    return run


FIND_CASES = {
    "group": (_find(["conf-find"], 0), False),
    "bad-key-type": (_find(["conf-find"], 7), False),
    "share-key-type": (_find(["conf-find"], 2), False),
    "groups": (_find(["conf-find", "conf-find-2", "conf-find"], 0), False),
    "no-keys": (_find([], 0), False),
    "bad-key-type-no-keys": (_find([], 7), False),
}
FIND_SINCE = {
    "bad-key-type": 1,
    "share-key-type": 1,
    "groups": 4,
    "no-keys": 4,
    "bad-key-type-no-keys": 4,
}


# --- JoinGroup ----------------------------------------------------------------------


def _join_new(s: Session, v: int) -> None:
    join(s, gid("join", v, "new"), v, compare=True)


def _join_error(case: str, **kw: Any) -> Case:
    def run(s: Session, v: int) -> None:
        s.check(join_body(v, gid("join", v, case), **kw))

    return run


def _join_other_protocol(s: Session, v: int) -> None:
    group = gid("join", v, "other-protocol")
    stable(s, group)
    s.check(join_body(v, group, "", protocol_type="connect"))


def _join_rejoin(s: Session, v: int) -> None:
    # The only member rejoins a stable group: a new generation at once.
    group = gid("join", v, "rejoin")
    m = stable(s, group)
    s.check(join_body(v, group, m.member_id))


def _join_static(s: Session, v: int) -> None:
    group = gid("join", v, "static")
    join(s, group, v, compare=True, instance="conf-instance-1")


JOIN_CASES = {
    "new-member": (_join_new, True),
    "bad-session-timeout": (_join_error("bad-session", session_ms=1000), False),
    "unknown-member": (_join_error("unknown-member", member="conf-ghost"), False),
    "no-protocols": (_join_error("no-protocols", protocols=[]), False),
    "empty-group-id": (lambda s, v: s.check(join_body(v, "")), False),
    "other-protocol-type": (_join_other_protocol, True),
    "rejoin": (_join_rejoin, True),
    "static-member": (_join_static, True),
}
JOIN_SINCE = {"static-member": 5}


# --- SyncGroup, Heartbeat, LeaveGroup -------------------------------------------------


def _sync_leader(s: Session, v: int) -> None:
    group = gid("sync", v, "leader")
    m = join(s, group)
    s.check(sync_body(v, group, m))


def _on_stable(api: str, case: str, build: Callable[[int, str, Member], Any]) -> Case:
    def run(s: Session, v: int) -> None:
        group = gid(api, v, case)
        m = stable(s, group)
        s.check(build(v, group, m))

    return run


def _heartbeat(v: int, group: str, m: Member) -> Any:
    return make(
        ApiKey.HEARTBEAT,
        v,
        group_id=group,
        generation_id=m.generation,
        member_id=m.member_id,
    )


def _ghost(m: Member) -> Member:
    return Member("conf-ghost", m.generation)


def _next_gen(m: Member) -> Member:
    return Member(m.member_id, m.generation + 1)


def _heartbeat_in_rebalance(s: Session, v: int) -> None:
    # A second member's JoinGroup starts a rebalance; the first member's heartbeat is
    # told to rejoin.
    group = gid("heartbeat", v, "rebalance")
    m = stable(s, group)
    second = s.other()
    joined: Any = second.call(join_body(5, group))  # MEMBER_ID_REQUIRED with the id
    second.send_only(join_body(5, group, str(joined.member_id)))
    deadline = time.monotonic() + 30
    while True:  # the other connection's JoinGroup is read in its own time
        state = s.call(make(ApiKey.DESCRIBE_GROUPS, 0, groups=[group])).groups[0]
        if state.group_state == "PreparingRebalance":
            break
        assert time.monotonic() < deadline, state
        time.sleep(0.02)
    s.check(_heartbeat(v, group, m))


def _leave(v: int, group: str, m: Member) -> Any:
    return make(
        ApiKey.LEAVE_GROUP,
        v,
        group_id=group,
        member_id=m.member_id,
        members=[{"member_id": m.member_id, "group_instance_id": None}],
    )


SYNC_CASES = {
    "leader": (_sync_leader, True),
    "unknown-group": (
        lambda s, v: s.check(
            sync_body(v, gid("sync", v, "unknown-group"), Member("conf-ghost", 1))
        ),
        False,
    ),
    "unknown-member": (
        _on_stable(
            "sync", "unknown-member", lambda v, g, m: sync_body(v, g, _ghost(m))
        ),
        True,
    ),
    "illegal-generation": (
        _on_stable(
            "sync", "illegal-generation", lambda v, g, m: sync_body(v, g, _next_gen(m))
        ),
        True,
    ),
}
HEARTBEAT_CASES = {
    "stable": (_on_stable("heartbeat", "stable", _heartbeat), True),
    "unknown-group": (
        lambda s, v: s.check(
            _heartbeat(v, gid("heartbeat", v, "unknown-group"), Member("conf-ghost", 1))
        ),
        False,
    ),
    "unknown-member": (
        _on_stable(
            "heartbeat", "unknown-member", lambda v, g, m: _heartbeat(v, g, _ghost(m))
        ),
        True,
    ),
    "illegal-generation": (
        _on_stable(
            "heartbeat",
            "illegal-generation",
            lambda v, g, m: _heartbeat(v, g, _next_gen(m)),
        ),
        True,
    ),
    "rebalance-in-progress": (_heartbeat_in_rebalance, True),
}


def _leave_two(s: Session, v: int) -> None:
    # v3+: a batch of members, one of them unknown.
    group = gid("leave", v, "batch")
    m = stable(s, group)
    body = make(
        ApiKey.LEAVE_GROUP,
        v,
        group_id=group,
        members=[
            {"member_id": "conf-ghost", "group_instance_id": None},
            {"member_id": m.member_id, "group_instance_id": None},
        ],
    )
    s.check(body)


LEAVE_CASES = {
    "batch-with-unknown": (_leave_two, True),
    "member": (_on_stable("leave", "member", _leave), True),
    "unknown-member": (
        _on_stable("leave", "unknown-member", lambda v, g, m: _leave(v, g, _ghost(m))),
        True,
    ),
    "unknown-group": (
        lambda s, v: s.check(
            _leave(v, gid("leave", v, "unknown-group"), Member("conf-ghost", 1))
        ),
        False,
    ),
}


# --- OffsetCommit, OffsetFetch --------------------------------------------------------


def commit_body(
    v: int,
    group: str,
    parts: list[tuple[str, int, int]],
    m: Member | None = None,
    metadata: str = "",
    leader_epoch: int = -1,
) -> Any:
    topics: dict[str, list[dict[str, object]]] = {}
    for topic, partition, offset in parts:
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": leader_epoch,
                "committed_metadata": metadata,
                "commit_timestamp": -1,
            }
        )
    return make(
        ApiKey.OFFSET_COMMIT,
        v,
        group_id=group,
        generation_id_or_member_epoch=m.generation if m else -1,
        generation_id=m.generation if m else -1,
        member_id=m.member_id if m else "",
        group_instance_id=None,
        retention_time=-1,
        topics=[{"name": t, "partitions": p} for t, p in topics.items()],
    )


def _commit(
    case: str,
    parts: list[tuple[str, int, int]],
    metadata: str = "",
    member: Member | None = None,
) -> Case:
    return lambda s, v: s.check(
        commit_body(v, gid("commit", v, case), parts, member, metadata)
    )


def _commit_member(case: str, change: Callable[[Member], Member] = lambda m: m) -> Case:
    def run(s: Session, v: int) -> None:
        group = gid("commit", v, case)
        m = stable(s, group)
        s.check(commit_body(v, group, [(DATA, 0, 3)], change(m)))

    return run


def _commit_with_epoch(s: Session, v: int) -> None:
    # v6+ carries the leader epoch of the committed offset; OffsetFetch v5 returns it.
    group = gid("commit", v, "epoch")
    body = commit_body(v, group, [(DATA, 0, 5)], leader_epoch=0)
    s.check(body)
    s.check(fetch_offsets_body(5, group, [(DATA, 0)]))


COMMIT_CASES = {
    "simple": (_commit("simple", [(DATA, 0, 4), (DATA, 2, 1)]), False),
    "unknown-topic": (_commit("unknown-topic", [(MISSING, 0, 1)]), False),
    "bad-partition": (_commit("bad-partition", [(DATA, 8, 1)]), False),
    "metadata-too-large": (
        _commit("metadata-too-large", [(DATA, 0, 1)], metadata="m" * 5000),
        False,
    ),
    "listed-twice": (_commit("listed-twice", [(DATA, 0, 1), (DATA, 0, 2)]), False),
    "unknown-member-empty-group": (
        _commit("ghost", [(DATA, 0, 1)], member=Member("conf-ghost", 1)),
        False,
    ),
    "member": (_commit_member("member"), True),
    "then-fetch": (_commit_with_epoch, False),
    "unknown-member": (_commit_member("unknown-member", _ghost), True),
    "illegal-generation": (_commit_member("illegal-generation", _next_gen), True),
}


def _fetch_topics(parts: list[tuple[str, int]] | None) -> Any:
    if parts is None:
        return None
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    return [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]


def fetch_offsets_body(
    v: int, group: str, parts: list[tuple[str, int]] | None, *more: str
) -> Any:
    """One group's offsets; from v8 (KIP-709) a list of groups, ``group`` and ``more``
    (the same partitions asked of each)."""
    topics = _fetch_topics(parts)
    return make(
        ApiKey.OFFSET_FETCH,
        v,
        group_id=group,
        topics=topics,
        groups=[
            {"group_id": g, "topics": topics, "member_id": None, "member_epoch": -1}
            for g in (group, *more)
        ],
        require_stable=False,
    )


def _fetch_committed(parts: list[tuple[str, int]] | None) -> Case:
    def run(s: Session, v: int) -> None:
        group = gid("offset-fetch", v, "committed" if parts else "all")
        s.call(commit_body(7, group, [(DATA, 0, 6), (DATA, 1, 0)], metadata="meta"))
        s.check(fetch_offsets_body(v, group, parts))

    return run


def _fetch_offsets_twice(s: Session, v: int) -> None:
    group = gid("offset-fetch", v, "twice")
    s.call(commit_body(7, group, [(DATA, 0, 2)]))
    s.check(fetch_offsets_body(v, group, [(DATA, 0), (DATA, 0)]))


def _fetch_several_groups(s: Session, v: int) -> None:
    committed = gid("offset-fetch", v, "several-a")
    s.call(commit_body(7, committed, [(DATA, 0, 3)]))
    unknown = gid("offset-fetch", v, "several-none")
    s.check(
        fetch_offsets_body(v, committed, [(DATA, 0), (DATA, 1)], unknown, committed)
    )


OFFSET_FETCH_CASES = {
    "several-groups": (_fetch_several_groups, False),
    "listed-twice": (_fetch_offsets_twice, False),
    "committed": (_fetch_committed([(DATA, 0), (DATA, 1), (DATA, 2)]), False),
    "all-partitions": (_fetch_committed(None), False),
    "unknown-group": (
        lambda s, v: s.check(
            fetch_offsets_body(v, gid("offset-fetch", v, "unknown"), [(DATA, 0)])
        ),
        False,
    ),
    "unknown-topic": (
        lambda s, v: s.check(
            fetch_offsets_body(
                v, gid("offset-fetch", v, "unknown-topic"), [(MISSING, 0)]
            )
        ),
        False,
    ),
}
OFFSET_FETCH_SINCE = {"all-partitions": 2, "several-groups": 8}


# --- DescribeGroups, ListGroups, DeleteGroups -----------------------------------------


def _describe(groups: list[str]) -> Any:
    return lambda v: make(
        ApiKey.DESCRIBE_GROUPS, v, groups=groups, include_authorized_operations=False
    )


def _describe_stable(s: Session, v: int) -> None:
    group = gid("describe", v, "stable")
    stable(s, group)
    s.check(_describe([group])(v))


def _describe_empty(s: Session, v: int) -> None:
    group = gid("describe", v, "empty")
    s.call(commit_body(7, group, [(DATA, 0, 1)]))
    s.check(_describe([group, gid("describe", v, "dead")])(v))


DESCRIBE_CASES = {
    "stable": (_describe_stable, True),
    "empty-and-dead": (_describe_empty, False),
    "listed-twice": (
        lambda s, v: s.check(_describe([gid("describe", v, "twice")] * 2)(v)),
        False,
    ),
}


def _list_groups(s: Session, v: int) -> None:
    prefix = f"conf-list-v{v}-"
    s.call(commit_body(7, prefix + "empty", [(DATA, 0, 1)]))
    s.check(make(ApiKey.LIST_GROUPS, v, states_filter=[]), trim=prefix)


def _delete(groups: list[str]) -> Any:
    return lambda v: make(ApiKey.DELETE_GROUPS, v, groups_names=groups)


def _delete_empty(s: Session, v: int) -> None:
    group = gid("delete", v, "empty")
    s.call(commit_body(7, group, [(DATA, 0, 1)]))
    s.check(_delete([group, gid("delete", v, "unknown")])(v))
    s.check(fetch_offsets_body(5, group, [(DATA, 0)]))


def _delete_stable(s: Session, v: int) -> None:
    group = gid("delete", v, "stable")
    stable(s, group)
    s.check(_delete([group])(v))


DELETE_CASES = {
    "empty-and-unknown": (_delete_empty, False),
    "non-empty": (_delete_stable, True),
    "listed-twice": (
        lambda s, v: s.check(_delete([gid("delete", v, "twice")] * 2)(v)),
        False,
    ),
}


def scenarios() -> Iterator[Scenario]:
    yield from scenarios_for(
        ApiKey.FIND_COORDINATOR, "find-coordinator", FIND_CASES, FIND_SINCE
    )
    yield from scenarios_for(ApiKey.JOIN_GROUP, "join-group", JOIN_CASES, JOIN_SINCE)
    yield from scenarios_for(ApiKey.SYNC_GROUP, "sync-group", SYNC_CASES)
    yield from scenarios_for(ApiKey.HEARTBEAT, "heartbeat", HEARTBEAT_CASES)
    yield from scenarios_for(
        ApiKey.LEAVE_GROUP, "leave-group", LEAVE_CASES, {"batch-with-unknown": 3}
    )
    yield from scenarios_for(ApiKey.OFFSET_COMMIT, "offset-commit", COMMIT_CASES)
    yield from scenarios_for(
        ApiKey.OFFSET_FETCH, "offset-fetch", OFFSET_FETCH_CASES, OFFSET_FETCH_SINCE
    )
    yield from scenarios_for(ApiKey.DESCRIBE_GROUPS, "describe-groups", DESCRIBE_CASES)
    yield from scenarios_for(
        ApiKey.LIST_GROUPS, "list-groups", {"own": (_list_groups, False)}
    )
    yield from scenarios_for(ApiKey.DELETE_GROUPS, "delete-groups", DELETE_CASES)
