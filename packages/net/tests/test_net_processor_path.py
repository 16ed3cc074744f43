"""The Processor's own path and Kafka's socket buffer keys.

While a connection is muted its Processor writes the response, completes the request and
queues the next one already read, without the connection's task; these tests pin what
that path must keep: a bad frame read ahead still closes only its connection after the
good ones are answered, a response the socket cannot take at once is finished by the
task in order, and ``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes`` reach
the sockets under Kafka's names.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest
import trio

from minikafka.common import ConfigError, FileRegion
from minikafka.net import NetConfig, Request, _connection
from minikafka.net._connection import READ_AHEAD_READS
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    ScriptedHandler,
    echo_metadata,
    request_frame,
    serving,
    wait_until,
)


async def _echo(request: Request) -> None:
    echo_metadata(request)


async def test_a_bad_frame_read_ahead_closes_the_connection_after_the_good_ones() -> (
    None
):
    """Guarantee: bad input closes only its own connection, and every request before it
    is still answered, in order, though the Processor (not the task) took it from the
    decoder."""
    async with serving(ScriptedHandler(_echo)) as server:
        conn = await RawConnection.open(server)
        other = await RawConnection.open(server)
        good = b"".join(request_frame(METADATA_V9, cid) for cid in range(5))
        await conn.send(good + b"\xff\xff\xff\xfe")  # then a negative frame size
        with trio.fail_after(10):
            for cid in range(5):
                response = await conn.receive_response(3, 9)
                assert response is not None
                assert response[0] == cid
            assert await conn.wait_closed()
            await other.send(request_frame(METADATA_V9, 7))
            response = await other.receive_response(3, 9)
        assert response is not None
        assert response[0] == 7
        await other.aclose()


async def test_responses_the_socket_cannot_take_at_once_stay_in_order() -> None:
    """Guarantee: order per connection. Responses far larger than the socket buffers
    make the Processor's non-blocking write stop part way; the task writes the rest
    before the next request is taken."""
    big = 512 * 1024

    async def large(request: Request) -> None:
        cid = request.header.correlation_id
        request.respond_parts((cid.to_bytes(4, "big") * (big // 4),))

    config = NetConfig(socket_send_buffer_bytes=4096)
    async with serving(ScriptedHandler(large), config) as server:
        conn = await RawConnection.open(server)
        await conn.send(b"".join(request_frame(METADATA_V9, cid) for cid in range(6)))
        with trio.fail_after(20):
            for cid in range(6):
                frame = await conn.receive_frame()
                assert frame is not None
                # correlation id (response header v0 for Metadata v9 is v1: a tag byte)
                assert int.from_bytes(frame[:4], "big") == cid
                body = frame[-big:]
                assert body == cid.to_bytes(4, "big") * (big // 4)
        await conn.aclose()


async def test_the_processor_sends_a_file_region_the_socket_takes_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guarantee: a fetch answer's records (a file region) leave in the Processor's own
    write, as Kafka's Processor writes ``FileRecords``, not a turn of the event loop
    later in the connection's task: a follower's answer is on every ``acks=all`` round
    trip. Here the task cannot send a region at all, and the answers still arrive."""
    data = bytes(range(256)) * 4
    path = tmp_path / "segment.log"
    path.write_bytes(data)

    async def not_by_the_task(*args: object, **kwargs: object) -> None:
        raise AssertionError("the connection's task sent a file region")

    monkeypatch.setattr(_connection, "send_file_region", not_by_the_task)

    async def zero_copy(request: Request) -> None:
        cid = request.header.correlation_id
        request.respond_parts((b"HEAD", FileRegion(str(path), cid, 500), b"TAIL"))

    async with serving(ScriptedHandler(zero_copy)) as server:
        conn = await RawConnection.open(server)
        await conn.send(b"".join(request_frame(METADATA_V9, cid) for cid in range(3)))
        with trio.fail_after(10):
            for cid in range(3):
                frame = await conn.receive_frame()
                assert frame is not None
                assert frame.endswith(b"HEAD" + data[cid : cid + 500] + b"TAIL")
        await conn.aclose()


async def test_file_regions_the_socket_cannot_take_at_once_stay_in_order(
    tmp_path: Path,
) -> None:
    """Guarantee: order per connection. A region far larger than the socket buffers is
    sent part way by the Processor and finished by the task, before the next request is
    taken."""
    data = bytes(random.Random(3).getrandbits(8) for _ in range(300_000))
    path = tmp_path / "segment.log"
    path.write_bytes(data)

    async def zero_copy(request: Request) -> None:
        cid = request.header.correlation_id
        request.respond_parts(
            (cid.to_bytes(4, "big"), FileRegion(str(path), cid, 250_000))
        )

    config = NetConfig(socket_send_buffer_bytes=4096)
    async with serving(ScriptedHandler(zero_copy), config) as server:
        conn = await RawConnection.open(server)
        await conn.send(b"".join(request_frame(METADATA_V9, cid) for cid in range(4)))
        with trio.fail_after(20):
            for cid in range(4):
                frame = await conn.receive_frame()
                assert frame is not None
                assert frame.endswith(
                    cid.to_bytes(4, "big") + data[cid : cid + 250_000]
                )
        await conn.aclose()


async def test_a_connection_waiting_to_write_reads_ahead_a_bounded_amount() -> None:
    """Guarantees: order per connection, and bounded memory per connection. While a
    response waits for a client that is not reading, the connection keeps reading that
    client's next requests into its decoder (so the kernel's receive buffer drains, and
    does not drop the client's segments and the acknowledgements in them), but no more
    than ``READ_AHEAD_READS`` reads' size, and takes none of them until the response
    is written."""
    huge = 16 * 1024 * 1024  # more than both ends' socket buffers can hold
    read_size = 8192
    limit = READ_AHEAD_READS * read_size
    follow_ups = 6000  # more bytes than the read-ahead takes
    handled: list[int] = []

    async def first_is_huge(request: Request) -> None:
        cid = request.header.correlation_id
        handled.append(cid)
        if cid == 0:
            request.respond_parts((b"\0" * huge,))
        else:
            echo_metadata(request)

    config = NetConfig(
        socket_send_buffer_bytes=4096, socket_receive_buffer_bytes=read_size
    )
    async with serving(ScriptedHandler(first_is_huge), config) as server:
        conn = await RawConnection.open(server)
        await conn.send(request_frame(METADATA_V9, 0))
        await wait_until(lambda: handled == [0])
        (connection,) = (c for p in server.processors for c in p.connections.values())
        frame = request_frame(METADATA_V9, 1)
        follow_up = b"".join(
            request_frame(METADATA_V9, cid) for cid in range(1, follow_ups + 1)
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.send, follow_up)  # blocks once every buffer is full
            await wait_until(lambda: connection.decoder.buffered >= limit - len(frame))
            assert connection.decoder.buffered <= limit
            assert handled == [0]  # read, not taken: the connection is still muted
            with trio.fail_after(30):
                first = await conn.receive_frame()
                assert first is not None
                assert len(first) == 4 + 1 + huge
                for cid in range(1, follow_ups + 1):
                    response = await conn.receive_response(3, 9)
                    assert response is not None
                    assert response[0] == cid
        assert handled == list(range(follow_ups + 1))
        await conn.aclose()


def test_socket_buffer_keys_are_read_under_kafkas_names() -> None:
    defaults = NetConfig()
    assert (
        defaults.socket_send_buffer_bytes,
        defaults.socket_receive_buffer_bytes,
    ) == (
        102_400,
        102_400,
    )
    config = NetConfig.from_properties(
        {"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "8192"}
    )
    assert config.socket_send_buffer_bytes == -1
    assert config.read_size == 8192
    assert NetConfig(socket_receive_buffer_bytes=-1).read_size == 65_536


@pytest.mark.parametrize(
    "key", ["socket.send.buffer.bytes", "socket.receive.buffer.bytes"]
)
@pytest.mark.parametrize("value", ["0", "-2", "lots"])
def test_bad_socket_buffer_sizes_stop_start_up_naming_the_key(
    key: str, value: str
) -> None:
    with pytest.raises(ConfigError) as err:
        NetConfig.from_properties({key: value})
    assert err.value.key == key


async def test_socket_buffer_sizes_reach_the_sockets() -> None:
    config = NetConfig(
        socket_send_buffer_bytes=32_768, socket_receive_buffer_bytes=16_384
    )
    async with serving(ScriptedHandler(_echo), config) as server:
        conn = await RawConnection.open(server)
        await conn.send(request_frame(METADATA_V9, 1))
        with trio.fail_after(10):
            assert await conn.receive_response(3, 9) is not None
        await wait_until(lambda: server.connection_count == 1)
        (connection,) = (c for p in server.processors for c in p.connections.values())
        assert isinstance(connection.stream, trio.SocketStream)
        sock = connection.stream.socket
        # Linux doubles what is asked for (the bookkeeping overhead); never less.
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 32_768
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (16_384, 32_768)
        await conn.aclose()
