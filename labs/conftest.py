"""Shared fixtures of the labs' tests: one SparkSession for the whole test run, and the
trace labs' mutants (``minikafka.labs._mutants``) as expected failures of the checks
they break."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from minikafka.labs import lab_of, spark_session
from minikafka.labs._mutants import MUTANT_PREFIX, find_mutant


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session("minikafka-lab-tests")
    yield session
    session.stop()


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """A trace lab's ``answers`` fixture runs each check once per implementation
    (:func:`minikafka.labs.implementations`). A mutant's run is kept only for the checks
    its ``select`` names, where it must fail an assertion (a strict xfail: a mutant
    that passes fails the run, naming the promise no check tests); the rest are
    deselected."""
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        which = callspec.params.get("answers") if callspec else None
        if not (isinstance(which, str) and which.startswith(MUTANT_PREFIX)):
            kept.append(item)
            continue
        mutant = find_mutant(lab_of(item.path), which.removeprefix(MUTANT_PREFIX))
        names = {name.strip() for name in mutant.select.split(" or ")}
        if getattr(item, "originalname", item.name) not in names:
            dropped.append(item)
            continue
        item.add_marker(
            pytest.mark.xfail(
                strict=True,
                raises=AssertionError,
                reason=f"mutant {mutant.name} breaks: {mutant.promise}",
            )
        )
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
