"""Lab 19 reference answers: the chaos checker's ``lost`` and ``duplicate`` rules
(``chaos/checker.py``) in Spark.

The inputs are the DataFrames of ``scenario.read_history`` (one row per operation) and
``scenario.read_final`` (one row per record of the final log). Every function has the
signature and the output columns of its exercise in ``exercises.py``, whose docstrings
state the rule.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_WHERE = ["topic", "partition", "value"]


def lost_writes(history: DataFrame, final: DataFrame) -> DataFrame:
    deleted = history.where(F.col("kind") == "delete_topic").select("topic").distinct()
    acknowledged = history.where(
        (F.col("kind") == "send") & (F.col("outcome") == "ok")
    ).join(deleted, "topic", "left_anti")
    kept = final.select(*_WHERE).distinct()
    return (
        acknowledged.join(kept, _WHERE, "left_anti")
        .select(*_WHERE, "offset", F.col("index").alias("op"))
        .orderBy(*_WHERE)
    )


def _observations(history: DataFrame, final: DataFrame) -> DataFrame:
    """Every claim that an offset holds a value: (topic, partition, offset, value)."""
    acks = history.where(
        (F.col("kind") == "send")
        & (F.col("outcome") == "ok")
        & F.col("offset").isNotNull()
    ).select("topic", "partition", "offset", "value")
    reads = (
        history.where((F.col("kind") == "poll") & (F.col("outcome") == "ok"))
        .select("topic", "partition", F.explode("records").alias("record"))
        .select("topic", "partition", "record.offset", "record.value")
    )
    return acks.unionByName(reads).unionByName(
        final.select("topic", "partition", "offset", "value")
    )


def duplicates(history: DataFrame, final: DataFrame) -> DataFrame:
    lenient = (
        history.where((F.col("kind") == "send") & ~F.col("idempotent"))
        .select(*_WHERE)
        .distinct()
    )
    places = _observations(history, final).select(*_WHERE, "offset").distinct()
    return (
        places.groupBy(*_WHERE)
        .agg(F.sort_array(F.collect_list("offset")).alias("offsets"))
        .where(F.size("offsets") >= 2)
        .join(lenient, _WHERE, "left_anti")
        .select(*_WHERE, "offsets")
        .orderBy(*_WHERE)
    )
