"""Keeps every API, not only Produce and Fetch."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def acks_and_long_polling(requests: DataFrame) -> DataFrame:
    return requests.groupBy("client_id", "api_name").agg(
        F.count("*").alias("requests"),
        F.percentile("total_ms", 0.5).alias("total_p50_ms"),
        F.percentile("total_ms", 0.99).alias("total_p99_ms"),
        F.percentile("remote_ms", 0.5).alias("remote_p50_ms"),
        F.percentile("remote_ms", 0.99).alias("remote_p99_ms"),
        (F.sum("remote_ms") / F.sum("total_ms")).alias("remote_share"),
        F.count_if(F.col("response_bytes") == 0).alias("no_response"),
    )
