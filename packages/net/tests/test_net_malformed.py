"""Bad input closes only the connection it came on; the server keeps serving the others."""

from __future__ import annotations

import struct

import pytest
import trio
from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest

from minikafka.net import NetConfig, Request
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    ScriptedHandler,
    echo_metadata,
    request_frame,
    serving,
    wait_until,
)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


VALID = request_frame(METADATA_V9, 1)

BAD_INPUTS = {
    # A size prefix above socket.request.max.bytes (set to 1 MiB below).
    "oversized frame": struct.pack(">i", 2**20 + 1) + b"x" * 100,
    "negative size": b"\xff\xff\xff\xff",
    # An HTTP request on the Kafka port: "GET " read as a size is 1.2 GB.
    "http request": b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "garbage in a well-sized frame": _frame(bytes(range(255, 55, -1))),
    "truncated header": _frame(b"\x00\x03\x00"),
    "client id longer than the frame": _frame(
        b"\x00\x03\x00\x09\x00\x00\x00\x01\x7f\xffabc"
    ),
    "unknown api key": _frame(b"\x03\xe7\x00\x00\x00\x00\x00\x01\x00\x00"),
    "api the handler does not serve": request_frame(FindCoordinatorRequest(key="g"), 1),
    # KIP-482 tagged field kio does not know, in a request header v2.
    "unknown tagged field": _frame(
        b"\x00\x12\x00\x03\x00\x00\x00\x01\x00\x04test\x01\x05\x01\x00\x02a\x02\x31\x00"
    ),
    # Metadata v11 whose topic array claims ~33 billion elements: kio would try to
    # allocate for all of them and abort the process; the bounds check refuses it.
    "array longer than the frame": _frame(
        b"\x00\x03\x00\x0b\x00\x00\x00\x01\x00\x04test\x00\x90\xd7\xe9\xc3\x7a\x61\x02\x31\x00"
    ),
    "legacy array longer than the frame": _frame(
        b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x04test\x7f\xff\xff\xff"
    ),
    "string longer than the frame": _frame(
        b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x04test\x00\x00\x00\x01\x7f\xffab"
    ),
    "unsupported Metadata version": _frame(b"\x00\x03\x00\x0d" + VALID[8:]),
    "body cut short": _frame(VALID[4:-3]),
    "body of another api": _frame(
        b"\x00\x03\x00\x09" + request_frame(METADATA_V9, 1)[8:20]
    ),
}


@pytest.mark.parametrize("bad", list(BAD_INPUTS), ids=list(BAD_INPUTS))
async def test_bad_input_closes_only_its_connection(bad: str) -> None:
    async def echo(request: Request) -> None:
        echo_metadata(request)

    config = NetConfig(socket_request_max_bytes=2**20)
    async with serving(ScriptedHandler(echo), config) as server:
        bystander = await RawConnection.open(server)
        # The bystander has a request half-sent when the bad input arrives.
        await bystander.send(VALID[:10])
        victim = await RawConnection.open(server)
        await victim.send(BAD_INPUTS[bad])
        with trio.fail_after(10):
            assert await victim.wait_closed()
            await bystander.send(VALID[10:])
            response = await bystander.receive_response(3, 9)
            assert response is not None
            assert response[0] == 1
            # And a new client is served as before.
            fresh = await RawConnection.open(server)
            await fresh.send(request_frame(METADATA_V9, 2))
            response = await fresh.receive_response(3, 9)
            assert response is not None
            assert response[0] == 2
        for conn in (bystander, victim, fresh):
            await conn.aclose()


async def test_client_vanishing_mid_request() -> None:
    async def echo(request: Request) -> None:
        echo_metadata(request)

    async with serving(ScriptedHandler(echo)) as server:
        gone = await RawConnection.open(server)
        await gone.send(VALID[: len(VALID) // 2])
        await gone.aclose()
        await wait_until(lambda: not any(p.connections for p in server.processors))
        with trio.fail_after(10):
            fresh = await RawConnection.open(server)
            await fresh.send(VALID)
            assert await fresh.receive_response(3, 9) is not None
        await fresh.aclose()


async def test_client_vanishing_while_its_request_is_handled() -> None:
    gate = trio.Event()
    entered = trio.Event()

    async def gated(request: Request) -> None:
        if request.header.correlation_id == 1:
            entered.set()
            await gate.wait()
        echo_metadata(request)  # the connection is gone by now: dropped quietly

    async with serving(ScriptedHandler(gated)) as server:
        gone = await RawConnection.open(server)
        await gone.send(VALID)
        with trio.fail_after(10):
            await entered.wait()
        await gone.aclose()
        gate.set()
        fresh = await RawConnection.open(server)
        await fresh.send(request_frame(METADATA_V9, 2))
        with trio.fail_after(10):
            assert await fresh.receive_response(3, 9) is not None
        await fresh.aclose()


async def test_a_failing_handler_closes_only_that_connection() -> None:
    async def explode(request: Request) -> None:
        if request.header.client_id == "bad":
            raise RuntimeError("handler bug")
        echo_metadata(request)

    async with serving(ScriptedHandler(explode)) as server:
        victim = await RawConnection.open(server)
        await victim.send(request_frame(METADATA_V9, 1, client_id="bad"))
        with trio.fail_after(10):
            assert await victim.wait_closed()
        good = await RawConnection.open(server)
        await good.send(request_frame(METADATA_V9, 2, client_id="good"))
        with trio.fail_after(10):
            assert await good.receive_response(3, 9) is not None
        await victim.aclose()
        await good.aclose()
