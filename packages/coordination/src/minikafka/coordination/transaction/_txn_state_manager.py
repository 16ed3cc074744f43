"""The transaction coordinator's cache of ``__transaction_state`` (Kafka's
``TransactionStateManager``), partition by partition.

A transactional id belongs to one partition of ``__transaction_state``
(``partition_for``: Java's ``String.hashCode``, as for a group), and the broker that
leads that partition is its coordinator. When a broker becomes leader of a partition it
replays the partition's records into this cache (the latest record of each id wins; a
tombstone removes it) and, meanwhile, answers COORDINATOR_LOAD_IN_PROGRESS for its ids;
a transaction the replay finds in PrepareCommit or PrepareAbort was ended but its
markers may not all be written, so :meth:`load_partition` returns it for the markers to
be sent again. When leadership moves away the partition's ids are dropped
(NOT_COORDINATOR from then on).

The manager also says, given ``now``, which open transactions have run past their
``transaction.timeout.ms`` (the coordinator aborts them) and which idle ids have passed
``transactional.id.expiration.ms`` (they are removed). It takes time as an argument and
does no I/O: the records come in, the decisions go out.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator

import attrs
from kio.schema.errors import ErrorCode

from ..group._group_metadata_manager import partition_for
from ._txn_log import read_key, read_value
from ._txn_metadata import NO_PRODUCER_EPOCH, TransactionMetadata
from ._txn_state import TransactionState

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "LoadedPartition",
    "TransactionStateManager",
    "TransactionUnavailableError",
]

TRANSACTION_STATE_TOPIC = "__transaction_state"

StoredRecord = tuple[bytes, bytes | None]
"""One record of ``__transaction_state``: its key and value (None: a tombstone)."""

_S = TransactionState


class _Status(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


class TransactionUnavailableError(Exception):
    """This broker cannot answer for the id now: NOT_COORDINATOR (its partition is not
    led here) or COORDINATOR_LOAD_IN_PROGRESS (its partition is being replayed)."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@attrs.frozen
class LoadedPartition:
    """What replaying one partition found."""

    partition: int
    transactions: int
    """How many transactional ids it holds now."""
    to_complete: tuple[TransactionMetadata, ...]
    """Transactions ended (PrepareCommit, PrepareAbort) whose markers must be sent."""


@attrs.define(eq=False)
class TransactionStateManager:
    num_partitions: int = 50
    """``transaction.state.log.num.partitions``."""
    _status: dict[int, _Status] = attrs.field(init=False, factory=dict)
    _cache: dict[int, dict[str, TransactionMetadata]] = attrs.field(
        init=False, factory=dict
    )
    _epochs: dict[int, int] = attrs.field(init=False, factory=dict)
    """Partition -> the leader epoch this broker leads it in: the *coordinator epoch*
    its markers carry, so a partition leader can refuse the markers of a coordinator
    that lost the partition (TRANSACTION_COORDINATOR_FENCED)."""

    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition that holds ``transactional_id``."""
        return partition_for(transactional_id, self.num_partitions)

    # --- leadership of the partitions ---------------------------------------------------

    def begin_loading(self, partition: int, coordinator_epoch: int = 0) -> None:
        """This broker became the partition's leader (in ``coordinator_epoch``, the
        partition's leader epoch): its ids wait for the replay."""
        self._status[partition] = _Status.LOADING
        self._cache[partition] = {}
        self._epochs[partition] = coordinator_epoch

    def load_partition(
        self,
        partition: int,
        records: Iterable[StoredRecord],
        coordinator_epoch: int | None = None,
    ) -> LoadedPartition:
        """Replay the partition's records from its start (or what compaction left)."""
        if self._status.get(partition) is not _Status.LOADING:
            self.begin_loading(partition, coordinator_epoch or 0)
        elif coordinator_epoch is not None:
            self._epochs[partition] = coordinator_epoch
        cache = self._cache[partition]
        for key, value in records:
            transactional_id = read_key(key)
            if value is None:
                cache.pop(transactional_id, None)
                continue
            stored = read_value(value)
            cache[transactional_id] = TransactionMetadata(
                transactional_id,
                stored.producer_id,
                stored.previous_producer_id,
                stored.producer_epoch,
                NO_PRODUCER_EPOCH,
                stored.txn_timeout_ms,
                stored.state,
                set(stored.topic_partitions),
                stored.txn_start_timestamp,
                stored.txn_last_update_timestamp,
            )
        self._status[partition] = _Status.ACTIVE
        to_complete = tuple(
            meta
            for meta in cache.values()
            if meta.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT)
        )
        return LoadedPartition(partition, len(cache), to_complete)

    def unload_partition(self, partition: int) -> int:
        """Leadership moved away: forget the partition's ids; how many there were."""
        self._status.pop(partition, None)
        self._epochs.pop(partition, None)
        return len(self._cache.pop(partition, {}))

    def partition_epoch(self, partition: int) -> int | None:
        """The coordinator epoch ``partition`` is led in here, None if it is not."""
        return self._epochs.get(partition)

    def coordinator_epoch(self, transactional_id: str) -> int | None:
        """The coordinator epoch of the id's partition, None if it is not led here."""
        return self._epochs.get(self.partition_for(transactional_id))

    def loaded_partitions(self) -> list[int]:
        """The partitions led here (loaded or loading)."""
        return list(self._status)

    def is_loaded(self, partition: int) -> bool:
        """Whether the partition is led here and replayed (its ids are served)."""
        return self._status.get(partition) is _Status.ACTIVE

    # --- what a request finds ------------------------------------------------------------

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        """The id's metadata (None: no such id yet), or TransactionUnavailableError."""
        partition = self.partition_for(transactional_id)
        status = self._status.get(partition)
        if status is None:
            raise TransactionUnavailableError(
                ErrorCode.not_coordinator,
                f"{TRANSACTION_STATE_TOPIC}-{partition} is not led by this broker",
            )
        if status is _Status.LOADING:
            raise TransactionUnavailableError(
                ErrorCode.coordinator_load_in_progress,
                f"{TRANSACTION_STATE_TOPIC}-{partition} is being loaded",
            )
        return self._cache[partition].get(transactional_id)

    def put(self, meta: TransactionMetadata) -> TransactionMetadata:
        """Add a new id's metadata (its first InitProducerId); an existing one wins, as
        Kafka's ``putTransactionStateIfNotExists``."""
        cache = self._cache[self.partition_for(meta.transactional_id)]
        return cache.setdefault(meta.transactional_id, meta)

    def remove(self, transactional_id: str) -> None:
        """The id's tombstone is written: it is gone."""
        partition = self.partition_for(transactional_id)
        self._cache.get(partition, {}).pop(transactional_id, None)

    def transactions(self) -> Iterator[TransactionMetadata]:
        """Every id of every loaded partition (ListTransactions)."""
        for partition, status in self._status.items():
            if status is _Status.ACTIVE:
                yield from self._cache[partition].values()

    # --- what time decides ---------------------------------------------------------------

    def timed_out(self, now: int) -> list[TransactionMetadata]:
        """Open transactions past their timeout, with no move pending: the coordinator
        aborts each (Kafka's ``timedOutTransactions``)."""
        return [
            meta
            for meta in self.transactions()
            if meta.state is _S.ONGOING
            and meta.pending is None
            and meta.txn_start_timestamp + meta.txn_timeout_ms < now
        ]

    def expired(self, now: int, expiration_ms: int) -> list[TransactionMetadata]:
        """Ids idle between transactions for longer than
        ``transactional.id.expiration.ms``: each is removed with a tombstone."""
        return [
            meta
            for meta in self.transactions()
            if meta.state.expiration_allowed
            and meta.pending is None
            and meta.txn_last_update_timestamp + expiration_ms <= now
        ]
