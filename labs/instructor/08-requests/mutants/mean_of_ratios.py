"""remote_share as the mean of each request's remote/total, not the client's summed
remote time over its summed total time."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(8).module("solutions")


def acks_and_long_polling(requests: DataFrame) -> DataFrame:
    shares = (
        requests.where(F.col("api_name").isin("Produce", "Fetch"))
        .groupBy("client_id", "api_name")
        .agg(F.avg(F.col("remote_ms") / F.col("total_ms")).alias("mean_share"))
    )
    answer: DataFrame = _solutions.acks_and_long_polling(requests)
    return (
        answer.join(shares, ["client_id", "api_name"])
        .withColumn("remote_share", F.coalesce("mean_share", F.lit(0.0)))
        .select(*answer.columns)
    )
