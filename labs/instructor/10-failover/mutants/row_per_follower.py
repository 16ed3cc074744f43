"""Takes the old leader's last fetch per follower: a row per follower it served, not
one per failover."""

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
    per_follower = fetches.groupBy(
        *_PARTITION, F.col("node").alias("old_leader"), "follower"
    ).agg(F.max("ts").alias("last"))
    return (
        outages.join(per_follower, [*_PARTITION, "old_leader"])
        .withColumn("last_seen_ts", F.col("last"))
        .withColumn("detect_ms", (F.col("elected_ts") - F.col("last_seen_ts")) * 1000)
        .withColumn("outage_ms", (F.col("led_ts") - F.col("last_seen_ts")) * 1000)
        .select(*outages.columns)
        .orderBy(*_PARTITION)
    )
