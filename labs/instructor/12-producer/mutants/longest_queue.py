"""Gives the longest queue_ms as min_queue_ms."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def leave_reasons(batches: DataFrame) -> DataFrame:
    reasons: DataFrame = _solutions.leave_reasons(batches)
    longest = batches.groupBy("client_id", "reason").agg(
        F.max("queue_ms").alias("longest")
    )
    return (
        reasons.join(longest, ["client_id", "reason"])
        .withColumn("min_queue_ms", F.col("longest"))
        .select(*reasons.columns)
        .orderBy("client_id", "reason")
    )
