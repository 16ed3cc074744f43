"""Counts per minute, not per second."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def busiest_second(requests: DataFrame) -> DataFrame:
    per_minute = requests.groupBy(F.date_trunc("minute", "time").alias("second")).agg(
        F.count("*").alias("requests")
    )
    return per_minute.orderBy(F.desc("requests"), "second").limit(1)
