"""The group APIs through a running broker, over the wire, version by version.

Each test runs a BrokerServer in its own trio loop and drives it with one NetworkClient
per group member, as consumers do: a connection is muted while its request is in flight,
so a member whose JoinGroup is parked could not heartbeat on the same connection.
Request bodies are built from kio's classes of the version under test (``request``), and
every response is checked to be that version's response class. The initial rebalance
delay is 0, so a lone member's JoinGroup is answered at once.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import attrs
import pytest
import trio
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from minikafka.broker import BrokerServer, KafkaApis
from minikafka.broker.testing import (
    WireClient,
    element,
    request_body,
    request_class,
    running_broker,
    single_node_config,
)
from minikafka.coordination import GroupState
from minikafka.net import NetworkClient, Node, build, nested
from minikafka.net.testing import wait_until

DEADLINE = 30.0  # seconds; generous for a shared 2-core machine
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT = 8, 9, 10, 11, 12
LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 13, 14, 15, 16
CREATE_TOPICS, DELETE_GROUPS, OFFSET_DELETE = 19, 42, 47
GROUP_APIS = (
    JOIN_GROUP,
    SYNC_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    DELETE_GROUPS,
    OFFSET_DELETE,
)
LOWEST = {k: KafkaApis.SUPPORTED[k][0] for k in GROUP_APIS}
HIGHEST = {k: KafkaApis.SUPPORTED[k][1] for k in GROUP_APIS}
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
}
TOPIC = "orders"
RANGE = (("range", b"meta"),)
OMITTED = -(2**31)


def versions(api_key: int) -> range:
    low, high = KafkaApis.SUPPORTED[api_key]
    return range(low, high + 1)


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


@attrs.define
class Client(WireClient):
    """A group member, or an admin tool, and the requests it sends."""

    async def join(
        self,
        group: str,
        version: int,
        *,
        member_id: str = "",
        protocols: Sequence[tuple[str, bytes]] = RANGE,
        protocol_type: str = "consumer",
        instance_id: str | None = None,
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
    ) -> Any:
        cls = request_class(JOIN_GROUP, version)
        protocol_cls = element(cls, "protocols")
        body = build(
            cls,
            group_id=group,
            session_timeout=ms(session_ms),
            rebalance_timeout=ms(rebalance_ms),
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=tuple(
                build(protocol_cls, name=n, metadata=m) for n, m in protocols
            ),
        )
        return await self.call(body)

    async def join_as_new(
        self,
        group: str,
        version: int,
        *,
        protocols: Sequence[tuple[str, bytes]] = RANGE,
        instance_id: str | None = None,
    ) -> Any:
        """A new member's join: from v4 a dynamic member is handed an id and rejoins."""
        joined = await self.join(
            group, version, protocols=protocols, instance_id=instance_id
        )
        if version >= 4 and instance_id is None:
            assert joined.error_code is ErrorCode.member_id_required
            assert joined.member_id
            joined = await self.join(
                group, version, member_id=joined.member_id, protocols=protocols
            )
        return joined

    async def sync(
        self,
        group: str,
        version: int,
        generation: int,
        member_id: str,
        plan: Mapping[str, bytes] | None = None,
        instance_id: str | None = None,
    ) -> Any:
        cls = request_class(SYNC_GROUP, version)
        return await self.call(
            build(
                cls,
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance_id,
                assignments=tuple(
                    build(element(cls, "assignments"), member_id=m, assignment=a)
                    for m, a in (plan or {}).items()
                ),
            )
        )

    async def heartbeat(
        self,
        group: str,
        version: int,
        generation: int,
        member_id: str,
        instance_id: str | None = None,
    ) -> ErrorCode:
        body = request_body(
            HEARTBEAT,
            version,
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
        )
        return cast(ErrorCode, (await self.call(body)).error_code)

    async def leave(
        self, group: str, version: int, members: Sequence[tuple[str, str | None]]
    ) -> Any:
        """LeaveGroup of (member id, instance id) pairs; before v3 exactly one member id."""
        if version < 3:
            [(member_id, _)] = members
            return await self.call(
                request_body(LEAVE_GROUP, version, group_id=group, member_id=member_id)
            )
        cls = request_class(LEAVE_GROUP, version)
        return await self.call(
            build(
                cls,
                group_id=group,
                members=tuple(
                    build(element(cls, "members"), member_id=m, group_instance_id=i)
                    for m, i in members
                ),
            )
        )

    async def commit(
        self,
        group: str,
        version: int,
        offsets: Mapping[str, Sequence[tuple[int, int, int, str | None]]],
        *,
        generation: int = -1,
        member_id: str = "",
    ) -> list[tuple[str, int, ErrorCode]]:
        """OffsetCommit of topic -> (partition, offset, leader epoch, metadata) entries;
        the answer as (topic, partition, error) in the response's order."""
        cls = request_class(OFFSET_COMMIT, version)
        topic_cls = element(cls, "topics")
        partition_cls = element(topic_cls, "partitions")
        body = build(
            cls,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            retention_time=datetime.timedelta(milliseconds=-1),
            topics=tuple(
                build(
                    topic_cls,
                    name=name,
                    partitions=tuple(
                        build(
                            partition_cls,
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=e,
                            committed_metadata=m,
                        )
                        for p, o, e, m in entries
                    ),
                )
                for name, entries in offsets.items()
            ),
        )
        response = await self.call(body)
        return [
            (t.name, int(p.partition_index), p.error_code)
            for t in response.topics
            for p in t.partitions
        ]

    async def fetch(
        self, group: str, version: int, partitions: Mapping[str, Sequence[int]] | None
    ) -> Any:
        """OffsetFetch of topic -> partitions; None asks for all (v2+). From v8 the
        request lists groups (KIP-709): this asks for one, and returns its entry, which
        has the error code and topics a v2-v7 response has at the top."""
        cls = request_class(OFFSET_FETCH, version)
        batched = version >= 8
        group_cls = element(cls, "groups") if batched else cls
        topic_cls = element(group_cls, "topics")
        topics = (
            None
            if partitions is None
            else tuple(
                build(topic_cls, name=n, partition_indexes=tuple(ps))
                for n, ps in partitions.items()
            )
        )
        if not batched:
            return await self.call(build(cls, group_id=group, topics=topics))
        entry = build(group_cls, group_id=group, topics=topics)
        [answer] = (await self.call(build(cls, groups=(entry,)))).groups
        assert answer.group_id == group
        return answer

    async def describe(
        self, version: int, *groups: str, operations: bool = False
    ) -> Any:
        body = request_body(
            DESCRIBE_GROUPS,
            version,
            groups=groups,
            include_authorized_operations=operations,
        )
        return (await self.call(body)).groups

    async def list_groups(self, version: int) -> Any:
        return await self.call(request_body(LIST_GROUPS, version))

    async def delete(self, version: int, *groups: str) -> dict[str, ErrorCode]:
        response = await self.call(
            request_body(DELETE_GROUPS, version, groups_names=groups)
        )
        return {r.group_id: r.error_code for r in response.results}


def fetched(
    response: Any,
) -> dict[tuple[str, int], tuple[int, int, str | None, ErrorCode]]:
    """(topic, partition) -> (offset, leader epoch or -1, metadata, error)."""
    return {
        (t.name, int(p.partition_index)): (
            int(p.committed_offset),
            int(getattr(p, "committed_leader_epoch", -1)),
            p.metadata,
            p.error_code,
        )
        for t in response.topics
        for p in t.partitions
    }


@attrs.define
class Broker:
    server: BrokerServer
    node: Node
    _stack: AsyncExitStack

    async def client(self, client_id: str) -> Client:
        """A new connection (each group member needs its own)."""
        network = await self._stack.enter_async_context(
            NetworkClient.open(client_id=client_id)
        )
        return Client(network, self.node)

    def state(self, group: str) -> GroupState | None:
        found = self.server.groups.core.group(group)
        return None if found is None else found.state

    async def prepare(self, admin: Client) -> None:
        """Create ``__consumer_offsets`` (FindCoordinator does, as in Kafka) and TOPIC."""
        await self.find_coordinator(admin)
        await self.create_topic(admin)

    async def find_coordinator(self, admin: Client) -> None:
        found = await admin.call(
            request_body(FIND_COORDINATOR, 2, key="any", key_type=0)
        )
        assert found.error_code is ErrorCode.none
        assert int(found.node_id) == self.server.config.node_id

    async def create_topic(self, admin: Client, partitions: int = 2) -> None:
        cls = request_class(CREATE_TOPICS, 4)
        topic = build(
            element(cls, "topics"),
            name=TOPIC,
            num_partitions=partitions,
            replication_factor=1,
            assignments=(),
            configs=(),
        )
        body = build(
            cls,
            topics=(topic,),
            timeout=datetime.timedelta(seconds=30),
            validate_only=False,
        )
        [created] = (await admin.call(body)).topics
        assert created.error_code is ErrorCode.none


@asynccontextmanager
async def running(
    data_dir: Path, overrides: Mapping[str, str] | None = None
) -> AsyncIterator[Broker]:
    config = single_node_config(data_dir, {**OVERRIDES, **(overrides or {})})
    async with running_broker(config) as server, AsyncExitStack() as stack:
        host, port = server.bound_address()
        yield Broker(server, Node(config.node_id, host, port), stack)


@asynccontextmanager
async def prepared(tmp_path: Path) -> AsyncIterator[Broker]:
    """A broker with ``__consumer_offsets`` and TOPIC. (Not a fixture: the clients'
    nurseries must open and close in the test's own task.)"""
    async with running(tmp_path / "data") as broker:
        await broker.prepare(await broker.client("setup"))
        yield broker


# --- every advertised version ----------------------------------------------------------


async def test_every_advertised_version_of_every_group_api_is_answered(
    tmp_path: Path,
) -> None:
    """One request per version of each group API, in an order that makes each succeed:
    a group per JoinGroup version, then the others on the last one; LeaveGroup and
    DeleteGroups empty and remove the first groups."""
    async with prepared(tmp_path) as broker:
        admin = await broker.client("sweep")
        answered: dict[int, list[int]] = {}

        def seen(api_key: int, version: int) -> None:
            answered.setdefault(api_key, []).append(version)

        members: list[tuple[str, str]] = []
        for v in versions(JOIN_GROUP):
            group = f"sweep-{v}"
            joined = await admin.join_as_new(group, v)
            assert joined.error_code is ErrorCode.none
            assert (joined.leader, joined.generation_id) == (joined.member_id, 1)
            assert [m.member_id for m in joined.members] == [joined.member_id]
            assert joined.protocol_name == "range"
            members.append((group, joined.member_id))
            seen(JOIN_GROUP, v)
        group, member = members[-1]
        first_plan = b"plan-%d" % LOWEST[SYNC_GROUP]
        for v in versions(SYNC_GROUP):
            synced = await admin.sync(group, v, 1, member, {member: b"plan-%d" % v})
            # The first SyncGroup makes the group Stable; later ones fetch the same plan.
            assert (synced.error_code, synced.assignment) == (
                ErrorCode.none,
                first_plan,
            )
            seen(SYNC_GROUP, v)
        for v in versions(HEARTBEAT):
            assert await admin.heartbeat(group, v, 1, member) is ErrorCode.none
            seen(HEARTBEAT, v)
        for v in versions(OFFSET_COMMIT):
            result = await admin.commit(
                group,
                v,
                {TOPIC: [(0, 100 + v, -1, f"v{v}")]},
                generation=1,
                member_id=member,
            )
            assert result == [(TOPIC, 0, ErrorCode.none)]
            seen(OFFSET_COMMIT, v)
        last_commit = HIGHEST[OFFSET_COMMIT]
        for v in versions(OFFSET_FETCH):
            offsets = fetched(await admin.fetch(group, v, {TOPIC: [0]}))
            assert offsets == {
                (TOPIC, 0): (100 + last_commit, -1, f"v{last_commit}", ErrorCode.none)
            }
            seen(OFFSET_FETCH, v)
        for v in versions(DESCRIBE_GROUPS):
            [described] = await admin.describe(v, group)
            assert (described.error_code, described.group_state) == (
                ErrorCode.none,
                "Stable",
            )
            assert [m.member_id for m in described.members] == [member]
            seen(DESCRIBE_GROUPS, v)
        for v in versions(LIST_GROUPS):
            listed = await admin.list_groups(v)
            assert listed.error_code is ErrorCode.none
            assert {(g.group_id, g.protocol_type) for g in listed.groups} == {
                (g, "consumer") for g, _ in members
            }
            seen(LIST_GROUPS, v)
        # A group of its own for each LeaveGroup version, the last group kept.
        leaving = members[:-1]
        for v in versions(LEAVE_GROUP)[len(leaving) :]:
            extra = f"sweep-leave-{v}"
            joined = await admin.join_as_new(extra, HIGHEST[JOIN_GROUP])
            leaving.append((extra, joined.member_id))
        for v, (g, m) in zip(versions(LEAVE_GROUP), leaving, strict=False):
            left = await admin.leave(g, v, [(m, None)])
            assert left.error_code is ErrorCode.none
            if v >= 3:
                assert [(r.member_id, r.error_code) for r in left.members] == [
                    (m, ErrorCode.none)
                ]
            assert broker.state(g) is GroupState.EMPTY
            seen(LEAVE_GROUP, v)
        for v in versions(OFFSET_DELETE):
            # The last group keeps its member, whose metadata is no subscription Kafka
            # can read: every topic counts as subscribed, and the offset stays.
            topic_cls = request_class(OFFSET_DELETE, v)
            [answer] = (
                await admin.call(
                    request_body(
                        OFFSET_DELETE,
                        v,
                        group_id=group,
                        topics=(
                            build(
                                nested(topic_cls, "topics"),
                                name=TOPIC,
                                partitions=(
                                    build(
                                        nested(
                                            nested(topic_cls, "topics"), "partitions"
                                        ),
                                        partition_index=0,
                                    ),
                                ),
                            ),
                        ),
                    )
                )
            ).topics
            assert (
                answer.partitions[0].error_code is ErrorCode.group_subscribed_to_topic
            )
            seen(OFFSET_DELETE, v)
        for v, (g, _) in zip(versions(DELETE_GROUPS), members, strict=False):
            assert await admin.delete(v, g) == {g: ErrorCode.none}
            assert broker.state(g) is None
            seen(DELETE_GROUPS, v)
        assert answered == {k: list(versions(k)) for k in GROUP_APIS}


# --- a whole group's life ------------------------------------------------------------------


@pytest.mark.parametrize("api", [LOWEST, HIGHEST], ids=["lowest", "highest"])
async def test_a_group_from_join_to_delete(
    tmp_path: Path, api: Mapping[int, int]
) -> None:
    async with prepared(tmp_path) as broker:
        group = "life"
        a, b = await broker.client("member-a"), await broker.client("member-b")
        admin = await broker.client("admin")
        # From JoinGroup v5 members may be static (KIP-345): b is one.
        b_instance = "b-static" if api[JOIN_GROUP] >= 5 else None
        protocols_a, protocols_b = (("range", b"meta-a"),), (("range", b"meta-b"),)

        # a alone: generation 1, a leads, a assigns itself everything.
        joined_a = await a.join_as_new(group, api[JOIN_GROUP], protocols=protocols_a)
        assert (joined_a.error_code, joined_a.generation_id) == (ErrorCode.none, 1)
        a_id = joined_a.member_id
        assert a_id.startswith("member-a-")  # Kafka's member id: client id, then a UUID
        synced = await a.sync(group, api[SYNC_GROUP], 1, a_id, {a_id: b"all"})
        assert (synced.error_code, synced.assignment) == (ErrorCode.none, b"all")
        assert broker.state(group) is GroupState.STABLE

        # b joins: the group rebalances, and a learns it from its heartbeat.
        answers: dict[str, Any] = {}

        async def join_b() -> None:
            answers["b"] = await b.join_as_new(
                group, api[JOIN_GROUP], protocols=protocols_b, instance_id=b_instance
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(join_b)
            await wait_until(
                lambda: broker.state(group) is GroupState.PREPARING_REBALANCE, DEADLINE
            )
            assert (
                await a.heartbeat(group, api[HEARTBEAT], 1, a_id)
                is ErrorCode.rebalance_in_progress
            )
            answers["a"] = await a.join(
                group, api[JOIN_GROUP], member_id=a_id, protocols=protocols_a
            )
        leader, follower = answers["a"], answers["b"]
        b_id = follower.member_id
        for answer in (leader, follower):
            assert (answer.error_code, answer.generation_id) == (ErrorCode.none, 2)
            assert (answer.leader, answer.protocol_name) == (a_id, "range")
        # Only the leader learns the members, each with its metadata for the chosen protocol.
        assert [(m.member_id, m.metadata) for m in leader.members] == [
            (a_id, b"meta-a"),
            (b_id, b"meta-b"),
        ]
        if api[JOIN_GROUP] >= 5:
            assert [m.group_instance_id for m in leader.members] == [None, b_instance]
        assert follower.members == ()

        # The leader's plan is taken apart: each member gets its own bytes.
        async def sync_b() -> None:
            answers["sync-b"] = await b.sync(
                group, api[SYNC_GROUP], 2, b_id, instance_id=b_instance
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sync_b)
            plan = {a_id: b"assign-a", b_id: b"assign-b"}
            answers["sync-a"] = await a.sync(group, api[SYNC_GROUP], 2, a_id, plan)
        assert (answers["sync-a"].error_code, answers["sync-a"].assignment) == (
            ErrorCode.none,
            b"assign-a",
        )
        assert (answers["sync-b"].error_code, answers["sync-b"].assignment) == (
            ErrorCode.none,
            b"assign-b",
        )
        assert await a.heartbeat(group, api[HEARTBEAT], 2, a_id) is ErrorCode.none
        assert await b.heartbeat(group, api[HEARTBEAT], 2, b_id) is ErrorCode.none

        # Commits: the leader epoch travels from OffsetCommit v6 and back from OffsetFetch v5.
        entries = [(0, 42, 7, "note-0"), (1, 43, 7, None)]
        result = await a.commit(
            group, api[OFFSET_COMMIT], {TOPIC: entries}, generation=2, member_id=a_id
        )
        assert result == [(TOPIC, 0, ErrorCode.none), (TOPIC, 1, ErrorCode.none)]
        epoch = 7 if api[OFFSET_COMMIT] >= 6 and api[OFFSET_FETCH] >= 5 else -1
        expected = {
            (TOPIC, 0): (42, epoch, "note-0", ErrorCode.none),
            (TOPIC, 1): (
                43,
                epoch,
                "",
                ErrorCode.none,
            ),  # null metadata is stored as ""
        }
        assert (
            fetched(await b.fetch(group, api[OFFSET_FETCH], {TOPIC: [0, 1]}))
            == expected
        )
        if api[OFFSET_FETCH] >= 2:
            everything = await b.fetch(group, api[OFFSET_FETCH], None)
            assert (everything.error_code, fetched(everything)) == (
                ErrorCode.none,
                expected,
            )

        [described] = await admin.describe(api[DESCRIBE_GROUPS], group)
        assert (described.error_code, described.group_state) == (
            ErrorCode.none,
            "Stable",
        )
        assert (described.protocol_type, described.protocol_data) == (
            "consumer",
            "range",
        )
        assert [
            (
                m.member_id,
                m.client_id,
                m.client_host,
                m.member_metadata,
                m.member_assignment,
            )
            for m in described.members
        ] == [
            (a_id, "member-a", "/127.0.0.1", b"meta-a", b"assign-a"),
            (b_id, "member-b", "/127.0.0.1", b"meta-b", b"assign-b"),
        ]
        if api[DESCRIBE_GROUPS] >= 4:
            assert [m.group_instance_id for m in described.members] == [
                None,
                b_instance,
            ]
        if api[DESCRIBE_GROUPS] >= 3:
            assert described.authorized_operations == OMITTED  # not asked for
        listed = await admin.list_groups(api[LIST_GROUPS])
        assert listed.error_code is ErrorCode.none
        assert [(g.group_id, g.protocol_type) for g in listed.groups] == [
            (group, "consumer")
        ]

        # b leaves: a must rejoin; a leaves too and the group is Empty, offsets kept.
        left = await b.leave(group, api[LEAVE_GROUP], [(b_id, b_instance)])
        assert left.error_code is ErrorCode.none
        if api[LEAVE_GROUP] >= 3:
            assert [
                (m.member_id, m.group_instance_id, m.error_code) for m in left.members
            ] == [(b_id, b_instance, ErrorCode.none)]
        assert (
            await a.heartbeat(group, api[HEARTBEAT], 2, a_id)
            is ErrorCode.rebalance_in_progress
        )
        assert (
            await a.leave(group, api[LEAVE_GROUP], [(a_id, None)])
        ).error_code is ErrorCode.none
        [described] = await admin.describe(api[DESCRIBE_GROUPS], group)
        assert (described.group_state, described.members) == ("Empty", ())
        assert (
            fetched(await b.fetch(group, api[OFFSET_FETCH], {TOPIC: [0]}))[(TOPIC, 0)][
                0
            ]
            == 42
        )

        # Deleted: Dead to DescribeGroups (and not found from v6, KIP-1043), gone from
        # ListGroups, its offsets gone.
        assert await admin.delete(api[DELETE_GROUPS], group) == {group: ErrorCode.none}
        [described] = await admin.describe(api[DESCRIBE_GROUPS], group)
        gone_error = (
            ErrorCode.group_id_not_found
            if api[DESCRIBE_GROUPS] >= 6
            else ErrorCode.none
        )
        assert (described.error_code, described.group_state) == (gone_error, "Dead")
        assert (await admin.list_groups(api[LIST_GROUPS])).groups == ()
        gone = fetched(await admin.fetch(group, api[OFFSET_FETCH], {TOPIC: [0]}))
        assert gone == {(TOPIC, 0): (-1, -1, "", ErrorCode.none)}
        assert await admin.delete(api[DELETE_GROUPS], group) == {
            group: ErrorCode.group_id_not_found
        }


# --- JoinGroup ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", list(versions(JOIN_GROUP)))
async def test_member_id_required_from_join_group_v4_only(
    tmp_path: Path, version: int
) -> None:
    """KIP-394: from v4 a new dynamic member is handed an id to rejoin with; before, it
    joins at once (the core would otherwise leave clients of v0-3 without an id)."""
    async with prepared(tmp_path) as broker:
        member = await broker.client("joiner")
        first = await member.join("kip-394", version)
        assert first.member_id.startswith("joiner-")
        if version < 4:
            assert first.error_code is ErrorCode.none
            assert first.leader == first.member_id
            return
        assert first.error_code is ErrorCode.member_id_required
        assert (first.generation_id, first.members) == (-1, ())
        # a pending member is no member
        assert broker.state("kip-394") is GroupState.EMPTY
        second = await member.join("kip-394", version, member_id=first.member_id)
        assert (second.error_code, second.member_id) == (
            ErrorCode.none,
            first.member_id,
        )


async def test_a_second_member_joining_makes_the_first_ones_heartbeat_rebalance_in_progress(
    tmp_path: Path,
) -> None:
    async with prepared(tmp_path) as broker:
        a, b = await broker.client("a"), await broker.client("b")
        joined = await a.join_as_new("busy", HIGHEST[JOIN_GROUP])
        assert (
            await a.sync("busy", 3, 1, joined.member_id, {})
        ).error_code is ErrorCode.none
        assert await a.heartbeat("busy", 3, 1, joined.member_id) is ErrorCode.none
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b.join_as_new, "busy", HIGHEST[JOIN_GROUP])
            await wait_until(
                lambda: broker.state("busy") is GroupState.PREPARING_REBALANCE, DEADLINE
            )
            for v in versions(HEARTBEAT):
                error = await a.heartbeat("busy", v, 1, joined.member_id)
                assert error is ErrorCode.rebalance_in_progress
            # a rejoins, which completes the rebalance and lets b's JoinGroup return.
            again = await a.join(
                "busy", HIGHEST[JOIN_GROUP], member_id=joined.member_id
            )
            assert (again.error_code, again.generation_id) == (ErrorCode.none, 2)


async def test_a_parked_join_group_does_not_hold_up_other_requests(
    tmp_path: Path,
) -> None:
    """A JoinGroup waits for the whole rebalance; with one request handler task it must
    not keep that task, or the other member's heartbeat (which tells it to rejoin) waits
    behind it until the rebalance times out (Kafka parks it in a purgatory instead)."""
    async with running(tmp_path / "data", {"num.io.threads": "1"}) as broker:
        admin = await broker.client("admin")
        await broker.prepare(admin)
        a, b = await broker.client("a"), await broker.client("b")
        first = await a.join_as_new("parked", 5)
        second: dict[str, Any] = {}

        async def join_b() -> None:
            second["b"] = await b.join_as_new("parked", 5)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(join_b)
            await wait_until(
                lambda: broker.state("parked") is GroupState.PREPARING_REBALANCE,
                DEADLINE,
            )
            # b's JoinGroup is parked now; a's requests are still served promptly.
            with trio.fail_after(5):
                error = await a.heartbeat("parked", 3, 1, first.member_id)
            assert error is ErrorCode.rebalance_in_progress
            with trio.fail_after(5):
                again = await a.join("parked", 5, member_id=first.member_id)
            assert again.error_code is ErrorCode.none
        assert second["b"].generation_id == again.generation_id == 2


async def test_a_restarted_static_leader_keeps_its_place_without_assigning(
    tmp_path: Path,
) -> None:
    """KIP-345: a static member rejoining with no member id while its group is Stable
    takes its place under a new id, with no rebalance, and its old id is fenced. Before
    JoinGroup v9 (KIP-814) it must not be told it leads, or it would assign for nothing."""
    async with prepared(tmp_path) as broker:
        a = await broker.client("a")
        first = await a.join_as_new("static", 5, instance_id="a-1")
        plan = {first.member_id: b"mine"}
        synced = await a.sync("static", 3, 1, first.member_id, plan, instance_id="a-1")
        assert synced.error_code is ErrorCode.none
        restarted = await broker.client("a")
        again = await restarted.join("static", 5, instance_id="a-1")
        assert (again.error_code, again.generation_id) == (ErrorCode.none, 1)
        assert again.member_id != first.member_id
        assert again.leader != again.member_id
        assert again.members == ()
        assert broker.state("static") is GroupState.STABLE
        synced = await restarted.sync(
            "static", 3, 1, again.member_id, instance_id="a-1"
        )
        assert (synced.error_code, synced.assignment) == (ErrorCode.none, b"mine")
        stale = await a.heartbeat("static", 3, 1, first.member_id, instance_id="a-1")
        assert stale is ErrorCode.fenced_instance_id


@pytest.mark.parametrize(
    ("protocol_type", "protocols"),
    [("", RANGE), ("consumer", ())],
    ids=["no-protocol-type", "no-protocols"],
)
async def test_a_join_without_protocols_is_inconsistent(
    tmp_path: Path, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
) -> None:
    async with prepared(tmp_path) as broker:
        member = await broker.client("odd")
        for v in versions(JOIN_GROUP):
            joined = await member.join(
                f"odd-{v}", v, protocol_type=protocol_type, protocols=protocols
            )
            assert joined.error_code is ErrorCode.inconsistent_group_protocol
            # null from v7, where it became nullable; "" before
            assert joined.protocol_name == (None if v >= 7 else "")


async def test_a_join_with_another_protocol_type_or_no_common_protocol_is_refused(
    tmp_path: Path,
) -> None:
    async with prepared(tmp_path) as broker:
        a, b = await broker.client("a"), await broker.client("b")
        joined = await a.join_as_new("picky", 5, protocols=(("range", b"x"),))
        assert joined.error_code is ErrorCode.none
        other_type = await b.join("picky", 3, protocol_type="connect")
        assert other_type.error_code is ErrorCode.inconsistent_group_protocol
        no_common = await b.join("picky", 3, protocols=(("roundrobin", b"y"),))
        assert no_common.error_code is ErrorCode.inconsistent_group_protocol


async def test_a_session_timeout_outside_the_broker_bounds_is_refused(
    tmp_path: Path,
) -> None:
    async with prepared(tmp_path) as broker:
        member = await broker.client("m")
        for v in versions(JOIN_GROUP):
            too_short = await member.join("bounds", v, session_ms=1)
            assert too_short.error_code is ErrorCode.invalid_session_timeout


async def test_a_huge_protocol_list_with_duplicates_is_handled(tmp_path: Path) -> None:
    async with prepared(tmp_path) as broker:
        member = await broker.client("many")
        protocols = [(f"p{i}", b"m%d" % i) for i in range(2000)] + [("p0", b"dup")]
        joined = await member.join("many", 3, protocols=protocols)
        assert joined.error_code is ErrorCode.none
        # The member's first choice wins, with the metadata it gave first.
        assert joined.protocol_name == "p0"
        assert [m.metadata for m in joined.members] == [b"m0"]


# --- group ids, coordinators and malformed requests ----------------------------------------


async def test_an_empty_group_id_is_invalid_for_group_membership(
    tmp_path: Path,
) -> None:
    """Kafka's isValidGroupId: JoinGroup, SyncGroup, Heartbeat and LeaveGroup need a
    group id; OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept "" (old
    consumers committed under it)."""
    async with prepared(tmp_path) as broker:
        member = await broker.client("m")
        for v in versions(JOIN_GROUP):
            assert (await member.join("", v)).error_code is ErrorCode.invalid_group_id
        for v in versions(SYNC_GROUP):
            assert (
                await member.sync("", v, 1, "x")
            ).error_code is ErrorCode.invalid_group_id
        for v in versions(HEARTBEAT):
            assert await member.heartbeat("", v, 1, "x") is ErrorCode.invalid_group_id
        for v in versions(LEAVE_GROUP):
            left = await member.leave("", v, [("x", None)])
            assert left.error_code is ErrorCode.invalid_group_id
            if v >= 3:
                assert left.members == ()
        assert await member.commit("", 7, {TOPIC: [(0, 5, -1, None)]}) == [
            (TOPIC, 0, ErrorCode.none)
        ]
        assert fetched(await member.fetch("", 5, {TOPIC: [0]}))[(TOPIC, 0)][0] == 5
        [described] = await member.describe(4, "")
        assert (described.error_code, described.group_state) == (
            ErrorCode.none,
            "Empty",
        )
        assert await member.delete(1, "") == {"": ErrorCode.none}


async def test_before_the_offsets_topic_exists_this_broker_is_not_the_coordinator(
    tmp_path: Path,
) -> None:
    """Group requests name NOT_COORDINATOR (the client then asks FindCoordinator), each
    version where it can: OffsetFetch v1 in every partition, from v2 at the top."""
    async with running(tmp_path / "data") as broker:
        client = await broker.client("early")
        # the topic exists; the group's coordinator not
        await broker.create_topic(client)
        for v in versions(JOIN_GROUP):
            assert (await client.join("g", v)).error_code is ErrorCode.not_coordinator
        for v in versions(HEARTBEAT):
            assert await client.heartbeat("g", v, 1, "m") is ErrorCode.not_coordinator
        for v in versions(OFFSET_FETCH):
            response = await client.fetch("g", v, {TOPIC: [0, 1]})
            if v < 2:
                assert fetched(response) == {
                    (TOPIC, p): (-1, -1, "", ErrorCode.not_coordinator) for p in (0, 1)
                }
            else:
                assert (response.error_code, response.topics) == (
                    ErrorCode.not_coordinator,
                    (),
                )
        for v in versions(OFFSET_COMMIT):
            result = await client.commit("g", v, {TOPIC: [(0, 1, -1, None)]})
            assert result == [(TOPIC, 0, ErrorCode.not_coordinator)]
        for v in versions(DESCRIBE_GROUPS):
            [described] = await client.describe(v, "g")
            # Kafka's NoState: the broker cannot say anything about the group.
            assert (described.error_code, described.group_state) == (
                ErrorCode.not_coordinator,
                "",
            )
        assert await client.delete(1, "g") == {"g": ErrorCode.not_coordinator}
        assert (await client.list_groups(2)).groups == ()


async def test_offset_fetch_answers_each_group_of_a_batch(tmp_path: Path) -> None:
    """OffsetFetch v8+ (KIP-709): each listed group gets its own entry, in the
    request's order, a repeated group each time; a group with no commits has none."""
    async with prepared(tmp_path) as broker:
        admin = await broker.client("batch")
        await admin.commit("a", 7, {TOPIC: [(0, 5, -1, "m")]})
        await admin.commit("b", 7, {TOPIC: [(1, 9, -1, None)]})
        for v in range(8, HIGHEST[OFFSET_FETCH] + 1):
            cls = request_class(OFFSET_FETCH, v)
            group_cls = element(cls, "groups")
            body = build(
                cls,
                groups=tuple(build(group_cls, group_id=g, topics=None) for g in "abca"),
            )
            answer = await admin.call(body)
            assert [g.group_id for g in answer.groups] == ["a", "b", "c", "a"]
            assert [fetched(g) for g in answer.groups] == [
                {(TOPIC, 0): (5, -1, "m", ErrorCode.none)},
                {(TOPIC, 1): (9, -1, "", ErrorCode.none)},
                {},
                {(TOPIC, 0): (5, -1, "m", ErrorCode.none)},
            ]
            assert {g.error_code for g in answer.groups} == {ErrorCode.none}


async def test_find_coordinator_answers_every_version_and_each_key_of_a_batch(
    tmp_path: Path,
) -> None:
    """FindCoordinator v0-3 answers one key; from v4 (KIP-699) each key of the list gets
    its own entry, in the request's order, a repeated key each time; a transactional id
    (key type 1) has this broker as its coordinator too, and a key type Kafka does not
    know is answered INVALID_REQUEST per key, as Kafka's batched path does."""
    async with running(tmp_path / "data") as broker:
        client = await broker.client("finder")
        node, invalid = broker.server.config.node_id, ErrorCode.invalid_request

        def answers(found: Any) -> list[tuple[str, ErrorCode, int]]:
            return [(c.key, c.error_code, int(c.node_id)) for c in found.coordinators]

        other_types = ((1, ErrorCode.none, node), (7, invalid, -1))
        for v in versions(FIND_COORDINATOR):
            if v < 4:
                found = await client.call(request_body(FIND_COORDINATOR, v, key="g"))
                assert (found.error_code, int(found.node_id)) == (ErrorCode.none, node)
                continue
            keys = ("g", "h", "g")
            found = await client.call(
                request_body(FIND_COORDINATOR, v, coordinator_keys=keys, key_type=0)
            )
            assert answers(found) == [(k, ErrorCode.none, node) for k in keys]
            for key_type, error, coordinator in other_types:
                found = await client.call(
                    request_body(
                        FIND_COORDINATOR, v, coordinator_keys=("t",), key_type=key_type
                    )
                )
                assert answers(found) == [("t", error, coordinator)]
            found = await client.call(
                request_body(FIND_COORDINATOR, v, coordinator_keys=(), key_type=0)
            )
            assert answers(found) == []


@pytest.mark.parametrize("version", list(versions(OFFSET_FETCH)))
async def test_offset_fetch_of_an_unknown_group(tmp_path: Path, version: int) -> None:
    async with prepared(tmp_path) as broker:
        client = await broker.client("c")
        response = await client.fetch(
            "nobody", version, {TOPIC: [1, 0], "elsewhere": [3]}
        )
        assert fetched(response) == {
            (TOPIC, 1): (-1, -1, "", ErrorCode.none),
            (TOPIC, 0): (-1, -1, "", ErrorCode.none),
            ("elsewhere", 3): (-1, -1, "", ErrorCode.none),
        }
        # Answered in the order asked.
        assert [
            (t.name, [int(p.partition_index) for p in t.partitions])
            for t in response.topics
        ] == [
            (TOPIC, [1, 0]),
            ("elsewhere", [3]),
        ]
        if version >= 2:
            assert response.error_code is ErrorCode.none
            everything = await client.fetch("nobody", version, None)
            assert (everything.error_code, everything.topics) == (ErrorCode.none, ())


async def test_commits_from_outside_a_group_and_unknown_partitions(
    tmp_path: Path,
) -> None:
    """A "simple" consumer (generation -1, no member id) may commit to a group with no
    members; a partition that does not exist is refused, the others are kept."""
    async with prepared(tmp_path) as broker:
        client = await broker.client("simple")
        entries: dict[str, list[tuple[int, int, int, str | None]]] = {
            TOPIC: [(1, 11, -1, "a"), (-1, 5, -1, None), (7, 5, -1, None)],
            "nope": [(0, 1, -1, None)],
        }
        result = await client.commit("simple", 7, entries)
        assert result == [
            (TOPIC, 1, ErrorCode.none),
            (TOPIC, -1, ErrorCode.unknown_topic_or_partition),
            (TOPIC, 7, ErrorCode.unknown_topic_or_partition),
            ("nope", 0, ErrorCode.unknown_topic_or_partition),
        ]
        assert fetched(await client.fetch("simple", 5, None)) == {
            (TOPIC, 1): (11, -1, "a", ErrorCode.none)
        }


async def test_a_member_commit_with_a_stale_generation_is_refused(
    tmp_path: Path,
) -> None:
    async with prepared(tmp_path) as broker:
        member = await broker.client("m")
        joined = await member.join_as_new("gen", 5)
        assert (
            await member.sync("gen", 3, 1, joined.member_id, {})
        ).error_code is ErrorCode.none
        for generation, error in [
            (0, ErrorCode.illegal_generation),
            (1, ErrorCode.none),
        ]:
            result = await member.commit(
                "gen",
                7,
                {TOPIC: [(0, 3, -1, None)]},
                generation=generation,
                member_id=joined.member_id,
            )
            assert result == [(TOPIC, 0, error)]
        outsider = await member.commit("gen", 7, {TOPIC: [(0, 3, -1, None)]})
        assert outsider == [(TOPIC, 0, ErrorCode.unknown_member_id)]


async def test_duplicates_in_one_request_are_answered_not_fatal(tmp_path: Path) -> None:
    """Decodable oddities get Kafka's answers and the connection goes on."""
    async with prepared(tmp_path) as broker:
        client = await broker.client("dups")
        a, b = await broker.client("a"), await broker.client("b")
        first = await a.join_as_new("dup", 3)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b.join_as_new, "dup", 3)
            await wait_until(
                lambda: broker.state("dup") is GroupState.PREPARING_REBALANCE, DEADLINE
            )
            await a.join("dup", 3, member_id=first.member_id)
        # The same member twice in one LeaveGroup v3: it leaves once.
        left = await client.leave(
            "dup", 3, [(first.member_id, None), (first.member_id, None)]
        )
        assert [m.error_code for m in left.members] == [
            ErrorCode.none,
            ErrorCode.unknown_member_id,
        ]
        # The same partition twice in one OffsetCommit: answered twice, the last one kept.
        result = await client.commit(
            "solo", 7, {TOPIC: [(0, 1, -1, None), (0, 2, -1, None)]}
        )
        assert result == [(TOPIC, 0, ErrorCode.none), (TOPIC, 0, ErrorCode.none)]
        assert fetched(await client.fetch("solo", 5, {TOPIC: [0, -5]})) == {
            (TOPIC, 0): (2, -1, "", ErrorCode.none),
            (TOPIC, -5): (-1, -1, "", ErrorCode.none),
        }
        # The same group twice in one DeleteGroups: deleted once, answered once.
        assert await client.delete(1, "solo", "solo") == {"solo": ErrorCode.none}
        # A SyncGroup from a member the leader did not expect, with a plan: refused.
        synced = await client.sync("dup", 3, 2, "stranger", {"stranger": b"x"})
        assert synced.error_code is ErrorCode.unknown_member_id


async def test_describe_groups_reports_operations_only_when_asked(
    tmp_path: Path,
) -> None:
    async with prepared(tmp_path) as broker:
        member = await broker.client("m")
        assert (await member.join_as_new("ops", 5)).error_code is ErrorCode.none
        for v in range(3, HIGHEST[DESCRIBE_GROUPS] + 1):
            [plain] = await member.describe(v, "ops")
            assert plain.authorized_operations == OMITTED
            [asked, unknown] = await member.describe(
                v, "ops", "unknown", operations=True
            )
            # No authorizer: every group operation, READ, DELETE and DESCRIBE (bits 3, 6, 8).
            assert asked.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)
            # An unknown group: Dead, and from v6 not found (KIP-1043).
            assert (unknown.error_code, unknown.group_state, unknown.members) == (
                ErrorCode.group_id_not_found if v >= 6 else ErrorCode.none,
                "Dead",
                (),
            )
            if v >= 6:
                assert unknown.error_message == "Group unknown not found."


async def test_delete_groups_refuses_a_group_with_members(tmp_path: Path) -> None:
    async with prepared(tmp_path) as broker:
        member = await broker.client("m")
        assert (await member.join_as_new("busy", 5)).error_code is ErrorCode.none
        for v in versions(DELETE_GROUPS):
            assert await member.delete(v, "busy", "never") == {
                "busy": ErrorCode.non_empty_group,
                "never": ErrorCode.group_id_not_found,
            }


# --- durability ----------------------------------------------------------------------------


async def test_commits_and_groups_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running(data) as broker:
        admin = await broker.client("admin")
        await broker.prepare(admin)
        member = await broker.client("m")
        joined = await member.join_as_new("kept", 5)
        plan = {joined.member_id: b"mine"}
        assert (
            await member.sync("kept", 3, 1, joined.member_id, plan)
        ).error_code is ErrorCode.none
        result = await member.commit(
            "kept",
            7,
            {TOPIC: [(0, 17, 2, "seventeen"), (1, 4, 2, None)]},
            generation=1,
            member_id=joined.member_id,
        )
        assert {e for _, _, e in result} == {ErrorCode.none}
    async with running(data) as broker:
        client = await broker.client("after")
        # The group is replayed from __consumer_offsets once this broker leads its
        # partition again (after the controller has unfenced it).
        core = broker.server.groups.core
        await wait_until(lambda: core.group_status("kept") is ErrorCode.none, DEADLINE)
        response = await client.fetch("kept", 5, None)
        assert response.error_code is ErrorCode.none
        assert fetched(response) == {
            (TOPIC, 0): (17, 2, "seventeen", ErrorCode.none),
            (TOPIC, 1): (4, 2, "", ErrorCode.none),
        }
        [described] = await client.describe(4, "kept")
        assert described.group_state == "Stable"
        assert [(m.member_id, m.member_assignment) for m in described.members] == [
            (joined.member_id, b"mine")
        ]
