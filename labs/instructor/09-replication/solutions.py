"""Lab 9 reference answers: what acks=all waited for, read from the leader's trace.

The inputs are DataFrames from ``minikafka.labs.read_events`` over a run's traces, one
per event type of ``minikafka.replication``: ``fetches``: ``FollowerFetched``
(``follower_fetch``), ``hws``: ``HighWatermarkAdvanced`` (``hw_advance``),
``proposals``: ``IsrChangeProposed`` (``isr_propose``), ``changes``: ``IsrChanged``
(``isr_change``); and of ``minikafka.log``: ``lso_moves``: ``LastStableOffsetMoved``
(``lso_moved``).

Every function has the signature and the output columns of its exercise in
``exercises.py``, whose docstrings state the question and the mechanism.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

_PARTITION = ["topic", "partition"]


def _first_time_above(
    frame: DataFrame, keys: list[str], previous: str, current: str, name: str
) -> DataFrame:
    """Per offset, the first ``ts`` at which ``current`` was above it, where each row
    moved ``current`` up from ``previous`` (the offsets in between are new)."""
    return (
        frame.where(F.col(current) > F.col(previous))
        .withColumn(
            "offset", F.explode(F.sequence(F.col(previous), F.col(current) - 1))
        )
        .groupBy(*keys, "offset")
        .agg(F.min("ts").alias(name))
    )


def follower_waits(fetches: DataFrame) -> DataFrame:
    """Per offset and follower: when the leader had it, and when the follower did."""
    # The leader's log end as its followers' fetches saw it: each fetch that shows a
    # larger log end than every earlier one reveals the offsets appended since.
    so_far = (
        Window.partitionBy(*_PARTITION)
        .orderBy("ts")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    appended = _first_time_above(
        fetches.withColumn("seen", F.max("log_end_offset").over(so_far)),
        _PARTITION,
        "seen",
        "log_end_offset",
        "appended_ts",
    )
    # A fetch at offset n proves the follower holds everything below n.
    per_follower = Window.partitionBy(*_PARTITION, "follower").orderBy("ts")
    replicated = _first_time_above(
        fetches.withColumn("held", F.lag("fetch_offset").over(per_follower)),
        [*_PARTITION, "follower"],
        "held",
        "fetch_offset",
        "replicated_ts",
    )
    return (
        appended.join(replicated, [*_PARTITION, "offset"])
        .select(
            *_PARTITION,
            "offset",
            "follower",
            "appended_ts",
            "replicated_ts",
            ((F.col("replicated_ts") - F.col("appended_ts")) * 1000).alias("wait_ms"),
        )
        .orderBy(*_PARTITION, "offset", "follower")
    )


def commit_waits(waits: DataFrame, hws: DataFrame) -> DataFrame:
    """Per offset: how long until the HW passed it, and the follower it waited for."""
    committed = _first_time_above(
        hws, _PARTITION, "previous", "high_watermark", "committed_ts"
    )
    # The last follower to replicate the offset before the HW moved past it.
    last_first = Window.partitionBy(*_PARTITION, "offset").orderBy(
        F.desc("replicated_ts")
    )
    return (
        waits.join(committed, [*_PARTITION, "offset"])
        .where(F.col("replicated_ts") <= F.col("committed_ts"))
        .withColumn("rank", F.row_number().over(last_first))
        .where(F.col("rank") == 1)
        .select(
            *_PARTITION,
            "offset",
            "appended_ts",
            "committed_ts",
            ((F.col("committed_ts") - F.col("appended_ts")) * 1000).alias(
                "committed_ms"
            ),
            F.col("follower").alias("waited_for"),
        )
        .orderBy(*_PARTITION, "offset")
    )


def isr_episodes(proposals: DataFrame, changes: DataFrame) -> DataFrame:
    """Each time a replica left the ISR: when, why, and when it came back."""
    # One row per replica a change removed or added, from consecutive ISRs.
    moves = changes.select(
        *_PARTITION,
        "ts",
        F.explode(
            F.concat(
                F.transform(
                    F.array_except("previous_isr", "isr"),
                    lambda r: F.struct(r.alias("replica"), F.lit("shrink").alias("k")),
                ),
                F.transform(
                    F.array_except("isr", "previous_isr"),
                    lambda r: F.struct(r.alias("replica"), F.lit("expand").alias("k")),
                ),
            )
        ).alias("move"),
    ).select(*_PARTITION, "ts", "move.replica", "move.k")
    later = Window.partitionBy(*_PARTITION, "replica").orderBy("ts")
    episodes = (
        moves.withColumn("next_k", F.lead("k").over(later))
        .withColumn("next_ts", F.lead("ts").over(later))
        .where(F.col("k") == "shrink")
        .select(
            *_PARTITION,
            "replica",
            F.col("ts").alias("shrunk_ts"),
            F.when(F.col("next_k") == "expand", F.col("next_ts")).alias("expanded_ts"),
        )
    )
    # The cause: the latest shrink proposed for that replica before the change, with
    # how long the leader had not seen it caught up.
    causes = proposals.where(F.col("kind") == "shrink").select(
        *_PARTITION,
        F.col("ts").alias("proposed_ts"),
        F.explode(F.arrays_zip("replicas", "lag_ms")).alias("cause"),
    )
    causes = causes.select(
        *_PARTITION,
        "proposed_ts",
        F.col("cause.replicas").alias("replica"),
        F.col("cause.lag_ms").alias("lag_ms"),
    )
    latest = Window.partitionBy(*_PARTITION, "replica", "shrunk_ts").orderBy(
        F.desc("proposed_ts")
    )
    return (
        episodes.join(causes, [*_PARTITION, "replica"])
        .where(F.col("proposed_ts") <= F.col("shrunk_ts"))
        .withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
        .select(
            *_PARTITION,
            "replica",
            "shrunk_ts",
            "expanded_ts",
            ((F.col("expanded_ts") - F.col("shrunk_ts")) * 1000).alias("out_ms"),
            "lag_ms",
        )
        .orderBy(*_PARTITION, "replica", "shrunk_ts")
    )


def follower_lag(fetches: DataFrame) -> DataFrame:
    """Per follower and second: how far behind the leader its fetches showed it."""
    return (
        fetches.withColumn("second", F.floor("ts").cast("long"))
        .groupBy(*_PARTITION, "follower", "second")
        .agg(
            F.count("*").alias("fetches"),
            F.max("lag").alias("max_lag"),
            # Committed records it lacks: none while it holds all below the HW.
            F.max(
                F.greatest(F.col("high_watermark") - F.col("fetch_offset"), F.lit(0))
            ).alias("max_hw_lag"),
            F.max("caught_up_ms_ago").alias("max_caught_up_ms_ago"),
        )
        .orderBy(*_PARTITION, "follower", "second")
    )


def lso_holds(lso_moves: DataFrame, hws: DataFrame) -> DataFrame:
    """Per transaction: when the HW passed its first offset (the LSO held there), and
    when the LSO moved on."""
    held = F.col("m.previous")
    passed = (F.col("h.previous") <= held) & (held < F.col("h.high_watermark"))
    return _lso_holds(lso_moves, hws, passed)


def _lso_holds(lso_moves: DataFrame, hws: DataFrame, passed: Column) -> DataFrame:
    """``lso_holds`` with ``passed`` saying which HW advance began the hold at the
    held offset ``m.previous`` (the earliest of them, if several)."""
    keys = ["node", *_PARTITION]
    moves = lso_moves.alias("m")
    advances = hws.alias("h")
    joined = moves.join(
        advances,
        [F.col(f"m.{k}") == F.col(f"h.{k}") for k in keys] + [passed],
    )
    return (
        joined.groupBy(*[F.col(f"m.{k}").alias(k) for k in keys], F.col("m.previous"))
        .agg(F.min("h.ts").alias("held_ts"), F.first("m.ts").alias("released_ts"))
        .select(
            *keys,
            F.col("previous").alias("first_offset"),
            "held_ts",
            "released_ts",
            ((F.col("released_ts") - F.col("held_ts")) * 1000).alias("hold_ms"),
        )
        .orderBy(*keys, "first_offset")
    )
