"""Takes an offset's append time from each follower's own fetches (the first of *its*
fetches to show the offset in the leader's log end), not from the first fetch of any
follower."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")
_PARTITION = ["topic", "partition"]


def follower_waits(fetches: DataFrame) -> DataFrame:
    waits: DataFrame = _solutions.follower_waits(fetches)
    mine = Window.partitionBy(*_PARTITION, "follower").orderBy("ts")
    seen = fetches.withColumn(
        "seen",
        F.max("log_end_offset").over(mine.rowsBetween(Window.unboundedPreceding, -1)),
    )
    appended = _solutions._first_time_above(
        seen, [*_PARTITION, "follower"], "seen", "log_end_offset", "own_ts"
    )
    return (
        waits.join(appended, [*_PARTITION, "offset", "follower"])
        .withColumn("appended_ts", F.col("own_ts"))
        .withColumn("wait_ms", (F.col("replicated_ts") - F.col("appended_ts")) * 1000)
        .select(*waits.columns)
        .orderBy(*_PARTITION, "offset", "follower")
    )
