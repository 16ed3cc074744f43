"""Scenarios of the transaction APIs (KIP-98, KIP-447) at every version minikafka
advertises: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit and
WriteTxnMarkers, each inside a transaction of its own (a transactional id per scenario,
so the scenarios do not meet), and Kafka's refusals: a partition that does not exist,
a producer id or epoch the coordinator does not know, an end with nothing begun, a
marker from an older producer epoch; and a read_committed Fetch after an aborted
transaction (its aborted_transactions list).

The setup of each transaction (FindCoordinator for the id, InitProducerId) is not
compared: both brokers answer it their way while ``__transaction_state`` is created
and loaded, and the client retries. A request a client retries while another move of
the same id is on its way (CONCURRENT_TRANSACTIONS, right after an EndTxn while the
markers are written) is sent again until it is settled, and its settled answer is
compared.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

from minikafka.log import build_batch, iter_decoded_batches
from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import Case, each_version
from ._fixtures import DATA, batch, produce
from ._normalise import to_tree
from ._scenario import Scenario, Session

_RETRIED = {
    14,
    15,
    16,
    51,
}  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT
_WAIT = 30.0


def _settled(s: Session, body: Any, error_of: Callable[[Any], int]) -> Any:
    deadline = time.monotonic() + _WAIT
    while True:
        answer = s.call(body)
        if error_of(answer) not in _RETRIED:
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)


def _check_settled(
    s: Session, body: Any, error_of: Callable[[Any], int], label: str
) -> Any:
    """``body`` sent until its answer is not one a client retries; that one compared."""
    answer = _settled(s, body, error_of)
    s.normaliser.trim, s.normaliser.varies = None, frozenset()
    s.record(label, s.normaliser(to_tree(answer)))
    return answer


def _top(answer: Any) -> int:
    return int(answer.error_code)


def _first_partition(answer: Any) -> int:
    topics = (
        answer.results_by_topic_v3_and_below
        if hasattr(answer, "results_by_topic_v3_and_below")
        else answer.results_by_transaction[0].topic_results
    )
    return int(topics[0].results_by_partition[0].partition_error_code)


def _begin(s: Session, txn_id: str) -> tuple[int, int]:
    """The coordinator found and the producer's id and epoch (not compared)."""
    _settled(s, make(ApiKey.FIND_COORDINATOR, 3, key=txn_id, key_type=1), _top)
    answer = _settled(
        s,
        make(
            ApiKey.INIT_PRODUCER_ID,
            4,
            transactional_id=txn_id,
            transaction_timeout=60_000,
            producer_id=-1,
            producer_epoch=-1,
        ),
        _top,
    )
    assert _top(answer) == 0, answer
    return int(answer.producer_id), int(answer.producer_epoch)


def _add_partitions(
    v: int,
    txn_id: str,
    pid: int,
    epoch: int,
    partitions: list[tuple[str, int]],
    verify_only: bool = False,
) -> Any:
    """AddPartitionsToTxn; from v4 the brokers' form, one transaction."""
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    if v >= 4:
        return make(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            v,
            transactions=[_transaction(txn_id, pid, epoch, topics, verify_only)],
        )
    return make(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        v,
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": t, "partitions": p} for t, p in topics.items()],
    )


def _transaction(
    txn_id: str, pid: int, epoch: int, topics: dict[str, list[int]], verify_only: bool
) -> dict[str, Any]:
    return {
        "transactional_id": txn_id,
        "producer_id": pid,
        "producer_epoch": epoch,
        "verify_only": verify_only,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
    }


def _end(v: int, txn_id: str, pid: int, epoch: int, commit: bool) -> Any:
    return make(
        ApiKey.END_TXN,
        v,
        transactional_id=txn_id,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )


def _open(s: Session, txn_id: str, partition: int = 1) -> tuple[int, int]:
    """A transaction with one record in DATA-``partition`` (not compared)."""
    pid, epoch = _begin(s, txn_id)
    _settled(
        s,
        _add_partitions(3, txn_id, pid, epoch, [(DATA, partition)]),
        _first_partition,
    )
    records = batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    records = _transactional(records)
    body = produce(DATA, partition, records, acks=-1)
    answer = s.call(dataclasses.replace(body, transactional_id=txn_id))
    assert int(answer.responses[0].partition_responses[0].error_code) == 0, answer
    return pid, epoch


def _transactional(records: bytes) -> bytes:
    """A batch with the transactional attribute set and its CRC made again."""
    [(_, header, decoded)] = list(iter_decoded_batches(records))
    return build_batch(
        decoded,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=True,
    )


# --- AddPartitionsToTxn --------------------------------------------------------------


def _adds(s: Session, v: int) -> None:
    txn_id = f"conf-apt-v{v}-adds"
    pid, epoch = _begin(s, txn_id)
    body = _add_partitions(v, txn_id, pid, epoch, [(DATA, 0), (DATA, 2)])
    _check_settled(s, body, _first_partition, "AddPartitionsToTxn")
    # Added already: answered NONE again.
    s.check(body)
    _settled(s, _end(3, txn_id, pid, epoch, False), _top)


def _unknown_partition(s: Session, v: int) -> None:
    txn_id = f"conf-apt-v{v}-unknown"
    pid, epoch = _begin(s, txn_id)
    s.check(_add_partitions(v, txn_id, pid, epoch, [(DATA, 0), (DATA, 9)]))


def _wrong_producer(pid_delta: int, epoch_delta: int) -> Case:
    def run(s: Session, v: int) -> None:
        txn_id = f"conf-apt-v{v}-wrong-{pid_delta}-{epoch_delta}"
        pid, epoch = _begin(s, txn_id)
        body = _add_partitions(
            v, txn_id, pid + pid_delta, epoch + epoch_delta, [(DATA, 0)]
        )
        _check_settled(s, body, _first_partition, "AddPartitionsToTxn")

    return run


def _verifies(s: Session, v: int) -> None:
    """KIP-890's question of a partition leader: DATA-1 is in the transaction, DATA-0
    is not (TRANSACTION_ABORTABLE), and asking adds nothing."""
    txn_id = f"conf-apt-v{v}-verifies"
    pid, epoch = _open(s, txn_id)
    body = _add_partitions(v, txn_id, pid, epoch, [(DATA, 1), (DATA, 0)], True)
    _check_settled(s, body, _first_partition, "AddPartitionsToTxn")
    s.check(body)
    _settled(s, _end(3, txn_id, pid, epoch, False), _top)


def _verifies_wrong_producer(s: Session, v: int) -> None:
    txn_id = f"conf-apt-v{v}-verifies-wrong"
    pid, epoch = _open(s, txn_id)
    for p, e in ((pid + 1000, epoch), (pid, epoch - 1)):
        body = _add_partitions(v, txn_id, p, e, [(DATA, 1)], True)
        _check_settled(s, body, _first_partition, "AddPartitionsToTxn")
    _settled(s, _end(3, txn_id, pid, epoch, False), _top)


def _verifies_two_transactions(s: Session, v: int) -> None:
    """Two transactions in one request, each answered for itself."""
    first, second = f"conf-apt-v{v}-batch-a", f"conf-apt-v{v}-batch-b"
    pid_a, epoch_a = _open(s, first)
    pid_b, epoch_b = _begin(s, second)
    body = make(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        v,
        transactions=[
            _transaction(first, pid_a, epoch_a, {DATA: [1]}, True),
            _transaction(second, pid_b, epoch_b, {DATA: [1]}, True),
        ],
    )
    _check_settled(s, body, _first_partition, "AddPartitionsToTxn")
    _settled(s, _end(3, first, pid_a, epoch_a, False), _top)


APT_CASES: dict[str, Case] = {
    "adds": _adds,
    "unknown-partition": _unknown_partition,
    "unknown-producer-id": _wrong_producer(1000, 0),
    "old-epoch": _wrong_producer(0, -1),
    "verifies": _verifies,
    "verifies-wrong-producer": _verifies_wrong_producer,
    "verifies-two-transactions": _verifies_two_transactions,
}
APT_SINCE = {
    "verifies": 4,
    "verifies-wrong-producer": 4,
    "verifies-two-transactions": 4,
}


# --- Produce, transactional, to a partition never added (KIP-890 part 1) --------------


def _produce_not_added(s: Session, v: int) -> None:
    """The leader asks the coordinator first, which says no: nothing is written."""
    txn_id = f"conf-produce-v{v}-not-added"
    pid, epoch = _begin(s, txn_id)
    records = batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    body = produce(DATA, 0, _transactional(records), acks=-1, version=v)
    s.check(dataclasses.replace(body, transactional_id=txn_id))


PRODUCE_NOT_ADDED_VERSIONS = (3, 8, 10, 11)


# --- EndTxn ---------------------------------------------------------------------------


def _ends(commit: bool) -> Case:
    def run(s: Session, v: int) -> None:
        txn_id = f"conf-end-v{v}-{commit}"
        pid, epoch = _open(s, txn_id)
        _check_settled(s, _end(v, txn_id, pid, epoch, commit), _top, "EndTxn")

    return run


def _nothing_begun(s: Session, v: int) -> None:
    txn_id = f"conf-end-v{v}-nothing"
    pid, epoch = _begin(s, txn_id)
    _check_settled(s, _end(v, txn_id, pid, epoch, True), _top, "EndTxn")


def _end_old_epoch(s: Session, v: int) -> None:
    txn_id = f"conf-end-v{v}-old-epoch"
    pid, epoch = _open(s, txn_id)
    _check_settled(s, _end(v, txn_id, pid, epoch - 1, True), _top, "EndTxn")
    _settled(s, _end(3, txn_id, pid, epoch, False), _top)


END_CASES: dict[str, Case] = {
    "commit": _ends(True),
    "abort": _ends(False),
    "nothing-begun": _nothing_begun,
    "old-epoch": _end_old_epoch,
}


# --- AddOffsetsToTxn and TxnOffsetCommit ----------------------------------------------


def _add_offsets(v: int, txn_id: str, pid: int, epoch: int, group: str) -> Any:
    return make(
        ApiKey.ADD_OFFSETS_TO_TXN,
        v,
        transactional_id=txn_id,
        producer_id=pid,
        producer_epoch=epoch,
        group_id=group,
    )


def _adds_offsets(s: Session, v: int) -> None:
    txn_id, group = f"conf-aot-v{v}", f"conf-aot-group-v{v}"
    pid, epoch = _begin(s, txn_id)
    _check_settled(
        s, _add_offsets(v, txn_id, pid, epoch, group), _top, "AddOffsetsToTxn"
    )
    _settled(s, _end(3, txn_id, pid, epoch, False), _top)


def _add_offsets_unknown_producer(s: Session, v: int) -> None:
    txn_id, group = f"conf-aot-v{v}-unknown", f"conf-aot-group-v{v}"
    pid, epoch = _begin(s, txn_id)
    _check_settled(
        s, _add_offsets(v, txn_id, pid + 1000, epoch, group), _top, "AddOffsetsToTxn"
    )


def _add_offsets_old_epoch(s: Session, v: int) -> None:
    txn_id, group = f"conf-aot-v{v}-old-epoch", f"conf-aot-group-v{v}"
    pid, epoch = _begin(s, txn_id)
    _check_settled(
        s, _add_offsets(v, txn_id, pid, epoch - 1, group), _top, "AddOffsetsToTxn"
    )


AOT_CASES: dict[str, Case] = {
    "adds": _adds_offsets,
    "unknown-producer-id": _add_offsets_unknown_producer,
    "old-epoch": _add_offsets_old_epoch,
}


def _init_old_epoch(s: Session, v: int) -> None:
    """InitProducerId v3+ naming the id's producer at an older epoch than its own: a
    zombie, fenced (KIP-360)."""
    txn_id = f"conf-init-v{v}-old-epoch"
    pid, epoch = _begin(s, txn_id)
    _settled(s, make(ApiKey.FIND_COORDINATOR, 3, key=txn_id, key_type=1), _top)
    _begin(s, txn_id)  # the epoch is bumped: the first one is old now
    _check_settled(
        s,
        make(
            ApiKey.INIT_PRODUCER_ID,
            v,
            transactional_id=txn_id,
            transaction_timeout=60_000,
            producer_id=pid,
            producer_epoch=epoch - 1 if epoch > 0 else epoch,
        ),
        _top,
        "InitProducerId",
    )


INIT_CASES: dict[str, Case] = {"transactional-old-epoch": _init_old_epoch}


def _txn_commit(
    v: int, txn_id: str, group: str, pid: int, epoch: int, partitions: list[int]
) -> Any:
    return make(
        ApiKey.TXN_OFFSET_COMMIT,
        v,
        transactional_id=txn_id,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": DATA,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": 5,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "m",
                    }
                    for p in partitions
                ],
            }
        ],
    )


def _commits_offsets(partitions: list[int], add_offsets: bool = True) -> Case:
    def run(s: Session, v: int) -> None:
        txn_id = f"conf-toc-v{v}-{partitions}-{add_offsets}"
        group = f"conf-toc-group-v{v}-{len(partitions)}-{add_offsets}"
        pid, epoch = _begin(s, txn_id)
        _settled(s, make(ApiKey.FIND_COORDINATOR, 3, key=group, key_type=0), _top)
        if add_offsets:
            _settled(s, _add_offsets(3, txn_id, pid, epoch, group), _top)
        _check_settled(
            s,
            _txn_commit(v, txn_id, group, pid, epoch, partitions),
            lambda a: int(a.topics[0].partitions[0].error_code),
            "TxnOffsetCommit",
        )
        _settled(s, _end(3, txn_id, pid, epoch, True), _top)
        if not add_offsets:
            return  # the group's partition is not in the transaction: no marker
        # The offsets count once the commit's marker reached the group's partition.
        _check_settled(
            s,
            make(
                ApiKey.OFFSET_FETCH,
                7,
                group_id=group,
                topics=[{"name": DATA, "partition_indexes": partitions}],
                require_stable=True,
            ),
            _unstable_as_retried,
            "OffsetFetch",
        )

    return run


def _unstable_as_retried(answer: Any) -> int:
    """UNSTABLE_OFFSET_COMMIT (88) on a partition: asked again, as a consumer does."""
    unstable = any(int(p.error_code) == 88 for t in answer.topics for p in t.partitions)
    return 51 if unstable else int(answer.error_code)


TOC_CASES: dict[str, Case] = {
    "commits": _commits_offsets([0, 2]),
    "unknown-partition": _commits_offsets([9]),
    "without-add-offsets": _commits_offsets([0], add_offsets=False),
}


# --- WriteTxnMarkers and what read_committed reads ------------------------------------


def _markers(v: int, pid: int, epoch: int, commit: bool, partitions: list[int]) -> Any:
    return make(
        ApiKey.WRITE_TXN_MARKERS,
        v,
        markers=[
            {
                "producer_id": pid,
                "producer_epoch": epoch,
                "transaction_result": commit,
                "coordinator_epoch": 0,
                "topics": [{"name": DATA, "partition_indexes": partitions}],
            }
        ],
    )


def _writes_marker(commit: bool) -> Case:
    def run(s: Session, v: int) -> None:
        pid, epoch = _open(s, f"conf-wtm-v{v}-{commit}")
        s.check(_markers(v, pid, epoch, commit, [1]))

    return run


def _marker_old_epoch(s: Session, v: int) -> None:
    txn_id = f"conf-wtm-v{v}-old-epoch"
    pid, epoch = _open(s, txn_id)
    s.check(_markers(v, pid, epoch - 1, False, [1]))
    _settled(s, _end(3, txn_id, pid, epoch, False), _top)


def _marker_unknown_partition(s: Session, v: int) -> None:
    s.check(_markers(v, 424242, 0, True, [9]))


def _marker_unknown_producer(s: Session, v: int) -> None:
    """A marker for a producer the partition has never seen: written, as Kafka does
    (an empty transaction ends), and the partition goes on."""
    s.check(_markers(v, 424243, 0, False, [1]))
    s.check(_markers(v, 424243, 0, False, [1]))


WTM_CASES: dict[str, Case] = {
    "commit": _writes_marker(True),
    "abort": _writes_marker(False),
    "old-epoch": _marker_old_epoch,
    "unknown-partition": _marker_unknown_partition,
    "unknown-producer": _marker_unknown_producer,
}


def scenarios() -> Iterator[Scenario]:
    yield from each_version(
        ApiKey.ADD_PARTITIONS_TO_TXN, "add-partitions-to-txn", APT_CASES, APT_SINCE
    )
    for v in PRODUCE_NOT_ADDED_VERSIONS:
        yield Scenario(
            f"produce.v{v}.transactional-not-added",
            functools.partial(_produce_not_added, v=v),
        )
    yield from each_version(ApiKey.END_TXN, "end-txn", END_CASES)
    yield from each_version(ApiKey.ADD_OFFSETS_TO_TXN, "add-offsets-to-txn", AOT_CASES)
    yield from each_version(ApiKey.TXN_OFFSET_COMMIT, "txn-offset-commit", TOC_CASES)
    yield from each_version(ApiKey.WRITE_TXN_MARKERS, "write-txn-markers", WTM_CASES)
    yield from each_version(
        ApiKey.INIT_PRODUCER_ID,
        "init-producer-id",
        INIT_CASES,
        {"transactional-old-epoch": 3},
    )
