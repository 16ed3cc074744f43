"""Orders the groups backwards."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def generations(changes: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.generations(changes)
    return found.orderBy(F.desc("group_id"))
