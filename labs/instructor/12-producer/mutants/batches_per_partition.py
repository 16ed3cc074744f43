"""Counts the partitions a producer wrote to as its batches."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def batch_shapes(batches: DataFrame) -> DataFrame:
    shapes: DataFrame = _solutions.batch_shapes(batches)
    partitions = batches.groupBy("client_id").agg(
        F.count_distinct("topic", "partition").alias("partitions")
    )
    return (
        shapes.join(partitions, "client_id")
        .withColumn("batches", F.col("partitions"))
        .select(*shapes.columns)
        .orderBy("client_id")
    )
