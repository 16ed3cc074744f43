"""Takes lag_ms from the replica's latest proposal of any kind and time (its expansion
back, lag 0), not from the shrink that caused the departure."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def isr_episodes(proposals: DataFrame, changes: DataFrame) -> DataFrame:
    episodes: DataFrame = _solutions.isr_episodes(proposals, changes)
    causes = proposals.select(
        *_PARTITION,
        F.col("ts").alias("proposed_ts"),
        F.explode(F.arrays_zip("replicas", "lag_ms")).alias("cause"),
    ).select(
        *_PARTITION,
        "proposed_ts",
        F.col("cause.replicas").alias("replica"),
        F.col("cause.lag_ms").alias("latest_lag_ms"),
    )
    latest = Window.partitionBy(*_PARTITION, "replica", "shrunk_ts").orderBy(
        F.desc("proposed_ts")
    )
    return (
        episodes.join(causes, [*_PARTITION, "replica"])
        .withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
        .withColumn("lag_ms", F.col("latest_lag_ms"))
        .select(*episodes.columns)
        .orderBy(*_PARTITION, "replica", "shrunk_ts")
    )
