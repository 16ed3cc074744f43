"""A LeaderAndIsr whose topics' configs ZooKeeper could not give is refused
(KAFKA_STORAGE_ERROR, nothing applied), and the broker's line names what ZooKeeper
said: kazoo's ConnectionLoss and SessionExpiredError carry no text, and the line read
"topic configs unreadable ()" (chaos seed 303, node 0, ZooKeeper's server paused)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss
from kio.schema.errors import ErrorCode

from minikafka.broker import ZkBrokerServer


class _Configs:
    async def load_topic_configs(self, topics: set[str]) -> None:
        raise ConnectionLoss()


class _Broker:
    configs = _Configs()

    @property
    def metadata(self) -> Any:
        raise AssertionError("nothing is applied once the configs are unreadable")


class _Partition:
    topic = "chaos"


class _Request:
    partitions = (_Partition(),)


async def test_the_refusal_names_zookeepers_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker: Any = _Broker()
    request: Any = _Request()
    with caplog.at_level(logging.WARNING, logger="minikafka.broker"):
        response = await ZkBrokerServer._leader_and_isr(broker, request, {})
    assert response.error_code == ErrorCode.kafka_storage_error
    refused = [
        r.getMessage() for r in caplog.records if "LeaderAndIsr" in r.getMessage()
    ]
    assert refused == [
        "LeaderAndIsr refused: topic configs unreadable (ConnectionLoss)"
    ]
