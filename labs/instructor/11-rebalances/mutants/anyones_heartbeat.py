"""Measures the silence from the group's last Heartbeat of any client, not the causing
client's."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def rebalance_causes(starts: DataFrame, requests: DataFrame) -> DataFrame:
    anyone = requests.withColumn("client_id", F.lit("anyone"))
    found: DataFrame = _solutions.rebalance_causes(
        starts.withColumn("cause", F.col("client_id")).withColumn(
            "client_id", F.lit("anyone")
        ),
        anyone,
    )
    cause = starts.select("group_id", "generation_id", "client_id")
    return (
        found.drop("client_id")
        .join(cause, ["group_id", "generation_id"])
        .select("group_id", "generation_id", "reason", "client_id", "silent_ms")
        .orderBy("group_id", "generation_id")
    )
