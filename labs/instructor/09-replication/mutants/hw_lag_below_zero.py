"""Keeps high_watermark - fetch_offset as it is, negative for a follower ahead of the
high watermark: a follower lacks no committed record then, 0."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_lag(fetches: DataFrame) -> DataFrame:
    lag: DataFrame = _solutions.follower_lag(fetches)
    raw = (
        fetches.withColumn("second", F.floor("ts").cast("long"))
        .groupBy(*_PARTITION, "follower", "second")
        .agg(F.max(F.col("high_watermark") - F.col("fetch_offset")).alias("raw"))
    )
    return (
        lag.join(raw, [*_PARTITION, "follower", "second"])
        .withColumn("max_hw_lag", F.col("raw"))
        .select(*lag.columns)
        .orderBy(*_PARTITION, "follower", "second")
    )
