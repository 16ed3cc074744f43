"""Orders the counts by API name, not by requests: the busiest API is not first."""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import find_lab

_solutions = find_lab(8).module("solutions")


def request_counts(requests: DataFrame, by_client: bool = False) -> DataFrame:
    counts: DataFrame = _solutions.request_counts(requests, by_client)
    return counts.orderBy(*(["client_id"] if by_client else []), "api_name")
