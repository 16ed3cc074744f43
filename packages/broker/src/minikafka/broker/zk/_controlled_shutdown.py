"""A ZooKeeper-mode broker's controlled shutdown, as Kafka 2.8's
``KafkaServer.controlledShutdown`` asks for it: ControlledShutdown sent to the
controller until nothing is led here, ``controlled.shutdown.max.retries`` attempts in
all, each failed one followed by ``controlled.shutdown.retry.backoff.ms``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio
from kio.schema.errors import ErrorCode

_logger = logging.getLogger("minikafka.broker")


async def ask_controlled_shutdown(
    ask: Callable[[], Awaitable[tuple[ErrorCode, int]]], attempts: int, backoff: float
) -> bool:
    """Ask the controller to move this broker's leaderships away (``ask`` returns its
    error and how many partitions it still leads here, -1 if unknown); while it still
    leads partitions the controller could not move (no other replica in sync), ask
    again. ``controlled.shutdown.max.retries`` counts every attempt, the first
    included, and each failed one is followed by ``backoff`` seconds, the last one too,
    as in Kafka 2.8's ``KafkaServer.controlledShutdown``. True once nothing is led
    here."""
    for attempt in range(1, attempts + 1):
        error, remaining = await ask()
        if error is ErrorCode.none and remaining == 0:
            return True
        _logger.info(
            "controlled shutdown attempt %d: %s, %d partition(s) still led here",
            attempt,
            error.name,
            remaining,
        )
        await trio.sleep(backoff)
    return False
