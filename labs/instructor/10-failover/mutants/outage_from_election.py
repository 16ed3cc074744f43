"""Measures the outage from the election, not from the old leader's last sign of life."""

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
    return outages.withColumn(
        "outage_ms", (F.col("led_ts") - F.col("elected_ts")) * 1000
    )
