"""Reports the 95th percentile as p99_ms."""

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
        F.count("*").alias("requests"),
        F.percentile("ms", 0.5).alias("p50_ms"),
        F.percentile("ms", 0.95).alias("p99_ms"),
    )
