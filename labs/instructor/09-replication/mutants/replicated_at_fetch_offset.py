"""Counts offset n as the follower's once it fetches *at* n: a fetch at n proves it
holds the offsets below n only."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_waits(fetches: DataFrame) -> DataFrame:
    ahead = fetches.withColumn("fetch_offset", F.col("fetch_offset") + 1)
    waits: DataFrame = _solutions.follower_waits(ahead)
    return waits
