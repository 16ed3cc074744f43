"""Uses percentile_approx (a value of the data, no interpolation) where the page asks
for the exact, interpolated percentile."""

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
        F.percentile_approx("ms", 0.5).cast("double").alias("p50_ms"),
        F.percentile_approx("ms", 0.99).cast("double").alias("p99_ms"),
    )
