"""The transaction APIs' request bodies, typed: one Union per API over its served
versions (as ``_body.py`` does for the rest: see there).

AddPartitionsToTxn is served in its client versions, 0-3 (v4 and later batch several
transactions and are sent by brokers only); EndTxn 0-4 (v5 belongs to the second
version of the transaction protocol, KIP-890 part 2); WriteTxnMarkers 1, the version
coordinators send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from kio.schema.add_partitions_to_txn.v0 import request as add_partitions_to_txn_v0
    from kio.schema.add_partitions_to_txn.v1 import request as add_partitions_to_txn_v1
    from kio.schema.add_partitions_to_txn.v2 import request as add_partitions_to_txn_v2
    from kio.schema.add_partitions_to_txn.v3 import request as add_partitions_to_txn_v3
    from kio.schema.end_txn.v0 import request as end_txn_v0
    from kio.schema.end_txn.v1 import request as end_txn_v1
    from kio.schema.end_txn.v2 import request as end_txn_v2
    from kio.schema.end_txn.v3 import request as end_txn_v3
    from kio.schema.end_txn.v4 import request as end_txn_v4
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

TXN_BODIES: Mapping[ApiKey, tuple[type, ...]] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: ADD_PARTITIONS_TO_TXN,
    ApiKey.END_TXN: END_TXN,
    ApiKey.WRITE_TXN_MARKERS: WRITE_TXN_MARKERS,
}
