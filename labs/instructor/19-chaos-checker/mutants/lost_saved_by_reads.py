"""Takes a value a consumer read as kept, though the final log no longer has it."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_WHERE = ["topic", "partition", "value"]


def lost_writes(history: DataFrame, final: DataFrame) -> DataFrame:
    deleted = history.where(F.col("kind") == "delete_topic").select("topic").distinct()
    acknowledged = history.where(
        (F.col("kind") == "send") & (F.col("outcome") == "ok")
    ).join(deleted, "topic", "left_anti")
    read = history.where((F.col("kind") == "poll") & (F.col("outcome") == "ok")).select(
        "topic", "partition", F.explode("records.value").alias("value")
    )
    kept = final.select(*_WHERE).unionByName(read).distinct()
    return (
        acknowledged.join(kept, _WHERE, "left_anti")
        .select(*_WHERE, "offset", F.col("index").alias("op"))
        .orderBy(*_WHERE)
    )
