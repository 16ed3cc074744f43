"""Counts only the SyncGroup answers that gave the member partitions: an empty one (a
cooperative member's, while its partitions move) is a rebalance it took part in too."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def stop_the_world(joins: DataFrame, syncs: DataFrame, ends: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.stop_the_world(joins, syncs, ends)
    given = syncs.groupBy("group_id", "client_id").agg(
        F.count_if(F.col("partitions") > 0).alias("given")
    )
    return (
        found.join(given, ["group_id", "client_id"])
        .withColumn("rebalances", F.col("given"))
        .select(*found.columns)
        .orderBy("group_id", "client_id")
    )
