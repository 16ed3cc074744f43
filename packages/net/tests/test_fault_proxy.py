"""The TCP fault proxy the cluster tests put between nodes.

Guarantees tested, since later tests rely on each: a healthy proxy forwards every byte in
order both ways; a delayed link delivers each chunk no earlier than the delay and in
order; a stalled link delivers nothing and closes nothing until healed, then everything
held, in order; a cut resets the open connections and the next one works; a refusing
proxy resets new connections. Real loopback sockets, real time, deadlines on every wait.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from minikafka.net.testing import FaultProxy, wait_until

DEADLINE = 10.0


async def _echo(stream: trio.SocketStream) -> None:
    try:
        async for data in stream:
            await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


@asynccontextmanager
async def proxied_echo() -> AsyncIterator[FaultProxy]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, _echo, 0)
        port = listeners[0].socket.getsockname()[1]
        proxy = FaultProxy("127.0.0.1", port)
        await nursery.start(proxy.run)
        try:
            yield proxy
        finally:
            nursery.cancel_scope.cancel()


async def _connect(proxy: FaultProxy) -> trio.SocketStream:
    return await trio.open_tcp_stream("127.0.0.1", proxy.port)


async def _receive_exactly(stream: trio.SocketStream, n: int) -> bytes:
    out = bytearray()
    with trio.fail_after(DEADLINE):
        while len(out) < n:
            data = await stream.receive_some(n - len(out))
            if not data:
                raise AssertionError(f"closed after {len(out)} of {n} bytes")
            out += data
    return bytes(out)


async def _reset_by_peer(proxy: FaultProxy) -> None:
    """Connect and find the connection reset: at once (the reset overtook the end of
    connect), or at the first read or write after it."""
    try:
        stream = await _connect(proxy)
    except OSError:
        return
    with pytest.raises(trio.BrokenResourceError):
        await _use_until_broken(stream)
    await stream.aclose()


async def _use_until_broken(stream: trio.SocketStream) -> None:
    while True:
        if not await stream.receive_some(100):  # EOF first: a later write fails
            await stream.send_all(b"anyone there?")
            await trio.sleep(0.01)


async def test_a_healthy_proxy_forwards_every_byte_in_order() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB, so it crosses many chunks
    async with proxied_echo() as proxy:
        stream = await _connect(proxy)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.send_all, payload)
            assert await _receive_exactly(stream, len(payload)) == payload
        assert proxy.bytes_forwarded("upstream") == len(payload)
        assert proxy.bytes_forwarded("downstream") == len(payload)
        await stream.aclose()


async def test_a_delayed_link_delivers_late_and_in_order() -> None:
    async with proxied_echo() as proxy:
        proxy.delay(0.2, ("upstream",))
        stream = await _connect(proxy)
        started = trio.current_time()
        for i in range(5):
            await stream.send_all(b"%d," % i)
        assert await _receive_exactly(stream, 10) == b"0,1,2,3,4,"
        assert trio.current_time() - started >= 0.2  # never earlier than the delay
        await stream.aclose()


async def test_a_stalled_link_holds_everything_back_until_healed() -> None:
    async with proxied_echo() as proxy:
        stream = await _connect(proxy)
        await stream.send_all(b"before")
        assert await _receive_exactly(stream, 6) == b"before"
        proxy.stall()
        await stream.send_all(b"held-1,")
        await stream.send_all(b"held-2")
        with trio.move_on_after(0.3):
            data = await stream.receive_some(100)
            raise AssertionError(f"a stalled link delivered {data!r}")
        assert proxy.open_connections == 1  # a partition closes nothing
        proxy.heal()
        assert await _receive_exactly(stream, 13) == b"held-1,held-2"
        await stream.aclose()


async def test_stalling_one_direction_lets_requests_through_and_holds_responses() -> (
    None
):
    async with proxied_echo() as proxy:
        stream = await _connect(proxy)
        proxy.stall(("downstream",))
        await stream.send_all(b"request")
        await wait_until(lambda: proxy.bytes_forwarded("upstream") == 7, DEADLINE)
        with trio.move_on_after(0.3):
            data = await stream.receive_some(100)
            raise AssertionError(f"a stalled direction delivered {data!r}")
        proxy.heal()
        assert await _receive_exactly(stream, 7) == b"request"
        await stream.aclose()


async def test_a_cut_resets_open_connections_and_the_next_one_works() -> None:
    async with proxied_echo() as proxy:
        stream = await _connect(proxy)
        await stream.send_all(b"x")
        assert await _receive_exactly(stream, 1) == b"x"
        proxy.cut()
        with trio.fail_after(DEADLINE), pytest.raises(trio.BrokenResourceError):
            await _use_until_broken(stream)
        await stream.aclose()
        await wait_until(lambda: proxy.open_connections == 0, DEADLINE)
        again = await _connect(proxy)
        await again.send_all(b"again")
        assert await _receive_exactly(again, 5) == b"again"
        await again.aclose()


async def test_a_refusing_proxy_resets_new_connections() -> None:
    async with proxied_echo() as proxy:
        proxy.refuse(True)
        with trio.fail_after(DEADLINE):
            await _reset_by_peer(proxy)
        assert proxy.connections_accepted == 1
        proxy.heal()
        again = await _connect(proxy)
        await again.send_all(b"ok")
        assert await _receive_exactly(again, 2) == b"ok"
        await again.aclose()


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        FaultProxy("127.0.0.1", 1).delay(-1)
