"""Takes the client's last Heartbeat of the whole run, even one after the start."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def rebalance_causes(starts: DataFrame, requests: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.rebalance_causes(starts, requests)
    last = (
        requests.where(F.col("api_name") == "Heartbeat")
        .groupBy("client_id")
        .agg(F.max("ts").alias("last_ts"))
    )
    start = starts.select("group_id", "generation_id", F.col("ts").alias("start_ts"))
    return (
        found.join(start, ["group_id", "generation_id"])
        .join(last, "client_id", "left")
        .withColumn("silent_ms", (F.col("start_ts") - F.col("last_ts")) * 1000)
        .select(*found.columns)
        .orderBy("group_id", "generation_id")
    )
