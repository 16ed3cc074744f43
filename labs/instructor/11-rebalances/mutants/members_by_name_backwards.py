"""Orders each group's members by client_id backwards."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def stop_the_world(joins: DataFrame, syncs: DataFrame, ends: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.stop_the_world(joins, syncs, ends)
    return found.orderBy("group_id", F.desc("client_id"))
