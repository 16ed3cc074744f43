"""Measures the silence from the client's first Heartbeat, not its last before the
start."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def rebalance_causes(starts: DataFrame, requests: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.rebalance_causes(starts, requests)
    first = (
        requests.where(F.col("api_name") == "Heartbeat")
        .groupBy("client_id")
        .agg(F.min("ts").alias("first_ts"))
    )
    start = starts.select("group_id", "generation_id", F.col("ts").alias("start_ts"))
    return (
        found.join(start, ["group_id", "generation_id"])
        .join(first, "client_id", "left")
        .withColumn(
            "silent_ms",
            F.when(
                F.col("silent_ms").isNotNull(),
                (F.col("start_ts") - F.col("first_ts")) * 1000,
            ),
        )
        .select(*found.columns)
        .orderBy("group_id", "generation_id")
    )
