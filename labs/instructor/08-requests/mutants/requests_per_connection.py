"""Counts a client's connections, not its requests."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(8).module("solutions")


def acks_and_long_polling(requests: DataFrame) -> DataFrame:
    connections = (
        requests.where(F.col("api_name").isin("Produce", "Fetch"))
        .groupBy("client_id", "api_name")
        .agg(F.count_distinct("connection_id").alias("connections"))
    )
    answer: DataFrame = _solutions.acks_and_long_polling(requests)
    return (
        answer.join(connections, ["client_id", "api_name"])
        .withColumn("requests", F.col("connections"))
        .select(*answer.columns)
    )
