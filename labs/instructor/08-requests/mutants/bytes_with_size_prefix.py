"""Counts each request frame with its 4-byte size prefix, as librdkafka's txbytes does:
the broker's request_bytes leave it out."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(8).module("solutions")


def request_counts(requests: DataFrame, by_client: bool = False) -> DataFrame:
    framed = requests.withColumn("request_bytes", F.col("request_bytes") + 4)
    counts: DataFrame = _solutions.request_counts(framed, by_client)
    return counts
