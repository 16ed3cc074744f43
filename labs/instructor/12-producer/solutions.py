"""Lab 12's reference answers: the producer's batches, requests and latency under
``linger.ms`` and ``batch.size`` (seed 000's producer; ARCHITECTURE.md, "Traces and
labs").

``batches`` are the producers' ``producer.batch`` events
(``read_events(spark, traces, ProducerBatchCompleted)``), one row per batch with its
``records``, ``size_bytes``, ``reason``, ``queue_ms`` and ``in_flight_ms``; ``requests``
the brokers' ``net.request`` events. The questions are in ``exercises.py``; these are
the answers ``make test`` checks. Percentiles are exact (``F.percentile``: linear
between the two nearest ranks, as numpy's default).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def batch_shapes(batches: DataFrame) -> DataFrame:
    """Batches per producer, and how many records and bytes each held."""
    return (
        batches.groupBy("client_id")
        .agg(
            F.count("*").alias("batches"),
            F.sum("records").alias("records"),
            F.max("records").alias("max_records"),
            F.avg("size_bytes").alias("mean_bytes"),
        )
        .select(
            "client_id",
            "batches",
            "records",
            (F.col("records") / F.col("batches")).alias("records_per_batch"),
            "max_records",
            "mean_bytes",
        )
        .orderBy("client_id")
    )


def leave_reasons(batches: DataFrame) -> DataFrame:
    """Per producer and reason: how many batches left for it, and their share."""
    per_client = Window.partitionBy("client_id")
    return (
        batches.groupBy("client_id", "reason")
        .agg(
            F.count("*").alias("batches"),
            F.avg("records").alias("mean_records"),
            F.min("queue_ms").alias("min_queue_ms"),
        )
        # A window over the grouped rows: each reason's count over the client's total.
        .withColumn("share", F.col("batches") / F.sum("batches").over(per_client))
        .select(
            "client_id", "reason", "batches", "share", "mean_records", "min_queue_ms"
        )
        .orderBy("client_id", "reason")
    )


def batch_latency(batches: DataFrame) -> DataFrame:
    """Per producer: the percentiles of a batch's wait, its flight and their sum."""
    timed = batches.withColumn("total_ms", F.col("queue_ms") + F.col("in_flight_ms"))
    return (
        timed.groupBy("client_id")
        .agg(
            F.count("*").alias("batches"),
            F.percentile("queue_ms", 0.5).alias("queue_p50_ms"),
            F.percentile("queue_ms", 0.99).alias("queue_p99_ms"),
            F.percentile("in_flight_ms", 0.5).alias("in_flight_p50_ms"),
            F.percentile("total_ms", 0.5).alias("total_p50_ms"),
            F.percentile("total_ms", 0.99).alias("total_p99_ms"),
        )
        .orderBy("client_id")
    )


def produce_requests(batches: DataFrame, requests: DataFrame) -> DataFrame:
    """Per producer: its records and batches beside the brokers' Produce requests."""
    sent = batches.groupBy("client_id").agg(
        F.sum("records").alias("records"),
        F.count("*").alias("batches"),
        F.percentile("in_flight_ms", 0.5).alias("in_flight_p50_ms"),
    )
    served = (
        requests.where(F.col("api_name") == "Produce")
        .groupBy("client_id")
        .agg(
            F.count("*").alias("requests"),
            F.percentile("total_ms", 0.5).alias("broker_p50_ms"),
        )
    )
    # A left join keeps every producer; the brokers' other clients (the admin) drop out.
    return (
        sent.join(served, "client_id", "left")
        .select(
            "client_id",
            "records",
            "batches",
            "requests",
            (F.col("records") / F.col("requests")).alias("records_per_request"),
            "broker_p50_ms",
            "in_flight_p50_ms",
        )
        .orderBy("client_id")
    )
