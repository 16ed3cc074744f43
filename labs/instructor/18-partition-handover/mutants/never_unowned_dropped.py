"""Reports only the partitions that had a stretch without owner."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def delayed(gaps: DataFrame, produced: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.delayed(gaps, produced)
    return found.where(F.col("gaps") > 0)
