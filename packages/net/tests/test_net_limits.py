"""The Reactor's limits, Kafka's keys with Kafka's behaviour.

- ``max.connections``: at the limit the Acceptor blocks until a connection closes; the
  client over the limit waits, it is not reset.
- ``max.connections.per.ip`` and ``max.connections.per.ip.overrides``: a connection over
  its address's limit is closed at once, with a log line.
- ``queued.max.request.bytes``: requests read but not yet handled never take more than
  the pool (plus, Kafka's non-strict pool, less than one request); connections stay
  open and every request is answered, in order, once the handlers catch up.
- accept() failing for want of descriptors neither kills the Acceptor nor floods the log.
"""

from __future__ import annotations

import errno
import logging
import random

import attrs
import pytest
import trio

from minikafka.common import ConfigError
from minikafka.net import Acceptor, Listener, MemoryPool, NetConfig, Request
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


# --- configuration ------------------------------------------------------------------------


def test_kafkas_defaults_are_no_limits() -> None:
    config = NetConfig.from_properties({})
    assert config.max_connections == 2**31 - 1
    assert config.max_connections_per_ip == 2**31 - 1
    assert config.max_connections_per_ip_overrides == ()
    assert config.queued_max_request_bytes == -1
    assert config.memory_pool_bytes is None


def test_limits_are_read_under_kafkas_names() -> None:
    config = NetConfig.from_properties(
        {
            "max.connections": "100",
            "max.connections.per.ip": "0",
            "max.connections.per.ip.overrides": "hostName:100, 127.0.0.1:200,::1:5",
            "queued.max.request.bytes": "209715200",
        }
    )
    assert config.max_connections == 100
    assert config.max_connections_per_ip == 0
    # The last colon splits, so an IPv6 address needs no brackets (Kafka's parseCsvMap).
    assert config.max_connections_per_ip_overrides == (
        ("hostName", 100),
        ("127.0.0.1", 200),
        ("::1", 5),
    )
    assert config.memory_pool_bytes == 209715200
    assert (
        NetConfig.from_properties({"queued.max.request.bytes": "0"}).memory_pool_bytes
        is None
    )


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"max.connections": "-1"}, "max.connections"),
        ({"max.connections": "many"}, "max.connections"),
        ({"max.connections": "2147483648"}, "max.connections"),
        ({"max.connections.per.ip": "-5"}, "max.connections.per.ip"),
        # 0 is allowed only with overrides (Kafka's validateValues).
        ({"max.connections.per.ip": "0"}, "max.connections.per.ip"),
        (
            {"max.connections.per.ip.overrides": "127.0.0.1"},
            "max.connections.per.ip.overrides",
        ),
        (
            {"max.connections.per.ip.overrides": "h@st:3"},
            "max.connections.per.ip.overrides",
        ),
        (
            {"max.connections.per.ip.overrides": "127.0.0.1:x"},
            "max.connections.per.ip.overrides",
        ),
        (
            {"max.connections.per.ip.overrides": "127.0.0.1:-1"},
            "max.connections.per.ip.overrides",
        ),
        (
            {"max.connections.per.ip.overrides": ":3"},
            "max.connections.per.ip.overrides",
        ),
        ({"queued.max.request.bytes": "lots"}, "queued.max.request.bytes"),
        # Smaller than socket.request.max.bytes (100 MiB by default): Kafka refuses it.
        ({"queued.max.request.bytes": "1048576"}, "queued.max.request.bytes"),
    ],
)
def test_bad_limits_stop_start_up_naming_the_key(
    props: dict[str, str], key: str
) -> None:
    with pytest.raises(ConfigError) as err:
        NetConfig.from_properties(props)
    assert err.value.key == key
    assert str(err.value).startswith(f"{key}: ")


def test_the_pool_is_non_strict_like_kafkas() -> None:
    """Any free byte lets a whole request in (so one never starves); then it is shut."""
    pool = MemoryPool(10_000)
    assert pool.try_allocate(9_999)
    assert pool.try_allocate(4_096)  # 1 byte free: overdrawn by less than one request
    assert pool.out_of_memory
    assert pool.used == 14_095
    assert not pool.try_allocate(1)
    pool.release(4_096)
    assert pool.available == 1
    assert pool.try_allocate(50)
    assert pool.peak_used == 14_095


# --- max.connections ----------------------------------------------------------------------


async def _answered(conn: RawConnection, correlation_id: int) -> bool:
    await conn.send(request_frame(METADATA_V9, correlation_id))
    response = await conn.receive_response(3, 9)
    return response is not None and response[0] == correlation_id


async def test_max_connections_blocks_the_next_until_one_closes() -> None:
    """At max.connections the (N+1)th client waits (not reset) and is served once one
    of the N closes."""
    config = NetConfig(max_connections=3, num_network_threads=2)
    async with serving(ScriptedHandler(_echo), config) as server:
        assert server.quotas is not None
        held = [await RawConnection.open(server) for _ in range(3)]
        with trio.fail_after(10):
            for i, conn in enumerate(held):
                assert await _answered(conn, i)
        extra = await RawConnection.open(server)  # the kernel completes the handshake
        await extra.send(request_frame(METADATA_V9, 99))
        with trio.fail_after(10):
            await wait_until(
                lambda: server.quotas is not None and server.quotas.waiting_for_slot > 0
            )
        assert server.connection_count == 3
        with trio.move_on_after(0.3) as early:
            await extra.receive_frame()
        assert early.cancelled_caught, (
            "the 4th connection was served over max.connections"
        )
        await held.pop(0).aclose()
        with trio.fail_after(10):
            response = await extra.receive_response(3, 9)
        assert response is not None
        assert response[0] == 99
        assert server.connection_count == 3
        for conn in [*held, extra]:
            await conn.aclose()
        with trio.fail_after(10):
            await wait_until(
                lambda: server.quotas is not None and server.quotas.total == 0
            )


# --- max.connections.per.ip ---------------------------------------------------------------


async def _open_from(server_address: tuple[str, int], local: str) -> RawConnection:
    host, port = server_address
    return RawConnection(await trio.open_tcp_stream(host, port, local_address=local))


async def test_per_ip_limit_and_an_override(caplog: pytest.LogCaptureFixture) -> None:
    """Over its address's limit a connection is closed at once, with a log line; an
    override gives one address (127.0.0.2, still loopback) a different limit."""
    caplog.set_level(logging.INFO, logger="minikafka.net")
    config = NetConfig(
        max_connections_per_ip=2, max_connections_per_ip_overrides=(("127.0.0.2", 3),)
    )
    async with serving(ScriptedHandler(_echo), config) as server:
        address = server.bound_address()
        ones = [await _open_from(address, "127.0.0.1") for _ in range(2)]
        twos = [await _open_from(address, "127.0.0.2") for _ in range(3)]
        with trio.fail_after(10):
            for i, conn in enumerate([*ones, *twos]):
                assert await _answered(conn, i)
            third_one = await _open_from(address, "127.0.0.1")
            assert await third_one.wait_closed()
            fourth_two = await _open_from(address, "127.0.0.2")
            assert await fourth_two.wait_closed()
        rejected = [
            r.getMessage()
            for r in caplog.records
            if "max.connections.per.ip" in r.getMessage()
        ]
        assert len(rejected) == 2, rejected
        assert "from 127.0.0.1" in rejected[0]
        assert "maximum of 2" in rejected[0]
        assert "from 127.0.0.2" in rejected[1]
        assert "maximum of 3" in rejected[1]
        # A closed connection frees its address's slot.
        await ones.pop().aclose()
        with trio.fail_after(10):
            await wait_until(
                lambda: server.quotas is not None and server.quotas.total == 4
            )
            again = await _open_from(address, "127.0.0.1")
            assert await _answered(again, 42)
        for conn in [*ones, *twos, again, third_one, fourth_two]:
            await conn.aclose()


async def test_an_override_may_name_a_host() -> None:
    """Hosts as given: ``localhost`` is resolved when the server starts."""
    config = NetConfig(
        max_connections_per_ip=0, max_connections_per_ip_overrides=(("localhost", 2),)
    )
    async with serving(ScriptedHandler(_echo), config) as server:
        assert server.quotas is not None
        assert server.quotas.limit_for("127.0.0.1") == 2
        conns = [await RawConnection.open(server) for _ in range(2)]
        with trio.fail_after(10):
            for i, conn in enumerate(conns):
                assert await _answered(conn, i)
            refused = await RawConnection.open(server)
            assert await refused.wait_closed()
        for conn in [*conns, refused]:
            await conn.aclose()


# --- queued.max.request.bytes -------------------------------------------------------------


async def test_queued_request_bytes_bound_the_requests_read() -> None:
    """Pipelining clients cannot make the broker read more than the pool (plus less than
    one request); the rest wait in their sockets, and every request is answered, in
    order on each connection, once the handlers catch up."""
    rng = random.Random(15)
    pool_bytes, max_request = 8192, 4096
    gate = trio.Event()
    in_handlers: list[Request] = []

    async def gated(request: Request) -> None:
        in_handlers.append(request)
        await gate.wait()
        echo_metadata(request)

    config = NetConfig(
        socket_request_max_bytes=max_request,
        queued_max_request_bytes=pool_bytes,
        num_io_threads=64,
        queued_max_requests=500,  # so only the bytes can hold requests back
        num_network_threads=3,
    )
    connections, pipelined = 12, 6
    async with serving(ScriptedHandler(gated), config) as server:
        pool = server.memory_pool
        assert pool is not None
        clients = [await RawConnection.open(server) for _ in range(connections)]
        for index, conn in enumerate(clients):
            await conn.send(
                b"".join(
                    # A long client id makes each request 0.5-3.5 KB.
                    request_frame(
                        METADATA_V9,
                        cid,
                        client_id=f"{index}-" + "x" * rng.randint(500, 3500),
                    )
                    for cid in range(pipelined)
                )
            )
        with trio.fail_after(10):
            # Steady state: the pool is spent and every byte taken sits in a handler.
            await wait_until(
                lambda: (
                    pool.out_of_memory and pool.used == sum(r.size for r in in_handlers)
                )
            )
        assert pool.peak_used < pool_bytes + max_request
        # The pool, not queued.max.requests, is what holds the others back.
        assert len(in_handlers) < connections
        assert server.channel.queue_size == 0
        assert server.connection_count == connections
        gate.set()
        with trio.fail_after(30):
            for conn in clients:
                got = []
                for _ in range(pipelined):
                    response = await conn.receive_response(3, 9)
                    assert response is not None
                    got.append(response[0])
                assert got == list(range(pipelined))
            await wait_until(lambda: pool.used == 0)
        assert pool.peak_used < pool_bytes + max_request
        for conn in clients:
            await conn.aclose()


async def test_an_empty_frame_with_a_pool_closes_only_its_connection() -> None:
    """A zero-length frame takes zero bytes from the pool: the connection is closed as
    any bad header is, the server does not spin on it, and a bystander is served."""
    config = NetConfig(socket_request_max_bytes=4096, queued_max_request_bytes=8192)
    async with serving(ScriptedHandler(_echo), config) as server:
        victim = await RawConnection.open(server)
        await victim.send(b"\x00\x00\x00\x00")
        bystander = await RawConnection.open(server)
        with trio.fail_after(10):
            assert await victim.wait_closed()
            assert await _answered(bystander, 5)
        assert server.memory_pool is not None
        await bystander.aclose()
        with trio.fail_after(10):
            await wait_until(
                lambda: server.memory_pool is not None and server.memory_pool.used == 0
            )


# --- out of descriptors -------------------------------------------------------------------


@attrs.define
class _FlakyListener:
    """accept() fails with EMFILE ``failures`` times, then returns ``stream``."""

    failures: int
    stream: object
    calls: int = 0

    async def accept(self) -> object:
        await trio.lowlevel.checkpoint()
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError(errno.EMFILE, "Too many open files")
        return self.stream


async def test_emfile_is_logged_once_and_accepting_resumes(
    autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """A burst of EMFILE costs one WARNING (rate-limited), backs off, and the Acceptor
    accepts again as soon as a descriptor is free; it never dies of it."""
    caplog.set_level(logging.INFO, logger="minikafka.net")
    acceptor = Acceptor(Listener("PLAINTEXT", "127.0.0.1", 0), processors=[])
    sentinel = object()
    flaky = _FlakyListener(failures=40, stream=sentinel)
    started = trio.current_time()
    stream = await acceptor._accept(flaky)  # type: ignore[arg-type]
    assert stream is sentinel
    assert acceptor.accept_failures == 40
    # Backing off: 40 failures take a while, yet much less than a minute of 40 retries.
    assert 1.0 < trio.current_time() - started < 30.0
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "Too many open files" in m]) == 1, messages
    assert len([m for m in messages if "accepting again after 40 failed" in m]) == 1, (
        messages
    )
