"""The admin clients' offsets, group, cluster and partition calls against a real broker:
``list_offsets``, ``list_consumer_group_offsets``, ``alter_consumer_group_offsets``,
``delete_consumer_group_offsets``, ``list_consumer_groups`` with filters,
``describe_cluster``, ``describe_log_dirs``, ``elect_leaders``, the reassignment calls
and ``describe_metadata_quorum``; each with the error it gives for what cannot be done.

They are the client package's calls, tested here because they need a broker, which sits
above the client. Each test runs a single KRaft node in this trio loop
(``tool_cluster``); a live group is a kafka-python consumer that joined it, polled in a
worker thread (its heartbeats run in a thread of its own).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
from kafka import KafkaConsumer
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import bootstrap, single_node_config, tool_cluster
from minikafka.client import (
    AdminClient,
    AsyncAdminClient,
    ElectionType,
    KafkaError,
    KafkaException,
    ListOffsetsResultInfo,
    NewTopic,
    OffsetAndMetadata,
    OffsetSpec,
)
from minikafka.client import TopicPartition as ClientTopicPartition
from minikafka.common import TopicPartition
from minikafka.common.testing import GROUP_POLL_MS
from minikafka.net import ApiKey, NetworkClient, Node
from minikafka.tools._produce import ProduceOptions, produce

DEADLINE = 60.0  # seconds; a shared 2-core machine may be slow, never this slow
JOIN_WAIT = 30.0
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
}
T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[AsyncAdminClient]:
    async with tool_cluster(
        single_node_config(tmp_path / "data", OVERRIDES)
    ) as cluster:
        with trio.fail_after(DEADLINE):
            assert await cluster.create_topics([NewTopic("orders", 2, 1)]) == {
                "orders": None
            }
        yield cluster


async def fill(cluster: AsyncAdminClient, partition: int, count: int) -> None:
    async def records() -> AsyncIterator[bytes]:
        for i in range(count):
            yield b"r%d" % i

    options = ProduceOptions("orders", partition=partition)
    result = await produce(bootstrap(cluster), options, records(), print)
    assert result.sent == count


async def after_now() -> int:
    """A time in ms that every record produced from now on is later than."""
    mark = int(time.time() * 1000)
    await trio.sleep(0.002)  # the wall clock's next millisecond, at least
    assert int(time.time() * 1000) > mark
    return mark + 1


def live_member(cluster: AsyncAdminClient, group: str) -> Any:
    """A kafka-python consumer that joined ``group`` (subscribed to orders) and holds
    its partitions; close it to leave."""
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=bootstrap(cluster),
        group_id=group,
        enable_auto_commit=False,
        heartbeat_interval_ms=100,
        session_timeout_ms=6000,
        fetch_max_wait_ms=100,
    )
    deadline = time.monotonic() + JOIN_WAIT
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer never joined"
        consumer.poll(timeout_ms=GROUP_POLL_MS)
    return consumer


def offset_of(answer: ListOffsetsResultInfo | KafkaError) -> int:
    assert isinstance(answer, ListOffsetsResultInfo), answer
    return answer.offset


def code_of(error: object) -> int:
    assert isinstance(error, KafkaError), error
    return error.code()


# --- list_offsets ----------------------------------------------------------------------


async def test_list_offsets_gives_the_log_start_the_high_watermark_and_a_time(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: earliest is the log start (0), latest the high watermark (records
    # produced), for_timestamp the first record at or after the time (-1 past the
    # last), each from the partition's leader; a client TopicPartition is read as
    # its topic and partition.
    with trio.fail_after(DEADLINE):
        await fill(cluster, 0, 3)
        mark = await after_now()
        await fill(cluster, 0, 2)
        either: dict[ClientTopicPartition | TopicPartition, OffsetSpec] = {
            ClientTopicPartition("orders", 0): OffsetSpec.earliest(),
            T1: OffsetSpec.latest(),
        }
        answers = await cluster.list_offsets(either)
        assert answers == {
            T0: ListOffsetsResultInfo(0, -1, answers[T0].leader_epoch),  # type: ignore[union-attr]
            T1: ListOffsetsResultInfo(0, -1, answers[T1].leader_epoch),  # type: ignore[union-attr]
        }
        latest = await cluster.list_offsets({T0: OffsetSpec.latest()})
        assert offset_of(latest[T0]) == 5
        timed = await cluster.list_offsets({T0: OffsetSpec.for_timestamp(mark)})
        found = timed[T0]
        assert isinstance(found, ListOffsetsResultInfo)
        assert found.offset == 3
        assert found.timestamp >= mark
        future = await cluster.list_offsets(
            {T0: OffsetSpec.for_timestamp(int(time.time() * 1000) + 3_600_000)}
        )
        assert offset_of(future[T0]) == -1


async def test_list_offsets_refuses_unknown_partitions_alone(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: an unknown topic and a partition past the topic's count answer
    # UNKNOWN_TOPIC_OR_PARTITION, each alone: the partition asked beside them is
    # answered.
    with trio.fail_after(DEADLINE):
        answers = await cluster.list_offsets(
            {
                TopicPartition("nope", 0): OffsetSpec.latest(),
                TopicPartition("orders", 7): OffsetSpec.latest(),
                T0: OffsetSpec.latest(),
            }
        )
        codes = {
            tp: a.code() if isinstance(a, KafkaError) else a.offset
            for tp, a in answers.items()
        }
        assert codes == {
            TopicPartition("nope", 0): ErrorCode.unknown_topic_or_partition,
            TopicPartition("orders", 7): ErrorCode.unknown_topic_or_partition,
            T0: 0,
        }


async def test_max_timestamp_is_sent_as_v7_where_served_and_refused_where_not(
    cluster: AsyncAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guarantee: OffsetSpec.max_timestamp() (KIP-734) goes as ListOffsets v7 to a
    # leader that serves it and finds the latest-stamped record; a leader that serves
    # only up to v5 is not sent it: UNSUPPORTED_VERSION for that partition alone.
    with trio.fail_after(DEADLINE):
        await fill(cluster, 0, 3)
        mark = await after_now()
        await fill(cluster, 0, 2)
        newest = await cluster.list_offsets({T0: OffsetSpec.max_timestamp()})
        found = newest[T0]
        assert isinstance(found, ListOffsetsResultInfo), found
        assert found.offset in (3, 4)
        assert found.timestamp >= mark

        served = dict(await cluster.client.api_versions(cluster.bootstrap[0]))
        served[ApiKey.LIST_OFFSETS] = (1, 5)

        async def older(
            client: NetworkClient, node: Node
        ) -> dict[int, tuple[int, int]]:
            return served

        monkeypatch.setattr(NetworkClient, "api_versions", older)
        answers = await cluster.list_offsets(
            {T0: OffsetSpec.max_timestamp(), T1: OffsetSpec.latest()}
        )
        assert code_of(answers[T0]) == ErrorCode.unsupported_version
        assert "v7" in answers[T0].str()  # type: ignore[union-attr]
        assert offset_of(answers[T1]) == 0


# --- a group's offsets -------------------------------------------------------------------


async def test_an_admin_commit_is_listed_and_a_deletion_removes_it(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: alter_consumer_group_offsets commits for a group with no members
    # (creating it: listed Empty), list_consumer_group_offsets reads the offsets back
    # (all, or those asked), delete_consumer_group_offsets removes one and leaves the
    # other; the synchronous AdminClient's futures give the same.
    with trio.fail_after(DEADLINE):
        await fill(cluster, 0, 4)
        done = await cluster.alter_consumer_group_offsets(
            "audit", {T0: OffsetAndMetadata(3, "note"), T1: 0}
        )
        assert done == {T0: None, T1: None}
        listed = await cluster.list_consumer_group_offsets(["audit"])
        assert listed == {
            "audit": {
                T0: OffsetAndMetadata(3, "note", listed["audit"][T0].leader_epoch),  # type: ignore[index]
                T1: OffsetAndMetadata(0, "", None),
            }
        }
        only = await cluster.list_consumer_group_offsets(["audit"], [T1])
        assert only == {"audit": {T1: OffsetAndMetadata(0, "", None)}}
        assert await cluster.list_consumer_groups(states=["Empty"]) == ["audit"]
        assert await cluster.list_consumer_groups(states=["Stable"]) == []
        (listing,) = await cluster.list_consumer_group_listings()
        assert (listing.group_id, listing.state) == ("audit", "Empty")
        assert listing.is_simple_consumer_group

        assert await cluster.delete_consumer_group_offsets("audit", [T1]) == {T1: None}
        left = await cluster.list_consumer_group_offsets(["audit"])
        assert set(left["audit"]) == {T0}  # type: ignore[arg-type]

        def sync() -> tuple[object, object]:
            admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})
            offsets = admin.list_consumer_group_offsets(["audit"])["audit"].result(30)
            gone = admin.delete_consumer_group_offsets("audit", [T0])[T0].result(30)
            return offsets, gone

        offsets, gone = await trio.to_thread.run_sync(sync)
        assert set(offsets) == {T0}  # type: ignore[call-overload]
        assert gone is None


async def test_offsets_of_an_unknown_group_are_none_and_cannot_be_deleted(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: a group the coordinator does not know has no committed offsets (an
    # empty answer, as Kafka's), and deleting its offsets is GROUP_ID_NOT_FOUND for
    # every partition asked.
    with trio.fail_after(DEADLINE):
        assert await cluster.list_consumer_group_offsets(["ghost"]) == {"ghost": {}}
        answers = await cluster.delete_consumer_group_offsets("ghost", [T0, T1])
        assert {tp: e.code() for tp, e in answers.items() if e} == {
            T0: ErrorCode.group_id_not_found,
            T1: ErrorCode.group_id_not_found,
        }


async def test_a_live_group_refuses_an_admin_commit_and_keeps_its_subscribed_offsets(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: while the group has a member, the coordinator refuses the admin's
    # commit (generation -1) with UNKNOWN_MEMBER_ID and its offsets of a subscribed
    # topic with GROUP_SUBSCRIBED_TO_TOPIC; the group is listed Stable.
    with trio.fail_after(DEADLINE):
        assert await cluster.alter_consumer_group_offsets("live", {T0: 0}) == {T0: None}
        member = await trio.to_thread.run_sync(live_member, cluster, "live")
        try:
            refused = await cluster.alter_consumer_group_offsets("live", {T0: 1})
            assert code_of(refused[T0]) == ErrorCode.unknown_member_id
            kept = await cluster.delete_consumer_group_offsets("live", [T0])
            assert code_of(kept[T0]) == ErrorCode.group_subscribed_to_topic
            assert await cluster.list_consumer_groups(states=["Stable"]) == ["live"]
            assert await cluster.list_consumer_groups(types=["classic"]) == ["live"]
        finally:
            await trio.to_thread.run_sync(member.close)
        offsets = await cluster.list_consumer_group_offsets(["live"])
        assert offsets["live"] == {T0: OffsetAndMetadata(0, "", None)}


# --- the cluster -------------------------------------------------------------------------


async def test_describe_cluster_and_log_dirs_name_this_broker_and_its_replicas(
    cluster: AsyncAdminClient,
    tmp_path: Path,
) -> None:
    # Guarantee: describe_cluster names the one broker as controller and node, with
    # the metadata's cluster id; describe_log_dirs gives its log dir holding both
    # partitions (sizes counting the records produced), and BROKER_NOT_AVAILABLE for
    # a broker that is not there.
    with trio.fail_after(DEADLINE):
        await fill(cluster, 0, 2)
        described = await cluster.describe_cluster()
        metadata = await cluster.metadata([])
        (node,) = described.nodes
        assert described.cluster_id == metadata.cluster_id
        assert described.controller == node == cluster.brokers[node.node_id]
        dirs = await cluster.describe_log_dirs([node.node_id, 99])
        assert isinstance(dirs[99], KafkaError)
        assert dirs[99].code() == ErrorCode.broker_not_available
        mine = dirs[node.node_id]
        assert not isinstance(mine, KafkaError)
        (path,) = mine
        assert Path(path).name == "data"
        replicas = mine[path].replica_infos
        assert {T0, T1} <= set(replicas)
        assert replicas[T0].size > 0
        assert replicas[T1].size == 0
        assert mine[path].error is None


async def test_elections_and_reassignments_answer_per_partition(
    cluster: AsyncAdminClient,
) -> None:
    # Guarantee: a preferred election where the preferred replica leads is
    # ELECTION_NOT_NEEDED, of an unknown partition UNKNOWN_TOPIC_OR_PARTITION;
    # a reassignment onto the replica it has completes at once (nothing left in
    # progress), cancelling one that is not in progress is
    # NO_REASSIGNMENT_IN_PROGRESS; the quorum's leader is this node.
    with trio.fail_after(DEADLINE):
        (node_id,) = (await cluster.describe_cluster()).nodes[0:1]
        me = node_id.node_id
        elected = await cluster.elect_leaders(
            ElectionType.PREFERRED, [T0, TopicPartition("nope", 0)]
        )
        assert {tp: e.code() if e else 0 for tp, e in elected.items()} == {
            T0: ErrorCode.election_not_needed,
            TopicPartition("nope", 0): ErrorCode.unknown_topic_or_partition,
        }
        moved = await cluster.alter_partition_reassignments({T0: [me], T1: None})
        assert moved[T0] is None
        assert code_of(moved[T1]) == ErrorCode.no_reassignment_in_progress
        deadline = trio.current_time() + 30
        while await cluster.list_partition_reassignments():
            assert trio.current_time() < deadline
            await trio.sleep(0.05)
        assert (await cluster.list_topics("orders")).topics["orders"].partitions[
            0
        ].replicas == (me,)
        quorum = await cluster.describe_metadata_quorum()
        assert quorum.leader_id == me


async def test_a_reassignment_kept_to_its_replication_factor_needs_v1(
    cluster: AsyncAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guarantee (KIP-860): allow_replication_factor_change=False goes as v1, where a
    # target of another length is INVALID_REPLICATION_FACTOR and one of the same length
    # moves; a controller that serves only v0 cannot honour it, so every partition is
    # UNSUPPORTED_VERSION (without the option, v0 goes and is answered).
    with trio.fail_after(DEADLINE):
        (node,) = (await cluster.describe_cluster()).nodes[0:1]
        me = node.node_id
        kept = await cluster.alter_partition_reassignments(
            {T0: [me], T1: [me, me + 1]}, allow_replication_factor_change=False
        )
        assert kept[T0] is None
        assert code_of(kept[T1]) == ErrorCode.invalid_replica_assignment  # no broker
        served = dict(await cluster.client.api_versions(await cluster.controller()))
        served[ApiKey.ALTER_PARTITION_REASSIGNMENTS] = (0, 0)

        async def only_v0(_: object, node: object) -> dict[int, tuple[int, int]]:
            return served

        monkeypatch.setattr(NetworkClient, "api_versions", only_v0)
        old = await cluster.alter_partition_reassignments(
            {T0: [me]}, allow_replication_factor_change=False
        )
        assert code_of(old[T0]) == ErrorCode.unsupported_version
        assert await cluster.alter_partition_reassignments({T0: [me]}) == {T0: None}


def test_the_sync_client_reports_a_whole_call_failure_on_its_future() -> None:
    # Guarantee: with no broker to reach, the synchronous client's one-future calls
    # fail with _TRANSPORT instead of hanging or raising at the call.
    admin = AdminClient(
        {"bootstrap.servers": "127.0.0.1:1", "request.timeout.ms": "2000"}
    )
    with pytest.raises(KafkaException) as raised:
        admin.describe_cluster().result(30)
    assert raised.value.args[0].name() == "_TRANSPORT"
