"""The ceiling for the Reactor benchmark: a bare trio loopback server that frames and answers.

``python -m bench.echo_server --port 0 --response-bytes N`` prints ``listening on
host:port`` and then, on every connection, reads Kafka's 4-byte size-prefixed frames
and answers each with one fixed frame of ``N`` bytes (size prefix included). It does no
Kafka parsing: the only request bytes it looks at are the size prefix and the four bytes
at offset 8, the correlation id (the request header starts ``api_key: int16,
api_version: int16, correlation_id: int32`` in every version), copied into the answer
so the client can check responses exactly as it does the Reactor's.

It is the least a trio server must do with the same bytes: one ``receive_some`` per
batch of bytes the kernel has, one ``send_all`` for all the frames completed by it, no
queues, no tasks per request, no ordering machinery. Whatever the Reactor does beyond
that (decode, a RequestChannel hop, a handler task, encode, a response queue hop, one
write per response) is the gap between the two figures.
"""

from __future__ import annotations

import argparse
import signal
import struct
import sys
from collections.abc import Awaitable, Callable

import trio

SIZE_PREFIX = struct.Struct(">i")
CORRELATION_OFFSET = 8  # size prefix (4) + api_key (2) + api_version (2)
MIN_RESPONSE_BYTES = SIZE_PREFIX.size + 4  # a size prefix and a correlation id
RECEIVE_BYTES = 65536


async def answer_frames(stream: trio.abc.Stream, response_bytes: int) -> None:
    """Serve one connection until the peer closes it."""
    prefix = SIZE_PREFIX.pack(response_bytes - SIZE_PREFIX.size)
    padding = bytes(response_bytes - MIN_RESPONSE_BYTES)
    buffer = bytearray()
    async with stream:
        while True:
            try:
                data = await stream.receive_some(RECEIVE_BYTES)
            except trio.BrokenResourceError:
                return
            if not data:
                return
            buffer += data
            out: list[bytes | bytearray] = []
            start = 0
            while len(buffer) - start >= SIZE_PREFIX.size:
                (size,) = SIZE_PREFIX.unpack_from(buffer, start)
                end = start + SIZE_PREFIX.size + size
                if end > len(buffer):
                    break
                correlation = start + CORRELATION_OFFSET
                out += (prefix, buffer[correlation : correlation + 4], padding)
                start = end
            if start:
                del buffer[:start]
            if out:
                try:
                    await stream.send_all(b"".join(out))
                except trio.BrokenResourceError:
                    return


Answer = Callable[[trio.SocketStream, int], Awaitable[None]]
"""A ceiling's connection handler: the stream and ``--response-bytes``."""


async def serve(
    host: str,
    port: int,
    response_bytes: int,
    answer: Answer = answer_frames,
    name: str = "",
) -> None:
    """Listen, print ``<name>: listening on host:port``, and serve every connection with
    ``answer`` until SIGINT or SIGTERM (shared by ``bench.sink_server``)."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()
    print(
        f"{name or 'bench.echo_server'}: listening on {bound[0]}:{bound[1]}", flush=True
    )
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def handler(stream: trio.SocketStream) -> None:
                await answer(stream, response_bytes)

            nursery.start_soon(trio.serve_listeners, handler, listeners)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


def main(
    argv: list[str] | None = None,
    answer: Answer = answer_frames,
    name: str = "bench.echo_server",
    description: str | None = __doc__,
) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {name}", description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--response-bytes", type=int, default=64)
    args = parser.parse_args(argv)
    if args.response_bytes < MIN_RESPONSE_BYTES:
        parser.error(f"--response-bytes must be at least {MIN_RESPONSE_BYTES}")
    trio.run(serve, args.host, args.port, args.response_bytes, answer, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
