"""Gives each mode the largest delay_ms of both modes together."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def compare_modes(outages: DataFrame, delays: DataFrame) -> DataFrame:
    modes: DataFrame = _solutions.compare_modes(outages, delays)
    worst = delays.agg(F.max("delay_ms").alias("worst"))
    return (
        modes.crossJoin(worst)
        .withColumn("max_propagation_ms", F.col("worst"))
        .select(*modes.columns)
        .orderBy("mode")
    )
