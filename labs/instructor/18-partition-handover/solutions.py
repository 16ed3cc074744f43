"""Lab 18's reference answers (the instructors' copy)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def _owners_at_each_snapshot(assignments: DataFrame) -> DataFrame:
    """(group_type, partition, ts, owners): at the ts of every snapshot of the group,
    how many members own the partition (their latest snapshot at or before it)."""
    owned = assignments.select(
        "group_type",
        "member_id",
        "ts",
        F.explode(
            F.array_union("assigned_partitions", "partitions_pending_revocation")
        ).alias("name"),
    )
    partitions = owned.select(
        "group_type",
        F.element_at(F.split("name", "-"), -1).cast("int").alias("partition"),
    ).distinct()
    moments = assignments.select("group_type", "ts").distinct()
    members = assignments.select("group_type", "member_id").distinct()
    # each member's snapshot in force at each moment
    latest = (
        moments.join(members, "group_type")
        .join(
            assignments.select(
                "group_type", "member_id", F.col("ts").alias("snapshot_ts")
            ),
            ["group_type", "member_id"],
        )
        .where(F.col("snapshot_ts") <= F.col("ts"))
        .groupBy("group_type", "member_id", "ts")
        .agg(F.max("snapshot_ts").alias("snapshot_ts"))
    )
    held = (
        latest.join(
            owned.withColumnRenamed("ts", "snapshot_ts"),
            ["group_type", "member_id", "snapshot_ts"],
        )
        .select(
            "group_type",
            "ts",
            F.element_at(F.split("name", "-"), -1).cast("int").alias("partition"),
        )
        .groupBy("group_type", "partition", "ts")
        .agg(F.count("*").alias("owners"))
    )
    return (
        moments.join(partitions, "group_type")
        .join(held, ["group_type", "partition", "ts"], "left")
        .fillna(0, ["owners"])
    )


def unowned(assignments: DataFrame) -> DataFrame:
    counted = _owners_at_each_snapshot(assignments)
    by_time = Window.partitionBy("group_type", "partition").orderBy("ts")
    marked = (
        counted.withColumn(
            "ever",
            F.max(F.col("owners") > 0).over(
                by_time.rowsBetween(Window.unboundedPreceding, 0)
            ),
        )
        .withColumn("free", (F.col("owners") == 0) & F.col("ever"))
        .withColumn("was_free", F.lag("free", 1, False).over(by_time))
        .withColumn("next_ts", F.lead("ts").over(by_time))
        .where(F.col("ever"))
    )
    starts = marked.where(F.col("free") & ~F.col("was_free")).select(
        "group_type", "partition", F.col("ts").alias("start_ts")
    )
    ends = marked.where(~F.col("free") & F.col("was_free")).select(
        "group_type", "partition", F.col("ts").alias("end_ts")
    )
    return (
        starts.join(ends, ["group_type", "partition"])
        .where(F.col("end_ts") > F.col("start_ts"))
        .groupBy("group_type", "partition", "start_ts")
        .agg(F.min("end_ts").alias("end_ts"))
        .orderBy("group_type", "partition", "start_ts")
    )


def delayed(gaps: DataFrame, produced: DataFrame) -> DataFrame:
    every = (
        gaps.select("group_type")
        .distinct()
        .crossJoin(produced.select("partition").distinct())
    )
    lengths = gaps.groupBy("group_type", "partition").agg(
        F.count("*").alias("gaps"),
        F.sum((F.col("end_ts") - F.col("start_ts")) * 1000).alias("unowned_ms"),
    )
    waiting = (
        gaps.alias("g")
        .join(
            produced.alias("r"),
            (F.col("g.partition") == F.col("r.partition"))
            & (F.col("r.ts") >= F.col("g.start_ts"))
            & (F.col("r.ts") < F.col("g.end_ts")),
        )
        .select("g.group_type", "g.partition", "r.offset")
        .distinct()
        .groupBy("group_type", "partition")
        .agg(F.count("*").alias("delayed_records"))
    )
    return (
        every.join(lengths, ["group_type", "partition"], "left")
        .join(waiting, ["group_type", "partition"], "left")
        .select(
            "group_type",
            "partition",
            F.coalesce("gaps", F.lit(0)).cast("long").alias("gaps"),
            F.round(F.coalesce("unowned_ms", F.lit(0.0)), 3).alias("unowned_ms"),
            F.coalesce("delayed_records", F.lit(0))
            .cast("long")
            .alias("delayed_records"),
        )
        .orderBy("group_type", "partition")
    )
