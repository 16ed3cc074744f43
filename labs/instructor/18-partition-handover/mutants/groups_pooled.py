"""Pools both protocols' groups: a partition owned in either counts as owned."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def unowned(assignments: DataFrame) -> DataFrame:
    pooled = assignments.withColumn("group_type", F.lit("both"))
    gaps: DataFrame = _solutions.unowned(pooled)
    kinds = assignments.select("group_type").distinct()
    return (
        gaps.drop("group_type")
        .crossJoin(kinds)
        .select("group_type", "partition", "start_ts", "end_ts")
        .orderBy("group_type", "partition", "start_ts")
    )
