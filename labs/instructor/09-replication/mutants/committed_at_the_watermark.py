"""Counts offset o as committed once the high watermark reaches o: it is committed
when the high watermark is above it."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def commit_waits(waits: DataFrame, hws: DataFrame) -> DataFrame:
    early = hws.withColumn("previous", F.col("previous") + 1).withColumn(
        "high_watermark", F.col("high_watermark") + 1
    )
    commits: DataFrame = _solutions.commit_waits(waits, early)
    return commits
