"""Uses percentile_approx (a value of the data, no interpolation) for every percentile:
the p99s lie between two values of the data almost always, where the p50s of an odd
number of batches need no interpolation at all."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def batch_latency(batches: DataFrame) -> DataFrame:
    latency: DataFrame = _solutions.batch_latency(batches)
    timed = batches.withColumn("total_ms", F.col("queue_ms") + F.col("in_flight_ms"))
    approx = timed.groupBy("client_id").agg(
        F.percentile_approx("queue_ms", 0.5).alias("q"),
        F.percentile_approx("queue_ms", 0.99).alias("q99"),
        F.percentile_approx("in_flight_ms", 0.5).alias("f"),
        F.percentile_approx("total_ms", 0.5).alias("t"),
        F.percentile_approx("total_ms", 0.99).alias("t99"),
    )
    return (
        latency.join(approx, "client_id")
        .withColumn("queue_p50_ms", F.col("q"))
        .withColumn("queue_p99_ms", F.col("q99"))
        .withColumn("in_flight_p50_ms", F.col("f"))
        .withColumn("total_p50_ms", F.col("t"))
        .withColumn("total_p99_ms", F.col("t99"))
        .select(*latency.columns)
        .orderBy("client_id")
    )
