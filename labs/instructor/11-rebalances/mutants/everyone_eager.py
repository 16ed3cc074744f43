"""Treats every group as eager: a cooperative member keeps its partitions through a
rejoin."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def stop_the_world(joins: DataFrame, syncs: DataFrame, ends: DataFrame) -> DataFrame:
    eager = ends.withColumn("protocol_name", F.lit("range"))
    found: DataFrame = _solutions.stop_the_world(joins, syncs, eager)
    return found
