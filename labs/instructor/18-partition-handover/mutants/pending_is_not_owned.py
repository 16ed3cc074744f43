"""Counts only ``assigned_partitions`` as owned: a partition pending revocation, which
its member still reads, looks unowned."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(18).module("solutions")


def unowned(assignments: DataFrame) -> DataFrame:
    empty = F.array().cast("array<string>")
    found: DataFrame = _solutions.unowned(
        assignments.withColumn("partitions_pending_revocation", empty)
    )
    return found
