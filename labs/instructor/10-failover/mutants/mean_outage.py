"""Gives the mean outage_ms as max_outage_ms."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def compare_modes(outages: DataFrame, delays: DataFrame) -> DataFrame:
    modes: DataFrame = _solutions.compare_modes(outages, delays)
    mean = outages.groupBy("mode").agg(F.avg("outage_ms").alias("mean"))
    return (
        modes.join(mean, "mode")
        .withColumn("max_outage_ms", F.col("mean"))
        .select(*modes.columns)
        .orderBy("mode")
    )
