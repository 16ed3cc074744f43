"""Writing a response's parts to a socket: bytes by ``writev``, file regions by ``sendfile``.

Seed 000 (the network layer): Kafka's ``Send`` implementations write a response as it
goes, never blocking the Processor; here the Processor writes what a socket takes at once
and the connection's task finishes what it could not (``_connection.py``). Fetch
responses carry *file regions*, sent as Kafka's ``FileRecords.writeTo`` sends them
(``FileChannel.transferTo``, that is ``sendfile(2)``): the kernel moves those bytes from
the page cache to the socket without copying them into the process.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable

import attrs
import trio

from minikafka.common import FileRegion

from ._request import Part

IOV_MAX = 1024
"""Linux's limit on the buffers of one ``writev``; a longer response takes several."""


class ShortFileRegion(Exception):
    """A file region ended before its promised length; the frame cannot be finished."""


def write_parts(fd: int, parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """One non-blocking ``writev`` of the leading bytes parts (at most ``IOV_MAX``); the
    parts, or rest of one, not written. Nothing written if the socket takes nothing now
    (or the first part is a file region); any other socket error is raised."""
    only = parts[0] if len(parts) == 1 else None
    if isinstance(only, bytes):
        # Most responses: one part (the size prefix, header and body coalesced).
        try:
            written = os.write(fd, only)
        except (BlockingIOError, InterruptedError):
            return parts
        return () if written == len(only) else (only[written:],)
    run: list[bytes] = []
    for part in parts[:IOV_MAX]:
        if not isinstance(part, bytes):
            break
        run.append(part)
    if not run:
        return parts
    try:
        written = os.writev(fd, run)
    except (BlockingIOError, InterruptedError):
        return parts
    for index, part in enumerate(run):
        if written < len(part):
            return (part[written:], *parts[index + 1 :])
        written -= len(part)
    return parts[len(run) :]


def write_nowait(fd: int, parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """Write what the socket takes now, bytes by ``writev`` and file regions by a
    non-blocking ``sendfile``; returns the parts (or rest of one) not written.

    Kafka's Processor writes a fetch response's ``FileRecords`` in its own poll; handing
    even a small region to the connection's task would cost the answer a turn of the
    event loop, and a follower's fetch answer is on every ``acks=all`` round trip. What
    the socket does not take now, and anything after an error (which the task meets
    again, and closes on), is returned for the task.
    """
    try:
        while parts:
            first = parts[0]
            if isinstance(first, bytes):
                left = write_parts(fd, parts)
                if left == parts or (left and isinstance(left[0], bytes)):
                    return left  # the socket is full
                parts = left
                continue
            rest = sendfile_nowait(fd, first)
            if rest is not None:
                return (rest, *parts[1:])
            parts = parts[1:]
    except OSError:
        pass  # what was written is written: the rest goes to the task
    return parts


def sendfile_nowait(sock_fd: int, region: FileRegion) -> FileRegion | None:
    """One non-blocking ``sendfile`` of ``region`` to the socket: None once it is all
    sent, else the rest of it (all of it if the socket takes nothing now, or the file
    ended early: the connection's task meets that again and raises). An error of the
    socket or the file is raised."""
    if region.length == 0:
        return None
    file = region.file
    release: Callable[[], object] | None
    # As in send_file_region: the descriptor is asked for now, when the bytes go.
    if isinstance(file, int):
        fd, release = file, None
    elif isinstance(file, (str, os.PathLike)):
        fd = os.open(file, os.O_RDONLY)
        release = functools.partial(os.close, fd)
    else:
        fd, release = file.pin(), file.unpin
    try:
        sent = os.sendfile(sock_fd, fd, region.position, region.length)
    except (BlockingIOError, InterruptedError):
        return region
    finally:
        if release is not None:
            release()
    if sent >= region.length:
        return None
    return attrs.evolve(
        region, position=region.position + sent, length=region.length - sent
    )


async def send_file_region(
    stream: trio.abc.Stream,
    region: FileRegion,
    wait_writable: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Write a file region: ``os.sendfile`` on a TCP socket, a copy otherwise.

    sendfile moves the bytes from the page cache to the socket inside the kernel
    (zero-copy: Kafka's ``FileRecords.writeTo`` via ``transferTo``). Other streams
    (the in-memory streams tests use) get the bytes read with ``os.pread``.
    """
    file = region.file
    release: Callable[[], object] | None
    # Pinned or opened now, never earlier: a descriptor number taken when the response
    # was built could have been closed and given to another file by now.
    if isinstance(file, int):
        fd, release = file, None
    elif isinstance(file, (str, os.PathLike)):
        fd = os.open(file, os.O_RDONLY)
        release = functools.partial(os.close, fd)
    else:
        fd, release = file.pin(), file.unpin
    try:
        if isinstance(stream, trio.SocketStream):
            await _sendfile(stream, fd, region, wait_writable)
        else:
            data = os.pread(fd, region.length, region.position)
            if len(data) < region.length:
                raise ShortFileRegion(f"{len(data)} of {region.length} bytes")
            await stream.send_all(data)
    finally:
        if release is not None:
            release()


async def _sendfile(
    stream: trio.SocketStream,
    fd: int,
    region: FileRegion,
    wait_writable: Callable[[], Awaitable[None]] | None,
) -> None:
    sock = stream.socket
    position, remaining = region.position, region.length
    while remaining > 0:
        try:
            sent = os.sendfile(sock.fileno(), fd, position, remaining)
        except BlockingIOError:
            if wait_writable is not None:
                await wait_writable()
            else:
                await trio.lowlevel.wait_writable(sock)
            continue
        if sent == 0:
            raise ShortFileRegion(
                f"file ended {remaining} bytes early at position {position}"
            )
        position += sent
        remaining -= sent
        # A fast reader never makes sendfile block; yield so other connections run.
        await trio.lowlevel.checkpoint()
