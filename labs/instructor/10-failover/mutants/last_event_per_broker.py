"""Keeps each broker's last event at the epoch, not its first."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def propagation(
    elections: DataFrame, leaders: DataFrame, followers: DataFrame
) -> DataFrame:
    applied = leaders.select(
        *_PARTITION, "node", "leader_epoch", "ts", F.lit("leader").alias("role")
    ).unionByName(
        followers.select(
            *_PARTITION, "node", "leader_epoch", "ts", F.lit("follower").alias("role")
        )
    )
    last = Window.partitionBy(*_PARTITION, "leader_epoch", "node").orderBy(F.desc("ts"))
    failovers: DataFrame = _solutions._failovers(elections)
    return (
        failovers.join(applied, [*_PARTITION, "leader_epoch"])
        .where(F.col("ts") >= F.col("elected_ts"))
        .withColumn("rank", F.row_number().over(last))
        .where(F.col("rank") == 1)
        .select(
            *_PARTITION,
            "leader_epoch",
            F.col("node").alias("broker"),
            "role",
            "elected_ts",
            F.col("ts").alias("applied_ts"),
            ((F.col("ts") - F.col("elected_ts")) * 1000).alias("delay_ms"),
        )
        .orderBy(*_PARTITION, "broker")
    )
