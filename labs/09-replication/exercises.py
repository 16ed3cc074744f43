"""Lab 9 exercises: what did acks=all wait for, and when did the ISR change?

Write each function with Spark (``pyspark.sql.functions as F``, ``Window``) over the
DataFrames ``minikafka.labs.read_events`` gives for a run's traces. Every DataFrame has
the envelope columns ``ts`` (seconds since the epoch), ``node`` (the broker that wrote
it: here the leader, broker 1), ``component``, ``event`` and ``time``, plus its event's
fields:

- ``fetches``: ``FollowerFetched`` (``follower_fetch``), one per follower fetch the
  leader took: ``topic``, ``partition``, ``follower``, ``fetch_offset`` (the follower
  holds every offset below it), ``log_end_offset`` and ``high_watermark`` (the
  leader's, then), ``lag`` (``log_end_offset - fetch_offset``), ``caught_up_ms_ago``
  (how long since the follower was last caught up);
- ``hws``: ``HighWatermarkAdvanced`` (``hw_advance``): ``topic``, ``partition``,
  ``previous``, ``high_watermark``, ``leader_epoch``;
- ``proposals``: ``IsrChangeProposed`` (``isr_propose``): ``topic``, ``partition``,
  ``kind`` (``shrink`` or ``expand``), ``isr``, ``proposed_isr``, ``replicas`` (the
  followers leaving or joining), ``lag_ms`` (for each of them, how long it had not been
  caught up), ``high_watermark``...;
- ``changes``: ``IsrChanged`` (``isr_change``): ``topic``, ``partition``,
  ``previous_isr``, ``isr``, ``leader_epoch``, ``partition_epoch``;
- ``lso_moves``: ``LastStableOffsetMoved`` (``log.lso_moved``), written by the leader
  and by each follower (``node``): ``topic``, ``partition``, ``previous``,
  ``last_stable_offset``.

``make lab 9`` checks your answers against what the scenario's clients recorded on their
own side. Until you write a function, it raises ``ExerciseNotDone``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import ExerciseNotDone


def follower_waits(fetches: DataFrame) -> DataFrame:
    """Per offset and follower: when the leader had the record, and when the follower.

    Question: how long does each follower take to copy what the leader appends?

    Mechanism: a follower fetches from its leader as a consumer does, at the offset it
    needs next, so a fetch at ``fetch_offset`` n tells the leader the follower holds
    every offset below n. The leader's log end is in every fetch too: the first fetch
    (of any follower) whose ``log_end_offset`` is above offset o, and above every log
    end seen before it, is the first sign that o was appended. For each follower, the
    first of its fetches with ``fetch_offset`` above o is when it had o. Each fetch
    that moves a value up from the previous one reveals a run of new offsets: between
    the earlier value and this one (``F.sequence`` and ``F.explode`` turn the run into
    rows; ``lag`` or a running ``max`` over a window gives the earlier value). Offsets
    before the first fetch have no known time: leave them out.

    Output columns, one row per (partition, offset, follower) known both ways, ordered by
    ``topic``, ``partition``, ``offset``, ``follower``: ``topic``; ``partition``;
    ``offset``; ``follower``; ``appended_ts``; ``replicated_ts``; ``wait_ms``
    (``(replicated_ts - appended_ts) * 1000``).
    """
    raise ExerciseNotDone("follower_waits", "explode each fetch's run of new offsets")


def commit_waits(waits: DataFrame, hws: DataFrame) -> DataFrame:
    """Per offset: how long until it was committed, and which follower it waited for.

    Question: an ``acks=all`` produce is answered once the high watermark passes its
    records. Which follower held each record back?

    Mechanism: the leader moves the high watermark to the smallest log end offset among
    the ISR, so offset o is committed at the first ``hw_advance`` whose
    ``high_watermark`` is above it (each advance commits the offsets from ``previous``
    up to below ``high_watermark``). The follower the leader waited for is the last of
    those that had o by then (largest ``replicated_ts`` at or before the commit): a
    follower that had fallen out of the ISR is not waited for, so it has o only later,
    or never.

    ``waits`` is what ``follower_waits`` returns. Output columns, one row per offset both
    committed and replicated by some follower before that, ordered by ``topic``,
    ``partition``, ``offset``: ``topic``; ``partition``; ``offset``; ``appended_ts``;
    ``committed_ts``; ``committed_ms`` (``(committed_ts - appended_ts) * 1000``);
    ``waited_for`` (that follower's id).
    """
    raise ExerciseNotDone("commit_waits", "as-of: the last replica before the HW moved")


def isr_episodes(proposals: DataFrame, changes: DataFrame) -> DataFrame:
    """Each time a replica left the ISR: when, why, and when it came back.

    Question: which follower was dropped from the ISR, how long after it stopped keeping
    up, and for how long?

    Mechanism: a leader checks its followers every ``replica.lag.time.max.ms / 2`` and
    proposes to shrink the ISR (AlterPartition, KIP-497) by each follower that has not
    been caught up for longer than ``replica.lag.time.max.ms``; the proposal records
    that time per follower (``lag_ms``). The change takes effect when the controller
    accepts it and the leader applies it (``isr_change``). When a follower catches up to
    the high watermark again, the leader proposes to expand the ISR with it. Compare
    each change's ``previous_isr`` with its ``isr`` (``F.array_except``) to find who
    left and who joined; pair each departure with the same replica's next arrival
    (``F.lead`` over its changes); take the cause from the latest shrink proposal for
    that replica at or before its departure.

    Output columns, one row per departure, ordered by ``topic``, ``partition``,
    ``replica``, ``shrunk_ts``: ``topic``; ``partition``; ``replica``; ``shrunk_ts``
    (the ``isr_change`` that removed it); ``expanded_ts`` (the one that put it back,
    null if none did); ``out_ms`` (``(expanded_ts - shrunk_ts) * 1000``, null if it did
    not come back); ``lag_ms`` (from the proposal).
    """
    raise ExerciseNotDone("isr_episodes", "array_except, then lead() per replica")


def follower_lag(fetches: DataFrame) -> DataFrame:
    """Per follower and second: how far behind the leader its fetches showed it.

    Question: how far behind is each follower, and what does the leader see of a
    follower whose link has stalled?

    Mechanism: each follower fetch tells the leader how many records the follower lacks
    (``lag``, behind the leader's log end), how many committed records it lacks (the
    high watermark the fetch found less its ``fetch_offset``; nothing when it holds at
    least the committed ones: a follower out of the ISR comes back once it reaches the
    high watermark), and how long since it last held everything the leader had at its
    previous fetch (``caught_up_ms_ago``, what ``replica.lag.time.max.ms`` is compared
    with). A follower that stops fetching sends nothing at all: the leader learns how far
    behind it fell only from its next fetch.

    Output columns, one row per (partition, follower, whole second of ``ts``) with at
    least one fetch, ordered by ``topic``, ``partition``, ``follower``, ``second``:
    ``topic``; ``partition``; ``follower``; ``second`` (``floor(ts)``, a long);
    ``fetches``; ``max_lag``; ``max_hw_lag`` (the largest of ``high_watermark -
    fetch_offset`` and 0); ``max_caught_up_ms_ago``.
    """
    raise ExerciseNotDone("follower_lag", "group by follower and floor(ts)")


def lso_holds(lso_moves: DataFrame, hws: DataFrame) -> DataFrame:
    """Per transaction: how long it held the last stable offset back on the leader.

    Question: a read_committed consumer reads only up to the last stable offset (LSO),
    the first offset of the oldest transaction not yet decided. How long does each
    transaction keep those consumers waiting behind the high watermark, and how much of
    that is after the producer committed?

    Mechanism: while no transaction is open the LSO follows the high watermark, and the
    log traces nothing. A transaction's first batch is appended at offset x; once the
    high watermark passes x (the first ``hw_advance`` with ``previous <= x <
    high_watermark``) the LSO stays at x: the hold begins. It ends when the
    transaction's marker is below the high watermark (replicated, so that no new leader
    can undo the decision): then the LSO moves on from x, an ``lso_moved`` event with
    ``previous`` x. So each ``lso_moved`` names the offset it was held at, and the
    ``hw_advance`` events of the same node and partition say when the hold began; an
    ``lso_moved`` with no such advance (a follower's: followers trace no
    ``hw_advance``) has no row.

    Output columns, one row per ``lso_moved`` that ends a hold, ordered by ``node``,
    ``topic``, ``partition``, ``first_offset``: ``node``; ``topic``; ``partition``;
    ``first_offset`` (x); ``held_ts`` (the ``hw_advance``); ``released_ts`` (the
    ``lso_moved``); ``hold_ms`` (``(released_ts - held_ts) * 1000``).
    """
    raise ExerciseNotDone("lso_holds", "join each lso_moved to the HW advance past x")
