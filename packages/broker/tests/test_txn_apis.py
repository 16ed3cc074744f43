"""The transaction APIs on one broker, on the wire, every advertised version (KIP-98,
KIP-447): each round runs one whole transaction with the round's version of each API
(FindCoordinator for the transactional id, InitProducerId, AddPartitionsToTxn, a
transactional Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), committing on even
rounds and aborting on odd ones.

What each test proves:

- every version of every transaction API is answered, with no error on a transaction
  that follows the rules; a committed transaction's records reach read_committed
  readers (the last stable offset passes them) and its offsets the group, an aborted
  one's do neither (its records stay in the log, listed as aborted);
- Kafka's refusals, each changing nothing: AddPartitionsToTxn naming a partition that
  does not exist (UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED), a
  stale epoch (PRODUCER_FENCED), another producer id (INVALID_PRODUCER_ID_MAPPING),
  EndTxn with nothing begun (INVALID_TXN_STATE), a timeout over
  ``transaction.max.timeout.ms`` (INVALID_TRANSACTION_TIMEOUT), and a marker from an
  older producer epoch (INVALID_PRODUCER_EPOCH) or to an unknown partition;
- WriteTxnMarkers ends a transaction on the partition's leader: its marker follows
  the records and the LSO moves past them.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from minikafka.broker import BrokerServer, KafkaApis
from minikafka.broker.testing import (
    WireClient,
    element,
    request_body,
    request_class,
    running_broker,
    single_node_config,
)
from minikafka.common import TopicPartition
from minikafka.log import build_batch, make_records
from minikafka.net import NetworkClient, Node, build
from minikafka.net.testing import wait_until

PRODUCE, FIND_COORDINATOR, OFFSET_FETCH, INIT_PRODUCER_ID = 0, 10, 9, 22
CREATE_TOPICS = 19
ADD_PARTITIONS, ADD_OFFSETS, END_TXN, WRITE_MARKERS, TXN_OFFSET_COMMIT = (
    24,
    25,
    26,
    27,
    28,
)
TXN_APIS = (ADD_PARTITIONS, ADD_OFFSETS, END_TXN, WRITE_MARKERS, TXN_OFFSET_COMMIT)
TOPIC = "orders"
RETRY_S = 0.05
DEADLINE = 30.0
OVERRIDES = {
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
}


def versions(api_key: int) -> range:
    low, high = KafkaApis.SUPPORTED[api_key]
    return range(low, high + 1)


@asynccontextmanager
async def broker_and_client(
    tmp_path: Path,
) -> AsyncIterator[tuple[BrokerServer, WireClient]]:
    config = single_node_config(tmp_path / "data", OVERRIDES)
    async with running_broker(config) as server, AsyncExitStack() as stack:
        host, port = server.bound_address()
        network = await stack.enter_async_context(NetworkClient.open(client_id="txn"))
        client = WireClient(network, Node(config.node_id, host, port))
        await _create_topic(client)
        yield server, client


async def _create_topic(client: WireClient) -> None:
    cls = request_class(CREATE_TOPICS, 4)
    topic = build(
        element(cls, "topics"),
        name=TOPIC,
        num_partitions=1,
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
    [created] = (await client.call(body)).topics
    assert created.error_code is ErrorCode.none


async def retried(
    client: WireClient,
    body: Any,
    error_of: Callable[[Any], ErrorCode] = lambda answer: answer.error_code,
) -> Any:
    """``body``'s answer once it is no longer one a client retries (the coordinator
    loading, another move of the same id in flight)."""
    retriable = {
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_not_available,
        ErrorCode.concurrent_transactions,
    }
    with trio.fail_after(DEADLINE):
        while True:
            answer = await client.call(body)
            if error_of(answer) not in retriable:
                return answer
            await trio.sleep(
                RETRY_S
            )  # a client's retry.backoff.ms, inside the deadline


async def begin(client: WireClient, txn_id: str) -> tuple[int, int]:
    """FindCoordinator, then InitProducerId: the producer's id and epoch."""
    found = await client.call(request_body(FIND_COORDINATOR, 3, key=txn_id, key_type=1))
    assert found.error_code is ErrorCode.none
    answer = await retried(
        client,
        request_body(
            INIT_PRODUCER_ID,
            versions(INIT_PRODUCER_ID)[-1],
            transactional_id=txn_id,
            transaction_timeout=datetime.timedelta(minutes=1),
            producer_id=-1,
            producer_epoch=-1,
        ),
    )
    assert answer.error_code is ErrorCode.none
    return int(answer.producer_id), int(answer.producer_epoch)


def add_partitions(
    version: int,
    txn_id: str,
    pid: int,
    epoch: int,
    partitions: list[int],
    verify_only: bool = False,
) -> Any:
    """AddPartitionsToTxn; from v4 in the brokers' batched form, one transaction."""
    cls = request_class(ADD_PARTITIONS, version)
    if version >= 4:
        txn_cls = element(cls, "transactions")
        topic = build(
            element(txn_cls, "topics"), name=TOPIC, partitions=tuple(partitions)
        )
        txn = build(
            txn_cls,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=epoch,
            verify_only=verify_only,
            topics=(topic,),
        )
        return build(cls, transactions=(txn,))
    topic = build(
        element(cls, "v3_and_below_topics"), name=TOPIC, partitions=tuple(partitions)
    )
    return build(
        cls,
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(topic,),
    )


def partition_errors(answer: Any) -> dict[int, ErrorCode]:
    topics = (
        answer.results_by_topic_v3_and_below
        if hasattr(answer, "results_by_topic_v3_and_below")
        else [t for r in answer.results_by_transaction for t in r.topic_results]
    )
    return {
        int(p.partition_index): p.partition_error_code
        for t in topics
        for p in t.results_by_partition
    }


def first_partition_error(answer: Any) -> ErrorCode:
    return next(iter(partition_errors(answer).values()))


def end_txn(version: int, txn_id: str, pid: int, epoch: int, commit: bool) -> Any:
    return request_body(
        END_TXN,
        version,
        transactional_id=txn_id,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )


async def produce_answer(
    client: WireClient,
    version: int,
    txn_id: str,
    pid: int,
    epoch: int,
    sequence: int = 0,
) -> Any:
    """A transactional batch of one record to TOPIC-0: the partition's answer."""
    data = build_batch(
        make_records([(None, b"v%d" % sequence)], timestamp_ms=1_700_000_000_000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=True,
    )
    cls = request_class(PRODUCE, version)
    partition = build(
        element(element(cls, "topic_data"), "partition_data"), index=0, records=data
    )
    topic = build(element(cls, "topic_data"), name=TOPIC, partition_data=(partition,))
    body = build(
        cls,
        transactional_id=txn_id,
        acks=-1,
        timeout=datetime.timedelta(seconds=10),
        topic_data=(topic,),
    )
    answer = await client.call(body)
    [[result]] = [t.partition_responses for t in answer.responses]
    return result


async def produce(
    client: WireClient, txn_id: str, pid: int, epoch: int, sequence: int
) -> None:
    """The same, Produce v8, which must be appended."""
    result = await produce_answer(client, 8, txn_id, pid, epoch, sequence)
    assert result.error_code is ErrorCode.none


def txn_offset_commit(
    version: int, txn_id: str, group: str, pid: int, epoch: int, offset: int
) -> Any:
    cls = request_class(TXN_OFFSET_COMMIT, version)
    topic_cls = element(cls, "topics")
    partition = build(
        element(topic_cls, "partitions"),
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        committed_metadata="",
    )
    return build(
        cls,
        transactional_id=txn_id,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=(build(topic_cls, name=TOPIC, partitions=(partition,)),),
    )


async def committed_offset(client: WireClient, group: str) -> int:
    """The group's stable committed offset of TOPIC-0 (waits out a pending one)."""
    cls = request_class(OFFSET_FETCH, 7)
    body = build(
        cls,
        group_id=group,
        topics=(build(element(cls, "topics"), name=TOPIC, partition_indexes=(0,)),),
        require_stable=True,
    )
    with trio.fail_after(DEADLINE):
        while True:
            answer = await client.call(body)
            [[partition]] = [t.partitions for t in answer.topics]
            if partition.error_code is not ErrorCode.unstable_offset_commit:
                assert partition.error_code is ErrorCode.none
                return int(partition.committed_offset)
            await trio.sleep(RETRY_S)


async def stable(server: BrokerServer) -> tuple[int, int]:
    """TOPIC-0's (high watermark, last stable offset) once no transaction is open."""
    partition = server.replica_manager.get_partition(TopicPartition(TOPIC, 0))
    assert partition is not None
    log = partition.log
    await wait_until(lambda: log.last_stable_offset == log.high_watermark, DEADLINE)
    return log.high_watermark, log.last_stable_offset


async def test_every_version_of_every_transaction_api_runs_a_transaction(
    tmp_path: Path,
) -> None:
    rounds = max(len(versions(k)) for k in TXN_APIS if k != WRITE_MARKERS)
    async with broker_and_client(tmp_path) as (server, client):
        answered: dict[int, set[int]] = {}
        end = 0
        for i in range(rounds):
            v = {k: min(versions(k)[0] + i, versions(k)[-1]) for k in TXN_APIS}
            commit = i % 2 == 0
            txn_id, group = f"txn-{i}", f"group-{i}"
            pid, epoch = await begin(client, txn_id)
            added = await retried(
                client,
                add_partitions(v[ADD_PARTITIONS], txn_id, pid, epoch, [0]),
                first_partition_error,
            )
            assert partition_errors(added) == {0: ErrorCode.none}
            await produce(client, txn_id, pid, epoch, 0)
            offsets = await retried(
                client,
                request_body(
                    ADD_OFFSETS,
                    v[ADD_OFFSETS],
                    transactional_id=txn_id,
                    producer_id=pid,
                    producer_epoch=epoch,
                    group_id=group,
                ),
            )
            assert offsets.error_code is ErrorCode.none
            # The group's coordinator first, as a client finds it (which creates
            # __consumer_offsets on first use).
            found = await client.call(
                request_body(FIND_COORDINATOR, 3, key=group, key_type=0)
            )
            assert found.error_code is ErrorCode.none
            committed = await retried(
                client,
                txn_offset_commit(v[TXN_OFFSET_COMMIT], txn_id, group, pid, epoch, 7),
                lambda answer: answer.topics[0].partitions[0].error_code,
            )
            assert [p.error_code for t in committed.topics for p in t.partitions] == [
                ErrorCode.none
            ]
            ended = await retried(
                client, end_txn(v[END_TXN], txn_id, pid, epoch, commit)
            )
            assert ended.error_code is ErrorCode.none
            # The record, then its marker: two offsets; both readers see them once the
            # marker is replicated.
            end += 2
            assert await stable(server) == (end, end)
            assert await committed_offset(client, group) == (7 if commit else -1)
            for k in TXN_APIS:
                answered.setdefault(k, set()).add(v[k])
        answered[WRITE_MARKERS] = await _sweep_markers(server, client)
        assert answered == {k: set(versions(k)) for k in TXN_APIS}


async def _sweep_markers(server: BrokerServer, client: WireClient) -> set[int]:
    """WriteTxnMarkers in each version, as a coordinator sends it: it ends a producer's
    open transaction on TOPIC-0; a marker to an unknown partition is refused."""
    seen = set()
    for version in versions(WRITE_MARKERS):
        txn_id = f"marked-{version}"
        pid, epoch = await begin(client, txn_id)
        await retried(
            client, add_partitions(3, txn_id, pid, epoch, [0]), first_partition_error
        )
        await produce(client, txn_id, pid, epoch, 0)
        cls = request_class(WRITE_MARKERS, version)
        marker_cls = element(cls, "markers")
        topic_cls = element(marker_cls, "topics")
        body = build(
            cls,
            markers=(
                build(
                    marker_cls,
                    producer_id=pid,
                    producer_epoch=epoch,
                    transaction_result=True,
                    coordinator_epoch=0,
                    topics=(
                        build(topic_cls, name=TOPIC, partition_indexes=(0,)),
                        build(topic_cls, name="nowhere", partition_indexes=(0,)),
                    ),
                ),
            ),
        )
        answer = await client.call(body)
        [marker] = answer.markers
        errors = {t.name: [p.error_code for p in t.partitions] for t in marker.topics}
        assert errors == {
            TOPIC: [ErrorCode.none],
            "nowhere": [ErrorCode.unknown_topic_or_partition],
        }
        high, lso = await stable(server)
        assert high == lso
        seen.add(version)
    return seen


async def test_transaction_requests_kafka_refuses_change_nothing(
    tmp_path: Path,
) -> None:
    async with broker_and_client(tmp_path) as (server, client):
        top = versions(ADD_PARTITIONS)[-1]
        pid, epoch = await begin(client, "refused")
        # A partition that does not exist: nothing is added.
        missing = await client.call(add_partitions(top, "refused", pid, epoch, [0, 9]))
        assert partition_errors(missing) == {
            0: ErrorCode.operation_not_attempted,
            9: ErrorCode.unknown_topic_or_partition,
        }
        # Nothing begun: EndTxn is in the wrong state.
        wrong = await client.call(
            end_txn(versions(END_TXN)[-1], "refused", pid, epoch, True)
        )
        assert wrong.error_code is ErrorCode.invalid_txn_state
        # A stale epoch and another producer id.
        stale = await client.call(add_partitions(top, "refused", pid, epoch - 1, [0]))
        assert set(partition_errors(stale).values()) == {ErrorCode.producer_fenced}
        other = await client.call(add_partitions(top, "refused", pid + 1, epoch, [0]))
        assert set(partition_errors(other).values()) == {
            ErrorCode.invalid_producer_id_mapping
        }
        # A timeout over transaction.max.timeout.ms (900000).
        too_long = await client.call(
            request_body(
                INIT_PRODUCER_ID,
                versions(INIT_PRODUCER_ID)[-1],
                transactional_id="too-long",
                transaction_timeout=datetime.timedelta(milliseconds=900_001),
                producer_id=-1,
                producer_epoch=-1,
            )
        )
        assert too_long.error_code is ErrorCode.invalid_transaction_timeout
        # A marker from an older producer epoch than the partition's last batch.
        await retried(
            client,
            add_partitions(top, "refused", pid, epoch, [0]),
            first_partition_error,
        )
        await produce(client, "refused", pid, epoch, 0)
        partition = server.replica_manager.get_partition(TopicPartition(TOPIC, 0))
        assert partition is not None
        before = partition.log.log_end_offset
        cls = request_class(WRITE_MARKERS, versions(WRITE_MARKERS)[-1])
        marker_cls = element(cls, "markers")
        fenced = await client.call(
            build(
                cls,
                markers=(
                    build(
                        marker_cls,
                        producer_id=pid,
                        producer_epoch=epoch - 1,
                        transaction_result=False,
                        coordinator_epoch=0,
                        topics=(
                            build(
                                element(marker_cls, "topics"),
                                name=TOPIC,
                                partition_indexes=(0,),
                            ),
                        ),
                    ),
                ),
            )
        )
        [[error]] = [
            [p.error_code for p in t.partitions] for t in fenced.markers[0].topics
        ]
        assert error is ErrorCode.invalid_producer_epoch
        assert partition.log.log_end_offset == before
