"""The large-produce ceiling: a bare trio loopback server that reads whole frames into place.

``python -m bench.sink_server --port 0 --response-bytes N`` prints ``listening on
host:port`` and then, on every connection, reads Kafka's 4-byte size-prefixed frames
and answers each with one fixed frame of ``N`` bytes (size prefix included) carrying
the request's correlation id (the four bytes after ``api_key`` and ``api_version``), so
that a client checks its answers exactly as it checks the broker's Produce responses.

It is the least a trio server must do to take a 1 MiB Produce request off a socket:
``recv_into`` straight into one reused buffer of the frame's size (no copy beyond the
kernel's, no parsing, no log), then one small ``send_all``. What the broker does beyond
that on the produce path (the Processor's reads and memory pool, decoding the request,
the record batch checks, appending to the log, the response) is the gap between the two.
``bench.echo_server`` is the small-request ceiling; this one is for large frames, where
its copy of every received chunk into a growing buffer would be part of the figure.

``--append-to FILE`` makes it a second ceiling, one that also keeps the bytes: after
reading a frame it appends the frame to ``FILE`` with one ``write`` (``O_APPEND``, no
fsync: the page cache, as the broker's log with its default flush settings), before
answering. The broker writes each batch it accepts the same way, so the gap between the
two sinks is what the machine charges for putting a megabyte into the page cache, and
the gap between this one and the broker is what minikafka adds to it.
"""

from __future__ import annotations

import argparse
import functools
import os
import struct
import sys
from pathlib import Path

import trio

from . import echo_server

SIZE_PREFIX = struct.Struct(">i")
# in the frame after its size prefix: api_key (2), api_version (2)
CORRELATION_OFFSET = 4
MIN_RESPONSE_BYTES = SIZE_PREFIX.size + 4  # a size prefix and a correlation id
MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default


async def _read_exactly(sock: trio.socket.SocketType, view: memoryview) -> bool:
    """Fill ``view`` from ``sock``; False if the peer closed first."""
    filled = 0
    while filled < len(view):
        n = await sock.recv_into(view[filled:])
        if n == 0:
            return False
        filled += n
    return True


async def answer_frames(
    stream: trio.SocketStream, response_bytes: int, append_to: Path | None = None
) -> None:
    """Serve one connection until the peer closes it, appending frames to ``append_to``."""
    prefix = SIZE_PREFIX.pack(response_bytes - SIZE_PREFIX.size)
    padding = bytes(response_bytes - MIN_RESPONSE_BYTES)
    head = bytearray(SIZE_PREFIX.size)
    body = bytearray(1 << 20)  # grown to the largest frame seen, then reused
    sock = stream.socket
    fd = (
        -1
        if append_to is None
        else os.open(append_to, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    )
    async with stream:
        try:
            while await _read_exactly(sock, memoryview(head)):
                (size,) = SIZE_PREFIX.unpack(head)
                if not CORRELATION_OFFSET + 4 <= size <= MAX_FRAME_BYTES:
                    return  # not a Kafka request: drop the connection, as a broker would
                if size > len(body):
                    body = bytearray(size)
                frame = memoryview(body)[:size]
                if not await _read_exactly(sock, frame):
                    return
                if fd >= 0:
                    _write_all(fd, frame)
                correlation = body[CORRELATION_OFFSET : CORRELATION_OFFSET + 4]
                await stream.send_all(prefix + correlation + padding)
        except (trio.BrokenResourceError, ConnectionError):
            return
        finally:
            if fd >= 0:
                os.close(fd)


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]


def main(argv: list[str] | None = None) -> int:
    # The listener, signals and the rest of the command line are the echo server's; only
    # the answer (and where it may append) differs.
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--append-to", type=Path)
    own, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    answer = functools.partial(answer_frames, append_to=own.append_to)
    return echo_server.main(rest, answer, "bench.sink_server", __doc__)


if __name__ == "__main__":
    sys.exit(main())
