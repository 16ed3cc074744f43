"""Dates a departure by the leader's proposal, not by the isr_change that applied it."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def isr_episodes(proposals: DataFrame, changes: DataFrame) -> DataFrame:
    episodes: DataFrame = _solutions.isr_episodes(proposals, changes)
    shrinks = proposals.where(F.col("kind") == "shrink").select(
        *_PARTITION,
        F.col("ts").alias("proposed_ts"),
        F.explode("replicas").alias("replica"),
    )
    latest = Window.partitionBy(*_PARTITION, "replica", "shrunk_ts").orderBy(
        F.desc("proposed_ts")
    )
    return (
        episodes.join(shrinks, [*_PARTITION, "replica"])
        .where(F.col("proposed_ts") <= F.col("shrunk_ts"))
        .withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
        .withColumn("shrunk_ts", F.col("proposed_ts"))
        .withColumn("out_ms", (F.col("expanded_ts") - F.col("shrunk_ts")) * 1000)
        .select(*episodes.columns)
        .orderBy(*_PARTITION, "replica", "shrunk_ts")
    )
