"""Reads each event as partitions added to its member, never taken away: nothing is
ever unowned once owned."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def unowned(assignments: DataFrame) -> DataFrame:
    so_far = Window.partitionBy("group_type", "member_id").orderBy("ts")
    grown = assignments.withColumn(
        "assigned_partitions",
        F.array_distinct(F.flatten(F.collect_list("assigned_partitions").over(so_far))),
    )
    found: DataFrame = _solutions.unowned(grown)
    return found
