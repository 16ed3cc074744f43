"""Counts the time before a partition's first owner, from the group's first event."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def unowned(assignments: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.unowned(assignments)
    first = assignments.groupBy("group_type").agg(F.min("ts").alias("start_ts"))
    owned_from = (
        found.select("group_type", "partition").distinct().join(first, "group_type")
    )
    opening = (
        assignments.select(
            "group_type",
            "ts",
            F.explode("assigned_partitions").alias("name"),
        )
        .select(
            "group_type",
            F.element_at(F.split("name", "-"), -1).cast("int").alias("partition"),
            "ts",
        )
        .groupBy("group_type", "partition")
        .agg(F.min("ts").alias("end_ts"))
    )
    before = (
        owned_from.join(opening, ["group_type", "partition"])
        .where(F.col("end_ts") > F.col("start_ts"))
        .select("group_type", "partition", "start_ts", "end_ts")
    )
    return found.unionByName(before).orderBy("group_type", "partition", "start_ts")
