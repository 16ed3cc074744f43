"""Counts the (failover, broker) rows of propagation as partitions, not the failovers."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def compare_modes(outages: DataFrame, delays: DataFrame) -> DataFrame:
    modes: DataFrame = _solutions.compare_modes(outages, delays)
    counted = delays.groupBy("mode").agg(F.count("*").alias("rows"))
    return (
        modes.join(counted, "mode")
        .withColumn("partitions", F.col("rows"))
        .select(*modes.columns)
        .orderBy("mode")
    )
