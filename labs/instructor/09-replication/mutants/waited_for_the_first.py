"""Names the first follower to have the offset as the one the commit waited for: the
leader waits for the last of the ISR."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def commit_waits(waits: DataFrame, hws: DataFrame) -> DataFrame:
    committed = _solutions._first_time_above(
        hws, _PARTITION, "previous", "high_watermark", "committed_ts"
    )
    first = Window.partitionBy(*_PARTITION, "offset").orderBy("replicated_ts")
    return (
        waits.join(committed, [*_PARTITION, "offset"])
        .where(F.col("replicated_ts") <= F.col("committed_ts"))
        .withColumn("rank", F.row_number().over(first))
        .where(F.col("rank") == 1)
        .select(
            *_PARTITION,
            "offset",
            "appended_ts",
            "committed_ts",
            ((F.col("committed_ts") - F.col("appended_ts")) * 1000).alias(
                "committed_ms"
            ),
            F.col("follower").alias("waited_for"),
        )
        .orderBy(*_PARTITION, "offset")
    )
