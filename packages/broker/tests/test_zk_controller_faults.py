"""Fault isolation in ZooKeeper mode's controller shell, Kafka 2.8's way.

A fault is injected by making a core method raise once in a running shell:

- an unexpected exception in one event is logged ("Uncaught error processing event"),
  its request hears UNKNOWN_SERVER_ERROR, and the next event is processed by the same
  controller, in the same epoch (Kafka's ControllerEventThread does not resign);
- an ApiError is the request's answer;
- a fault while becoming the controller moves the controller (Kafka's
  ``triggerControllerMove``): ``/controller`` is given up and the broker is elected
  again, in a new epoch;
- a write refused because ``/controller_epoch`` moved means another controller took
  over: the request hears NOT_CONTROLLER and this one resigns (then, alone, is elected
  again);
- a write that fails on a lost connection is sent again once the client is connected
  again, in the same session, and the event completes: no resignation (Kafka's
  ``retryRequestsUntilConnected``); if the session expires before the connection comes
  back, the request hears REQUEST_TIMED_OUT and the controller resigns;
- a sender to one broker survives a send that fails in a way nobody foresaw (retried
  after its backoff) and a fault handling an answer (the next request goes).

The shell's tests run on Debian's ZooKeeper; the senders' need none.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest
import trio
import trio.testing
from kazoo.exceptions import ConnectionLoss
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import free_ports
from minikafka.broker.zk import (
    ControllerChannelManager,
    ZkControllerShell,
    stop_replica_response,
)
from minikafka.broker.zk import _controller_shell as shell_module
from minikafka.common import TopicPartition
from minikafka.controller import (
    ControllerConfig,
    ControllerError,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    ListPartitionReassignmentsRequest,
)
from minikafka.controller.zk import (
    BrokerRequest,
    StopReplica,
    StopReplicaPartition,
    ZkController,
)
from minikafka.net import NetworkClient, Node
from minikafka.trace import NullTracer
from minikafka.zk import (
    CONTROLLER_EPOCH,
    SESSION_CONNECTED,
    SESSION_LOST,
    SESSION_SUSPENDED,
    BrokerRegistration,
    Op,
    SessionChanged,
    WatchFired,
    ZkClient,
    ZooKeeperServer,
    register_broker,
)
from minikafka.zk.testing import drop_connection, expire_session, needs_zookeeper

DEADLINE = 30.0


def raise_once(
    monkeypatch: pytest.MonkeyPatch, cls: type, name: str, exc: Exception
) -> list[int]:
    """``cls.name`` raises ``exc`` on its next call, then works again."""
    real: Callable[..., Any] = getattr(cls, name)
    calls: list[int] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise exc
        return real(*args, **kwargs)

    monkeypatch.setattr(cls, name, wrapped)
    return calls


async def forward_watches(
    zk: ZkClient, shell: ZkControllerShell, states: list[str]
) -> None:
    """What the broker does with its session's events: the watches, and a connection
    back in the same session, after which the shell sets its watches again. Every
    state the session goes through is added to ``states``."""
    suspended = False
    async for event in zk.events:
        if isinstance(event, WatchFired):
            shell.watch_fired(event)
        elif isinstance(event, SessionChanged):
            states.append(event.state)
            if event.state == SESSION_SUSPENDED:
                suspended = True
            elif event.state == SESSION_LOST:
                suspended = False
            elif event.state == SESSION_CONNECTED and suspended:
                suspended = False
                shell.reconnected()


def break_the_next_transaction(
    monkeypatch: pytest.MonkeyPatch,
    states: list[str],
    breaks: Callable[[ZkClient], None],
    state: str,
) -> list[int]:
    """The next ``ZkClient.transaction`` is in flight when ``breaks`` breaks the client's
    connection: once the session has gone through ``state``, it raises ConnectionLoss,
    as kazoo fails a request in flight when the connection drops. Calls after it go
    through."""
    real = ZkClient.transaction
    calls: list[int] = []

    async def transaction(self: ZkClient, ops: list[Op]) -> None:
        calls.append(1)
        if len(calls) == 1:
            breaks(self)
            await until(lambda: state in states, f"the session went {state}")
            raise ConnectionLoss()
        await real(self, ops)

    monkeypatch.setattr(ZkClient, "transaction", transaction)
    return calls


async def until(check: Callable[[], bool], what: str) -> None:
    with trio.move_on_after(DEADLINE):
        while not check():  # noqa: ASYNC110
            await trio.sleep(0.02)  # polling the shell's state, inside the deadline
        return
    raise AssertionError(f"not within {DEADLINE} s: {what}")


@asynccontextmanager
async def controller(
    zookeeper: ZooKeeperServer,
    *,
    active: bool = True,
    broker_has_topic: Callable[[str], bool] = lambda name: False,
    states: list[str] | None = None,
) -> AsyncIterator[ZkControllerShell]:
    """Broker 1's controller shell, standing for election; broker 2 is registered (at
    a port nobody listens on: its sender retries in the background). The states its
    session goes through are added to ``states``."""
    zk = ZkClient(zookeeper.connect_string, session_timeout=6.0)
    await zk.connect(connect_timeout=DEADLINE)
    try:
        port = free_ports(1)[0]
        await register_broker(
            zk,
            BrokerRegistration(
                2, (f"PLAINTEXT://127.0.0.1:{port}",), {"PLAINTEXT": "PLAINTEXT"}
            ),
        )
        shell = ZkControllerShell(
            1,
            zk,
            ControllerConfig(),
            "PLAINTEXT",
            NullTracer(1),
            broker_has_topic=broker_has_topic,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(shell.run)
            nursery.start_soon(
                forward_watches, zk, shell, [] if states is None else states
            )
            shell.elect()
            if active:
                await until(lambda: shell.active, "broker 1 is the controller")
            yield shell
            nursery.cancel_scope.cancel()
    finally:
        await zk.close()


def create_topic(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest((CreatableTopic(name, 1, 1),))


async def created(shell: ZkControllerShell, name: str) -> None:
    with trio.fail_after(DEADLINE):
        answer = await shell.submit(create_topic(name))
    assert isinstance(answer, CreateTopicsResponse)
    assert answer.topics[0].error_code is ErrorCode.none, answer


# --- the event loop ------------------------------------------------------------------------


@pytest.mark.external
@needs_zookeeper
async def test_an_uncaught_error_in_an_event_is_logged_and_the_next_event_is_processed(
    zookeeper: ZooKeeperServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with controller(zookeeper) as shell:
        epoch = shell.epoch
        raise_once(monkeypatch, ZkController, "on_create_topics", KeyError("bug"))
        with (
            caplog.at_level(logging.ERROR, logger="minikafka.broker.zk_controller"),
            pytest.raises(ControllerError) as failed,
        ):
            await shell.submit(create_topic("t"))
        assert failed.value.error_code is ErrorCode.unknown_server_error
        assert "Uncaught error processing event CreateTopicsRequest" in caplog.text
        # The same controller goes on with the next event: no resignation.
        assert shell.active
        assert shell.epoch == epoch
        await created(shell, "t")
        assert shell.epoch == epoch


@pytest.mark.external
@needs_zookeeper
async def test_an_api_error_in_an_event_is_its_answer(
    zookeeper: ZooKeeperServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with controller(zookeeper) as shell:
        epoch = shell.epoch
        refusal = ControllerError(ErrorCode.policy_violation)
        raise_once(monkeypatch, ZkController, "list_reassignments", refusal)
        with pytest.raises(ControllerError) as failed:
            await shell.submit(ListPartitionReassignmentsRequest())
        assert failed.value.error_code is ErrorCode.policy_violation
        assert shell.epoch == epoch
        await shell.submit(ListPartitionReassignmentsRequest())


@pytest.mark.external
@needs_zookeeper
async def test_a_fault_while_becoming_the_controller_moves_the_controller(
    zookeeper: ZooKeeperServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Elected in epoch 1, the broker fails to take over: it gives /controller up and
    stands again after ELECTION_RETRY_S; alone, it wins epoch 2, and serves."""
    monkeypatch.setattr(shell_module, "ELECTION_RETRY_S", 0.3)
    raise_once(monkeypatch, ZkController, "become_active", RuntimeError("bug"))
    with caplog.at_level(logging.ERROR, logger="minikafka.broker.zk_controller"):
        async with controller(zookeeper, active=False) as shell:
            await until(lambda: shell.active, "broker 1 is the controller again")
            assert shell.epoch == 2
            await created(shell, "t")
    assert "Error while electing or becoming controller on broker 1" in caplog.text


@pytest.mark.external
@needs_zookeeper
async def test_a_write_fenced_by_a_newer_controller_epoch_resigns(
    zookeeper: ZooKeeperServer,
) -> None:
    async with controller(zookeeper) as shell:
        epoch = shell.epoch
        other = ZkClient(zookeeper.connect_string, session_timeout=6.0)
        await other.connect(connect_timeout=DEADLINE)
        try:
            await other.set(CONTROLLER_EPOCH, str(epoch + 10).encode())
        finally:
            await other.close()
        with pytest.raises(ControllerError) as failed:
            await shell.submit(create_topic("t"))
        assert failed.value.error_code is ErrorCode.not_controller
        # It resigned; alone, it is elected again, past the other's epoch.
        await until(lambda: shell.epoch > epoch + 10, "a newer epoch")
        await created(shell, "u")


@pytest.mark.external
@needs_zookeeper
async def test_a_write_that_loses_its_connection_is_sent_again_once_connected(
    zookeeper: ZooKeeperServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's ``retryRequestsUntilConnected``: the connection drops while the
    controller writes a new topic's assignment. The write fails with ConnectionLoss,
    waits for the client to be connected again (in the same session) and is sent again;
    the topic is created by the same controller, in the same epoch."""
    states: list[str] = []
    async with controller(zookeeper, states=states) as shell:
        epoch = shell.epoch
        calls = break_the_next_transaction(
            monkeypatch, states, drop_connection, SESSION_SUSPENDED
        )
        await created(shell, "t")
        assert len(calls) >= 2, "the write was not sent again"
        assert SESSION_LOST not in states
        assert shell.active
        assert shell.epoch == epoch


@pytest.mark.external
@needs_zookeeper
async def test_a_session_that_expires_while_its_connection_is_lost_resigns(
    zookeeper: ZooKeeperServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The connection drops mid-write and the session ends before it comes back: the
    wait ends there, the write is not sent again in the new session (another controller
    may have been elected meanwhile), the request hears REQUEST_TIMED_OUT and the
    controller resigns, as Kafka's does when its session expires."""
    states: list[str] = []
    async with controller(zookeeper, states=states) as shell:
        epoch = shell.epoch
        calls = break_the_next_transaction(
            monkeypatch, states, expire_session, SESSION_LOST
        )
        with (
            caplog.at_level(logging.WARNING, logger="minikafka.broker.zk_controller"),
            pytest.raises(ControllerError) as failed,
        ):
            await shell.submit(create_topic("t"))
        assert failed.value.error_code is ErrorCode.request_timed_out
        assert len(calls) == 1, "the write was sent again in the new session"
        # The old session's /controller lingers until ZooKeeper expires it: broker 1
        # cannot have been elected again yet.
        assert not shell.active
        assert (
            f"broker 1 resigns as controller (epoch {epoch}): "
            "ZooKeeper failed mid-event: SessionExpiredError"
        ) in caplog.text


@pytest.mark.external
@needs_zookeeper
async def test_a_creation_outlives_its_controller_and_ends_in_the_brokers_metadata(
    zookeeper: ZooKeeperServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guarantee: a CreateTopics whose controller resigns while it waits (its session
    expired) is not answered at the resignation: the next controller creates the
    topic, and the answer comes once this broker's metadata has it (Kafka's
    DelayedCreatePartitions watches the broker's metadata cache, whoever controls)."""
    known: set[str] = set()
    async with controller(zookeeper, broker_has_topic=known.__contains__) as shell:
        # The controller never gets as far as every partition's state, and once it
        # resigns it stands no more: the topic can only arrive through the metadata.
        monkeypatch.setattr(shell_module, "_created", lambda core, name: False)
        monkeypatch.setattr(ZkControllerShell, "elect", lambda self: None)
        answers: list[object] = []

        async def ask() -> None:
            answers.append(await shell.submit(create_topic("t")))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await until(
                lambda: shell.core is not None and "t" in shell.core.context.topics,
                "the controller wrote t",
            )
            shell.resign("the test's session expired")
            await until(lambda: not shell.active, "broker 1 resigned")
            await trio.testing.wait_all_tasks_blocked()
            assert answers == [], "answered at the resignation"
            known.add("t")
            shell.metadata_applied()
            await until(lambda: bool(answers), "the answer")
    (answer,) = answers
    assert isinstance(answer, CreateTopicsResponse)
    assert answer.topics[0].error_code is ErrorCode.none, answer


# --- the senders ---------------------------------------------------------------------------


class FlakyClient:
    """A NetworkClient's two calls; ``send`` raises each of ``failures`` once first."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.sends = 0
        self.disconnects = 0

    async def send(self, node: Node, request: object) -> object:
        self.sends += 1
        if self.failures:
            raise self.failures.pop(0)
        return stop_replica_response(
            ErrorCode.none, {TopicPartition("t", 0): ErrorCode.none}
        )

    def disconnect(self, node: Node) -> None:
        self.disconnects += 1


def stop_replica(broker_id: int) -> BrokerRequest:
    partition = StopReplicaPartition("t", 0, 0, False)
    return BrokerRequest(broker_id, StopReplica(1, 1, 5, (partition,)))


async def answers(
    client: FlakyClient,
    requests: int,
    on_answer: Callable[[int, Mapping[tuple[str, int], ErrorCode]], None],
) -> None:
    """Send ``requests`` StopReplicas to broker 2 through a channel manager on
    ``client``; returns once ``on_answer`` has been told of the last one."""
    done = trio.Event()
    heard: list[int] = []

    def heard_one(broker_id: int, errors: Mapping[tuple[str, int], ErrorCode]) -> None:
        heard.append(broker_id)
        if len(heard) == requests:
            done.set()
        on_answer(broker_id, errors)

    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            channels = ControllerChannelManager(
                cast(NetworkClient, client), nursery, NullTracer(1), heard_one
            )
            channels.sync({2: Node(2, "127.0.0.1", 1)})
            channels.send([stop_replica(2) for _ in range(requests)])
            await done.wait()
            channels.stop()


async def test_a_send_that_fails_unexpectedly_is_sent_again_after_the_backoff() -> None:
    client = FlakyClient([RuntimeError("a bug in the client")])
    await answers(client, 1, lambda broker_id, errors: None)
    assert client.sends == 2
    assert client.disconnects == 1


async def test_a_fault_handling_an_answer_is_logged_and_the_next_request_goes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = FlakyClient([])
    faults: list[int] = []

    def on_answer(broker_id: int, errors: Mapping[tuple[str, int], ErrorCode]) -> None:
        if not faults:
            faults.append(broker_id)
            raise ValueError("a bug handling the answer")

    with caplog.at_level(logging.ERROR, logger="minikafka.broker.zk_controller"):
        await answers(client, 2, on_answer)
    assert client.sends == 2
    assert "controller fails to send StopReplica to broker 2" in caplog.text
