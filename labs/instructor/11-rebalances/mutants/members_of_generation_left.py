"""Gives the members of the generation left (the group's previous rebalance_end), not
of the new one."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def rebalances(starts: DataFrame, ends: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.rebalances(starts, ends)
    by_generation = Window.partitionBy("group_id").orderBy("generation_id")
    return found.withColumn(
        "members", F.coalesce(F.lag("members").over(by_generation), F.lit(0))
    ).orderBy("group_id", "generation_id")
