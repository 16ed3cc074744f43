"""Counts all the producer's requests (Metadata, InitProducerId, ApiVersions...), not
its Produce requests only."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def produce_requests(batches: DataFrame, requests: DataFrame) -> DataFrame:
    produces = requests.withColumn("api_name", F.lit("Produce"))
    found: DataFrame = _solutions.produce_requests(batches, produces)
    return found
