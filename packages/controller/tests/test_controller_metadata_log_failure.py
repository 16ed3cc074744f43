"""The metadata log under a large operation and a failing disk.

- an operation's records go in batches of at most 8 MiB (Kafka's Raft batch cap), all
  committed together: more than max.message.bytes of records no longer raise;
- an append the disk refuses part-way leaves none of the operation in the log, and the
  request that wrote it fails with KAFKA_STORAGE_ERROR while the controller goes on;
- a failed fsync makes the controller resign cleanly until restart (fsyncgate).

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

from minikafka.controller import (
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ConfigRecord,
    ControllerConfig,
    ControllerError,
    ControllerServer,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    SingleVoterQuorum,
    _quorum,
)
from minikafka.controller._quorum import MetadataLogError

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


def test_an_operation_larger_than_max_message_bytes_is_appended_and_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 MB of records (over the 1 MiB max.message.bytes that refused it before) go in
    batches of at most the cap, and commit as one operation."""
    quorum = SingleVoterQuorum.open(tmp_path, 1)
    monkeypatch.setattr(_quorum, "MAX_BATCH_SIZE_BYTES", 256 * 1024)
    records = config_records(3000)
    last = quorum.append(quorum.epoch, records)
    assert last == quorum.log.log_end_offset - 1
    batches = list(quorum.log.batches())
    assert len(batches) >= 12
    assert all(header.size <= 256 * 1024 for _, _, header in batches)
    quorum.commit()
    committed = [r for batch in quorum.read_committed(0) for _, r in batch.records]
    assert committed[-3000:] == records
    quorum.close()


def test_a_part_way_failure_leaves_none_of_the_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third batch is refused (ENOSPC): the two before it are truncated away."""
    quorum = SingleVoterQuorum.open(tmp_path, 1)
    quorum.append(quorum.epoch, config_records(5))
    start = quorum.log.log_end_offset
    sizes = {p.name: p.stat().st_size for p in quorum.dir.glob("*.log")}
    monkeypatch.setattr(_quorum, "MAX_BATCH_SIZE_BYTES", 64 * 1024)
    with (
        refused(monkeypatch, "write", errno.ENOSPC, after=2),
        pytest.raises(MetadataLogError) as e,
    ):
        quorum.append(quorum.epoch, config_records(300))
    assert (e.value.error_code, e.value.fatal) == (ErrorCode.kafka_storage_error, False)
    assert quorum.log.log_end_offset == quorum.appended_end == start
    assert {p.name: p.stat().st_size for p in quorum.dir.glob("*.log")} == sizes
    quorum.append(quorum.epoch, config_records(300))  # space is back
    quorum.commit()
    assert sum(len(b.records) for b in quorum.read_committed(0)) == 305
    quorum.close()


async def register(server: ControllerServer, broker_id: int) -> None:
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id)
    registered = await server.submit(
        BrokerRegistrationRequest(broker_id, uuid.uuid4(), (endpoint,))
    )
    assert isinstance(registered, BrokerRegistrationResponse)
    await server.submit(
        BrokerHeartbeatRequest(broker_id, registered.broker_epoch, server.image.offset)
    )


async def create(server: ControllerServer, name: str) -> CreateTopicsResponse:
    response = await server.submit(CreateTopicsRequest((CreatableTopic(name, 2, 1),)))
    assert isinstance(response, CreateTopicsResponse)
    return response


async def run_server(
    tmp_path: Path, work: Callable[[ControllerServer], Any]
) -> ControllerServer:
    server = ControllerServer.open(tmp_path, ControllerConfig(), random.Random(7))
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            await work(server)
            nursery.cancel_scope.cancel()
    return server


async def test_a_refused_metadata_append_fails_the_request_and_the_controller_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CreateTopics on a full metadata disk: KAFKA_STORAGE_ERROR, not a dead event loop;
    the controller forgot the topic (so creating it again works), and a restart agrees."""

    async def work(server: ControllerServer) -> None:
        await register(server, 1)
        with (
            refused(monkeypatch, "write", errno.ENOSPC),
            pytest.raises(ControllerError) as e,
        ):
            await create(server, "orders")
        assert e.value.error_code is ErrorCode.kafka_storage_error
        assert server.failure is None
        response = await create(server, "orders")
        assert response.topics[0].error_code is ErrorCode.none

    await run_server(tmp_path, work)
    reopened = ControllerServer.open(tmp_path, ControllerConfig())
    assert [t.name for t in reopened.image.topics.values()] == ["orders"]
    reopened.quorum.close()


async def test_a_failed_metadata_fsync_makes_the_controller_resign_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsyncgate: the waiting request hears NOT_CONTROLLER, so do later ones; the server
    stops without raising, and a restart recovers the log and leads again."""

    async def work(server: ControllerServer) -> None:
        await register(server, 1)
        with (
            refused(monkeypatch, "fsync", errno.EIO),
            pytest.raises(ControllerError) as e,
        ):
            await create(server, "orders")
        assert e.value.error_code is ErrorCode.not_controller
        assert server.failure is not None
        assert server.failure.fatal
        with pytest.raises(ControllerError) as again:
            await create(server, "other")
        assert again.value.error_code is ErrorCode.not_controller

    await run_server(tmp_path, work)

    async def after_restart(server: ControllerServer) -> None:
        await register(server, 1)
        assert (await create(server, "other")).topics[0].error_code is ErrorCode.none

    await run_server(tmp_path, after_restart)
