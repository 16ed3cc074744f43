"""Fixtures of the client's tests: one broker process per test module, as a user runs
it, for minikafka's own clients (and librdkafka's, to check them against)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minikafka.broker.testing import BrokerProcess

# A short initial rebalance delay (Kafka's 3 s would only slow the group tests down) and
# a minimum session timeout below the consumers' own.
GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker per test module; tests use their own topic and group names."""
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"), overrides=GROUP_OVERRIDES
    ) as process:
        yield process
