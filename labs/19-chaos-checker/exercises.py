"""Lab 19's exercises: two of the chaos checker's rules, in Spark (ARCHITECTURE.md,
"Traces and labs"; the book's chapter "Breaking the cluster on purpose").

Write each function with Spark's DataFrame API, then run ``make lab 19``: it writes the
lab's histories (a recorded chaos run and seeded ones, no cluster needed) and checks
every answer against what ``chaos.checker.check`` itself reports for each history.
Until you write it, a function raises :class:`ExerciseNotDone`, and its check fails
with that message.

Both functions take the same two DataFrames of one history:

- ``history`` (``scenario.read_history``): one row per operation, the fields of
  ``chaos.history.Op``: ``index`` (its place in the history: what the checker names it
  by), ``process``, ``kind`` (``send``, ``poll``, ``commit``, ``create_topic``,
  ``delete_topic``), ``outcome`` (``ok``, ``failed``, ``unknown``), ``invoke`` and
  ``complete`` (epoch seconds), ``client``, ``topic``, ``partition``, ``value`` (a
  send's unique integer), ``offset`` (an ``ok`` send's acknowledged offset, else
  null), ``records`` (a poll's ``array<struct<offset, value>>``), ``group``, ``acks``,
  ``idempotent`` (whether the send's producer had ``enable.idempotence``), ``error``;
- ``final`` (``scenario.read_final``): the log read back after the faults healed, one
  row per record: ``topic``, ``partition``, ``offset``, ``value``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will want it)

from minikafka.labs import ExerciseNotDone


def lost_writes(history: DataFrame, final: DataFrame) -> DataFrame:
    """Which acknowledged writes are missing from the final log?

    The rule: a send acknowledged ``ok`` whose value is not in its partition's final
    log is lost. Only ``ok`` sends promise anything: a send that ended ``unknown`` (a
    timeout) may never have been written, one that ``failed`` certainly was not. A
    consumer having read the value does not save it: read and then gone is still lost.
    The partitions of a topic that was deleted (a ``delete_topic`` operation, whatever
    its outcome) are left out: their records are gone by design.

    Columns: ``topic``, ``partition``, ``value``, ``offset`` (the offset the
    acknowledgement gave) and ``op`` (the send's ``index``): one row per lost send,
    ordered by ``topic``, ``partition``, ``value``.
    """
    raise ExerciseNotDone(
        "lost_writes",
        "ok sends, minus deleted topics, left_anti join the final log on "
        "(topic, partition, value)",
    )


def duplicates(history: DataFrame, final: DataFrame) -> DataFrame:
    """Which values sit at two different offsets of a partition?

    The rule: every witness claims an offset holds a value: an ``ok`` send with an
    offset (its acknowledgement), each record of an ``ok`` poll, each record of the final
    log. A value claimed at two or more *different* offsets of one partition, by any
    witnesses, is a duplicate; several witnesses of one offset are one place. Values
    that a producer without idempotence sent to the partition (``idempotent`` false)
    are left out: such a producer may write a record twice when it retries, and Kafka
    promises it nothing better.

    Columns: ``topic``, ``partition``, ``value`` and ``offsets`` (an array of the
    distinct offsets, ascending): one row per duplicated value, ordered by ``topic``,
    ``partition``, ``value``.
    """
    raise ExerciseNotDone(
        "duplicates",
        "union (acks, exploded poll records, final), distinct offsets per "
        "(topic, partition, value), keep two or more",
    )
