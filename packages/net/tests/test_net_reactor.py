"""The Reactor end to end on loopback: ordering, backpressure, zero-copy, metrics, shutdown."""

from __future__ import annotations

import os
import random
from pathlib import Path

import trio
from kio.schema.metadata.v9.response import MetadataResponse

from minikafka.common import FileRegion
from minikafka.net import NetConfig, Request
from minikafka.net._headers import encode_response_header
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    ScriptedHandler,
    echo_metadata,
    request_frame,
    serving,
    wait_until,
)
from minikafka.trace import JsonLinesTracer, read_trace


async def test_pipelined_requests_are_answered_in_order_on_every_connection() -> None:
    """Seed 003: many handlers at once, yet each connection's responses in request order."""
    rng = random.Random(3)
    active = 0
    max_active = 0
    another_finished = trio.Event()
    finished: list[tuple[str, int]] = []
    dequeued: list[tuple[str, int]] = []

    async def slow_echo(request: Request) -> None:
        nonlocal active, max_active
        key = (request.connection_id, request.header.correlation_id)
        dequeued.append(key)
        active += 1
        max_active = max(max_active, active)
        if len(dequeued) == 1:
            # The very first request is held until some other request has been handled
            # completely: handlers run in parallel and finish out of order.
            await another_finished.wait()
        else:
            await trio.sleep(rng.uniform(0, 0.003))
        active -= 1
        finished.append(key)
        another_finished.set()
        echo_metadata(request)

    connections, pipelined = 12, 20
    async with serving(
        ScriptedHandler(slow_echo), NetConfig(num_network_threads=3)
    ) as server:
        results: dict[int, list[tuple[int, str]]] = {}

        async def client(index: int) -> None:
            conn = await RawConnection.open(server)
            # All requests in one write: the server sees them glued together.
            await conn.send(
                b"".join(
                    request_frame(METADATA_V9, cid, client_id=f"c{index}")
                    for cid in range(pipelined)
                )
            )
            got = []
            for _ in range(pipelined):
                response = await conn.receive_response(3, 9)
                assert response is not None
                correlation_id, body = response
                assert isinstance(body, MetadataResponse)
                got.append((correlation_id, str(body.cluster_id)))
            results[index] = got
            await conn.aclose()

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for index in range(connections):
                    nursery.start_soon(client, index)

    for index, got in results.items():
        assert got == [(cid, f"c{index}/{cid}") for cid in range(pipelined)]
    assert len(results) == connections
    assert max_active >= 2
    # The first request to reach a handler was not the first to finish.
    assert finished[0] != dequeued[0]
    assert finished.index(dequeued[0]) > 0
    # Every connection had one request in the channel at a time: per connection, the
    # order requests reached handlers is their correlation order.
    per_connection: dict[str, list[int]] = {}
    for connection_id, cid in dequeued:
        per_connection.setdefault(connection_id, []).append(cid)
    assert all(cids == list(range(pipelined)) for cids in per_connection.values())


async def test_backpressure_when_the_request_channel_is_full() -> None:
    gate = trio.Event()
    in_handler = 0

    async def gated(request: Request) -> None:
        nonlocal in_handler
        in_handler += 1
        await gate.wait()
        echo_metadata(request)

    config = NetConfig(queued_max_requests=2, num_io_threads=1, num_network_threads=2)
    async with serving(ScriptedHandler(gated), config) as server:
        conns = [await RawConnection.open(server) for _ in range(6)]
        for i, conn in enumerate(conns):
            await conn.send(request_frame(METADATA_V9, i))
        channel = server.channel
        # One request in the only handler, two queued, three connections waiting to queue.
        await wait_until(
            lambda: (
                in_handler == 1
                and channel.queue_size == 2
                and channel.waiting_senders == 3
            )
        )
        gate.set()
        with trio.fail_after(10):
            for i, conn in enumerate(conns):
                response = await conn.receive_response(3, 9)
                assert response is not None
                assert response[0] == i
        assert channel.queue_size == 0
        for conn in conns:
            await conn.aclose()


async def test_a_request_without_response_still_unmutes_the_connection() -> None:
    async def odd_only(request: Request) -> None:
        if request.header.correlation_id % 2 == 0:
            request.respond_nothing()  # as acks=0 produce does
        else:
            echo_metadata(request)

    async with serving(ScriptedHandler(odd_only)) as server:
        conn = await RawConnection.open(server)
        await conn.send(b"".join(request_frame(METADATA_V9, cid) for cid in range(6)))
        with trio.fail_after(10):
            got = []
            for _ in range(3):
                response = await conn.receive_response(3, 9)
                assert response is not None
                got.append(response[0])
        assert got == [1, 3, 5]
        await conn.aclose()


async def test_file_regions_are_sent_after_the_header(tmp_path: Path) -> None:
    data = bytes(random.Random(7).getrandbits(8) for _ in range(200_000))
    path = tmp_path / "segment.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)

    async def zero_copy(request: Request) -> None:
        # A body of bytes and two regions, one by path and one by open descriptor.
        request.respond_parts(
            [
                b"HEAD",
                FileRegion(str(path), 1000, 150_000),
                FileRegion(fd, 5, 10),
                b"TAIL",
            ]
        )

    try:
        async with serving(ScriptedHandler(zero_copy)) as server:
            conn = await RawConnection.open(server)
            await conn.send(request_frame(METADATA_V9, 11))
            with trio.fail_after(10):
                frame = await conn.receive_frame()
            assert frame is not None
            header = encode_response_header(11, 1)
            assert frame == header + b"HEAD" + data[1000:151_000] + data[5:15] + b"TAIL"
            await conn.aclose()
    finally:
        os.close(fd)


async def test_a_file_shorter_than_its_region_closes_the_connection(
    tmp_path: Path,
) -> None:
    path = tmp_path / "short.log"
    path.write_bytes(b"x" * 100)

    async def short(request: Request) -> None:
        request.respond_parts([FileRegion(str(path), 50, 100)])  # only 50 bytes exist

    async with serving(ScriptedHandler(short)) as server:
        conn = await RawConnection.open(server)
        await conn.send(request_frame(METADATA_V9, 1))
        with trio.fail_after(10):
            assert await conn.receive_frame() is None  # truncated frame, then EOF
        await conn.aclose()


async def test_request_metrics_are_traced(tmp_path: Path) -> None:
    seen = []
    tracer = JsonLinesTracer.open(tmp_path, node=1)

    async def delayed(request: Request) -> None:
        # Answer from another task after the handler returned: "remote" time.
        async def later() -> None:
            await trio.sleep(0.01)
            echo_metadata(request)

        nursery.start_soon(later)

    async with trio.open_nursery() as nursery:
        handler = ScriptedHandler(delayed)
        async with serving(
            handler, on_request_completed=lambda r, m: seen.append(m)
        ) as server:
            for processor in server.processors:
                processor.tracer = tracer
            conn = await RawConnection.open(server)
            await conn.send(request_frame(METADATA_V9, 1))
            with trio.fail_after(10):
                assert await conn.receive_frame() is not None
            await wait_until(lambda: len(seen) == 1)
            await conn.aclose()
    tracer.close()
    (metrics,) = seen
    assert metrics.remote_ms >= 10 * 0.9
    parts = (
        metrics.request_queue_ms
        + metrics.local_ms
        + metrics.remote_ms
        + metrics.response_queue_ms
        + metrics.response_send_ms
    )
    assert abs(parts - metrics.total_ms) < 1e-6
    records = [r for r in read_trace(tmp_path) if r["event"] == "request"]
    assert len(records) == 1
    record = records[0]
    assert (record["api_name"], record["api_version"], record["correlation_id"]) == (
        "Metadata",
        9,
        1,
    )
    # A trace writes milliseconds to the microsecond (three decimals).
    assert record["total_ms"] == float(f"{metrics.total_ms:.3f}")
    assert record["node"] == 1


async def test_graceful_shutdown_finishes_requests_in_flight() -> None:
    gate = trio.Event()
    entered = trio.Event()

    async def gated(request: Request) -> None:
        entered.set()
        await gate.wait()
        echo_metadata(request)

    async with (
        trio.open_nursery() as nursery,
        serving(ScriptedHandler(gated)) as server,
    ):
        host, port = server.bound_address()
        busy = await RawConnection.open(server)
        idle = await RawConnection.open(server)
        await busy.send(request_frame(METADATA_V9, 5))
        with trio.fail_after(10):
            await entered.wait()
        nursery.start_soon(server.shutdown)
        with trio.fail_after(10):
            # The idle connection is closed at once; new connections are refused.
            assert await idle.wait_closed()
            await wait_until(lambda: not _can_connect(host, port))
        gate.set()
        with trio.fail_after(10):
            response = await busy.receive_response(3, 9)
            assert response is not None
            assert response[0] == 5
            assert await busy.wait_closed()


def _can_connect(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False
