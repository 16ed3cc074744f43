"""Gives the first generation above 0 as final_generation, not the highest."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def generations(changes: DataFrame) -> DataFrame:
    return (
        changes.where(F.col("generation_id") > 0)
        .groupBy("group_id")
        .agg(
            F.countDistinct("generation_id").alias("generations"),
            F.min("generation_id").alias("final_generation"),
        )
        .orderBy("group_id")
    )
