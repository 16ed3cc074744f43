"""Reports the records of a deleted topic as lost."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_WHERE = ["topic", "partition", "value"]


def lost_writes(history: DataFrame, final: DataFrame) -> DataFrame:
    acknowledged = history.where((F.col("kind") == "send") & (F.col("outcome") == "ok"))
    return (
        acknowledged.join(final.select(*_WHERE).distinct(), _WHERE, "left_anti")
        .select(*_WHERE, "offset", F.col("index").alias("op"))
        .orderBy(*_WHERE)
    )
