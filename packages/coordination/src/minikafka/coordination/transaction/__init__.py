"""The transaction coordinator (KIP-98, KIP-447, KIP-890 part 1), beside the group
coordinator: a core over the compacted ``__transaction_state`` topic, and its shell.

The state table of a transaction (:mod:`._txn_state`), one transactional id's metadata
with its prepared and completed moves (:mod:`._txn_metadata`), the records of
``__transaction_state`` those moves are written as (:mod:`._txn_log`, byte for byte
Kafka's), the cache of them a coordinator loads partition by partition
(:mod:`._txn_state_manager`), the coordinator's requests over them
(:mod:`._txn_coordinator`: InitProducerId with an id, AddPartitionsToTxn, EndTxn, the
markers' completion, timeouts and expiry), its settings (:mod:`._txn_config`), its
trace events (:mod:`._txn_events`), what an operator may ask of it (:mod:`._txn_queries`:
DescribeTransactions, ListTransactions), and the trio shell the broker runs it in
(:mod:`._shell`). The offsets a transaction commits are the group coordinator's
(``group/_txn_offsets.py``).
"""

from ._shell import MarkerChannel as MarkerChannel
from ._shell import TransactionCoordinatorShell as TransactionCoordinatorShell
from ._shell import TransactionStateTopic as TransactionStateTopic
from ._txn_config import TXN_CONFIG as TXN_CONFIG
from ._txn_config import TxnConfig as TxnConfig
from ._txn_coordinator import TransactionCoordinator as TransactionCoordinator
from ._txn_coordinator import TxnMarkers as TxnMarkers
from ._txn_coordinator import TxnRecord as TxnRecord
from ._txn_coordinator import TxnReply as TxnReply
from ._txn_coordinator import TxnResult as TxnResult
from ._txn_events import TxnStateChanged as TxnStateChanged
from ._txn_log import TransactionLogError as TransactionLogError
from ._txn_log import TxnLogValue as TxnLogValue
from ._txn_log import key_bytes as key_bytes
from ._txn_log import read_key as read_key
from ._txn_log import read_value as read_value
from ._txn_log import value_bytes as value_bytes
from ._txn_metadata import NO_PRODUCER_EPOCH as NO_PRODUCER_EPOCH
from ._txn_metadata import NO_PRODUCER_ID as NO_PRODUCER_ID
from ._txn_metadata import ProducerEpochExhaustedError as ProducerEpochExhaustedError
from ._txn_metadata import ProducerFencedError as ProducerFencedError
from ._txn_metadata import TransactionMetadata as TransactionMetadata
from ._txn_metadata import TxnTransitMetadata as TxnTransitMetadata
from ._txn_queries import TransactionDescription as TransactionDescription
from ._txn_queries import TransactionListing as TransactionListing
from ._txn_queries import TransactionListings as TransactionListings
from ._txn_state import TXN_TRANSITION_REASONS as TXN_TRANSITION_REASONS
from ._txn_state import TXN_TRANSITIONS as TXN_TRANSITIONS
from ._txn_state import IllegalTransactionStateError as IllegalTransactionStateError
from ._txn_state import TransactionState as TransactionState
from ._txn_state import check_txn_transition as check_txn_transition
from ._txn_state_manager import TRANSACTION_STATE_TOPIC as TRANSACTION_STATE_TOPIC
from ._txn_state_manager import LoadedPartition as LoadedPartition
from ._txn_state_manager import TransactionStateManager as TransactionStateManager
from ._txn_state_manager import (
    TransactionUnavailableError as TransactionUnavailableError,
)

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TRANSACTION_STATE_TOPIC",
    "TXN_CONFIG",
    "TXN_TRANSITIONS",
    "TXN_TRANSITION_REASONS",
    "IllegalTransactionStateError",
    "LoadedPartition",
    "MarkerChannel",
    "ProducerEpochExhaustedError",
    "ProducerFencedError",
    "TransactionCoordinator",
    "TransactionCoordinatorShell",
    "TransactionDescription",
    "TransactionListing",
    "TransactionListings",
    "TransactionLogError",
    "TransactionMetadata",
    "TransactionState",
    "TransactionStateManager",
    "TransactionStateTopic",
    "TransactionUnavailableError",
    "TxnConfig",
    "TxnLogValue",
    "TxnMarkers",
    "TxnRecord",
    "TxnReply",
    "TxnResult",
    "TxnStateChanged",
    "TxnTransitMetadata",
    "check_txn_transition",
    "key_bytes",
    "read_key",
    "read_value",
    "value_bytes",
]
