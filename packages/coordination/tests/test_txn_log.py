"""The records of ``__transaction_state``: what the coordinator writes reads back the
same, in both value versions; bad bytes are refused by name. (Byte for byte against
Kafka's own records: tests/reference/test_transaction_log.py.)"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.coordination.transaction import (
    TransactionLogError,
    TransactionState,
    TxnTransitMetadata,
    key_bytes,
    read_key,
    read_value,
    value_bytes,
)

S = TransactionState

transits = st.builds(
    TxnTransitMetadata,
    producer_id=st.integers(0, 2**63 - 1),
    last_producer_id=st.integers(-1, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    last_producer_epoch=st.just(-1),
    txn_timeout_ms=st.integers(1, 2**31 - 1),
    state=st.sampled_from([s for s in S if s is not S.PREPARE_EPOCH_FENCE]),
    topic_partitions=st.frozensets(
        st.builds(
            TopicPartition, st.sampled_from(["a", "b", "é"]), st.integers(0, 2**31 - 1)
        ),
        max_size=6,
    ),
    txn_start_timestamp=st.integers(-1, 2**62),
    txn_last_update_timestamp=st.integers(0, 2**62),
)


@given(transits, st.sampled_from([0, 1]))
def test_a_value_reads_back_as_written(
    transit: TxnTransitMetadata, version: int
) -> None:
    # Guarantee: every field of a move survives its record, in both versions (an Empty
    # transaction's partitions are null on the wire, and read back as none).
    value = read_value(value_bytes(transit, version))
    assert value.version == version
    assert (value.producer_id, value.producer_epoch) == (
        transit.producer_id,
        transit.producer_epoch,
    )
    assert value.txn_timeout_ms == transit.txn_timeout_ms
    assert value.state is transit.state
    expected = frozenset() if transit.state is S.EMPTY else transit.topic_partitions
    assert value.topic_partitions == expected
    assert value.txn_start_timestamp == transit.txn_start_timestamp
    assert value.txn_last_update_timestamp == transit.txn_last_update_timestamp
    if version == 1:
        assert value.previous_producer_id == transit.last_producer_id


def test_a_fencing_is_written_as_the_abort_it_leads_to() -> None:
    # Guarantee: PrepareEpochFence never reaches the log (Kafka stores PrepareAbort).
    transit = TxnTransitMetadata(
        1, -1, 3, 2, 1000, S.PREPARE_EPOCH_FENCE, frozenset(), 5, 6
    )
    assert read_value(value_bytes(transit)).state is S.PREPARE_ABORT


def test_keys_name_the_transactional_id() -> None:
    assert key_bytes("tx-1") == b"\x00\x00\x00\x04tx-1"
    assert read_key(key_bytes("é")) == "é"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "0 bytes"),
        (b"\x00\x07\x00\x01x", "key version 7"),
        (b"\x00\x00\x00\x09ab", "malformed"),
        (b"\x00\x00\x00\x01ab", "1 bytes after"),
    ],
)
def test_a_bad_key_is_refused_by_name(data: bytes, says: str) -> None:
    with pytest.raises(TransactionLogError, match=says):
        read_key(data)


def test_a_bad_value_is_refused_by_name() -> None:
    good = value_bytes(
        TxnTransitMetadata(1, -1, 0, -1, 1000, S.ONGOING, frozenset(), 5, 6)
    )
    with pytest.raises(TransactionLogError, match="value version 9"):
        read_value(b"\x00\x09" + good[2:])
    with pytest.raises(TransactionLogError, match="malformed"):
        read_value(good[:-3])
    status = 2 + 8 + 2 + 4  # the state's byte
    with pytest.raises(TransactionLogError, match="no transaction state has id 42"):
        read_value(good[:status] + b"\x2a" + good[status + 1 :])
    with pytest.raises(TransactionLogError, match="value version 2"):
        value_bytes(
            TxnTransitMetadata(1, -1, 0, -1, 1000, S.EMPTY, frozenset(), 5, 6), 2
        )


@given(st.binary(max_size=200))
def test_any_bytes_are_a_record_or_refused_by_name(data: bytes) -> None:
    # Guarantee: a loading coordinator meets only TransactionLogError in a damaged
    # record, never another exception (it skips or fails the load by name).
    for read in (read_key, read_value):
        with contextlib.suppress(TransactionLogError):
            read(data)
