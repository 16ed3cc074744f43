"""The transaction APIs' request bodies, typed: one Union per API over its served
versions (as ``_body.py`` does for the rest: see there).

AddPartitionsToTxn 0-5: 0-3 are the client versions, 4-5 batch several transactions
and are sent by brokers only (a partition leader's ``verify_only`` question, KIP-890);
EndTxn, AddOffsetsToTxn and TxnOffsetCommit 0-4 (EndTxn and TxnOffsetCommit v5
belong to the second version of the transaction protocol, KIP-890 part 2);
WriteTxnMarkers 1, the version coordinators send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from kio.schema.add_offsets_to_txn.v0 import request as add_offsets_to_txn_v0
    from kio.schema.add_offsets_to_txn.v1 import request as add_offsets_to_txn_v1
    from kio.schema.add_offsets_to_txn.v2 import request as add_offsets_to_txn_v2
    from kio.schema.add_offsets_to_txn.v3 import request as add_offsets_to_txn_v3
    from kio.schema.add_offsets_to_txn.v4 import request as add_offsets_to_txn_v4
    from kio.schema.add_partitions_to_txn.v0 import request as add_partitions_to_txn_v0
    from kio.schema.add_partitions_to_txn.v1 import request as add_partitions_to_txn_v1
    from kio.schema.add_partitions_to_txn.v2 import request as add_partitions_to_txn_v2
    from kio.schema.add_partitions_to_txn.v3 import request as add_partitions_to_txn_v3
    from kio.schema.add_partitions_to_txn.v4 import request as add_partitions_to_txn_v4
    from kio.schema.add_partitions_to_txn.v5 import request as add_partitions_to_txn_v5
    from kio.schema.end_txn.v0 import request as end_txn_v0
    from kio.schema.end_txn.v1 import request as end_txn_v1
    from kio.schema.end_txn.v2 import request as end_txn_v2
    from kio.schema.end_txn.v3 import request as end_txn_v3
    from kio.schema.end_txn.v4 import request as end_txn_v4
    from kio.schema.txn_offset_commit.v0 import request as txn_offset_commit_v0
    from kio.schema.txn_offset_commit.v1 import request as txn_offset_commit_v1
    from kio.schema.txn_offset_commit.v2 import request as txn_offset_commit_v2
    from kio.schema.txn_offset_commit.v3 import request as txn_offset_commit_v3
    from kio.schema.txn_offset_commit.v4 import request as txn_offset_commit_v4
    from kio.schema.write_txn_markers.v1 import request as write_txn_markers_v1

from minikafka.net import ApiKey, body_classes

AddPartitionsToTxnRequest: TypeAlias = (
    "add_partitions_to_txn_v0.AddPartitionsToTxnRequest"
    " | add_partitions_to_txn_v1.AddPartitionsToTxnRequest"
    " | add_partitions_to_txn_v2.AddPartitionsToTxnRequest"
    " | add_partitions_to_txn_v3.AddPartitionsToTxnRequest"
)
ADD_PARTITIONS_TO_TXN: tuple[type[AddPartitionsToTxnRequest], ...] = body_classes(
    AddPartitionsToTxnRequest
)
# The brokers' versions (v4+): several transactions, each with verify_only.
AddPartitionsToTxnBatchedRequest: TypeAlias = (
    "add_partitions_to_txn_v4.AddPartitionsToTxnRequest"
    " | add_partitions_to_txn_v5.AddPartitionsToTxnRequest"
)
ADD_PARTITIONS_TO_TXN_BATCHED: tuple[type[AddPartitionsToTxnBatchedRequest], ...] = (
    body_classes(AddPartitionsToTxnBatchedRequest)
)

EndTxnRequest: TypeAlias = (
    "end_txn_v0.EndTxnRequest"
    " | end_txn_v1.EndTxnRequest"
    " | end_txn_v2.EndTxnRequest"
    " | end_txn_v3.EndTxnRequest"
    " | end_txn_v4.EndTxnRequest"
)
END_TXN: tuple[type[EndTxnRequest], ...] = body_classes(EndTxnRequest)

WriteTxnMarkersRequest: TypeAlias = "write_txn_markers_v1.WriteTxnMarkersRequest"
WRITE_TXN_MARKERS: tuple[type[WriteTxnMarkersRequest], ...] = body_classes(
    WriteTxnMarkersRequest
)

AddOffsetsToTxnRequest: TypeAlias = (
    "add_offsets_to_txn_v0.AddOffsetsToTxnRequest"
    " | add_offsets_to_txn_v1.AddOffsetsToTxnRequest"
    " | add_offsets_to_txn_v2.AddOffsetsToTxnRequest"
    " | add_offsets_to_txn_v3.AddOffsetsToTxnRequest"
    " | add_offsets_to_txn_v4.AddOffsetsToTxnRequest"
)
ADD_OFFSETS_TO_TXN: tuple[type[AddOffsetsToTxnRequest], ...] = body_classes(
    AddOffsetsToTxnRequest
)

TxnOffsetCommitRequest: TypeAlias = (
    "txn_offset_commit_v0.TxnOffsetCommitRequest"
    " | txn_offset_commit_v1.TxnOffsetCommitRequest"
    " | txn_offset_commit_v2.TxnOffsetCommitRequest"
    " | txn_offset_commit_v3.TxnOffsetCommitRequest"
    " | txn_offset_commit_v4.TxnOffsetCommitRequest"
)
TXN_OFFSET_COMMIT: tuple[type[TxnOffsetCommitRequest], ...] = body_classes(
    TxnOffsetCommitRequest
)
# The partitions that name the leader epoch of the offset (v2+, KIP-320).
TxnOffsetCommitPartitionWithEpoch: TypeAlias = (
    "txn_offset_commit_v2.TxnOffsetCommitRequestPartition"
    " | txn_offset_commit_v3.TxnOffsetCommitRequestPartition"
    " | txn_offset_commit_v4.TxnOffsetCommitRequestPartition"
)
TXN_OFFSET_COMMIT_PARTITION_WITH_EPOCH: tuple[
    type[TxnOffsetCommitPartitionWithEpoch], ...
] = body_classes(TxnOffsetCommitPartitionWithEpoch)
# The requests that name the consumer's generation and member (v3+, KIP-447).
TxnOffsetCommitWithMember: TypeAlias = (
    "txn_offset_commit_v3.TxnOffsetCommitRequest"
    " | txn_offset_commit_v4.TxnOffsetCommitRequest"
)
TXN_OFFSET_COMMIT_WITH_MEMBER: tuple[type[TxnOffsetCommitWithMember], ...] = (
    body_classes(TxnOffsetCommitWithMember)
)

TXN_BODIES: Mapping[ApiKey, tuple[type, ...]] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: ADD_PARTITIONS_TO_TXN + ADD_PARTITIONS_TO_TXN_BATCHED,
    ApiKey.END_TXN: END_TXN,
    ApiKey.WRITE_TXN_MARKERS: WRITE_TXN_MARKERS,
    ApiKey.ADD_OFFSETS_TO_TXN: ADD_OFFSETS_TO_TXN,
    ApiKey.TXN_OFFSET_COMMIT: TXN_OFFSET_COMMIT,
    # KIP-664's two reads (``_txn_admin.py`` names the classes itself).
    ApiKey.DESCRIBE_TRANSACTIONS: body_classes(
        "describe_transactions_v0.DescribeTransactionsRequest"
    ),
    ApiKey.LIST_TRANSACTIONS: body_classes(
        "list_transactions_v0.ListTransactionsRequest"
        " | list_transactions_v1.ListTransactionsRequest"
        " | list_transactions_v2.ListTransactionsRequest"
    ),
}
