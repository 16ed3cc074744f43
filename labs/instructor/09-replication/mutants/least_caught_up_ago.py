"""Gives the smallest caught_up_ms_ago of the second as max_caught_up_ms_ago."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_lag(fetches: DataFrame) -> DataFrame:
    lag: DataFrame = _solutions.follower_lag(fetches)
    least = (
        fetches.withColumn("second", F.floor("ts").cast("long"))
        .groupBy(*_PARTITION, "follower", "second")
        .agg(F.min("caught_up_ms_ago").alias("least"))
    )
    return (
        lag.join(least, [*_PARTITION, "follower", "second"])
        .withColumn("max_caught_up_ms_ago", F.col("least"))
        .select(*lag.columns)
        .orderBy(*_PARTITION, "follower", "second")
    )
