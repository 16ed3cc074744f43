"""Counts a send that ended unknown (a timeout) as a promise: lost if not in the log."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_WHERE = ["topic", "partition", "value"]


def lost_writes(history: DataFrame, final: DataFrame) -> DataFrame:
    deleted = history.where(F.col("kind") == "delete_topic").select("topic").distinct()
    sent = history.where(
        (F.col("kind") == "send") & (F.col("outcome") != "failed")
    ).join(deleted, "topic", "left_anti")
    return (
        sent.join(final.select(*_WHERE).distinct(), _WHERE, "left_anti")
        .select(*_WHERE, "offset", F.col("index").alias("op"))
        .orderBy(*_WHERE)
    )
