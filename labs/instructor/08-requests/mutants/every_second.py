"""Returns every second's count, busiest first, where the page asks for one row."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def busiest_second(requests: DataFrame) -> DataFrame:
    per_second = requests.groupBy(F.date_trunc("second", "time").alias("second")).agg(
        F.count("*").alias("requests")
    )
    return per_second.orderBy(F.desc("requests"), "second")
