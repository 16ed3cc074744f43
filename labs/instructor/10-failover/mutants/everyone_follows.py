"""Calls every broker that acted a follower, the new leader too."""

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
    return delays.withColumn("role", F.lit("follower"))
