"""Leaves stopped_ms null for a member never stopped: 0.0 when none."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def stop_the_world(joins: DataFrame, syncs: DataFrame, ends: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.stop_the_world(joins, syncs, ends)
    return found.withColumn(
        "stopped_ms",
        F.when(F.col("stopped_ms") > 0, F.col("stopped_ms")),
    )
