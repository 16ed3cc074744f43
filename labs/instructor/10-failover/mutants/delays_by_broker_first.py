"""Orders the rows by broker, then partition."""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import find_lab

_solutions = find_lab(10).module("solutions")
_PARTITION = ["mode", "topic", "partition"]


def propagation(
    elections: DataFrame, leaders: DataFrame, followers: DataFrame
) -> DataFrame:
    delays: DataFrame = _solutions.propagation(elections, leaders, followers)
    return delays.orderBy("mode", "topic", "broker", "partition")
