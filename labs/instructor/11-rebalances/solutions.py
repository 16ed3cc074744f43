"""Lab 11 reference answers: what each rebalance cost, computed from the coordinator's trace.

The inputs are DataFrames from ``minikafka.labs.read_events`` over a run's traces, one per
event type of ``minikafka.coordination`` (component ``group``) and of ``minikafka.net``:

- ``starts``: ``RebalanceStarted`` (``rebalance_start``), ``ends``: ``RebalanceCompleted``
  (``rebalance_end``), ``joins``: ``MemberJoined`` (``member_join``), ``syncs``:
  ``MemberAssigned`` (``member_sync``), ``changes``: ``GroupStateChanged``
  (``state_change``), ``requests``: ``RequestCompleted`` (``net.request``).

Every function has the signature and the output columns of its exercise in
``exercises.py``, whose docstrings state the question and the mechanism.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

COOPERATIVE_PROTOCOLS = ("cooperative-sticky",)
"""Assignor names that rebalance cooperatively (KIP-429): a member keeps its partitions
while it rejoins. Every other protocol (``range``, ``roundrobin``, ``sticky``) is eager."""


def rebalances(starts: DataFrame, ends: DataFrame) -> DataFrame:
    """Every completed rebalance: its end joined with the latest start before it."""
    # Each end belongs to the latest start of its group at or before it (an as-of join).
    start = starts.select(
        "group_id",
        F.col("ts").alias("start_ts"),
        "reason",
        F.col("members").alias("was"),
    )
    end = ends.select(
        "group_id", "generation_id", F.col("ts").alias("end_ts"), "members"
    )
    latest_first = Window.partitionBy("group_id", "generation_id").orderBy(
        F.desc("start_ts")
    )
    return (
        end.join(start, "group_id")
        .where(F.col("start_ts") <= F.col("end_ts"))
        .withColumn("rank", F.row_number().over(latest_first))
        .where(F.col("rank") == 1)
        .select(
            "group_id",
            "generation_id",
            "start_ts",
            "end_ts",
            ((F.col("end_ts") - F.col("start_ts")) * 1000).alias("duration_ms"),
            "reason",
            "members",
        )
        .orderBy("group_id", "generation_id")
    )


def stop_the_world(joins: DataFrame, syncs: DataFrame, ends: DataFrame) -> DataFrame:
    """Per member, the time without partitions before its first ones and after."""
    cooperative = ends.groupBy("group_id").agg(
        F.max(F.col("protocol_name").isin(*COOPERATIVE_PROTOCOLS)).alias("cooperative")
    )
    no_partitions = F.lit(None).cast("long")
    events = (
        joins.select(
            "group_id", "client_id", "ts", F.lit(0).alias("kind"), no_partitions
        )
        .toDF("group_id", "client_id", "ts", "kind", "partitions")
        .unionByName(
            syncs.select(
                "group_id", "client_id", "ts", F.lit(1).alias("kind"), "partitions"
            )
        )
        .join(cooperative, "group_id")
    )
    # kind 0 (join) before kind 1 (sync) when two events share a timestamp.
    timeline = Window.partitionBy("group_id", "client_id").orderBy("ts", "kind")
    so_far = timeline.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    last_sync = F.coalesce(
        F.last("partitions", ignorenulls=True).over(so_far), F.lit(0)
    )
    is_join: Column = F.col("kind") == 0
    # Eager: a member rejoins only after revoking everything. Cooperative: it keeps what
    # its last SyncGroup gave it.
    held = F.when(is_join & ~F.col("cooperative"), 0).otherwise(last_sync)
    had_some = F.max(F.when(~is_join & (F.col("partitions") > 0), 1).otherwise(0)).over(
        so_far
    )
    gap_ms = (F.lead("ts").over(timeline) - F.col("ts")) * 1000
    intervals = events.select(
        "group_id",
        "client_id",
        "kind",
        F.when(held == 0, gap_ms).otherwise(0.0).alias("empty_ms"),
        had_some.alias("had_some"),
    )
    return (
        intervals.groupBy("group_id", "client_id")
        .agg(
            F.sum(F.col("kind")).alias("rebalances"),
            F.sum(
                F.when(F.col("had_some") == 0, F.col("empty_ms")).otherwise(0.0)
            ).alias("waiting_ms"),
            F.sum(
                F.when(F.col("had_some") == 1, F.col("empty_ms")).otherwise(0.0)
            ).alias("stopped_ms"),
        )
        .fillna(0.0, ["waiting_ms", "stopped_ms"])
        .orderBy("group_id", "client_id")
    )


def generations(changes: DataFrame) -> DataFrame:
    """Per group, the generations its state changes went through."""
    return (
        changes.where(F.col("generation_id") > 0)
        .groupBy("group_id")
        .agg(
            F.countDistinct("generation_id").alias("generations"),
            F.max("generation_id").alias("final_generation"),
        )
        .orderBy("group_id")
    )


def rebalance_causes(starts: DataFrame, requests: DataFrame) -> DataFrame:
    """Per rebalance, its cause and how long the causing client had been silent."""
    heartbeats = requests.where(F.col("api_name") == "Heartbeat").select(
        F.col("client_id").alias("heartbeat_client"), F.col("ts").alias("heartbeat_ts")
    )
    start = starts.select("group_id", "generation_id", "reason", "client_id", "ts")
    last_heartbeat = (
        start.join(
            heartbeats,
            (F.col("heartbeat_client") == F.col("client_id"))
            & (F.col("heartbeat_ts") <= F.col("ts")),
            "left",
        )
        .groupBy("group_id", "generation_id", "reason", "client_id", "ts")
        .agg(F.max("heartbeat_ts").alias("heartbeat_ts"))
    )
    return last_heartbeat.select(
        "group_id",
        "generation_id",
        "reason",
        "client_id",
        ((F.col("ts") - F.col("heartbeat_ts")) * 1000).alias("silent_ms"),
    ).orderBy("group_id", "generation_id")
