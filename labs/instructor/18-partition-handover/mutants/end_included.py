"""Counts a record produced at a stretch's ``end_ts`` as delayed."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def delayed(gaps: DataFrame, produced: DataFrame) -> DataFrame:
    stretched = gaps.withColumn("end_ts", F.col("end_ts") + 1e-9)
    found: DataFrame = _solutions.delayed(stretched, produced)
    exact = _solutions.delayed(gaps, produced).select(
        "group_type", "partition", "unowned_ms"
    )
    return (
        found.drop("unowned_ms")
        .join(exact, ["group_type", "partition"])
        .select("group_type", "partition", "gaps", "unowned_ms", "delayed_records")
        .orderBy("group_type", "partition")
    )
