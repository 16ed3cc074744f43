"""Gives delay_ms in seconds."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def propagation(
    elections: DataFrame, leaders: DataFrame, followers: DataFrame
) -> DataFrame:
    delays: DataFrame = _solutions.propagation(elections, leaders, followers)
    return delays.withColumn("delay_ms", F.col("applied_ts") - F.col("elected_ts"))
