"""Fault isolation in the controller's shells: each background task's policy, Kafka's way.

A fault is injected by making a core method raise once, in a running shell:

- an ApiError in an event is that request's answer; the controller stays active;
- any other exception answers the request UNKNOWN_SERVER_ERROR and the active controller
  renounces (Kafka's ``handleEventException``): it reverts to the last committed state
  (what the failed event decided is gone) and is active again in a new epoch the quorum
  elected (a lone voter elects itself);
- a committed record that cannot be replayed, a snapshot that cannot be applied, and a
  fault in the Raft node (its timer, a message it handles, the leader's flush) end the
  process: a FatalFaultError comes out of ``run`` with a one-line message;
- a transport that fails in an unforeseen way is a failed send, retried;
- a publisher's and a snapshot writer's unforeseen faults are logged, and the
  controller goes on.

They run on real files and the real clock (fsyncs run in worker threads), every wait
bounded by a deadline.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload

from minikafka.common import ApiError, FatalFaultError
from minikafka.controller import (
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerConfig,
    ControllerError,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    MetadataDelta,
    MetadataImage,
    QuorumController,
    QuorumControllerShell,
    QuorumUnavailableError,
    RaftNodeShell,
)
from minikafka.controller._raft_shell import LeaderFlushedLog, RaftSnapshotLoaded
from minikafka.raft import RaftConfig, RaftNode, Snapshot, SnapshotId
from minikafka.raft._messages import VoteRequest

DEADLINE = 20.0
FAST_RAFT = RaftConfig(
    election_timeout=0.1, fetch_timeout=0.2, election_backoff_max=0.1
)


def raise_once(
    monkeypatch: pytest.MonkeyPatch,
    cls: type,
    name: str,
    exc: Exception,
    *,
    after: bool = False,
) -> list[int]:
    """``cls.name`` raises ``exc`` on its next call (``after`` the real call has run, so
    whatever it changed stays changed), then works again; returns the calls made."""
    real: Callable[..., Any] = getattr(cls, name)
    calls: list[int] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:
            return real(*args, **kwargs)
        if after:
            real(*args, **kwargs)
        raise exc

    monkeypatch.setattr(cls, name, wrapped)
    return calls


async def register(server: QuorumControllerShell, broker_id: int) -> None:
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id)
    registered = await server.submit(
        BrokerRegistrationRequest(broker_id, uuid.uuid4(), (endpoint,))
    )
    assert isinstance(registered, BrokerRegistrationResponse)
    await server.submit(
        BrokerHeartbeatRequest(broker_id, registered.broker_epoch, server.image.offset)
    )


async def create(server: QuorumControllerShell, name: str) -> None:
    response = await server.submit(CreateTopicsRequest((CreatableTopic(name, 1, 1),)))
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == 0, response


async def refused(server: QuorumControllerShell, name: str) -> ErrorCode:
    """Create ``name``, which must fail; the error it fails with."""
    with pytest.raises(ControllerError) as failed:
        await create(server, name)
    return failed.value.error_code


async def until_active(server: QuorumControllerShell) -> None:
    with trio.fail_after(DEADLINE):
        while not server.is_active:  # noqa: ASYNC110
            await trio.sleep(
                0.01
            )  # polling the controller's state, inside the deadline


@asynccontextmanager
async def running(server: QuorumControllerShell) -> AsyncIterator[trio.Nursery]:
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            await until_active(server)
            await register(server, 1)
            yield nursery
            nursery.cancel_scope.cancel()


def single(
    tmp_path: Path, config: ControllerConfig | None = None
) -> QuorumControllerShell:
    return QuorumControllerShell.open(
        tmp_path, config or ControllerConfig(), random.Random(7), raft=FAST_RAFT
    )


class NoVoters:
    """The transport of a quorum with no other voter: nothing is ever sent."""

    async def send(self, destination: int, body: RequestPayload) -> object:
        raise AssertionError(f"nothing to send to {destination}")

    def disconnect(self, destination: int) -> None:
        pass


def one_raft_voter(tmp_path: Path) -> QuorumControllerShell:
    """A controller on a Raft quorum of one voter: it leads, and when it resigns it
    wins the next election, in a higher epoch."""
    quorum = RaftNodeShell.open(tmp_path, 1, [1], NoVoters(), "cluster", FAST_RAFT)
    return QuorumControllerShell.open_raft(quorum, ControllerConfig(), random.Random(7))


async def fatal_fault(
    run: Callable[..., Awaitable[None]], strike: Callable[[], object]
) -> str:
    """Start ``run`` (a shell's), call ``strike()`` (awaiting it if it is a coroutine)
    and return the message of the FatalFaultError that must end ``run``."""
    with pytest.raises(BaseExceptionGroup) as caught:  # noqa: PT012
        with trio.fail_after(DEADLINE):
            async with trio.open_nursery() as nursery:
                await nursery.start(run)
                result = strike()
                if isinstance(result, Awaitable):
                    await result
                await trio.sleep_forever()
    faults, rest = caught.value.split(FatalFaultError)
    assert rest is None, rest
    assert faults is not None
    found: list[BaseException] = []
    pending: list[BaseException] = [faults]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            found.append(exc)
    assert len(found) == 1, found
    message = str(found[0])
    assert "\n" not in message
    return message


async def create_ignoring_the_answer(server: QuorumControllerShell, name: str) -> None:
    """A request whose answer does not matter (the process is about to end)."""
    with suppress(ControllerError):
        await server.submit(CreateTopicsRequest((CreatableTopic(name, 1, 1),)))


# --- the event loop: ApiError, unexpected error, renounce --------------------------------


class PolicyViolated(ApiError):
    error_code = ErrorCode.policy_violation


async def test_an_api_error_in_an_event_is_its_answer_and_the_controller_stays_active(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = single(tmp_path)
    async with running(server):
        raise_once(monkeypatch, QuorumController, "_decide", PolicyViolated("no"))
        assert await refused(server, "t") is ErrorCode.policy_violation
        assert server.is_active  # never renounced
        await create(server, "t")
        assert server.image.topic("t") is not None


async def test_an_unexpected_error_answers_unknown_server_error_and_the_controller_renounces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fault strikes after the core decided and replayed the topic: renouncing
    reverts that, and the lone voter is elected again and serves."""
    server = single(tmp_path)
    async with running(server):
        committed = server.controller.last_committed_offset
        epoch = server.quorum.epoch
        raise_once(
            monkeypatch, QuorumController, "_write", RuntimeError("a bug"), after=True
        )
        assert await refused(server, "t") is ErrorCode.unknown_server_error
        assert not server.is_active
        assert server.controller.replication.topic_named("t") is None  # reverted
        assert server.controller.last_committed_offset == committed
        # Meanwhile a standby: requests hear NOT_CONTROLLER (clients retry).
        assert await refused(server, "u") is ErrorCode.not_controller
        await until_active(server)
        assert server.quorum.epoch > epoch  # the quorum elected again
        await create(server, "t")
        await create(server, "u")
        assert server.image.topic("t") is not None
        assert server.image.topic("u") is not None


async def test_a_renounced_voter_replays_what_it_had_appended_before_it_leads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault in the commit event itself: the records are committed, so the
    controller, reverted below them, replays them from its log before it leads again,
    and the request's topic is there after all (it heard NOT_CONTROLLER, and a retry
    finds it exists)."""
    server = single(tmp_path)
    async with running(server):
        raise_once(monkeypatch, QuorumController, "handle_commit", KeyError("bug"))
        assert await refused(server, "t") is ErrorCode.not_controller
        await until_active(server)
        assert server.image.topic("t") is not None
        assert server.controller.replication.topic_named("t") is not None
        await create(server, "u")


async def test_a_raft_leader_that_fails_an_event_resigns_and_is_elected_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = one_raft_voter(tmp_path)
    async with running(server):
        epoch = server.quorum.epoch
        raise_once(
            monkeypatch, QuorumController, "_write", RuntimeError("a bug"), after=True
        )
        assert await refused(server, "t") is ErrorCode.unknown_server_error
        await until_active(server)
        assert server.quorum.epoch > epoch  # the quorum elected again
        await create(server, "t")
        assert server.image.topic("t") is not None


# --- fatal faults ------------------------------------------------------------------------


async def test_a_committed_record_that_cannot_be_replayed_is_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = single(tmp_path)

    async def strike() -> None:
        await until_active(server)
        raise_once(monkeypatch, MetadataDelta, "replay", ValueError("bad\nrecord"))
        await create_ignoring_the_answer(server, "t")

    message = await fatal_fault(server.run, strike)
    assert message.startswith("controller 1: replaying the committed records")
    assert "ValueError: bad record" in message


async def test_a_snapshot_that_cannot_be_applied_is_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = one_raft_voter(tmp_path)

    async def strike() -> None:
        await until_active(server)
        raise_once(monkeypatch, QuorumController, "load_snapshot", OSError("torn"))
        snapshot = Snapshot(SnapshotId(1, 1), b"")
        server._on_raft(RaftSnapshotLoaded(snapshot))  # as the Raft node delivers it

    message = await fatal_fault(server.run, strike)
    assert message == (
        "controller 1: applying the snapshot that ends at offset 1 (epoch 1) failed: "
        "OSError: torn"
    )


class Unreachable:
    """The transport to voters that are all down."""

    async def send(self, destination: int, body: RequestPayload) -> object:
        raise ConnectionError(f"voter {destination} is down")

    def disconnect(self, destination: int) -> None:
        pass


async def test_a_fault_in_the_raft_node_timer_is_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A voter alone of two keeps standing for election: its timer fires."""
    quorum = RaftNodeShell.open(
        tmp_path, 1, [1, 2], Unreachable(), "cluster", FAST_RAFT
    )

    def strike() -> None:
        raise_once(monkeypatch, RaftNode, "on_timer", AssertionError("state"))

    message = await fatal_fault(partial(quorum.run, lambda event: None), strike)
    assert message == (
        "the Raft node of controller 1: the Raft node's timer failed: "
        "AssertionError: state"
    )


async def test_a_fault_handling_a_message_is_fatal_and_its_sender_hears_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = one_raft_voter(tmp_path)
    quorum = server.quorum

    async def strike() -> None:
        await until_active(server)
        raise_once(monkeypatch, RaftNode, "receive", KeyError(7))
        with pytest.raises(QuorumUnavailableError):
            await quorum.handle(2, VoteRequest(quorum.epoch + 1, 2, 0, 0))

    message = await fatal_fault(server.run, strike)
    assert message == (
        "the Raft node of controller 1: handling VoteRequest from 2 failed: KeyError: 7"
    )


# --- the Raft node's sends -----------------------------------------------------------------


class BrokenTransport:
    """A transport with a bug: its first send raises what no transport should."""

    def __init__(self) -> None:
        self.sends = 0
        self.sent = trio.Event()

    async def send(self, destination: int, body: RequestPayload) -> object:
        self.sends += 1
        if self.sends >= 2:
            self.sent.set()
        if self.sends == 1:
            raise TypeError("a bug in the transport")
        raise ConnectionError(f"voter {destination} is down")

    def disconnect(self, destination: int) -> None:
        pass


async def test_a_send_that_fails_unexpectedly_is_a_failed_send_and_sent_again(
    tmp_path: Path,
) -> None:
    transport = BrokenTransport()
    quorum = RaftNodeShell.open(tmp_path, 1, [1, 2], transport, "cluster", FAST_RAFT)
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            await nursery.start(quorum.run, lambda event: None)
            await transport.sent.wait()  # the node asked again: still running
            nursery.cancel_scope.cancel()
    assert transport.sends >= 2


# --- the committer, the publishers, the snapshots ------------------------------------------


async def test_an_unexpected_fault_flushing_the_leaders_log_is_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a failed fsync: the log cannot be vouched for, so the process ends (Kafka's
    Raft thread meets it in ``flushLeaderLog``, and its fault handler is fatal)."""
    server = single(tmp_path)

    async def strike() -> None:
        await until_active(server)
        raise_once(monkeypatch, LeaderFlushedLog, "mark_flushed", RuntimeError("x"))
        await create_ignoring_the_answer(server, "t")

    message = await fatal_fault(server.run, strike)
    assert message.startswith("the Raft node of controller 1: flushing the Raft log")
    assert message.endswith("failed: RuntimeError: x")


async def test_a_publisher_that_raises_is_logged_and_the_others_still_hear(
    tmp_path: Path,
) -> None:
    server = single(tmp_path)
    heard: list[int] = []
    failures = 0

    def broken(delta: MetadataDelta, image: MetadataImage) -> None:
        nonlocal failures
        failures += 1
        raise RuntimeError("a subscriber's bug")

    server.subscribe(broken)
    server.subscribe(lambda delta, image: heard.append(image.offset))
    async with running(server):
        await create(server, "t")
        await create(server, "u")
        assert server.is_active
    assert failures >= 2
    assert heard[-1] == server.image.offset


async def test_a_snapshot_that_fails_unexpectedly_is_tried_again_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ControllerConfig(metadata_log_max_record_bytes_between_snapshots=1)
    server = single(tmp_path, config)
    calls = raise_once(
        monkeypatch, RaftNodeShell, "create_snapshot", RuntimeError("bug")
    )
    async with running(server):
        await create(server, "t")
        await server.wait_snapshot_written()
        await create(server, "u")
        await server.wait_snapshot_written()
        assert server.is_active
    assert len(calls) >= 2
    assert server.quorum.latest_snapshot() is not None
