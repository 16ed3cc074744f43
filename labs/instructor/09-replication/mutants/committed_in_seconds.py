"""Gives committed_ms in seconds."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def commit_waits(waits: DataFrame, hws: DataFrame) -> DataFrame:
    commits: DataFrame = _solutions.commit_waits(waits, hws)
    return commits.withColumn(
        "committed_ms", F.col("committed_ts") - F.col("appended_ts")
    )
