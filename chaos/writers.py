"""Who wrote each record of the final log: the batch headers behind a duplicate.

A ``duplicate`` (one value at two offsets) from an idempotent producer has two causes
the history cannot tell apart, since both copies were acknowledged:

- the client re-sent the record under a new producer epoch (librdkafka bumps its own
  epoch after an OUT_OF_ORDER_SEQUENCE_NUMBER or a delivery timeout and sends every
  unacknowledged record again from sequence 0, chaos/README.md, seeds 3 and 111): the
  copies carry one producer id at two epochs, and no broker can match a batch of one
  epoch to one of another, so Kafka keeps both too;
- the broker's deduplication failed: the copies carry one producer id, one epoch and one
  sequence (Kafka's ``ProducerStateEntry.findDuplicateBatch`` answers such a retry with
  the first copy's offset instead of appending it).

:func:`read_writers` reads every node's segments of the run's topic after the cluster
stopped, as ``minikafka dump-log`` does, and gives each ``(offset, value)`` the
:class:`Writer` of its batch. It only reads the files: a torn tail (a node killed while
appending) ends that file's reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeAlias

import attrs

from minikafka.log import CorruptRecordError, iter_decoded_batches

from .history import TopicPartition


@attrs.frozen(order=True)
class Writer:
    """The batch header fields that say who wrote a record: the producer id and epoch,
    the record's own sequence (the batch's base sequence plus its offset delta), and the
    partition leader epoch it was appended under."""

    producer_id: int
    producer_epoch: int
    sequence: int
    leader_epoch: int

    def __str__(self) -> str:
        return (
            f"producer {self.producer_id} epoch {self.producer_epoch} "
            f"sequence {self.sequence} (leader epoch {self.leader_epoch})"
        )


Writers: TypeAlias = Mapping[TopicPartition, Mapping[tuple[int, int], Writer]]
"""Per partition, ``(offset, value)`` to the writer of that record."""


def read_writers(
    cluster_root: Path, topic: str
) -> dict[TopicPartition, dict[tuple[int, int], Writer]]:
    """The writers of every record of ``topic`` in the segments of every node under
    ``cluster_root`` (``node-*/<topic>-<p>/*.log``). Replicas agree on what the final
    log holds; where a node's record at an offset differs (a tail later truncated), the
    value tells them apart."""
    found: dict[TopicPartition, dict[tuple[int, int], Writer]] = {}
    for directory in sorted(cluster_root.glob(f"node-*/{topic}-*")):
        head, _, number = directory.name.rpartition("-")
        if head != topic or not number.isdigit() or not directory.is_dir():
            continue
        records = found.setdefault((topic, int(number)), {})
        for segment in sorted(directory.glob("*.log")):
            records.update(_segment_writers(segment))
    return found


def _segment_writers(segment: Path) -> dict[tuple[int, int], Writer]:
    writers: dict[tuple[int, int], Writer] = {}
    try:
        for _, header, records in iter_decoded_batches(segment.read_bytes()):
            for record in records:
                value = _int_value(record.value)
                if value is None:
                    continue
                delta = record.offset - header.base_offset
                writers[(record.offset, value)] = Writer(
                    header.producer_id,
                    header.producer_epoch,
                    header.base_sequence + delta,
                    header.partition_leader_epoch,
                )
    except CorruptRecordError:
        pass  # a torn tail: what came before it is read, what follows it never was
    return writers


def _int_value(data: bytes | None) -> int | None:
    """The workload's value (an integer as text), or None for anything else."""
    if data is None:
        return None
    try:
        return int(data)
    except ValueError:
        return None
