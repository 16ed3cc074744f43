"""Counts arrivals as episodes too: a row for each replica the ISR gained as well."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def isr_episodes(proposals: DataFrame, changes: DataFrame) -> DataFrame:
    # An arrival is a departure seen backwards: swap each change's ISRs.
    swapped = (
        changes.withColumnRenamed("isr", "after")
        .withColumnRenamed("previous_isr", "isr")
        .withColumnRenamed("after", "previous_isr")
    )
    flipped = proposals.withColumn(
        "kind", F.when(F.col("kind") == "shrink", "expand").otherwise("shrink")
    )
    departures: DataFrame = _solutions.isr_episodes(proposals, changes)
    arrivals: DataFrame = _solutions.isr_episodes(flipped, swapped)
    return departures.unionByName(arrivals).orderBy(*_PARTITION, "replica", "shrunk_ts")
