"""Breaks a tie towards the latest second, not the earliest."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def busiest_second(requests: DataFrame) -> DataFrame:
    per_second = requests.groupBy(F.date_trunc("second", "time").alias("second")).agg(
        F.count("*").alias("requests")
    )
    return per_second.orderBy(F.desc("requests"), F.desc("second")).limit(1)
