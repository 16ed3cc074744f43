"""Gives out_ms in seconds."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def isr_episodes(proposals: DataFrame, changes: DataFrame) -> DataFrame:
    episodes: DataFrame = _solutions.isr_episodes(proposals, changes)
    return episodes.withColumn("out_ms", F.col("expanded_ts") - F.col("shrunk_ts"))
