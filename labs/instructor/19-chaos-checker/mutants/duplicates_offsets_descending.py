"""Gives each duplicate's offsets newest first."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(19).module("solutions")


def duplicates(history: DataFrame, final: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.duplicates(history, final)
    return found.withColumn("offsets", F.sort_array("offsets", asc=False))
