"""Fetch v12-v18 and fetch sessions (KIP-227) through a running broker, as a Java
consumer uses them: a full fetch opens a session, the next ones name only what changed
and are answered only with what is new.

The broker runs in the test's trio loop (``running_broker``); the requests are kio's
v18 and v12 classes, sent by the NetworkClient, and kafka-python's own (v12, in a
session), its blocking calls in worker threads.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import attrs
import kafka as kafka_python
import pytest
import trio
from kio.schema.create_topics.v4.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v4.response import CreateTopicsResponse
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as v12
from kio.schema.fetch.v12.response import FetchResponse as FetchResponseV12
from kio.schema.fetch.v18 import request as v18
from kio.schema.fetch.v18.response import FetchResponse as FetchResponseV18
from kio.schema.produce.v8.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.schema.produce.v8.response import ProduceResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.broker import BrokerServer
from minikafka.broker.testing import running_broker, single_node_config
from minikafka.common import TopicPartition
from minikafka.log import build_batch, decode_batch, make_records
from minikafka.net import NetworkClient, Node
from minikafka.net.testing import wait_until

DEADLINE = 30
NO_WAIT = i32Timedelta.parse(datetime.timedelta(0))


@attrs.frozen
class Broker:
    server: BrokerServer
    client: NetworkClient
    node: Node
    topic_id: uuid.UUID

    async def call(self, body: RequestPayload) -> ResponsePayload:
        with trio.fail_after(DEADLINE):
            response = await self.client.send(self.node, body)
        assert response is not None
        return response

    async def produce(self, partition: int, value: bytes) -> None:
        records = build_batch(make_records([(None, value)], timestamp_ms=1))
        body = ProduceRequest(
            transactional_id=None,
            acks=i16(1),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            topic_data=(
                TopicProduceData(
                    name=TopicName("s"),
                    partition_data=(
                        PartitionProduceData(
                            index=i32(partition), records=Records(records)
                        ),
                    ),
                ),
            ),
        )
        response = await self.call(body)
        assert isinstance(response, ProduceResponse)
        [[result]] = [t.partition_responses for t in response.responses]
        assert result.error_code is ErrorCode.none

    async def fetch(
        self,
        session_id: int,
        epoch: int,
        offsets: Mapping[int, int],
        forgotten: tuple[int, ...] = (),
        topic_id: uuid.UUID | None = None,
    ) -> FetchResponseV18:
        """A v18 fetch of partitions of topic ``s`` (by id) from ``offsets``."""
        topic = topic_id or self.topic_id
        body = v18.FetchRequest(
            max_wait=NO_WAIT,
            min_bytes=i32(1),
            session_id=i32(session_id),
            session_epoch=i32(epoch),
            topics=(
                v18.FetchTopic(
                    topic_id=topic,
                    partitions=tuple(
                        v18.FetchPartition(
                            partition=i32(p),
                            fetch_offset=i64(o),
                            partition_max_bytes=i32(1 << 20),
                        )
                        for p, o in offsets.items()
                    ),
                ),
            )
            if offsets
            else (),
            forgotten_topics_data=(
                (
                    v18.ForgottenTopic(
                        topic_id=topic, partitions=tuple(map(i32, forgotten))
                    ),
                )
                if forgotten
                else ()
            ),
        )
        response = await self.call(body)
        assert isinstance(response, FetchResponseV18)
        return response


def named(response: FetchResponseV18) -> dict[int, list[bytes | None]]:
    """Each partition the response names, with the values of its records."""
    out: dict[int, list[bytes | None]] = {}
    for topic in response.responses:
        for p in topic.partitions:
            values = []
            position = 0
            while p.records and position < len(p.records):
                header, records = decode_batch(p.records, position)
                values += [r.value for r in records]
                position += header.size
            out[int(p.partition_index)] = values
    return out


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    config = single_node_config(tmp_path / "data")
    async with (
        running_broker(config) as server,
        NetworkClient.open(client_id="tests") as client,
    ):
        host, port = server.bound_address()
        node = Node(config.node_id, host, port)
        created = await client.send(
            node,
            CreateTopicsRequest(
                topics=(
                    CreatableTopic(
                        name=TopicName("s"),
                        num_partitions=i32(2),
                        replication_factor=i16(1),
                        assignments=(),
                        configs=(),
                    ),
                ),
                timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
                validate_only=False,
            ),
        )
        assert isinstance(created, CreateTopicsResponse)
        await wait_until(
            lambda: all(
                server.replica_manager.get_partition(TopicPartition("s", p)) is not None
                for p in (0, 1)
            ),
            DEADLINE,
        )
        topic = server.metadata_cache.topic("s")
        assert topic is not None
        yield Broker(server, client, node, topic.topic_id)


async def test_a_session_answers_only_what_is_new(broker: Broker) -> None:
    """KIP-227: the full fetch opens a session and names every partition; an incremental
    fetch reads the session's partitions where they were left and names only those with
    records or moved offsets."""
    await broker.produce(0, b"a")
    full = await broker.fetch(0, 0, {0: 0, 1: 0})
    assert full.error_code is ErrorCode.none
    assert full.session_id != 0
    assert named(full) == {0: [b"a"], 1: []}
    session = int(full.session_id)

    # Partition 0 moves on to offset 1; nothing else changed: nothing to name.
    quiet = await broker.fetch(session, 1, {0: 1})
    assert (quiet.error_code, quiet.session_id) == (ErrorCode.none, session)
    assert named(quiet) == {}

    # A record arrives on partition 1, which the request does not name: read from the
    # offset the session keeps for it (0), and named with its record and new HW.
    await broker.produce(1, b"b")
    news = await broker.fetch(session, 2, {})
    assert named(news) == {1: [b"b"]}

    # An epoch the session does not expect: refused, no partitions, session id 0.
    stale = await broker.fetch(session, 2, {})
    assert (stale.error_code, stale.session_id) == (
        ErrorCode.invalid_fetch_session_epoch,
        0,
    )
    assert named(stale) == {}

    # Forgetting both partitions ends the session.
    ended = await broker.fetch(session, 3, {}, forgotten=(0, 1))
    assert (ended.error_code, ended.session_id) == (ErrorCode.none, 0)
    gone = await broker.fetch(session, 4, {0: 1})
    assert gone.error_code is ErrorCode.fetch_session_id_not_found


async def test_an_unknown_topic_id_is_answered_unknown_topic_id(broker: Broker) -> None:
    stranger = uuid.uuid4()
    response = await broker.fetch(0, -1, {0: 0}, topic_id=stranger)
    [topic] = response.responses
    assert topic.topic_id == stranger
    assert [p.error_code for p in topic.partitions] == [ErrorCode.unknown_topic_id]


async def test_a_session_opened_by_name_cannot_go_on_by_id(broker: Broker) -> None:
    """FETCH_SESSION_TOPIC_ID_ERROR: v12 names topics, v13+ ids; a session keeps one."""
    await broker.produce(0, b"a")
    body = v12.FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=NO_WAIT,
        min_bytes=i32(1),
        session_id=i32(0),
        session_epoch=i32(0),
        topics=(
            v12.FetchTopic(
                topic=TopicName("s"),
                partitions=(
                    v12.FetchPartition(
                        partition=i32(0),
                        fetch_offset=i64(0),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    full = await broker.call(body)
    assert isinstance(full, FetchResponseV12)
    assert [
        len(p.records or b"") > 0 for t in full.responses for p in t.partitions
    ] == [True]
    by_id = await broker.fetch(int(full.session_id), 1, {})
    assert by_id.error_code is ErrorCode.fetch_session_topic_id_error


async def test_kafka_python_reads_through_a_fetch_session(broker: Broker) -> None:
    """A real client's session: kafka-python opens a fetch session (v12, topics by
    name) and goes on with incremental fetches, which reach a record written to the
    other partition after it had read the first."""
    await broker.produce(0, b"first")
    bootstrap = f"{broker.node.host}:{broker.node.port}"

    def open_reader() -> kafka_python.KafkaConsumer:
        reader = kafka_python.KafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            consumer_timeout_ms=int(DEADLINE * 1000),
            fetch_max_wait_ms=100,
        )
        reader.assign([kafka_python.TopicPartition("s", p) for p in (0, 1)])
        reader.seek_to_beginning()
        return reader

    def take(reader: kafka_python.KafkaConsumer) -> tuple[int, bytes]:
        record = next(reader)
        return record.partition, record.value

    reader = await trio.to_thread.run_sync(open_reader)
    try:
        assert await trio.to_thread.run_sync(take, reader) == (0, b"first")
        await broker.produce(1, b"second")
        assert await trio.to_thread.run_sync(take, reader) == (1, b"second")
        [session] = broker.server.apis.fetch_sessions.sessions.values()
        assert not session.privileged  # a consumer's
        assert set(session.partitions) == {TopicPartition("s", p) for p in (0, 1)}
        # Past 1, the epoch its full fetch left: the record of partition 1 came in an
        # incremental fetch, read at the offset the session kept for it.
        assert session.epoch >= 2
    finally:
        await trio.to_thread.run_sync(reader.close)
