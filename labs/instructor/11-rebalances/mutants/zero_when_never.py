"""Gives 0.0 for a client that had sent no Heartbeat yet: null, as for a new member."""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import find_lab

_solutions = find_lab(11).module("solutions")


def rebalance_causes(starts: DataFrame, requests: DataFrame) -> DataFrame:
    found: DataFrame = _solutions.rebalance_causes(starts, requests)
    return found.fillna(0.0, ["silent_ms"])
