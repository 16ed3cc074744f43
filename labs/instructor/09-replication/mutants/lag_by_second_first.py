"""Orders the rows by second, then follower."""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_lag(fetches: DataFrame) -> DataFrame:
    lag: DataFrame = _solutions.follower_lag(fetches)
    return lag.orderBy(*_PARTITION, "second", "follower")
