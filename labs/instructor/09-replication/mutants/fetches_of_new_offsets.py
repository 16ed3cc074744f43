"""Counts the distinct offsets fetched in a second, not the fetches."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_lag(fetches: DataFrame) -> DataFrame:
    lag: DataFrame = _solutions.follower_lag(fetches)
    distinct = (
        fetches.withColumn("second", F.floor("ts").cast("long"))
        .groupBy(*_PARTITION, "follower", "second")
        .agg(F.count_distinct("fetch_offset").alias("distinct"))
    )
    return (
        lag.join(distinct, [*_PARTITION, "follower", "second"])
        .withColumn("fetches", F.col("distinct"))
        .select(*lag.columns)
        .orderBy(*_PARTITION, "follower", "second")
    )
