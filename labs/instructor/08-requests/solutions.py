"""Lab 8's reference answers: where a request spends its time (ARCHITECTURE.md, "Traces and labs").

Every function takes the broker's ``net.request`` events,
``read_events(spark, traces, RequestCompleted)``: one row per request with its API,
client, sizes and Kafka's time breakdown (``request_queue_ms``, ``local_ms``,
``remote_ms``, ``response_queue_ms``, ``response_send_ms``, ``total_ms``). The questions
are in ``exercises.py``; these are the answers ``make test`` checks.

Percentiles are exact: Spark's ``percentile`` sorts each group's values and interpolates
linearly between the two nearest ranks (position ``p * (n - 1)``), as numpy's default
does. Lab traces are small enough that the exact answer costs nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.net import REQUEST_TIME_COMPONENTS

# Kafka's request time breakdown, in the order a request lives through it; the first
# five add up to ``total_ms`` (the fields of minikafka.net's RequestMetrics).
COMPONENTS = REQUEST_TIME_COMPONENTS


def request_counts(requests: DataFrame, by_client: bool = False) -> DataFrame:
    """Requests and bytes per API (and per client with ``by_client``)."""
    keys = ["client_id", "api_name"] if by_client else ["api_name"]
    return (
        requests.groupBy(*keys)
        .agg(
            F.count("*").alias("requests"),
            F.sum("request_bytes").alias("request_bytes"),
            F.sum("response_bytes").alias("response_bytes"),
        )
        .orderBy(F.desc("requests"), *keys)
    )


def time_percentiles(requests: DataFrame) -> DataFrame:
    """p50 and p99 of every part of the time breakdown, per API."""
    # One row per (request, component): the six columns become two, name and value.
    long = requests.unpivot(["api_name"], list(COMPONENTS), "component", "ms")
    order = F.array_position(
        F.array(*[F.lit(c) for c in COMPONENTS]), F.col("component")
    )
    return (
        long.groupBy("api_name", "component")
        .agg(
            F.count("*").alias("requests"),
            F.percentile("ms", 0.5).alias("p50_ms"),
            F.percentile("ms", 0.99).alias("p99_ms"),
        )
        .orderBy("api_name", order)
    )


def acks_and_long_polling(requests: DataFrame) -> DataFrame:
    """Produce and Fetch per client: how acks and fetch.wait.max.ms move the time."""
    data = requests.where(F.col("api_name").isin("Produce", "Fetch"))
    return (
        data.groupBy("client_id", "api_name")
        .agg(
            F.count("*").alias("requests"),
            F.percentile("total_ms", 0.5).alias("total_p50_ms"),
            F.percentile("total_ms", 0.99).alias("total_p99_ms"),
            F.percentile("remote_ms", 0.5).alias("remote_p50_ms"),
            F.percentile("remote_ms", 0.99).alias("remote_p99_ms"),
            (F.sum("remote_ms") / F.sum("total_ms")).alias("remote_share"),
            # acks=0: the broker writes no response at all.
            F.count_if(F.col("response_bytes") == 0).alias("no_response"),
        )
        .orderBy("api_name", "client_id")
    )


def busiest_second(requests: DataFrame) -> DataFrame:
    """The wall-clock second (on whole seconds) with the most requests, and its
    count."""
    per_second = requests.groupBy(F.date_trunc("second", "time").alias("second")).agg(
        F.count("*").alias("requests")
    )
    return per_second.orderBy(F.desc("requests"), "second").limit(1)
