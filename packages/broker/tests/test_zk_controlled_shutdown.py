"""ZooKeeper mode's controlled shutdown asks the controller as many times as Kafka's
``KafkaServer.controlledShutdown`` does: ``controlled.shutdown.max.retries`` counts every
attempt, the first included (three by default, not one and three retries), and every
failed attempt, the last too, is followed by ``controlled.shutdown.retry.backoff.ms``
(Kafka sleeps before it checks whether attempts remain)."""

from __future__ import annotations

import trio
from kio.schema.errors import ErrorCode

from minikafka.broker.zk._controlled_shutdown import ask_controlled_shutdown


async def test_a_broker_leading_what_cannot_move_asks_max_retries_times_then_stops(
    autojump_clock: trio.abc.Clock,
) -> None:
    asked: list[float] = []

    async def ask() -> tuple[ErrorCode, int]:
        asked.append(trio.current_time())
        return ErrorCode.none, 3  # three partitions no other replica can take

    start = trio.current_time()
    assert not await ask_controlled_shutdown(ask, 3, 5.0)
    assert [t - start for t in asked] == [0.0, 5.0, 10.0]
    assert trio.current_time() - start == 15.0


async def test_a_controller_that_moved_everything_ends_the_asking(
    autojump_clock: trio.abc.Clock,
) -> None:
    answers = iter([(ErrorCode.request_timed_out, -1), (ErrorCode.none, 0)])
    asked = 0

    async def ask() -> tuple[ErrorCode, int]:
        nonlocal asked
        asked += 1
        return next(answers)

    start = trio.current_time()
    assert await ask_controlled_shutdown(ask, 3, 5.0)
    assert asked == 2
    assert trio.current_time() - start == 5.0
