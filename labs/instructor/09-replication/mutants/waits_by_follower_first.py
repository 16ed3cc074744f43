"""Orders the rows by follower, then offset."""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_waits(fetches: DataFrame) -> DataFrame:
    waits: DataFrame = _solutions.follower_waits(fetches)
    return waits.orderBy(*_PARTITION, "follower", "offset")
