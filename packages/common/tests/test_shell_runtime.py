"""The shell runtime (``minikafka.common.shell``): request correlation, sleeping to the
next deadline, and the timer loop, each with the promise it makes a shell."""

from __future__ import annotations

import trio
import trio.testing

from minikafka.common.shell import Waiters, Wakeup, run_timers


async def test_a_request_gets_the_answer_given_to_its_id_even_from_another_task() -> (
    None
):
    waiters: Waiters[str] = Waiters()
    first, second = waiters.open(), waiters.open()
    assert first != second
    assert len(waiters) == 2
    answers: dict[int, str] = {}

    async def ask(request_id: int) -> None:
        answers[request_id] = await waiters.wait(request_id)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, first)
        nursery.start_soon(ask, second)
        await trio.testing.wait_all_tasks_blocked()
        assert waiters.answer(second, "b")
        assert waiters.answer(first, "a")
    assert answers == {first: "a", second: "b"}
    assert len(waiters) == 0, "an answered request's id is closed"


async def test_only_the_first_answer_counts_and_a_closed_id_takes_none() -> None:
    waiters: Waiters[str] = Waiters()
    request_id = waiters.open()
    assert waiters.answer(request_id, "refused")
    assert waiters.answered(request_id)
    assert not waiters.answer(request_id, "late")
    assert await waiters.wait(request_id) == "refused"  # answered before the wait
    gone = waiters.open()
    waiters.close(gone)  # its connection went away
    assert not waiters.answer(gone, "nobody")
    assert gone not in waiters


async def test_a_stopping_shell_finds_every_unanswered_request() -> None:
    waiters: Waiters[str] = Waiters()
    first, second, third = waiters.open(), waiters.open(), waiters.open()
    waiters.answer(second, "done")
    assert waiters.unanswered() == [first, third]
    for request_id in waiters.unanswered():
        waiters.answer(request_id, "not the controller")
    assert waiters.unanswered() == []
    assert await waiters.wait(third) == "not the controller"


async def test_a_cancelled_wait_closes_its_id() -> None:
    waiters: Waiters[str] = Waiters()
    request_id = waiters.open()
    with trio.move_on_after(1):
        await waiters.wait(request_id)
    assert request_id not in waiters


async def test_the_sleep_ends_at_the_deadline_or_at_the_first_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    wakeup = Wakeup()
    start = trio.current_time()
    await wakeup.sleep_until(start + 5.0, trio.current_time)
    assert trio.current_time() - start == 5.0
    wakeup.set()
    wakeup.set()  # two inputs before a look: one wake
    await wakeup.sleep_until(None, trio.current_time)
    assert trio.current_time() - start == 5.0
    with trio.move_on_after(100):
        await wakeup.sleep_until(None, trio.current_time)  # armed again: sleeps
    assert trio.current_time() - start == 105.0


async def test_due_timers_fire_at_their_deadline_and_a_failed_round_pauses(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The loop fires when the earliest deadline is due, not before; an input makes it
    look again (a new, earlier deadline); after a round that failed it waits
    ``retry_after`` before the next, rather than spinning on a bug."""
    start = trio.current_time()
    deadlines = [start + 10.0]
    fired: list[float] = []
    fail_at = {start + 3.0}

    def next_deadline() -> float | None:
        return min(deadlines) if deadlines else None

    def on_due(now: float) -> bool:
        fired.append(now - start)
        due = min(deadlines)
        if due in fail_at:
            fail_at.discard(due)
            return False  # still due: fires again after the pause
        deadlines.remove(due)
        return True

    wakeup = Wakeup()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: run_timers(
                next_deadline, on_due, trio.current_time, wakeup, retry_after=0.5
            )
        )
        await trio.sleep(1.0)
        deadlines.append(start + 3.0)  # an input brings an earlier deadline
        wakeup.set()
        await trio.sleep(20.0)
        nursery.cancel_scope.cancel()
    assert fired == [3.0, 3.5, 10.0]
