"""Kafka's names for the files and directories of a log.

A partition lives in ``<log.dir>/<topic>-<partition>/``; each segment is named by its base
offset padded to 20 digits, so that ``ls`` sorts segments in offset order:

    00000000000000000000.log        the batches
    00000000000000000000.index      sparse offset index
    00000000000000000000.timeindex  sparse time index
    00000000000000000000.txnindex   aborted transactions (only once there is one)
    00000000000000000000.snapshot   producer state as of that offset

Suffixes mark a file in transition: ``.cleaned`` and ``.swap`` during compaction,
``.deleted`` for a segment waiting to be removed; a partition directory being removed
is renamed ``<topic>-<partition>.<uuid>-delete``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from minikafka.common import TopicPartition

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"  # aborted transactions (KIP-98), only once there is one
SNAPSHOT_SUFFIX = ".snapshot"  # producer state as of an offset (KIP-98)
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
DELETE_DIR_SUFFIX = "-delete"

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
# The KRaft metadata log lives beside the partitions in the first log dir, but Raft owns
# it, not the LogManager (Kafka's LogManager skips it the same way).
METADATA_PARTITION_DIR = "__cluster_metadata-0"


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def offset_from_file_name(name: str) -> int:
    """The base offset a segment file is named after: ``00..0042.log.swap`` -> 42."""
    digits = name.split(".", 1)[0]
    if len(digits) != 20 or not digits.isdigit():
        raise ValueError(f"{name!r} is not named after a 20-digit base offset")
    return int(digits)


# A file name may be at most 255 bytes on Linux file systems. A topic name may be 249
# characters, so ``<topic>-<partition>`` fits, but not with a 32-digit id and ``-delete``.
MAX_FILE_NAME_BYTES = 255


def delete_dir_name(tp: TopicPartition) -> str:
    """``<topic>-<partition>.<uuid>-delete``, the topic cut short to fit 255 bytes.

    Kafka's ``LocalLog.logDeleteDirName`` truncates the same way: the directory is only
    waiting to be removed, so the name needs to be unique, not to say the whole topic.
    """
    suffix = f"-{tp.partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return tp.topic[: MAX_FILE_NAME_BYTES - len(suffix)] + suffix


def is_partition_dir(path: Path) -> bool:
    if not path.is_dir() or path.name.endswith(DELETE_DIR_SUFFIX):
        return False
    try:
        TopicPartition.parse(path.name)
    except ValueError:
        return False
    return True
