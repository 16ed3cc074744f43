"""Lab 18's reference answers (the instructors' copy)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def unowned(assignments: DataFrame) -> DataFrame:
    # Each snapshot holds from its ts until its member's next one (or for ever).
    per_member = Window.partitionBy("group_type", "member_id").orderBy("ts")
    held = (
        assignments.withColumn("until", F.lead("ts").over(per_member))
        .select(
            "group_type",
            F.col("ts").alias("since"),
            F.coalesce("until", F.lit(float("inf"))).alias("until"),
            F.explode(
                F.array_union("assigned_partitions", "partitions_pending_revocation")
            ).alias("name"),
        )
        .withColumn("partition", F.element_at(F.split("name", "-"), -1).cast("int"))
    )
    # Sweep each partition's stretches of ownership in order: a gap opens where one
    # starts after every earlier one has ended.
    per_partition = Window.partitionBy("group_type", "partition").orderBy(
        "since", "until"
    )
    earlier = per_partition.rowsBetween(Window.unboundedPreceding, -1)
    return (
        held.withColumn("covered", F.max("until").over(earlier))
        .where(F.col("since") > F.col("covered"))
        .select(
            "group_type",
            "partition",
            F.col("covered").alias("start_ts"),
            F.col("since").alias("end_ts"),
        )
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
