"""Gives the mean bytes per record as mean_bytes, not the mean batch size."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def batch_shapes(batches: DataFrame) -> DataFrame:
    shapes: DataFrame = _solutions.batch_shapes(batches)
    per_record = batches.groupBy("client_id").agg(
        (F.sum("size_bytes") / F.sum("records")).alias("per_record")
    )
    return (
        shapes.join(per_record, "client_id")
        .withColumn("mean_bytes", F.col("per_record"))
        .select(*shapes.columns)
        .orderBy("client_id")
    )
