"""Lab 10 reference answers: a broker's failure as two kinds of controller handled it.

The inputs are DataFrames from ``minikafka.labs.read_events`` over both runs' traces,
each with a ``mode`` column (``kraft`` or ``zookeeper``) the lab adds: ``elections``:
``PartitionLeaderElected`` (``controller.election``), ``leaders``: ``BecameLeader``
(``replication.become_leader``), ``followers``: ``BecameFollower``
(``replication.become_follower``), ``fetches``: ``FollowerFetched``
(``replication.follower_fetch``).

Every function has the signature and the output columns of its exercise in
``exercises.py``, whose docstrings state the question and the mechanism.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

_PARTITION = ["mode", "topic", "partition"]


def _failovers(elections: DataFrame) -> DataFrame:
    return elections.where(
        (F.col("reason") != "new_partition") & (F.col("leader") >= 0)
    ).select(
        *_PARTITION,
        F.col("leader").alias("new_leader"),
        "leader_epoch",
        F.col("ts").alias("elected_ts"),
    )


def leaderless(
    elections: DataFrame, leaders: DataFrame, fetches: DataFrame
) -> DataFrame:
    """Per failover: the old leader's last sign of life, the election, the new one."""
    failovers = _failovers(elections)
    # The old leader: who led the epoch before (the latest become_leader before it).
    before = leaders.select(
        *_PARTITION,
        F.col("node").alias("old_leader"),
        F.col("leader_epoch").alias("old_epoch"),
    )
    latest_epoch = Window.partitionBy(*_PARTITION, "leader_epoch").orderBy(
        F.desc("old_epoch")
    )
    with_old = (
        failovers.join(before, _PARTITION)
        .where(F.col("old_epoch") < F.col("leader_epoch"))
        .withColumn("rank", F.row_number().over(latest_epoch))
        .where(F.col("rank") == 1)
        .drop("rank", "old_epoch")
    )
    # Its last sign of life: the last follower fetch it answered for the partition.
    served = fetches.groupBy(*_PARTITION, F.col("node").alias("old_leader")).agg(
        F.max("ts").alias("last_seen_ts")
    )
    led = leaders.select(
        *_PARTITION,
        F.col("node").alias("new_leader"),
        "leader_epoch",
        F.col("ts").alias("led_ts"),
    )
    return (
        with_old.join(served, [*_PARTITION, "old_leader"])
        .join(led, [*_PARTITION, "new_leader", "leader_epoch"])
        .select(
            *_PARTITION,
            "old_leader",
            "new_leader",
            "leader_epoch",
            "last_seen_ts",
            "elected_ts",
            "led_ts",
            ((F.col("elected_ts") - F.col("last_seen_ts")) * 1000).alias("detect_ms"),
            ((F.col("led_ts") - F.col("last_seen_ts")) * 1000).alias("outage_ms"),
        )
        .orderBy(*_PARTITION)
    )


def propagation(
    elections: DataFrame, leaders: DataFrame, followers: DataFrame
) -> DataFrame:
    """Per failover and broker: how long until that broker acted on the new leader."""
    applied = leaders.select(
        *_PARTITION, "node", "leader_epoch", "ts", F.lit("leader").alias("role")
    ).unionByName(
        followers.select(
            *_PARTITION, "node", "leader_epoch", "ts", F.lit("follower").alias("role")
        )
    )
    first = Window.partitionBy(*_PARTITION, "leader_epoch", "node").orderBy("ts")
    return (
        _failovers(elections)
        .join(applied, [*_PARTITION, "leader_epoch"])
        .where(F.col("ts") >= F.col("elected_ts"))
        .withColumn("rank", F.row_number().over(first))
        .where(F.col("rank") == 1)
        .select(
            *_PARTITION,
            "leader_epoch",
            F.col("node").alias("broker"),
            "role",
            "elected_ts",
            F.col("ts").alias("applied_ts"),
            ((F.col("ts") - F.col("elected_ts")) * 1000).alias("delay_ms"),
        )
        .orderBy(*_PARTITION, "broker")
    )


def compare_modes(outages: DataFrame, delays: DataFrame) -> DataFrame:
    """Per mode: how many partitions failed over, and the worst of each stage."""
    worst_delay = delays.groupBy("mode").agg(
        F.max("delay_ms").alias("max_propagation_ms")
    )
    return (
        outages.groupBy("mode")
        .agg(
            F.count("*").alias("partitions"),
            F.max("detect_ms").alias("max_detect_ms"),
            F.max("outage_ms").alias("max_outage_ms"),
        )
        .join(worst_delay, "mode")
        .orderBy("mode")
    )
