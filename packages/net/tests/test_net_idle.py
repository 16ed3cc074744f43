"""connections.max.idle.ms, in virtual time (trio's autojump clock)."""

from __future__ import annotations

import trio
import trio.testing

from minikafka.net import NetConfig, Request
from minikafka.net._headers import parse_response_header
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    ScriptedHandler,
    echo_metadata,
    request_frame,
    serving,
)

TEN_MINUTES = 600.0


async def _echo(request: Request) -> None:
    echo_metadata(request)


async def _round_trip(client: trio.abc.Stream, correlation_id: int) -> None:
    await client.send_all(request_frame(METADATA_V9, correlation_id))
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = await client.receive_some()
        assert chunk, "server closed the connection"
        data += chunk
    cid, _ = parse_response_header(data[4:], 1)
    assert cid == correlation_id


async def test_an_idle_connection_is_closed_after_connections_max_idle_ms(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = NetConfig(connections_max_idle_ms=int(TEN_MINUTES * 1000))
    async with serving(ScriptedHandler(_echo), config) as server:
        client, server_side = trio.testing.memory_stream_pair()
        server.processors[0].accept(server_side, "PLAINTEXT")
        await _round_trip(client, 1)
        last_activity = trio.current_time()
        assert await client.receive_some() == b""  # EOF: the server closed it
        idle_for = trio.current_time() - last_activity
        assert TEN_MINUTES <= idle_for < TEN_MINUTES + 1


async def test_activity_keeps_a_connection_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = NetConfig(connections_max_idle_ms=int(TEN_MINUTES * 1000))
    async with serving(ScriptedHandler(_echo), config) as server:
        client, server_side = trio.testing.memory_stream_pair()
        server.processors[0].accept(server_side, "PLAINTEXT")
        start = trio.current_time()
        for cid in range(5):  # a request every 5 minutes for 25 minutes
            await _round_trip(client, cid)
            await trio.sleep(TEN_MINUTES / 2)  # virtual time passing: the scenario
        assert trio.current_time() - start >= 2.5 * TEN_MINUTES
        await _round_trip(client, 99)
        assert len(server.processors[0].connections) == 1


async def test_a_half_sent_request_counts_as_idle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = NetConfig(connections_max_idle_ms=1000)
    async with serving(ScriptedHandler(_echo), config) as server:
        client, server_side = trio.testing.memory_stream_pair()
        connection = server.processors[0].accept(server_side, "PLAINTEXT")
        await client.send_all(request_frame(METADATA_V9, 1)[:7])
        assert await client.receive_some() == b""
        assert connection.close_reason == "idle"


async def test_a_client_that_stops_reading_is_closed_as_idle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def big(request: Request) -> None:
        request.respond_parts([b"x" * 10_000_000])  # far more than any buffer holds

    config = NetConfig(connections_max_idle_ms=60_000)
    async with serving(ScriptedHandler(big), config) as server:
        client, server_side = trio.testing.lockstep_stream_pair()
        connection = server.processors[0].accept(server_side, "PLAINTEXT")
        await client.send_all(request_frame(METADATA_V9, 1))
        start = trio.current_time()
        with trio.fail_after(3600):
            await connection.wait_closed()
        assert connection.close_reason == "idle: response not read"
        assert trio.current_time() - start >= 60


# Over real sockets the connection's task waits for readability with no deadline of its
# own: its Processor closes it (Kafka's Selector idle expiry), checking a few times per
# idle period. Loopback sockets in one process leave trio nothing to wait for but its
# clock, so the autojump clock still runs these in virtual time.


async def test_the_processor_closes_an_idle_socket(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = NetConfig(connections_max_idle_ms=int(TEN_MINUTES * 1000))
    async with serving(ScriptedHandler(_echo), config) as server:
        conn = await RawConnection.open(server)
        await _round_trip(conn.stream, 1)
        last_activity = trio.current_time()
        (connection,) = (c for p in server.processors for c in p.connections.values())
        # virtual time: never closing fails, not hangs
        with trio.fail_after(2 * TEN_MINUTES):
            assert await conn.wait_closed()
        idle_for = trio.current_time() - last_activity
        # At most one check interval late: a tenth of the period, capped at a second.
        assert TEN_MINUTES <= idle_for <= TEN_MINUTES + 1.0 + 0.01
        await connection.wait_closed()
        assert connection.close_reason == "idle"
        await conn.aclose()


async def test_activity_keeps_a_socket_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = NetConfig(connections_max_idle_ms=1000)
    async with serving(ScriptedHandler(_echo), config) as server:
        conn = await RawConnection.open(server)
        for cid in range(10):  # a request every 0.9 s for 9 s, with a 1 s idle limit
            await _round_trip(conn.stream, cid)
            await trio.sleep(0.9)
        await _round_trip(conn.stream, 99)
        assert server.connection_count == 1
        await conn.aclose()
