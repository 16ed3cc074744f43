"""Takes each broker's first event at the epoch even when it came before the
election: an event at the epoch counts only at or after the election."""

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
    first = Window.partitionBy(*_PARTITION, "leader_epoch", "node").orderBy("ts")
    failovers: DataFrame = _solutions._failovers(elections)
    return (
        failovers.join(applied, [*_PARTITION, "leader_epoch"])
        .withColumn("rank", F.row_number().over(first))
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
