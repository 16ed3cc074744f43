"""The core/shell contract's example, run: the code ARCHITECTURE.md shows, kept honest.

ARCHITECTURE.md ("Cores and shells") shows a tiny core, ``Sessions``, and its trio shell.
The same code is between the two ``example`` markers below; the first test checks that the
page shows exactly this text, the others run it, so the page cannot drift from code that
works. ``Sessions`` is a toy (Kafka's session timeout, reduced to its timer): members
heartbeat, a member silent for ``timeout`` seconds expires, and each join or expiry is a
record for the shell to append.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar, Never, TypeAlias

import attrs
import trio
import trio.testing

from minikafka.common import CoreResult, Deadlines
from minikafka.trace import NullTracer, TraceEvent, Tracer, register_event
from minikafka.trace.testing import RecordingTracer

ARCHITECTURE = Path(__file__).resolve().parents[3] / "ARCHITECTURE.md"


# --- example: begin
@register_event
@attrs.frozen
class SessionExpired(TraceEvent):
    COMPONENT: ClassVar[str] = "example"
    EVENT: ClassVar[str] = "session_expired"
    member: str


Result: TypeAlias = CoreResult[str, str, Never]  # records, replies; it sends no message


class Sessions:
    """The core: who is alive. No trio, no clock, no I/O: ``now`` comes with each call."""

    def __init__(self, timeout: float, tracer: Tracer | None = None) -> None:
        self.timeout = timeout
        self.tracer = tracer if tracer is not None else NullTracer()
        self._expiry: Deadlines[str] = Deadlines()

    def heartbeat(self, member: str, now: float) -> Result:
        joined = member not in self._expiry
        self._expiry.schedule(member, now + self.timeout)
        return CoreResult(records=(f"+{member}",) if joined else (), replies=("ok",))

    def next_deadline(self) -> float | None:
        return self._expiry.next_deadline()

    def on_timer(self, now: float) -> Result:
        expired = self._expiry.pop_due(now)
        for member in expired:
            if self.tracer.enabled:
                self.tracer.emit(SessionExpired(member), now)
        return CoreResult(records=tuple(f"-{member}" for member in expired))


async def shell(
    core: Sessions,
    inbox: trio.MemoryReceiveChannel[str],
    log: list[str],
    answers: list[str],
) -> None:
    """The shell: owns the clock, the inbox and the log, and does what the core returns."""
    while True:
        deadline = core.next_deadline()
        with trio.move_on_at(math.inf if deadline is None else deadline):
            result = core.heartbeat(await inbox.receive(), trio.current_time())
            # append first, then answer
            log.extend(result.records)
            answers.extend(result.replies)  # then answer
            continue
        log.extend(core.on_timer(trio.current_time()).records)


# --- example: end


def test_architecture_md_shows_this_example() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    example = source.split("# --- example: begin\n")[1].split("\n\n# --- example: end")[
        0
    ]
    page = ARCHITECTURE.read_text(encoding="utf-8")
    assert f"```python\n{example.strip()}\n```" in page, (
        "ARCHITECTURE.md's example differs from packages/common/tests/test_contract_example.py"
    )


def test_the_core_is_driven_by_plain_calls_with_the_time() -> None:
    tracer = RecordingTracer(node=1)
    core = Sessions(timeout=10.0, tracer=tracer)
    assert core.heartbeat("a", now=0.0) == CoreResult(records=("+a",), replies=("ok",))
    assert core.heartbeat("a", now=5.0) == CoreResult(
        replies=("ok",)
    )  # nothing to write
    assert core.next_deadline() == 15.0
    assert core.on_timer(now=14.9) == CoreResult()
    assert tracer.records == []
    assert core.on_timer(now=15.0) == CoreResult(records=("-a",))
    assert core.next_deadline() is None
    assert tracer.records == [(15.0, SessionExpired("a"))]


def test_a_core_without_a_tracer_traces_nothing() -> None:
    core = Sessions(timeout=1.0)
    core.heartbeat("a", now=0.0)
    assert core.on_timer(now=1.0).records == ("-a",)
    assert not core.tracer.enabled


async def test_three_nodes_in_one_process_each_with_its_own_tracer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Three shells around three cores on one virtual clock; each node's events stay its own."""
    tracers = {node: RecordingTracer(node=node) for node in (1, 2, 3)}
    cores = {node: Sessions(timeout=10.0, tracer=tracers[node]) for node in tracers}
    logs: dict[int, list[str]] = {node: [] for node in tracers}
    answers: dict[int, list[str]] = {node: [] for node in tracers}
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        inboxes = {}
        for node, core in cores.items():
            send, receive = trio.open_memory_channel[str](10)
            inboxes[node] = send
            nursery.start_soon(shell, core, receive, logs[node], answers[node])
        # The scenario's schedule on the virtual clock, not waits for a condition: with
        # autojump the clock moves only when every task is blocked, so each shell has done
        # all it can before the next step.
        await inboxes[1].send("a")
        await inboxes[2].send("b")
        await inboxes[3].send("c")
        await trio.sleep_until(start + 8.0)
        await inboxes[1].send("a")  # a stays alive on node 1 until 18
        await trio.sleep_until(start + 30.0)
        nursery.cancel_scope.cancel()
    assert logs == {1: ["+a", "-a"], 2: ["+b", "-b"], 3: ["+c", "-c"]}
    assert answers == {1: ["ok", "ok"], 2: ["ok"], 3: ["ok"]}
    streams = {
        node: [(ts - start, event) for ts, event in tracer.records]
        for node, tracer in tracers.items()
    }
    assert streams == {
        1: [(18.0, SessionExpired("a"))],
        2: [(10.0, SessionExpired("b"))],
        3: [(10.0, SessionExpired("c"))],
    }
    assert [tracer.node for tracer in tracers.values()] == [1, 2, 3]
