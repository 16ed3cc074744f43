"""Counts generation 0, the group before its first rebalance, as a generation."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def generations(changes: DataFrame) -> DataFrame:
    return (
        changes.groupBy("group_id")
        .agg(
            F.countDistinct("generation_id").alias("generations"),
            F.max("generation_id").alias("final_generation"),
        )
        .orderBy("group_id")
    )
