"""Lab 18's exercises: how long each partition went unowned while a group's membership
changed, under the classic protocol and under KIP-848 (the book's chapter "Consumer
groups"; ARCHITECTURE.md, "Traces and labs").

Write each function with Spark's DataFrame API, then run ``make lab 18``: it runs the
lab's scenario (both protocols' groups on a cluster of three brokers, with real
consumers and a producer) and checks every answer against the lab's reference,
computed over the same run (``make lab 18 REUSE=1``: over the last run again). Until
you write it, a function raises :class:`ExerciseNotDone`, and its check fails with that
message.

``assignments`` is every ``group.member_assignment`` event
(``read_events(spark, traces, MemberAssignmentChanged)``): ``ts`` (seconds since the
epoch), ``node`` (the broker that traced it), ``group_id``, ``group_type`` (``classic``
or ``consumer``), ``member_id``, ``client_id``, ``member_epoch``,
``assigned_partitions`` and ``partitions_pending_revocation`` (arrays of
``topic-partition`` names such as ``orders-3``). Each event is a snapshot: from its
``ts`` until that member's next event, the member owns both arrays' partitions.
"""

from __future__ import annotations

from pyspark.sql import (
    DataFrame,
    Window,  # noqa: F401  (you will want it)
)
from pyspark.sql import functions as F  # noqa: F401  (you will want it)

from minikafka.labs import ExerciseNotDone


def unowned(assignments: DataFrame) -> DataFrame:
    """When did a partition have no owner at all?

    A member owns a partition from a snapshot that lists it (assigned, or still pending
    revocation: it reads it until it says it let go) until its next snapshot. A
    partition is unowned while no member of its group owns it. Count only after the
    partition's first owner: before that the group was still forming. Each protocol's
    group is its own world: a partition owned in one group is not owned in the other.

    Columns: ``group_type``, ``partition`` (the number, an int), ``start_ts`` and
    ``end_ts`` (the snapshot that left it without owner, and the one that gave it one):
    one row per stretch, ordered by ``group_type``, ``partition``, ``start_ts``.
    """
    raise ExerciseNotDone(
        "unowned",
        "a snapshot holds until its member's next one (lead); explode both arrays; "
        "per partition, ordered, a gap opens where a stretch starts after every "
        "earlier one ended (max over the preceding rows)",
    )


def delayed(gaps: DataFrame, produced: DataFrame) -> DataFrame:
    """How long was each partition unowned, and how many records waited for it?

    ``gaps`` is what :func:`unowned` returns; ``produced`` is the topic's records
    (``partition``, ``offset``, ``ts``: its timestamp, in seconds since the epoch, as
    the trace's). A record produced while its partition was unowned
    (``start_ts <= ts < end_ts``) waits: nobody is reading it.

    Columns: ``group_type``, ``partition``, ``gaps`` (how many stretches),
    ``unowned_ms`` (their total length, in milliseconds, rounded to 3 decimals) and
    ``delayed_records``: one row for every partition of the topic under each group type
    of ``gaps``, zeros for a partition that was never unowned, ordered by
    ``group_type``, ``partition``.
    """
    raise ExerciseNotDone(
        "delayed",
        "every (group_type, partition) of produced, left join the gaps; a record in "
        "[start_ts, end_ts) counts once",
    )
