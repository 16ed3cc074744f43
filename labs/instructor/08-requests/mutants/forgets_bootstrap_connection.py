"""Per client, leaves out the requests of its first (bootstrap) connection, as
librdkafka's own statistics do: the broker served them all the same."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(8).module("solutions")


def request_counts(requests: DataFrame, by_client: bool = False) -> DataFrame:
    if not by_client:
        counts: DataFrame = _solutions.request_counts(requests)
        return counts
    first = F.first("connection_id").over(Window.partitionBy("client_id").orderBy("ts"))
    later = requests.withColumn("bootstrap", first).where(
        F.col("connection_id") != F.col("bootstrap")
    )
    by: DataFrame = _solutions.request_counts(later.drop("bootstrap"), True)
    return by
