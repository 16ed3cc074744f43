"""The metadata log under a large operation and a failing disk.

- one operation's records are one batch of the metadata log, the unit Raft commits
  whole, up to 8 MiB (Kafka's Raft batch cap, and the log's max.message.bytes), so 3 MB
  of them (over Kafka's default 1 MiB) are appended and committed together; an
  operation whose records would not fit one batch fails (RECORD_LIST_TOO_LARGE), as
  Kafka's Raft client refuses it, and the controller goes on;
- a running controller whose metadata log refuses a write or an fsync ends the process,
  as Kafka's does (a metadata log I/O failure is fatal for the controller), and a
  restart recovers (fsyncgate: a failed fsync is never retried), with none of the
  refused operation in its log.

Failures are injected by wrapping ``os.write`` / ``os.fsync`` for the metadata log only.
"""

from __future__ import annotations

import errno
import os
import random
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import FatalFaultError
from minikafka.controller import (
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ConfigRecord,
    ControllerConfig,
    ControllerError,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    QuorumControllerShell,
    _metadata_log,
    _raft_shell,
    encode_record,
)
from minikafka.controller._metadata_log import read_committed
from minikafka.controller.testing import metadata_voter

DEADLINE = 20.0


def config_records(count: int, value_bytes: int = 1000) -> list[ConfigRecord]:
    return [ConfigRecord(2, "t", f"key.{i}", "v" * value_bytes) for i in range(count)]


@contextmanager
def refused(
    monkeypatch: pytest.MonkeyPatch, call: str, err: int, after: int = 0
) -> Iterator[list[int]]:
    """``os.<call>`` on a metadata-log segment fails with ``err`` after ``after`` calls."""
    real: Callable[..., Any] = getattr(os, call)
    calls: list[int] = []

    def wrapped(fd: int, *args: Any) -> Any:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if "__cluster_metadata-0" in path and path.endswith(".log"):
            calls.append(fd)
            if len(calls) > after:
                if call == "write" and args and len(args[0]) > 9:
                    real(fd, bytes(args[0][:9]))  # a short write: torn bytes to undo
                raise OSError(err, os.strerror(err))
        return real(fd, *args)

    with monkeypatch.context() as m:
        m.setattr(os, call, wrapped)
        yield calls


def test_an_operation_larger_than_max_message_bytes_is_one_batch_committed_whole(
    tmp_path: Path,
) -> None:
    """3 MB of records (over the 1 MiB max.message.bytes of an ordinary log) are one
    batch of the metadata log, appended and committed as one operation."""
    node, log = metadata_voter(tmp_path, 1, now=0.0)
    start = log.end_offset
    records = config_records(3000)
    node.append([encode_record(r) for r in records], 1.0)
    assert log.end_offset == start + 3000
    (batch,) = [h for _, _, h in log.log.batches() if h.base_offset >= start]
    assert 3_000_000 < batch.size <= _metadata_log.MAX_BATCH_SIZE_BYTES
    assert node.high_watermark == log.end_offset  # the append's fsync commits it
    committed = [
        r
        for b in read_committed(log.log, start, node.high_watermark)
        for _, r in b.records
    ]
    assert committed == records
    log.close()


async def register(server: QuorumControllerShell, broker_id: int) -> None:
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id)
    registered = await server.submit(
        BrokerRegistrationRequest(broker_id, uuid.uuid4(), (endpoint,))
    )
    assert isinstance(registered, BrokerRegistrationResponse)
    await server.submit(
        BrokerHeartbeatRequest(broker_id, registered.broker_epoch, server.image.offset)
    )


async def create(server: QuorumControllerShell, name: str) -> CreateTopicsResponse:
    response = await server.submit(CreateTopicsRequest((CreatableTopic(name, 2, 1),)))
    assert isinstance(response, CreateTopicsResponse)
    return response


async def run_server(
    tmp_path: Path, work: Callable[[QuorumControllerShell], Any]
) -> QuorumControllerShell:
    server = QuorumControllerShell.open(tmp_path, ControllerConfig(), random.Random(7))
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            await work(server)
            nursery.cancel_scope.cancel()
    return server


async def test_an_operation_too_large_for_one_batch_fails_and_the_controller_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One operation is one unit of the Raft log, one batch: a CreateTopics whose records
    would not fit one fails with RECORD_LIST_TOO_LARGE (Kafka's
    RecordBatchTooLargeException), reverted, and the controller stays active."""
    monkeypatch.setattr(_raft_shell, "MAX_BATCH_SIZE_BYTES", 16 * 1024)

    async def work(server: QuorumControllerShell) -> None:
        await register(server, 1)
        with pytest.raises(ControllerError) as e:
            await server.submit(CreateTopicsRequest((CreatableTopic("wide", 1000, 1),)))
        assert e.value.error_code is ErrorCode.record_list_too_large
        assert server.is_active
        assert server.controller.replication.topic_named("wide") is None
        assert (await create(server, "narrow")).topics[0].error_code is ErrorCode.none

    server = await run_server(tmp_path, work)
    assert server.image.topic("wide") is None
    assert server.image.topic("narrow") is not None


async def fatal(
    tmp_path: Path, work: Callable[[QuorumControllerShell], Any]
) -> FatalFaultError:
    """Run a server on ``tmp_path`` and ``work`` against it, which must end it with a
    FatalFaultError (the process would exit); that error."""
    server = QuorumControllerShell.open(tmp_path, ControllerConfig(), random.Random(7))
    with pytest.raises(BaseExceptionGroup) as caught:  # noqa: PT012
        with trio.fail_after(DEADLINE):
            async with trio.open_nursery() as nursery:
                await nursery.start(server.run)
                await work(server)
                await trio.sleep_forever()
    faults, rest = caught.value.split(FatalFaultError)
    assert rest is None, rest
    assert faults is not None
    found: BaseException = faults
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    assert isinstance(found, FatalFaultError)
    return found


async def test_a_refused_metadata_append_is_fatal_and_a_restart_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CreateTopics on a full metadata disk: the Raft log refused the append, which Kafka
    treats as fatal for the controller (the waiting request hears NOT_CONTROLLER as the
    process ends); the log was left as it was, so a restart has no such topic and
    creating it works."""

    async def work(server: QuorumControllerShell) -> None:
        await register(server, 1)
        with (
            refused(monkeypatch, "write", errno.ENOSPC),
            pytest.raises(ControllerError) as e,
        ):
            await create(server, "orders")
        assert e.value.error_code is ErrorCode.not_controller

    fault = await fatal(tmp_path, work)
    assert "appending" in str(fault)
    assert "No space left on device" in str(fault)

    async def after_restart(server: QuorumControllerShell) -> None:
        assert server.image.topic("orders") is None
        response = await create(server, "orders")
        assert response.topics[0].error_code is ErrorCode.none

    await run_server(tmp_path, after_restart)
    reopened = QuorumControllerShell.open(tmp_path, ControllerConfig())
    assert [t.name for t in reopened.image.topics.values()] == ["orders"]
    reopened.quorum.close()


async def test_a_failed_metadata_fsync_is_fatal_and_a_restart_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsyncgate: after a failed fsync the log cannot be vouched for, so the process
    ends (Kafka's Raft thread meets it in ``flushLeaderLog``; the waiting request hears
    NOT_CONTROLLER), and a restart recovers the log and leads again."""

    async def work(server: QuorumControllerShell) -> None:
        await register(server, 1)
        with (
            refused(monkeypatch, "fsync", errno.EIO),
            pytest.raises(ControllerError) as e,
        ):
            await create(server, "orders")
        assert e.value.error_code is ErrorCode.not_controller

    fault = await fatal(tmp_path, work)
    assert "flushing the Raft log" in str(fault)
    assert "Input/output error" in str(fault)

    async def after_restart(server: QuorumControllerShell) -> None:
        await register(server, 1)
        assert (await create(server, "other")).topics[0].error_code is ErrorCode.none

    await run_server(tmp_path, after_restart)
