"""Begins each hold at the first HW advance that *reaches* the held offset (its
``high_watermark`` at least x), not the one that passes it: that advance is the
previous transaction's release, so the hold takes in the time between transactions."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(9).module("solutions")


def lso_holds(lso_moves: DataFrame, hws: DataFrame) -> DataFrame:
    reached = F.col("h.high_watermark") >= F.col("m.previous")
    holds: DataFrame = _solutions._lso_holds(lso_moves, hws, reached)
    return holds
