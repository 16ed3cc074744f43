"""Gives, as appended_ts, when the first follower had the offset, not when the leader
had it (committed_ms measured from there)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def commit_waits(waits: DataFrame, hws: DataFrame) -> DataFrame:
    first_copy = waits.groupBy(*_PARTITION, "offset").agg(
        F.min("replicated_ts").alias("copied_ts")
    )
    commits: DataFrame = _solutions.commit_waits(
        waits.join(first_copy, [*_PARTITION, "offset"])
        .withColumn("appended_ts", F.col("copied_ts"))
        .drop("copied_ts"),
        hws,
    )
    return commits
