"""Gives duration_ms in seconds."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def rebalances(starts: DataFrame, ends: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.rebalances(starts, ends)
    return found.withColumn("duration_ms", F.col("end_ts") - F.col("start_ts"))
