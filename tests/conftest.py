"""What every cross-package suite shares: each test's phase reports kept on the test item,
so that a fixture's teardown can tell whether the test itself passed (the crash checks of
the cluster, end-to-end and compatibility suites fail only a passing test, and print what
they found under one that failed already)."""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from reference.kafka import KafkaNode
from tests.cluster._cluster import REPORTS


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


@pytest.fixture(scope="session")
def kafka_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """Apache Kafka itself, one KRaft combined node for the whole session (started when a
    test first asks for it): the oracle the reference tests compare minikafka with. Tests
    use topic and group names of their own."""
    with KafkaNode(tmp_path_factory.mktemp("kafka-reference")) as node:
        yield node
