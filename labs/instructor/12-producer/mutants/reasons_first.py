"""Orders the rows by reason, then client_id."""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def leave_reasons(batches: DataFrame) -> DataFrame:
    reasons: DataFrame = _solutions.leave_reasons(batches)
    return reasons.orderBy("reason", "client_id")
