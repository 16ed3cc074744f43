"""Counts as unanswered the requests whose response_bytes is null: there are none, an
acks=0 Produce has a response size of 0."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(8).module("solutions")


def acks_and_long_polling(requests: DataFrame) -> DataFrame:
    nulls = (
        requests.where(F.col("api_name").isin("Produce", "Fetch"))
        .groupBy("client_id", "api_name")
        .agg(F.count_if(F.col("response_bytes").isNull()).alias("nulls"))
    )
    answer: DataFrame = _solutions.acks_and_long_polling(requests)
    return (
        answer.join(nulls, ["client_id", "api_name"])
        .withColumn("no_response", F.col("nulls"))
        .select(*answer.columns)
    )
