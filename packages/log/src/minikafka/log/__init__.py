"""minikafka.log: the storage layer (seed 000's "log append" and "log read").

Record batch v2 headers checked and given offsets without decoding records; segments
with sparse offset and time indexes; the Log with its log start offset, log end offset,
high watermark and recovery point; recovery after a crash; retention; compaction; the
leader-epoch cache of KIP-101; the idempotent producers' state of KIP-98 with its
``.snapshot`` files; KIP-98's transactions (markers, the last stable offset, each
segment's ``.txnindex``, read_committed reads); the LogManager with Kafka's checkpoint
files.
"""

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from ._batch import ATTRIBUTES_OFFSET as ATTRIBUTES_OFFSET
from ._batch import CONTROL_MASK as CONTROL_MASK
from ._batch import LOG_OVERHEAD as LOG_OVERHEAD
from ._batch import RECORD_BATCH_OVERHEAD as RECORD_BATCH_OVERHEAD
from ._batch import TRANSACTIONAL_MASK as TRANSACTIONAL_MASK
from ._batch import CompressionType as CompressionType
from ._batch import CorruptRecordError as CorruptRecordError
from ._batch import InvalidRecordError as InvalidRecordError
from ._batch import RecordBatchHeader as RecordBatchHeader
from ._batch import TimestampType as TimestampType
from ._batch import iter_batches as iter_batches
from ._batch import read_batch_header as read_batch_header
from ._batch import whole_batches_size as whole_batches_size
from ._checkpoint import CheckpointError as CheckpointError
from ._checkpoint import EpochEntry as EpochEntry
from ._checkpoint import LeaderEpochCheckpointFile as LeaderEpochCheckpointFile
from ._checkpoint import OffsetCheckpointFile as OffsetCheckpointFile
from ._cleaner import CleanResult as CleanResult
from ._cleaner import clean as clean
from ._compression import compress as compress
from ._compression import decompress as decompress
from ._config import COMPRESSION_TYPES as COMPRESSION_TYPES
from ._config import LOG_CONFIG as LOG_CONFIG
from ._config import LOG_MANAGER_CONFIG as LOG_MANAGER_CONFIG
from ._config import NO_EFFECT as NO_EFFECT
from ._config import LogConfig as LogConfig
from ._epoch_cache import UNDEFINED_EPOCH as UNDEFINED_EPOCH
from ._epoch_cache import UNDEFINED_EPOCH_OFFSET as UNDEFINED_EPOCH_OFFSET
from ._epoch_cache import LeaderEpochFileCache as LeaderEpochFileCache
from ._events import AbortedTxnServed as AbortedTxnServed
from ._events import LastStableOffsetMoved as LastStableOffsetMoved
from ._events import LogCleaned as LogCleaned
from ._events import LogRecovered as LogRecovered
from ._events import LogTruncated as LogTruncated
from ._events import ProducerStateLoaded as ProducerStateLoaded
from ._events import SegmentRolled as SegmentRolled
from ._events import SegmentsDeleted as SegmentsDeleted
from ._events import TxnMarkerWritten as TxnMarkerWritten
from ._files import FilePool as FilePool
from ._files import PooledFile as PooledFile
from ._files import raise_open_files_limit as raise_open_files_limit
from ._index import CorruptIndexError as CorruptIndexError
from ._index import OffsetIndex as OffsetIndex
from ._index import TimeIndex as TimeIndex
from ._list_offsets import EARLIEST_LOCAL_TIMESTAMP as EARLIEST_LOCAL_TIMESTAMP
from ._list_offsets import EARLIEST_TIMESTAMP as EARLIEST_TIMESTAMP
from ._list_offsets import LATEST_TIERED_TIMESTAMP as LATEST_TIERED_TIMESTAMP
from ._list_offsets import LATEST_TIMESTAMP as LATEST_TIMESTAMP
from ._list_offsets import MAX_TIMESTAMP as MAX_TIMESTAMP
from ._log import Log as Log
from ._log import OffsetOutOfRangeError as OffsetOutOfRangeError
from ._log_txns import FetchIsolation as FetchIsolation
from ._manager import LogManager as LogManager
from ._manager import LogManagerSchedule as LogManagerSchedule
from ._markers import EndTxnMarker as EndTxnMarker
from ._markers import end_txn_marker_batch as end_txn_marker_batch
from ._markers import read_end_txn_marker as read_end_txn_marker
from ._names import REPLICATION_OFFSET_CHECKPOINT as REPLICATION_OFFSET_CHECKPOINT
from ._ongoing_txns import CompletedTxn as CompletedTxn
from ._ongoing_txns import OngoingTransactions as OngoingTransactions
from ._ongoing_txns import (
    TransactionCoordinatorFencedError as TransactionCoordinatorFencedError,
)
from ._producer_state import NUM_BATCHES_TO_RETAIN as NUM_BATCHES_TO_RETAIN
from ._producer_state import AppendOrigin as AppendOrigin
from ._producer_state import BatchMetadata as BatchMetadata
from ._producer_state import InvalidProducerEpochError as InvalidProducerEpochError
from ._producer_state import OutOfOrderSequenceError as OutOfOrderSequenceError
from ._producer_state import ProducerStateEntry as ProducerStateEntry
from ._producer_state import ProducerStateManager as ProducerStateManager
from ._record_checks import RecordRules as RecordRules
from ._record_checks import check_records as check_records
from ._record_errors import InvalidTimestampError as InvalidTimestampError
from ._record_errors import MissingKeyError as MissingKeyError
from ._records import Header as Header
from ._records import Record as Record
from ._records import build_batch as build_batch
from ._records import decode_batch as decode_batch
from ._records import iter_decoded_batches as iter_decoded_batches
from ._records import iter_records as iter_records
from ._records import make_records as make_records
from ._records import whole_batches as whole_batches
from ._segment import LogSegment as LogSegment
from ._segment_read import FetchDataInfo as FetchDataInfo
from ._segment_read import FileSlice as FileSlice
from ._segment_read import LogOffsetMetadata as LogOffsetMetadata
from ._segment_read import TimestampAndOffset as TimestampAndOffset
from ._snapshot import CorruptSnapshotError as CorruptSnapshotError
from ._snapshot import ProducerSnapshotEntry as ProducerSnapshotEntry
from ._snapshot import read_snapshot as read_snapshot
from ._snapshot import snapshot_bytes as snapshot_bytes
from ._storage import KAFKA_STORAGE_ERROR as KAFKA_STORAGE_ERROR
from ._storage import KafkaStorageError as KafkaStorageError
from ._tool import PathError as PathError
from ._tool import dump as dump
from ._tool import verify as verify
from ._txn_index import AbortedTxn as AbortedTxn
from ._txn_index import TransactionIndex as TransactionIndex
from ._txn_index import TxnIndexSearchResult as TxnIndexSearchResult
from ._validator import LogAppendInfo as LogAppendInfo
from ._validator import RecordTooLargeError as RecordTooLargeError
from ._validator import UnexpectedAppendOffsetError as UnexpectedAppendOffsetError
from ._verification import NO_VERIFICATION_NEEDED as NO_VERIFICATION_NEEDED
from ._verification import InvalidTxnStateError as InvalidTxnStateError
from ._verification import VerificationGuard as VerificationGuard
from ._verification import (
    maybe_start_transaction_verification as maybe_start_transaction_verification,
)

__all__ = [
    "ATTRIBUTES_OFFSET",
    "COMPRESSION_TYPES",
    "CONTROL_MASK",
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "KAFKA_STORAGE_ERROR",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "LOG_CONFIG",
    "LOG_MANAGER_CONFIG",
    "LOG_OVERHEAD",
    "MAX_TIMESTAMP",
    "NO_EFFECT",
    "NO_VERIFICATION_NEEDED",
    "NUM_BATCHES_TO_RETAIN",
    "RECORD_BATCH_OVERHEAD",
    "REPLICATION_OFFSET_CHECKPOINT",
    "TRANSACTIONAL_MASK",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "AbortedTxn",
    "AbortedTxnServed",
    "AppendOrigin",
    "BatchMetadata",
    "CheckpointError",
    "CleanResult",
    "CompletedTxn",
    "CompressionType",
    "CorruptIndexError",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "EndTxnMarker",
    "EpochEntry",
    "FetchDataInfo",
    "FetchIsolation",
    "FilePool",
    "FileSlice",
    "Header",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "InvalidTxnStateError",
    "KafkaStorageError",
    "LastStableOffsetMoved",
    "LeaderEpochCheckpointFile",
    "LeaderEpochFileCache",
    "Log",
    "LogAppendInfo",
    "LogCleaned",
    "LogConfig",
    "LogManager",
    "LogManagerSchedule",
    "LogOffsetMetadata",
    "LogRecovered",
    "LogSegment",
    "LogTruncated",
    "MissingKeyError",
    "OffsetCheckpointFile",
    "OffsetIndex",
    "OffsetOutOfRangeError",
    "OngoingTransactions",
    "OutOfOrderSequenceError",
    "PathError",
    "PooledFile",
    "ProducerSnapshotEntry",
    "ProducerStateEntry",
    "ProducerStateLoaded",
    "ProducerStateManager",
    "Record",
    "RecordBatchHeader",
    "RecordRules",
    "RecordTooLargeError",
    "SegmentRolled",
    "SegmentsDeleted",
    "TimeIndex",
    "TimestampAndOffset",
    "TimestampType",
    "TransactionCoordinatorFencedError",
    "TransactionIndex",
    "TxnIndexSearchResult",
    "TxnMarkerWritten",
    "UnexpectedAppendOffsetError",
    "VerificationGuard",
    "build_batch",
    "check_records",
    "clean",
    "compress",
    "decode_batch",
    "decompress",
    "dump",
    "end_txn_marker_batch",
    "iter_batches",
    "iter_decoded_batches",
    "iter_records",
    "make_records",
    "maybe_start_transaction_verification",
    "raise_open_files_limit",
    "read_batch_header",
    "read_end_txn_marker",
    "read_snapshot",
    "snapshot_bytes",
    "verify",
    "whole_batches",
    "whole_batches_size",
]
