"""Shared fixtures: every test starts and ends with tracing off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minikafka.trace import configure_tracing


@pytest.fixture(autouse=True)
def _tracing_off() -> Iterator[None]:
    configure_tracing(None, 0)
    yield
    configure_tracing(None, 0)
