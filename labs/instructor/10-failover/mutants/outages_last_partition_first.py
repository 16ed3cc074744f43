"""Orders the failovers by partition, highest first."""

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
    return outages.orderBy("mode", "topic", F.desc("partition"))
