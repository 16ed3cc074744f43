"""The Reactor's queue (``HandOff``): order, the bound, close, and no item lost to a
cancelled wait: what the RequestChannel's backpressure and muting rely on."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

from minikafka.net._handoff import HandOff


async def test_items_come_out_in_the_order_they_went_in_without_yielding() -> None:
    queue: HandOff[int] = HandOff(math.inf)
    for i in range(5):
        assert queue.put_nowait(i)
    assert len(queue) == 5
    # Taking what is queued is no checkpoint: no other task runs in between.
    with trio.testing.assert_no_checkpoints():
        taken = [await queue.take() for _ in range(5)]
    assert taken == [0, 1, 2, 3, 4]
    assert len(queue) == 0


async def test_a_full_queue_refuses_put_nowait_and_makes_put_wait_in_order() -> None:
    queue: HandOff[str] = HandOff(2)
    assert queue.put_nowait("a")
    assert queue.put_nowait("b")
    assert not queue.put_nowait("c")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.put, "c")
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(queue.put, "d")
        await trio.testing.wait_all_tasks_blocked()
        assert queue.waiting_putters == 2
        assert len(queue) == 2
        # Each take makes room for the longest waiting putter, whose item goes in.
        taken = [await queue.take() for _ in range(4)]
    assert taken == ["a", "b", "c", "d"]
    assert queue.waiting_putters == 0


async def test_an_item_put_while_a_task_waits_goes_to_that_task() -> None:
    queue: HandOff[str] = HandOff(1)
    got: list[str] = []

    async def taker() -> None:
        got.append(await queue.take())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(taker)
        nursery.start_soon(taker)
        await trio.testing.wait_all_tasks_blocked()
        assert queue.put_nowait("x")
        assert queue.put_nowait("y")
        assert len(queue) == 0  # handed straight to the waiting takers
    assert sorted(got) == ["x", "y"]


async def test_a_queue_of_no_capacity_passes_items_hand_to_hand() -> None:
    queue: HandOff[int] = HandOff(0)
    assert not queue.put_nowait(1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.put, 1)
        await trio.testing.wait_all_tasks_blocked()
        assert await queue.take() == 1


async def test_close_drains_then_ends_takers_and_fails_waiting_putters() -> None:
    queue: HandOff[int] = HandOff(1)
    assert queue.put_nowait(1)
    putter_error: list[BaseException] = []

    async def put_two() -> None:
        try:
            await queue.put(2)
        except trio.ClosedResourceError as e:
            putter_error.append(e)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(put_two)
        await trio.testing.wait_all_tasks_blocked()
        queue.close()
    assert len(putter_error) == 1
    assert queue.closed
    with pytest.raises(trio.ClosedResourceError):
        queue.put_nowait(3)
    assert await queue.take() == 1  # what was queued before the close is still taken
    with pytest.raises(trio.EndOfChannel):
        await queue.take()


async def test_close_wakes_a_waiting_taker_with_end_of_channel() -> None:
    queue: HandOff[int] = HandOff(1)
    ended = trio.Event()

    async def taker() -> None:
        with pytest.raises(trio.EndOfChannel):
            await queue.take()
        ended.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(taker)
        await trio.testing.wait_all_tasks_blocked()
        queue.close()
    assert ended.is_set()


async def test_a_cancelled_wait_loses_no_item_and_leaves_no_waiter_behind() -> None:
    queue: HandOff[int] = HandOff(1)
    assert queue.put_nowait(1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.put, 2)
        nursery.start_soon(queue.take)  # takes 1 at once, so 2 goes in
        await trio.testing.wait_all_tasks_blocked()
    assert len(queue) == 1
    with trio.move_on_after(0.01):
        await queue.put(3)  # full: waits, then is cancelled
    assert queue.waiting_putters == 0
    assert await queue.take() == 2
    with trio.move_on_after(0.01):
        await queue.take()  # empty: waits, then is cancelled
    assert queue.put_nowait(4)  # not handed to the cancelled taker
    assert await queue.take() == 4
