"""Counts the records that left for each reason, not the batches."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def leave_reasons(batches: DataFrame) -> DataFrame:
    reasons: DataFrame = _solutions.leave_reasons(batches)
    records = batches.groupBy("client_id", "reason").agg(
        F.sum("records").alias("records")
    )
    return (
        reasons.join(records, ["client_id", "reason"])
        .withColumn("batches", F.col("records"))
        .select(*reasons.columns)
        .orderBy("client_id", "reason")
    )
