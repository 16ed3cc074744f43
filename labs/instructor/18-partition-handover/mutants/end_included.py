"""Counts a record produced at a stretch's ``end_ts`` as delayed: the stretch read as
``start_ts <= ts <= end_ts``."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def delayed(gaps: DataFrame, produced: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.delayed(gaps, produced)
    waiting = (
        gaps.alias("g")
        .join(
            produced.alias("r"),
            (F.col("g.partition") == F.col("r.partition"))
            & (F.col("r.ts") >= F.col("g.start_ts"))
            & (F.col("r.ts") <= F.col("g.end_ts")),
        )
        .select("g.group_type", "g.partition", "r.offset")
        .distinct()
        .groupBy("group_type", "partition")
        .agg(F.count("*").alias("waiting"))
    )
    return (
        found.join(waiting, ["group_type", "partition"], "left")
        .select(
            "group_type",
            "partition",
            "gaps",
            "unowned_ms",
            F.coalesce("waiting", F.lit(0)).cast("long").alias("delayed_records"),
        )
        .orderBy("group_type", "partition")
    )
