"""Counts a record as delayed in a group when the partition was unowned in any group."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def delayed(gaps: DataFrame, produced: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.delayed(gaps, produced)
    anywhere = _solutions.delayed(gaps.withColumn("group_type", F.lit("any")), produced)
    counts = anywhere.select("partition", "delayed_records")
    return (
        found.drop("delayed_records")
        .join(counts, "partition")
        .select("group_type", "partition", "gaps", "unowned_ms", "delayed_records")
        .orderBy("group_type", "partition")
    )
