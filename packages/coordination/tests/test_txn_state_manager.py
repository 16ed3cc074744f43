"""The transaction coordinator's cache of ``__transaction_state``: loading a partition
(the latest record per id wins, a tombstone removes it, an ended transaction is handed
back for its markers), the errors while a partition is not here or still loading, and
what time decides (timed-out transactions, expired ids)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination import partition_for as group_partition_for
from minikafka.coordination.transaction import (
    TransactionMetadata,
    TransactionState,
    TransactionStateManager,
    TransactionUnavailableError,
    TxnTransitMetadata,
    key_bytes,
    value_bytes,
)

S = TransactionState
OUT = frozenset({TopicPartition("out", 0)})


def record(
    transactional_id: str,
    state: TransactionState,
    *,
    epoch: int = 0,
    start: int = -1,
    update: int = 0,
    timeout_ms: int = 60_000,
) -> tuple[bytes, bytes]:
    partitions = (
        OUT if state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT) else frozenset()
    )
    transit = TxnTransitMetadata(
        7, -1, epoch, -1, timeout_ms, state, partitions, start, update
    )
    return key_bytes(transactional_id), value_bytes(transit, 1)


def ids_on(manager: TransactionStateManager, partition: int, count: int) -> list[str]:
    """``count`` transactional ids that land on ``partition``."""
    found = (f"tx-{i}" for i in range(100_000))
    return [t for t in found if manager.partition_for(t) == partition][:count]


def test_an_id_lands_where_a_group_of_the_same_name_does() -> None:
    # Guarantee: Kafka's Utils.abs(transactionalId.hashCode) % partitions, the group
    # coordinator's rule.
    manager = TransactionStateManager(num_partitions=50)
    for name in ("tx", "orders-app", "é-ü", "a" * 300):
        assert manager.partition_for(name) == group_partition_for(name, 50)


def test_a_partition_answers_only_once_loaded_and_while_led_here() -> None:
    # Guarantee: NOT_COORDINATOR before this broker leads the partition and after it
    # stopped; COORDINATOR_LOAD_IN_PROGRESS while its records are replayed.
    manager = TransactionStateManager(num_partitions=3)
    [tx] = ids_on(manager, 1, 1)
    with pytest.raises(TransactionUnavailableError) as refused:
        manager.get(tx)
    assert refused.value.error_code is ErrorCode.not_coordinator
    manager.begin_loading(1)
    with pytest.raises(TransactionUnavailableError) as refused:
        manager.get(tx)
    assert refused.value.error_code is ErrorCode.coordinator_load_in_progress
    manager.load_partition(1, [record(tx, S.EMPTY)])
    found = manager.get(tx)
    assert found is not None
    assert found.state is S.EMPTY
    assert manager.unload_partition(1) == 1
    with pytest.raises(TransactionUnavailableError) as refused:
        manager.get(tx)
    assert refused.value.error_code is ErrorCode.not_coordinator


def test_the_replay_keeps_each_ids_latest_record_and_hands_back_ended_ones() -> None:
    # Guarantee: the latest record of an id is its state; a tombstone removes the id;
    # a transaction found in PrepareCommit or PrepareAbort is returned, so its markers
    # are written again (a coordinator may have died between the two records).
    manager = TransactionStateManager(num_partitions=3)
    done, committing, aborting, gone = ids_on(manager, 2, 4)
    loaded = manager.load_partition(
        2,
        [
            record(done, S.EMPTY),
            record(done, S.ONGOING, start=5),
            record(committing, S.ONGOING, start=6),
            record(done, S.PREPARE_COMMIT, start=5),
            record(done, S.COMPLETE_COMMIT, start=5),
            record(committing, S.PREPARE_COMMIT, start=6),
            record(aborting, S.PREPARE_ABORT, start=7, epoch=3),
            record(gone, S.EMPTY),
            (key_bytes(gone), None),
        ],
    )
    assert loaded.transactions == 3
    assert sorted(m.transactional_id for m in loaded.to_complete) == sorted(
        [committing, aborting]
    )
    found = manager.get(aborting)
    assert found is not None
    assert (found.state, found.producer_epoch, found.topic_partitions) == (
        S.PREPARE_ABORT,
        3,
        set(OUT),
    )
    assert manager.get(gone) is None


def test_a_new_id_is_added_once() -> None:
    # Guarantee: two first InitProducerIds for one id share one metadata (the first).
    manager = TransactionStateManager(num_partitions=1)
    manager.load_partition(0, [])
    first = TransactionMetadata("tx", 1, -1, 0, -1, 1000)
    assert manager.put(first) is first
    assert manager.put(TransactionMetadata("tx", 2, -1, 0, -1, 1000)) is first
    manager.remove("tx")
    assert manager.get("tx") is None


def test_time_aborts_open_transactions_and_expires_idle_ids() -> None:
    # Guarantee: an Ongoing transaction past start + transaction.timeout.ms is
    # returned for abort (not one with a move pending, not one in another state); an id
    # idle between transactions for transactional.id.expiration.ms is returned for
    # removal, an open one never.
    manager = TransactionStateManager(num_partitions=1)
    manager.load_partition(
        0,
        [
            record("slow", S.ONGOING, start=1_000, update=1_000, timeout_ms=500),
            record("fast", S.ONGOING, start=1_000, update=1_000, timeout_ms=60_000),
            record("idle", S.COMPLETE_COMMIT, start=10, update=10),
            record("ending", S.PREPARE_COMMIT, start=10, update=10, timeout_ms=1),
        ],
    )
    assert [m.transactional_id for m in manager.timed_out(now=1_501)] == ["slow"]
    assert manager.timed_out(now=1_500) == []
    slow = manager.get("slow")
    assert slow is not None
    slow.prepare_abort_or_commit(
        S.PREPARE_ABORT, now=1_501
    )  # the abort is being written
    assert manager.timed_out(now=2_000) == []
    expired = manager.expired(now=10 + 3_600_000, expiration_ms=3_600_000)
    assert [m.transactional_id for m in expired] == ["idle"]
    assert manager.expired(now=10 + 3_599_999, expiration_ms=3_600_000) == []
