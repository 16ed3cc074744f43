"""Names the last follower to have the offset at any time, even after the commit: a
follower out of the ISR, which the commit did not wait for, gets the blame."""

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
    last = Window.partitionBy(*_PARTITION, "offset").orderBy(F.desc("replicated_ts"))
    return (
        waits.join(committed, [*_PARTITION, "offset"])
        .withColumn("rank", F.row_number().over(last))
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
