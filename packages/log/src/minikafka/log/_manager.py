"""LogManager: every partition's Log under ``log.dirs``, checkpoints, background work.

At start-up it reads, for each log dir, the checkpoint files Kafka keeps there:

    recovery-point-offset-checkpoint   offsets below which each log is fsynced
    log-start-offset-checkpoint        each log's first readable offset
    replication-offset-checkpoint      each partition's high watermark (replication's)
    cleaner-offset-checkpoint          where each compacted log's dirty part starts

and the ``.kafka_cleanshutdown`` marker: present means the last shutdown flushed
everything, so no log needs recovery. The marker is removed as soon as the logs are
loaded, so a crash from then on is noticed at the next start.

Retention, cleaning, flushing and checkpointing are plain methods here, which tests call
with a ``ManualClock``; the broker runs :meth:`LogManager.run`, whose
:class:`~._manager_tasks.LogManagerTasks` calls them on Kafka's schedule, as Kafka's
LogManager does with its scheduler.

Every log of a LogManager takes its descriptors from one :class:`~._files.FilePool`,
sized from ``RLIMIT_NOFILE``: the number of partitions a broker hosts is bounded by its
disk, not by how many files it may hold open.

A checkpoint that cannot be written (a full disk, no descriptor left) is logged at ERROR
with the file and the errno; the previous checkpoint stays as it was (the new one is
written beside it and renamed over it), and the next interval writes it again. At
shutdown such a failure leaves that dir without the clean-shutdown marker, so the next
start recovers its logs from the older recovery points rather than trust them.

No exception in the background work ends the broker. Every pass, and every partition
within a pass, runs inside :meth:`LogManager.guarded`, which applies Kafka's policies:

- an ``OSError`` is a storage failure: the partition's log dir goes offline, as Kafka's
  ``maybeHandleIOException`` reports it to the ``LogDirFailureChannel``
  (:meth:`LogManager.mark_dir_offline`); only a full disk whose write was undone
  (``KafkaStorageError.offline`` false) leaves it online, to be retried;
- in the cleaner, any other exception marks the partition uncleanable (Kafka's
  ``LogCleanerManager.markPartitionUncleanable``): logged once, skipped by every later
  pass until its log is deleted, listed in :attr:`LogManager.uncleanable`;
- elsewhere it is logged at ERROR with its traceback once (again only if the failure
  changes), and the step is tried again at the next interval, as Kafka's
  ``KafkaScheduler`` logs an uncaught exception and keeps the task scheduled.
"""

from __future__ import annotations

import collections
import logging
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import MappingProxyType

import attrs
import trio

from minikafka.common import TopicPartition
from minikafka.trace import NullTracer, Tracer

from ._checkpoint import OffsetCheckpointFile, log_checkpoint_failure
from ._cleaner import clean, should_clean
from ._config import LogConfig
from ._failures import BackgroundFailures, LogDirFailureChannel
from ._files import FilePool
from ._log import Log, wall_clock_ms
from ._manager_tasks import LogManagerTasks
from ._names import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    DELETE_DIR_SUFFIX,
    LOG_START_OFFSET_CHECKPOINT,
    METADATA_PARTITION_DIR,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    delete_dir_name,
    is_partition_dir,
)
from ._storage import KafkaStorageError

_logger = logging.getLogger(__name__)

PRODUCER_ID_EXPIRATION_MS = 86_400_000
"""Kafka's ``producer.id.expiration.ms`` default (1 day): how long a transaction
verification that was never answered is kept (minikafka keeps producers themselves)."""


def _epochs_written(log: Log) -> bool:
    """Retry the log's leader-epoch checkpoint if its last write failed; True if written."""
    file = log.leader_epoch_checkpoint
    return file is None or file.write_pending()


def _log_start_offset(tp: TopicPartition, log: Log) -> int | None:
    """The log start offset to checkpoint, or None where the log starts at its first
    segment: Kafka writes only the others, and loading takes the first segment's base
    offset for a partition the file leaves out, so both files read back the same."""
    if log.log_start_offset > log.segments[0].base_offset:
        return log.log_start_offset
    return None


@attrs.frozen
class LogManagerSchedule:
    """How often the background tasks run (Kafka's broker keys, Kafka's defaults)."""

    retention_check_interval_ms: int = 300_000  # log.retention.check.interval.ms
    # log.flush.scheduler.interval.ms (Kafka: never)
    flush_check_interval_ms: int = 1_000
    # log.flush.offset.checkpoint...
    recovery_point_checkpoint_interval_ms: int = 60_000
    # log.flush.start.offset.checkpoint...
    start_offset_checkpoint_interval_ms: int = 60_000
    cleaner_backoff_ms: int = 15_000  # log.cleaner.backoff.ms
    cleaner_enable: bool = True  # log.cleaner.enable


@attrs.define(eq=False)
class LogManager:
    log_dirs: tuple[Path, ...]
    default_config: LogConfig
    clock: Callable[[], int]
    schedule: LogManagerSchedule
    logs: dict[TopicPartition, Log] = attrs.field(factory=dict)
    topic_configs: dict[str, LogConfig] = attrs.field(factory=dict)
    cleaner_offsets: dict[TopicPartition, int] = attrs.field(factory=dict)
    # partition -> why (see the ``uncleanable`` property)
    _uncleanable: dict[TopicPartition, str] = attrs.field(factory=dict, init=False)
    _failures: BackgroundFailures = attrs.field(factory=BackgroundFailures, init=False)
    _dir_of: dict[TopicPartition, Path] = attrs.field(factory=dict)
    # how many partitions each dir holds, kept with _dir_of: a new log goes to the dir
    # holding the fewest, and counting _dir_of afresh per log made creating a topic of
    # thousands of partitions quadratic
    _partitions_in: collections.Counter[Path] = attrs.field(factory=collections.Counter)
    _pending_dir_deletes: list[tuple[int, Path, Log]] = attrs.field(factory=list)
    # every log's descriptors (see _files)
    files: FilePool = attrs.field(factory=FilePool)
    dir_failures: LogDirFailureChannel = attrs.field(factory=LogDirFailureChannel)
    """The dirs taken offline after a failed write or fsync (until restart)."""
    tracer: Tracer = attrs.field(factory=NullTracer)
    """Where every log of this manager emits: the node's tracer, from whoever builds it."""

    @classmethod
    def startup(
        cls,
        log_dirs: list[Path] | tuple[Path, ...],
        default_config: LogConfig | None = None,
        *,
        topic_configs: Mapping[str, LogConfig] | None = None,
        schedule: LogManagerSchedule | None = None,
        clock: Callable[[], int] = wall_clock_ms,
        files: FilePool | None = None,
        tracer: Tracer | None = None,
    ) -> LogManager:
        """Load every log in ``log.dirs``, recovering those a crash may have damaged.

        ``files`` defaults to a pool of half the process's ``RLIMIT_NOFILE``.
        """
        manager = cls(
            tuple(Path(d) for d in log_dirs),
            default_config or LogConfig(),
            clock,
            schedule or LogManagerSchedule(),
            topic_configs=dict(topic_configs or {}),
            files=files or FilePool(),
            tracer=NullTracer() if tracer is None else tracer,
        )
        for log_dir in manager.log_dirs:
            manager._load_dir(log_dir)
        return manager

    def _load_dir(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        recovery = OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT).read()
        starts = OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT).read()
        hws = OffsetCheckpointFile(log_dir / REPLICATION_OFFSET_CHECKPOINT).read()
        self.cleaner_offsets.update(
            OffsetCheckpointFile(log_dir / CLEANER_OFFSET_CHECKPOINT).read()
        )
        for path in sorted(log_dir.iterdir()):
            if path.is_dir() and path.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(path)  # a deletion the last run did not finish
                continue
            if not is_partition_dir(path) or path.name == METADATA_PARTITION_DIR:
                continue
            tp = TopicPartition.parse(path.name)
            self.logs[tp] = Log.open(
                path,
                self.config_for(tp.topic),
                log_start_offset=starts.get(tp, 0),
                recovery_point=recovery.get(tp, 0),
                high_watermark=hws.get(tp, 0),
                had_clean_shutdown=clean,
                clock=self.clock,
                files=self.files,
                tracer=self.tracer,
            )
            self._place(tp, log_dir)
        marker.unlink(missing_ok=True)

    def config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.default_config)

    # --- partitions ---------------------------------------------------------------------

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self.logs.get(tp)

    def get_or_create_log(
        self, tp: TopicPartition, config: LogConfig | None = None
    ) -> Log:
        """The partition's log, created in the log dir holding the fewest partitions."""
        if tp in self.logs:
            return self.logs[tp]
        if config is not None:
            self.topic_configs[tp.topic] = config
        online = [d for d in self.log_dirs if d not in self.offline_dirs]
        if not online:
            raise KafkaStorageError(
                None,
                f"cannot create the log of {tp}: every log dir is offline",
                offline=True,
            )
        log_dir = min(online, key=lambda d: self._partitions_in[d])
        log = Log.open(
            log_dir / str(tp),
            self.config_for(tp.topic),
            clock=self.clock,
            files=self.files,
            tracer=self.tracer,
        )
        self.logs[tp] = log
        self._place(tp, log_dir)
        return log

    def _place(self, tp: TopicPartition, log_dir: Path) -> None:
        self._dir_of[tp] = log_dir
        self._partitions_in[log_dir] += 1

    def delete_log(self, tp: TopicPartition) -> None:
        """Rename ``<topic>-<partition>`` to ``...-delete`` now, remove it later (Kafka's way).

        The rename is atomic, so a restart never sees a half-deleted partition.
        """
        log = self.logs.pop(tp, None)
        log_dir = self._dir_of.pop(tp, None)
        if log_dir is not None:
            self._partitions_in[log_dir] -= 1
        self.cleaner_offsets.pop(tp, None)
        # A new log of the same name starts afresh (Kafka's
        # maintainUncleanablePartitions drops the partitions whose log is gone).
        self._uncleanable.pop(tp, None)
        self._failures.forget(tp)
        if log is None or log_dir is None:
            return
        target = log_dir / delete_dir_name(tp)
        log.dir.rename(target)
        # The files stay open until the directory goes, for responses still being sent.
        due = self.clock() + log.config.file_delete_delay_ms
        self._pending_dir_deletes.append((due, target, log))

    # --- background work (each a plain method, so tests call them directly) ----------

    def cleanup_logs(self) -> int:
        """Retention for every log, then remove files whose deletion delay has passed;
        transaction verifications older than Kafka's ``producer.id.expiration.ms``
        default are forgotten.

        One log's failure does not stop the others (see :meth:`guarded`); it is
        retried at the next pass.
        """
        deleted = 0
        for tp, log in list(self.logs.items()):
            if self.is_offline(tp):
                continue
            with self.guarded("retention", tp):
                deleted += log.delete_old_segments()
            # KIP-890's questions never answered (Kafka drops them with the producers).
            log.ongoing_txns.verifications.remove_expired(
                self.clock(), PRODUCER_ID_EXPIRATION_MS
            )
        self.purge_deleted()
        return deleted

    def purge_deleted(self) -> None:
        now = self.clock()
        for tp, log in list(self.logs.items()):
            with self.guarded("segment deletion", tp):
                log.purge_deleted_segments(now)
        due = [entry for entry in self._pending_dir_deletes if entry[0] <= now]
        self._pending_dir_deletes = [e for e in self._pending_dir_deletes if e[0] > now]
        for _, path, log in due:
            with self.guarded("log deletion"):
                log.close_handlers()  # its dir was renamed: nothing is written to it
                shutil.rmtree(path, ignore_errors=True)

    def logs_to_flush(self) -> list[tuple[Log, int]]:
        """(log, offset) pairs due for an fsync: ``flush.ms`` passed, or a roll asked."""
        now = self.clock()
        due = []
        for log in self._online_logs():
            if log.flush_requested_offset > log.recovery_point:
                due.append((log, log.flush_requested_offset))
            elif (
                log.log_end_offset > log.recovery_point
                and now - log.last_flush_ms >= log.config.flush_ms
            ):
                due.append((log, log.log_end_offset))
        return due

    def clean_logs(self) -> int:
        """One cleaning pass over each compacted log dirty enough to be worth it.

        A partition whose cleaning raises (a corrupt batch, a bug) is marked uncleanable
        and the pass goes on with the others: Kafka's cleaner thread wraps it in a
        ``LogCleaningException`` and calls ``markPartitionUncleanable``. Retrying it
        every pass would fail the same way and log the same error forever.
        """
        now = self.clock()
        cleaned = 0
        for tp, log in list(self.logs.items()):
            if not log.config.compact or tp in self._uncleanable or self.is_offline(tp):
                continue
            uncleanable = partial(self.mark_partition_uncleanable, tp)
            with self.guarded("log cleaner", tp, on_error=uncleanable):
                first_dirty = max(self.cleaner_offsets.get(tp, 0), log.log_start_offset)
                if not should_clean(log, first_dirty, now):
                    continue
                result = clean(log, first_dirty, now)
                if result is not None:
                    self.cleaner_offsets[tp] = result.next_dirty_offset
                    cleaned += 1
        if cleaned:
            self.checkpoint(CLEANER_OFFSET_CHECKPOINT)
        return cleaned

    @property
    def uncleanable(self) -> Mapping[TopicPartition, str]:
        """The partitions the cleaner skips, each with the error that put it here.

        Kafka's ``LogCleanerManager.uncleanablePartitions`` (reported as the
        ``uncleanable-partitions-count`` metric). A partition leaves it when its log is
        deleted; a restart starts with none.
        """
        return MappingProxyType(self._uncleanable)

    def mark_partition_uncleanable(self, tp: TopicPartition, exc: Exception) -> None:
        """Skip ``tp`` in every later cleaning pass (Kafka's ``markPartitionUncleanable``).

        Logged once, here, with the traceback: the partition is not tried again, so
        there is no second error to log.
        """
        self._uncleanable[tp] = f"{type(exc).__name__}: {exc}"
        _logger.error(
            "%s cannot be cleaned and is skipped by the log cleaner until its log is "
            "deleted or the broker restarts",
            tp,
            exc_info=exc,
        )

    def checkpoint(self, name: str) -> set[Path]:
        """Write one of the per-dir checkpoint files for the logs in each dir.

        Returns the dirs whose file could not be written (logged, and left to the next
        interval: the others are written all the same).
        """
        value: Callable[[TopicPartition, Log], int | None] = {
            RECOVERY_POINT_CHECKPOINT: lambda tp, log: log.recovery_point,
            LOG_START_OFFSET_CHECKPOINT: _log_start_offset,
            REPLICATION_OFFSET_CHECKPOINT: lambda tp, log: log.high_watermark,
            CLEANER_OFFSET_CHECKPOINT: lambda tp, log: self.cleaner_offsets.get(tp),
        }[name]
        failed: set[Path] = set()
        for log_dir in self.log_dirs:
            if log_dir in self.offline_dirs:
                continue  # its files are not to be touched until restart
            written = False
            # A bug in one dir's entries must not keep the other dirs' files stale.
            with self.guarded(f"writing {log_dir / name}"):
                written = self._write_checkpoint(log_dir, name, value)
            if not written:
                failed.add(log_dir)
        return failed

    def _write_checkpoint(
        self,
        log_dir: Path,
        name: str,
        value: Callable[[TopicPartition, Log], int | None],
    ) -> bool:
        entries = {}
        for tp, log in self.logs.items():
            offset = value(tp, log)
            if self._dir_of[tp] == log_dir and offset is not None:
                entries[tp] = offset
        path = log_dir / name
        try:
            OffsetCheckpointFile(path).write(entries)
        except OSError as exc:
            # The previous file is intact (written beside it, then renamed over it):
            # unlike Kafka, the dir stays online and the next interval writes it again.
            log_checkpoint_failure(path, exc)
            return False
        return True

    def checkpoint_leader_epochs(self) -> int:
        """Write again every ``leader-epoch-checkpoint`` whose last write failed.

        Those writes happen when an epoch begins or the log is truncated, on the append
        or fetch path; a failure there is logged and kept for this retry (see
        LeaderEpochCheckpointFile). Returns how many are still unwritten.
        """
        unwritten = 0
        for tp, log in self.logs.items():
            if not self.is_offline(tp) and not _epochs_written(log):
                unwritten += 1
        return unwritten

    def checkpoint_recovery_points(self) -> None:
        """The recovery points' file, then any leader-epoch file still unwritten."""
        self.checkpoint(RECOVERY_POINT_CHECKPOINT)
        self.checkpoint_leader_epochs()

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the background work on :attr:`schedule` until cancelled: see
        :class:`~._manager_tasks.LogManagerTasks`, the trio side of this class."""
        await LogManagerTasks(self).run(task_status=task_status)

    def shutdown(self) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker."""
        for tp, log in self.logs.items():
            if self.is_offline(tp):
                continue  # not flushed and not marked clean: the next start recovers it
            try:
                log.flush()
            except OSError as exc:
                self.mark_dir_offline(
                    self._dir_of[tp], f"fsync of {log.dir} failed: {exc}"
                )
        unchecked: set[Path] = set()  # dirs with a checkpoint that could not be written
        for name in (
            RECOVERY_POINT_CHECKPOINT,
            LOG_START_OFFSET_CHECKPOINT,
            REPLICATION_OFFSET_CHECKPOINT,
            CLEANER_OFFSET_CHECKPOINT,
        ):
            unchecked |= self.checkpoint(name)
        for tp, log in self.logs.items():
            if not self.is_offline(tp) and not _epochs_written(log):
                unchecked.add(self._dir_of[tp])
        for tp, log in self.logs.items():
            try:
                log.close()  # appends each active segment's last time-index entry
            except OSError as exc:
                # A disk still full at shutdown: the entry is an optimisation the next
                # start can do without, but the dir is not left marked clean.
                _logger.error("closing %s failed: %s", log.dir, exc)
                unchecked.add(self._dir_of[tp])
        for _, path, log in self._pending_dir_deletes:
            log.close_handlers()
            shutil.rmtree(path, ignore_errors=True)
        self._pending_dir_deletes.clear()
        for log_dir in self.log_dirs:
            if log_dir in unchecked:
                # The files hold older offsets than the logs: without the marker, the next
                # start recovers from those older recovery points instead of trusting them.
                _logger.error("%s is left without a clean-shutdown marker", log_dir)
            elif log_dir not in self.offline_dirs:
                try:
                    (log_dir / CLEAN_SHUTDOWN_FILE).touch()
                except OSError as exc:  # no inode left: the next start simply recovers
                    _logger.error(
                        "cannot write %s in %s: %s", CLEAN_SHUTDOWN_FILE, log_dir, exc
                    )

    # --- failed log dirs (Kafka's LogDirFailureChannel) -------------------------------------

    @property
    def offline_dirs(self) -> Mapping[Path, str]:
        """Each offline log dir, with why."""
        return self.dir_failures.offline_dirs

    def mark_dir_offline(self, log_dir: Path, reason: str) -> None:
        """Take ``log_dir`` offline until restart, after a write or fsync it failed.

        The partitions in it answer KAFKA_STORAGE_ERROR (the ReplicaManager's shell
        takes the dir from :meth:`wait_offline_dirs` and tells its core), nothing more
        is flushed, cleaned or checkpointed there, and shutdown leaves it unclean, so
        the next start recovers its logs. Kafka halts a broker once all its dirs are
        offline; this one stays up to serve metadata and the other dirs.
        """
        self.dir_failures.mark_offline(log_dir, reason)

    def take_offline_dirs(self) -> list[Path]:
        """The dirs taken offline since the last call, each once, in order."""
        return self.dir_failures.take()

    async def wait_offline_dirs(self) -> list[Path]:
        """Wait until a dir goes offline; then :meth:`take_offline_dirs`."""
        return await self.dir_failures.wait()

    # --- fault isolation of the background work ---------------------------------------

    @contextmanager
    def guarded(
        self,
        task: str,
        tp: TopicPartition | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> Iterator[None]:
        """Run one step of a background task (a pass, or one partition of a pass); what
        it raises stops here, never in the nursery of :meth:`run`.

        An ``OSError`` of a partition is a storage failure: Kafka's
        ``maybeHandleIOException`` hands the dir to the ``LogDirFailureChannel``, and
        this one goes offline too, except for a full disk whose write the log undid
        (``KafkaStorageError.offline`` false), which is simply retried. Any other
        exception goes to ``on_error`` (the cleaner marks the partition uncleanable); by
        default it is logged once and the step is tried again at the next interval, as
        Kafka's ``KafkaScheduler`` logs an uncaught exception and keeps the task going.
        ``trio.Cancelled`` is a BaseException and passes through: shutdown still works.
        """
        try:
            yield
        except OSError as exc:
            log_dir = None if tp is None else self._dir_of.get(tp)
            undone = isinstance(exc, KafkaStorageError) and not exc.offline
            if log_dir is None or undone:
                self._failures.failed(task, tp, exc)
            else:
                self.mark_dir_offline(log_dir, f"{task} of {tp} failed: {exc}")
        except Exception as exc:
            if on_error is None:
                self._failures.failed(task, tp, exc)
            else:
                on_error(exc)
        else:
            self._failures.succeeded(task, tp)

    def log_dir_of(self, tp: TopicPartition) -> Path | None:
        return self._dir_of.get(tp)

    def is_offline(self, tp: TopicPartition) -> bool:
        return self._dir_of.get(tp) in self.offline_dirs

    def _online_logs(self) -> list[Log]:
        return [log for tp, log in self.logs.items() if not self.is_offline(tp)]
