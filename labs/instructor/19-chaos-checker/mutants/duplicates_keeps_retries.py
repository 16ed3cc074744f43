"""Reports the values a producer without idempotence wrote twice on a retry."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(19).module("solutions")
_WHERE = ["topic", "partition", "value"]


def duplicates(history: DataFrame, final: DataFrame) -> DataFrame:
    places = _solutions._observations(history, final).select(*_WHERE, "offset")
    return (
        places.distinct()
        .groupBy(*_WHERE)
        .agg(F.sort_array(F.collect_list("offset")).alias("offsets"))
        .where(F.size("offsets") >= 2)
        .select(*_WHERE, "offsets")
        .orderBy(*_WHERE)
    )
