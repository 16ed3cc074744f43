"""Counts, per component, only the requests that spent time in it (ms > 0): requests
is the API's request count, the same for each of its components."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(8).module("solutions")


def time_percentiles(requests: DataFrame) -> DataFrame:
    long = requests.unpivot(
        ["api_name"], list(_solutions.COMPONENTS), "component", "ms"
    )
    return long.groupBy("api_name", "component").agg(
        F.count_if(F.col("ms") > 0).alias("requests"),
        F.percentile("ms", 0.5).alias("p50_ms"),
        F.percentile("ms", 0.99).alias("p99_ms"),
    )
