"""Takes the last follower fetch any broker answered for the partition (the new
leader's among them) as the old leader's last sign of life."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def leaderless(
    elections: DataFrame, leaders: DataFrame, fetches: DataFrame
) -> DataFrame:
    outages: DataFrame = _solutions.leaderless(elections, leaders, fetches)
    last = fetches.groupBy(*_PARTITION).agg(F.max("ts").alias("last"))
    return (
        outages.join(last, _PARTITION)
        .withColumn("last_seen_ts", F.col("last"))
        .withColumn("detect_ms", (F.col("elected_ts") - F.col("last_seen_ts")) * 1000)
        .withColumn("outage_ms", (F.col("led_ts") - F.col("last_seen_ts")) * 1000)
        .select(*outages.columns)
        .orderBy(*_PARTITION)
    )
