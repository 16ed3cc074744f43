"""Requests answered the way Kafka answers them, over the wire.

A client cannot create, delete, grow or write the internal topics; a request over the
controller's record limit (MAX_RECORDS_PER_USER_OP) is POLICY_VIOLATION, validate-only
too, without the broker building the assignment; a null where the schema has none closes
that connection; and the smaller rules (null config values, manual assignments'
partition ids, names listed twice, the empty name, unknown coordinator types, KIP-430's
authorized operations) get Kafka's codes. Every test checks that nothing was created or
deleted and that the broker still answers a bystander.
"""

from __future__ import annotations

import datetime
import logging
import struct
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from kio.schema.errors import ErrorCode

from minikafka.broker import BrokerServer
from minikafka.broker.testing import (
    BrokerProcess,
    WireClient,
    element,
    request_class,
    running_broker,
    single_node_config,
)
from minikafka.common import TopicPartition
from minikafka.log import build_batch, make_records
from minikafka.net import (
    NetworkClient,
    Node,
    build,
    encode_request_header,
)
from minikafka.net.testing import RawConnection

DEADLINE = 30.0  # seconds; generous for a shared 2-core machine
OFFSETS = "__consumer_offsets"
INT32_MIN = -(2**31)
# KIP-430 bit fields Kafka answers without an authorizer (AclEntry.supportedOperations).
# READ..DESCRIBE (3-8), DESCRIBE/ALTER_CONFIGS (10, 11)
ALL_TOPIC_OPERATIONS = 0b1101_1111_1000
ALL_CLUSTER_OPERATIONS = 0b1_1111_1010_0000  # CREATE 5, ALTER..IDEMPOTENT_WRITE (7-12)
MS_30S = datetime.timedelta(seconds=30)


@attrs.define
class Client(WireClient):
    """A client of one broker (in this process or in a child process)."""

    async def create(
        self,
        *topics: tuple[str, int, int],
        validate_only: bool = False,
        configs: Mapping[str, str | None] | None = None,
        assignments: Sequence[tuple[int, Sequence[int]]] = (),
    ) -> list[tuple[str, ErrorCode]]:
        """CreateTopics v4 of ``(name, partitions, replication factor)``s."""
        cls = request_class(19, 4)
        topic_cls = element(cls, "topics")
        config_cls = element(topic_cls, "configs")
        assignment_cls = element(topic_cls, "assignments")
        request = build(
            cls,
            topics=tuple(
                build(
                    topic_cls,
                    name=name,
                    num_partitions=partitions,
                    replication_factor=factor,
                    assignments=tuple(
                        build(assignment_cls, partition_index=p, broker_ids=tuple(b))
                        for p, b in assignments
                    ),
                    configs=tuple(
                        build(config_cls, name=k, value=v)
                        for k, v in (configs or {}).items()
                    ),
                )
                for name, partitions, factor in topics
            ),
            timeout=MS_30S,
            validate_only=validate_only,
        )
        response = await self.call(request)
        return [(t.name, t.error_code) for t in response.topics]

    async def delete(self, *names: str) -> list[tuple[str, ErrorCode]]:
        response = await self.call(
            build(request_class(20, 3), topic_names=names, timeout=MS_30S)
        )
        return [(r.name, r.error_code) for r in response.responses]

    async def add_partitions(
        self, *topics: tuple[str, int], validate_only: bool = False
    ) -> list[tuple[str, ErrorCode]]:
        cls = request_class(37, 1)
        topic_cls = element(cls, "topics")
        request = build(
            cls,
            topics=tuple(
                build(topic_cls, name=n, count=c, assignments=None) for n, c in topics
            ),
            timeout=MS_30S,
            validate_only=validate_only,
        )
        response = await self.call(request)
        return [(r.name, r.error_code) for r in response.results]

    async def find_coordinator(self, key: str, key_type: int = 0) -> Any:
        return await self.call(build(request_class(10, 2), key=key, key_type=key_type))

    async def metadata(
        self, names: Sequence[str] | None, *, operations: bool = False
    ) -> Any:
        cls = request_class(3, 8)
        topic_cls = element(cls, "topics")
        return await self.call(
            build(
                cls,
                topics=None
                if names is None
                else tuple(build(topic_cls, name=n) for n in names),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=operations,
                include_topic_authorized_operations=operations,
            )
        )

    async def partition_count(self, name: str) -> int | None:
        """The topic's partitions as Metadata reports them; None if there is no topic."""
        [topic] = (await self.metadata([name])).topics
        if topic.error_code is ErrorCode.unknown_topic_or_partition:
            return None
        assert topic.error_code is ErrorCode.none
        return len(topic.partitions)

    async def bystander_is_served(self) -> None:
        """A new topic can still be created and described."""
        name = f"bystander-{id(self)}-{trio.current_time()}".replace(".", "-")
        assert await self.create((name, 1, 1)) == [(name, ErrorCode.none)]
        assert await self.partition_count(name) == 1


@asynccontextmanager
async def in_process(tmp_path: Path) -> AsyncIterator[tuple[BrokerServer, Client]]:
    config = single_node_config(
        tmp_path / "data", {"offsets.topic.num.partitions": "5"}
    )
    async with (
        running_broker(config) as server,
        NetworkClient.open(client_id="tests") as nc,
    ):
        host, port = server.bound_address()
        yield server, Client(nc, Node(config.node_id, host, port))


# --- item 4: internal topics ------------------------------------------------------------


async def test_internal_topics_cannot_be_created_deleted_grown_or_written(
    tmp_path: Path,
) -> None:
    """A client's CreateTopics of __consumer_offsets (one partition, cleanup.policy=delete)
    or __transaction_state is INVALID_REQUEST and creates nothing, so FindCoordinator
    still creates the real one; DeleteTopics and CreatePartitions of it are INVALID_REQUEST
    and change nothing; Produce to it is INVALID_TOPIC_EXCEPTION and appends nothing."""
    async with in_process(tmp_path) as (server, k):
        hostile = {"cleanup.policy": "delete"}
        assert await k.create((OFFSETS, 1, 1), configs=hostile) == [
            (OFFSETS, ErrorCode.invalid_request)
        ]
        assert await k.create(("__transaction_state", 1, 1)) == [
            ("__transaction_state", ErrorCode.invalid_request)
        ]
        assert server.metadata_cache.topic(OFFSETS) is None
        coordinator = await k.find_coordinator("group")
        assert coordinator.error_code is ErrorCode.none
        assert await k.partition_count(OFFSETS) == 5
        assert await k.delete(OFFSETS) == [(OFFSETS, ErrorCode.invalid_request)]
        assert await k.add_partitions((OFFSETS, 8)) == [
            (OFFSETS, ErrorCode.invalid_request)
        ]
        assert await k.partition_count(OFFSETS) == 5
        # Produce v8 of one ordinary batch to partition 0 of __consumer_offsets.
        tp = TopicPartition(OFFSETS, 0)
        hosted = server.replica_manager.get_partition(tp)
        assert hosted is not None
        end = hosted.log.log_end_offset
        cls = request_class(0, 8)
        topic_cls = element(cls, "topic_data")
        partition_cls = element(topic_cls, "partition_data")
        records = build_batch(make_records([(b"key", b"value")], timestamp_ms=1))
        produce = build(
            cls,
            transactional_id=None,
            acks=1,
            timeout=MS_30S,
            topic_data=(
                build(
                    topic_cls,
                    name=OFFSETS,
                    partition_data=(build(partition_cls, index=0, records=records),),
                ),
            ),
        )
        response = await k.call(produce)
        [[result]] = [t.partition_responses for t in response.responses]
        assert result.error_code is ErrorCode.invalid_topic_exception
        assert hosted.log.log_end_offset == end
        assert (await k.find_coordinator("group")).error_code is ErrorCode.none
        await k.bystander_is_served()


# --- item 7: Kafka's codes ----------------------------------------------------------------


async def test_create_topics_answers_as_kafka(tmp_path: Path) -> None:
    """A null config value is INVALID_CONFIG; a manual assignment naming only partition 5
    is INVALID_REPLICA_ASSIGNMENT (not renumbered to 0); a name listed twice is answered
    once with INVALID_REQUEST; none of them is created."""
    async with in_process(tmp_path) as (server, k):
        assert await k.create(("nullcfg", 1, 1), configs={"retention.ms": None}) == [
            ("nullcfg", ErrorCode.invalid_config)
        ]
        assert await k.create(("five", -1, -1), assignments=[(5, [1])]) == [
            ("five", ErrorCode.invalid_replica_assignment)
        ]
        assert await k.create(("twice", 1, 1), ("twice", 2, 1), ("once", 1, 1)) == [
            ("twice", ErrorCode.invalid_request),
            ("once", ErrorCode.none),
        ]
        for name in ("nullcfg", "five", "twice"):
            assert server.metadata_cache.topic(name) is None
        # Given in order, partition ids 1 then 0 are placed where they say.
        node = server.config.node_id
        created = await k.create(
            ("manual", -1, -1), assignments=[(1, [node]), (0, [node])]
        )
        assert created == [("manual", ErrorCode.none)]
        await k.bystander_is_served()


async def test_delete_topics_and_create_partitions_answer_as_kafka(
    tmp_path: Path,
) -> None:
    """DeleteTopics of "" is UNKNOWN_TOPIC_OR_PARTITION; DeleteTopics or CreatePartitions
    listing a topic twice is one INVALID_REQUEST and leaves it as it was."""
    async with in_process(tmp_path) as (_server, k):
        assert await k.create(("keep", 1, 1)) == [("keep", ErrorCode.none)]
        assert await k.delete("") == [("", ErrorCode.unknown_topic_or_partition)]
        assert await k.delete("keep", "keep") == [("keep", ErrorCode.invalid_request)]
        assert await k.add_partitions(("keep", 2), ("keep", 3)) == [
            ("keep", ErrorCode.invalid_request)
        ]
        assert await k.partition_count("keep") == 1
        await k.bystander_is_served()


async def test_find_coordinator_and_metadata_answer_as_kafka(tmp_path: Path) -> None:
    """FindCoordinator with a key type that is neither group (0) nor transaction (1) is
    INVALID_REQUEST, and a transactional id's names this broker; Metadata v8 asked for
    authorized operations lists every one, as Kafka without an authorizer does, and
    INT32_MIN when not asked."""
    async with in_process(tmp_path) as (_server, k):
        unknown = await k.find_coordinator("g", key_type=5)
        assert unknown.error_code is ErrorCode.invalid_request
        assert unknown.node_id == -1
        transactions = await k.find_coordinator("t", key_type=1)
        assert transactions.error_code is ErrorCode.none
        assert transactions.node_id == _server.config.node_id
        assert await k.create(("ops", 1, 1)) == [("ops", ErrorCode.none)]
        asked = await k.metadata(["ops"], operations=True)
        assert asked.cluster_authorized_operations == ALL_CLUSTER_OPERATIONS
        assert [t.topic_authorized_operations for t in asked.topics] == [
            ALL_TOPIC_OPERATIONS
        ]
        not_asked = await k.metadata(["ops"])
        assert not_asked.cluster_authorized_operations == INT32_MIN
        assert [t.topic_authorized_operations for t in not_asked.topics] == [INT32_MIN]


# --- item 6: null arrays ------------------------------------------------------------------


def _string(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


# (api key, version, bytes before the array's count, bytes after its elements)
NULL_ARRAYS = {
    "ListOffsets v5 topics": (2, 5, struct.pack(">ib", -1, 0), b""),
    "DescribeConfigs v1 resources": (32, 1, b"", b"\x00"),
    "CreatePartitions v1 topics": (37, 1, b"", struct.pack(">i?", 30_000, False)),
    "DeleteTopics v3 topic_names": (20, 3, b"", struct.pack(">i", 30_000)),
    "OffsetCommit v2 topics": (
        8,
        2,
        _string("g") + struct.pack(">i", -1) + _string("m") + struct.pack(">q", -1),
        b"",
    ),
    "OffsetFetch v1 topics": (9, 1, _string("g"), b""),
    "LeaveGroup v3 members": (13, 3, _string("g"), b""),
}


@pytest.mark.parametrize("case", list(NULL_ARRAYS), ids=list(NULL_ARRAYS))
async def test_a_null_array_closes_the_connection_and_nothing_else(
    tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each API of the issue with its non-nullable array sent as null: that connection is
    closed as a malformed request, before any handler runs (no TypeError, no ERROR
    traceback in the log); the same bytes with an empty array are answered, and the
    broker serves a bystander afterwards."""
    caplog.set_level(logging.INFO)
    api_key, version, before, after = NULL_ARRAYS[case]

    def frame(count: int) -> bytes:
        payload = encode_request_header(api_key, version, 3, "raw")
        payload += before + struct.pack(">i", count) + after
        return struct.pack(">i", len(payload)) + payload

    async with in_process(tmp_path) as (server, k):
        host, port = server.bound_address()
        victim = RawConnection(await trio.open_tcp_stream(host, port))
        await victim.send(frame(-1))
        with trio.fail_after(DEADLINE):
            assert await victim.wait_closed()
        control = RawConnection(await trio.open_tcp_stream(host, port))
        await control.send(frame(0))
        with trio.fail_after(DEADLINE):
            answer = await control.receive_response(api_key, version)
        assert answer is not None
        await control.aclose()
        await k.bystander_is_served()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    assert any("invalid request" in r.getMessage() for r in caplog.records)


# --- item 1: the record limit, validate-only included; and a restart after it all ---------


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS line")


async def test_oversized_requests_are_refused_cheaply_and_the_broker_restarts(
    tmp_path: Path,
) -> None:
    """CreateTopics for 10^6 and 10^7 partitions (validate-only or not) and CreatePartitions
    to 10^7 are POLICY_VIOLATION, and the broker's resident memory grows by less than
    32 MiB answering them (it used to grow past 3 GB): the count is checked before any
    assignment is built. After those and the internal-topic refusals, the broker
    restarts with its topics as they were."""
    process = BrokerProcess(
        tmp_path / "data", overrides={"offsets.topic.num.partitions": "3"}
    )
    await trio.to_thread.run_sync(process.start)
    try:
        assert process.process is not None
        pid = process.process.pid
        async with NetworkClient.open(client_id="tests") as nc:
            k = Client(nc, Node(1, process.host, process.port))
            assert await k.create(("t", 2, 1)) == [("t", ErrorCode.none)]
            assert await k.create(("warm", 3, 1), validate_only=True) == [
                ("warm", ErrorCode.none)
            ]
            before = _rss_kib(pid)
            for partitions, validate_only in (
                (10**6, True),
                (10**7, True),
                (10**6, False),
            ):
                answer = await k.create(
                    ("huge", partitions, 1), validate_only=validate_only
                )
                assert answer == [("huge", ErrorCode.policy_violation)]
            for validate_only in (True, False):
                grown = await k.add_partitions(
                    ("t", 10**7), validate_only=validate_only
                )
                assert grown == [("t", ErrorCode.policy_violation)]
            growth_kib = _rss_kib(pid) - before
            assert growth_kib < 32 * 1024, f"RSS grew by {growth_kib} KiB"
            assert await k.partition_count("huge") is None
            assert await k.partition_count("t") == 2
            # The internal-topic attacks, refused, then the real offsets topic.
            assert await k.create(
                (OFFSETS, 1, 1), configs={"cleanup.policy": "delete"}
            ) == [(OFFSETS, ErrorCode.invalid_request)]
            assert (await k.find_coordinator("g")).error_code is ErrorCode.none
            assert await k.delete(OFFSETS) == [(OFFSETS, ErrorCode.invalid_request)]
            await k.bystander_is_served()
        await trio.to_thread.run_sync(process.restart)
        async with NetworkClient.open(client_id="tests") as nc:
            k = Client(nc, Node(1, process.host, process.port))
            # Requests wait until the broker is unfenced, so the first one is answered.
            assert (await k.find_coordinator("g")).error_code is ErrorCode.none
            assert await k.partition_count(OFFSETS) == 3
            assert await k.partition_count("t") == 2
            assert await k.partition_count("huge") is None
            await k.bystander_is_served()
    finally:
        await trio.to_thread.run_sync(process.kill)
