"""Orders the producers by their batches, most first, not by client_id."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.labs import find_lab

_solutions = find_lab(12).module("solutions")


def batch_shapes(batches: DataFrame) -> DataFrame:
    shapes: DataFrame = _solutions.batch_shapes(batches)
    return shapes.orderBy(F.desc("batches"))
