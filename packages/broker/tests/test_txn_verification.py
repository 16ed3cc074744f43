"""Transaction verification on one broker, on the wire (KIP-890 part 1): the partition
leader asks the transaction coordinator (AddPartitionsToTxn v5 ``verify_only``, over
the inter-broker listener, here to itself) before it appends a transactional producer's
first batch to a partition, and the group coordinator does the same for TxnOffsetCommit.

What each test proves:

- a transactional write to a partition never added to the transaction is refused
  (INVALID_TXN_STATE before Produce v11, TRANSACTION_ABORTABLE from v11) and writes
  nothing, so no transaction hangs there; once the partition is added the same batch
  is accepted;
- with ``transaction.partition.verification.enable=false`` it is accepted, as before;
- TxnOffsetCommit without AddOffsetsToTxn is refused the same way (TRANSACTION_ABORTABLE
  from v4) and the group's offsets do not change;
- AddPartitionsToTxn v4-5 (the brokers' form) answers ``verify_only`` per partition
  without adding anything, and adds when it is not set.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.broker import BrokerServer
from minikafka.broker.testing import (
    WireClient,
    request_body,
    running_broker,
    single_node_config,
)
from minikafka.common import TopicPartition
from minikafka.net import NetworkClient, Node

from .test_txn_apis import (
    ADD_OFFSETS,
    FIND_COORDINATOR,
    OVERRIDES,
    TOPIC,
    _create_topic,
    add_partitions,
    begin,
    committed_offset,
    first_partition_error,
    partition_errors,
    produce_answer,
    retried,
    txn_offset_commit,
)

OFF = {"transaction.partition.verification.enable": "false"}


@asynccontextmanager
async def broker(
    tmp_path: Path, overrides: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[BrokerServer, WireClient]]:
    config = single_node_config(tmp_path / "data", {**OVERRIDES, **(overrides or {})})
    async with running_broker(config) as server, AsyncExitStack() as stack:
        host, port = server.bound_address()
        network = await stack.enter_async_context(NetworkClient.open(client_id="v"))
        client = WireClient(network, Node(config.node_id, host, port))
        await _create_topic(client)
        yield server, client


def log_end(server: BrokerServer) -> int:
    partition = server.replica_manager.get_partition(TopicPartition(TOPIC, 0))
    assert partition is not None
    return partition.log.log_end_offset


async def test_a_write_to_a_partition_never_added_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    async with broker(tmp_path) as (server, client):
        for version, expected in [
            (3, ErrorCode.invalid_txn_state),
            (8, ErrorCode.invalid_txn_state),
            (10, ErrorCode.invalid_txn_state),
            (11, ErrorCode.transaction_abortable),
            (12, ErrorCode.transaction_abortable),
        ]:
            txn_id = f"never-added-v{version}"
            pid, epoch = await begin(client, txn_id)
            refused = await produce_answer(client, version, txn_id, pid, epoch)
            assert refused.error_code is expected, version
            if version >= 8 and expected is ErrorCode.invalid_txn_state:
                assert refused.error_message == (
                    "Partition was not added to the transaction"
                )
            assert log_end(server) == 0
        partition = server.replica_manager.get_partition(TopicPartition(TOPIC, 0))
        assert partition is not None
        assert partition.log.last_stable_offset == partition.log.high_watermark == 0
        # Added, the same batch (the producer's retry) is verified and appended.
        refused = await produce_answer(client, 8, txn_id, pid, epoch)
        assert refused.error_code is ErrorCode.invalid_txn_state
        added = await retried(
            client, add_partitions(3, txn_id, pid, epoch, [0]), first_partition_error
        )
        assert partition_errors(added) == {0: ErrorCode.none}
        ok = await produce_answer(client, 8, txn_id, pid, epoch)
        assert ok.error_code is ErrorCode.none
        assert log_end(server) == 1
        # Its transaction is open here now: the next batch needs no question.
        second = await produce_answer(client, 8, txn_id, pid, epoch, sequence=1)
        assert second.error_code is ErrorCode.none


async def test_with_verification_off_an_unadded_write_is_accepted(
    tmp_path: Path,
) -> None:
    async with broker(tmp_path, OFF) as (server, client):
        pid, epoch = await begin(client, "unchecked")
        answer = await produce_answer(client, 8, "unchecked", pid, epoch)
        assert answer.error_code is ErrorCode.none
        assert log_end(server) == 1


async def txn_commit_without_add_offsets(
    client: WireClient, version: int, txn_id: str, group: str
) -> ErrorCode:
    pid, epoch = await begin(client, txn_id)
    found = await client.call(request_body(FIND_COORDINATOR, 3, key=group, key_type=0))
    assert found.error_code is ErrorCode.none
    answer = await retried(
        client,
        txn_offset_commit(version, txn_id, group, pid, epoch, 7),
        lambda a: a.topics[0].partitions[0].error_code,
    )
    [[partition]] = [t.partitions for t in answer.topics]
    return partition.error_code  # type: ignore[no-any-return]


async def test_txn_offset_commit_without_add_offsets_is_refused(
    tmp_path: Path,
) -> None:
    async with broker(tmp_path) as (_, client):
        for version in range(5):
            group = f"group-v{version}"
            error = await txn_commit_without_add_offsets(
                client, version, f"offsets-v{version}", group
            )
            assert error is (
                ErrorCode.transaction_abortable
                if version >= 4
                else ErrorCode.invalid_txn_state
            ), version
            assert await committed_offset(client, group) == -1
        # With AddOffsetsToTxn first, the same commit is taken.
        pid, epoch = await begin(client, "with-add-offsets")
        await retried(
            client,
            request_body(
                ADD_OFFSETS,
                4,
                transactional_id="with-add-offsets",
                producer_id=pid,
                producer_epoch=epoch,
                group_id="group-added",
            ),
        )
        answer = await retried(
            client,
            txn_offset_commit(4, "with-add-offsets", "group-added", pid, epoch, 7),
            lambda a: a.topics[0].partitions[0].error_code,
        )
        assert answer.topics[0].partitions[0].error_code is ErrorCode.none


async def test_with_verification_off_txn_offset_commit_is_taken(
    tmp_path: Path,
) -> None:
    async with broker(tmp_path, OFF) as (_, client):
        error = await txn_commit_without_add_offsets(client, 4, "off", "group-off")
        assert error is ErrorCode.none


async def test_add_partitions_v4_and_v5_verify_without_adding(
    tmp_path: Path,
) -> None:
    async with broker(tmp_path) as (server, client):
        for version in (4, 5):
            txn_id = f"batched-v{version}"
            pid, epoch = await begin(client, txn_id)
            asked = add_partitions(version, txn_id, pid, epoch, [0], verify_only=True)
            before = await retried(client, asked, first_partition_error)
            assert before.error_code is ErrorCode.none
            assert partition_errors(before) == {0: ErrorCode.transaction_abortable}
            # Verifying added nothing: a write is still refused.
            refused = await produce_answer(client, 8, txn_id, pid, epoch)
            assert refused.error_code is ErrorCode.invalid_txn_state
            stale = add_partitions(version, txn_id, pid, epoch - 1, [0], True)
            fenced = await client.call(stale)
            assert partition_errors(fenced) == {0: ErrorCode.producer_fenced}
            added = await retried(
                client,
                add_partitions(version, txn_id, pid, epoch, [0]),
                first_partition_error,
            )
            assert partition_errors(added) == {0: ErrorCode.none}
            after = await retried(client, asked, first_partition_error)
            assert partition_errors(after) == {0: ErrorCode.none}
            missing = add_partitions(version, txn_id, pid, epoch, [0, 9], True)
            assert partition_errors(await client.call(missing)) == {
                0: ErrorCode.operation_not_attempted,
                9: ErrorCode.unknown_topic_or_partition,
            }
        assert log_end(server) == 0
