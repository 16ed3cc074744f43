"""Leaves the consumers' reads out of the witnesses: acknowledgements and the final log
only."""

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
    acks = history.where(
        (F.col("kind") == "send")
        & (F.col("outcome") == "ok")
        & F.col("offset").isNotNull()
    ).select(*_WHERE, "offset")
    places = acks.unionByName(final.select(*_WHERE, "offset")).distinct()
    return (
        places.groupBy(*_WHERE)
        .agg(F.sort_array(F.collect_list("offset")).alias("offsets"))
        .where(F.size("offsets") >= 2)
        .join(lenient, _WHERE, "left_anti")
        .select(*_WHERE, "offsets")
        .orderBy(*_WHERE)
    )
