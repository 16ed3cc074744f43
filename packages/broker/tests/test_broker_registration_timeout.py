"""Kafka's ``initial.broker.registration.timeout.ms`` (default 60 s): a KRaft broker
that has not registered with the controller quorum that long after it began to try
gives up (one line at ERROR) and its process exits, rather than retrying for ever."""

from __future__ import annotations

import logging

import pytest
import trio

from minikafka.broker import KafkaConfig
from minikafka.broker._server import RegistrationTimeoutError, register_within


async def test_a_broker_that_cannot_register_gives_up_at_the_timeout(
    autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture
) -> None:
    async def refused_for_ever() -> None:
        await trio.sleep_forever()

    start = trio.current_time()
    with pytest.raises(RegistrationTimeoutError, match=r"timeout\.ms=60000"):
        await register_within(refused_for_ever, 60_000)
    assert trio.current_time() - start == 60.0
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert "unable to register with the controller quorum" in caplog.text


async def test_a_registration_in_time_goes_on(autojump_clock: trio.abc.Clock) -> None:
    async def registered_after_a_while() -> None:
        await trio.sleep(59)

    await register_within(registered_after_a_while, 60_000)
    assert trio.current_time() == 59.0


def test_the_timeout_is_kafkas_key_with_kafkas_default() -> None:
    default = KafkaConfig.from_properties({})
    assert default.broker.initial_broker_registration_timeout_ms == 60_000
    config = KafkaConfig.from_properties(
        {"initial.broker.registration.timeout.ms": "10000"}
    )
    assert config.broker.initial_broker_registration_timeout_ms == 10_000
