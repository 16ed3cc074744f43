"""Looks for duplicates in the final log alone, not in the acknowledgements and reads."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_WHERE = ["topic", "partition", "value"]


def duplicates(history: DataFrame, final: DataFrame) -> DataFrame:
    lenient = (
        history.where((F.col("kind") == "send") & ~F.col("idempotent"))
        .select(*_WHERE)
        .distinct()
    )
    return (
        final.groupBy(*_WHERE)
        .agg(F.sort_array(F.collect_set("offset")).alias("offsets"))
        .where(F.size("offsets") >= 2)
        .join(lenient, _WHERE, "left_anti")
        .select(*_WHERE, "offsets")
        .orderBy(*_WHERE)
    )
