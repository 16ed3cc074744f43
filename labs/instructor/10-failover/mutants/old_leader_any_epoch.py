"""Takes the old leader from the partition's latest become_leader at any epoch, the new
one's included: the old leader led an earlier epoch."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def leaderless(
    elections: DataFrame, leaders: DataFrame, fetches: DataFrame
) -> DataFrame:
    outages: DataFrame = _solutions.leaderless(elections, leaders, fetches)
    latest = Window.partitionBy(*_PARTITION).orderBy(F.desc("leader_epoch"))
    newest = (
        leaders.withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
        .select(*_PARTITION, F.col("node").alias("newest"))
    )
    return (
        outages.join(newest, _PARTITION)
        .withColumn("old_leader", F.col("newest"))
        .select(*outages.columns)
        .orderBy(*_PARTITION)
    )
