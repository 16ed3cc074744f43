"""Gives the lag of each second's last fetch as max_lag, not the largest."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_lag(fetches: DataFrame) -> DataFrame:
    lag: DataFrame = _solutions.follower_lag(fetches)
    last = (
        fetches.withColumn("second", F.floor("ts").cast("long"))
        .groupBy(*_PARTITION, "follower", "second")
        .agg(F.max_by("lag", "ts").alias("last"))
    )
    return (
        lag.join(last, [*_PARTITION, "follower", "second"])
        .withColumn("max_lag", F.col("last"))
        .select(*lag.columns)
        .orderBy(*_PARTITION, "follower", "second")
    )
