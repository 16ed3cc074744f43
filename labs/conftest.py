"""Shared fixtures of the labs' tests: one SparkSession for the whole test run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from minikafka.labs import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session("minikafka-lab-tests")
    yield session
    session.stop()
