"""One client connection, owned by one Processor: Kafka's ``KafkaChannel``.

The ordering argument of seed 003, in one loop. A connection reads until it holds
one complete request, then *mutes* itself: it reads nothing more from the socket
until that request's response has been written, and only then *unmutes* and takes the
next request (which may already sit in the frame decoder, read ahead in the same
``recv``: Kafka's ``stagedReceives``). So at most one request per connection is ever
in the RequestChannel, and although many handlers run at once, one client's
requests are handled and answered in the order it sent them. A request with no
response (acks=0 produce) still unmutes the connection.

Kafka's Processor mutes by removing ``OP_READ`` from the selector and unmutes in
``processCompletedSends``; here the connection's task simply does not call
``receive_some`` while a request is in flight.

With ``queued.max.request.bytes`` set, a connection also takes its next request's bytes
from the MemoryPool as soon as the size prefix is known, and reads no further while the
pool is empty (Kafka mutes such channels "for memory pressure"). That wait happens only
between requests, so it never reorders them.

Who does the work. While the connection is muted its task is parked, and the connection
belongs to its Processor, as in Kafka where the Processor thread does everything. When the
response arrives the Processor (:meth:`KafkaChannel.deliver`) writes it if the socket takes
it at once, completes the request, unmutes, and if the next request is already read it
parses it, mutes again and queues it: a client that pipelines is served without waking its
connection's task at all, which costs a trio task switch per request otherwise. The task is
handed the connection back only for what must wait: a read, a write or a file region's
sendfile the socket cannot take now, a full RequestChannel, memory from the pool, or a
close.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
import trio

from minikafka.security import ANONYMOUS, KafkaPrincipal

from ._api_keys import ApiKey
from ._codec import BodyDecodeError, api_name, decode_request_body
from ._framing import ForeignProtocol, FrameDecoder, FrameError
from ._handoff import HandOff
from ._headers import (
    InvalidRequest,
    UnknownApiKey,
    UnsupportedApiVersion,
    parse_request_header,
)
from ._request import Part, Request, Response, ResponseAction
from ._sasl_channel import SaslChannel, SaslClose
from ._socket_io import ShortFileRegion, send_file_region, write_nowait, write_parts
from ._tls import TlsHandshakeFailed, TlsListener, tls_handshake

if TYPE_CHECKING:
    from ._memory_pool import MemoryPool
    from ._processor import Processor

log = logging.getLogger("minikafka.net")

# Close reasons that are part of normal life, not worth a log line.
_QUIET_REASONS = ("", "shutdown", "closed by client", "idle")


class _Queued:
    """The Processor queued the next request itself: nothing to hand back."""


_QUEUED = _Queued()

HandBack = Response | Request | Exception | None
"""What the Processor hands a parked connection's task: a response to finish (close, or
write what the socket did not take), a request to queue (the RequestChannel was full),
the error the next frame raised, or None: read on."""


READ_AHEAD_READS = 8
"""How many reads' worth a connection whose response waits to be written reads ahead.
One read's worth (100 KiB at Kafka's ``socket.receive.buffer.bytes``) froze a
connection in 2 of 6 paced runs at 10,000 one-record requests a second once the broker
answered faster than its client read (bench/README.md, ``e2e_latency``); eight froze
none of 10. It is bytes held only while that client does not read its answers."""


@attrs.define(eq=False)
class KafkaChannel:
    id: str
    listener: str
    stream: trio.abc.Stream
    processor: Processor
    decoder: FrameDecoder
    peer_address: str | None = None
    """The client's IP address, normalised (what ``max.connections.per.ip`` counts)."""
    tls: TlsListener | None = None
    """The listener's TLS, when it speaks it: ``stream`` is then its ``SSLStream``."""
    sasl: SaslChannel | None = None
    """The SASL exchange of a SASL listener's connection (``_sasl_channel.py``)."""
    principal: KafkaPrincipal = ANONYMOUS
    """Who the connection is (Kafka's ``KafkaChannel.principal``): each request carries
    it to the handlers."""
    muted: bool = attrs.field(init=False, default=False)
    requests: int = attrs.field(init=False, default=0)
    close_reason: str = attrs.field(init=False, default="")
    _handed_back: HandOff[HandBack] = attrs.field(init=False)
    _parked: bool = attrs.field(init=False, default=False)
    """The task waits for the Processor to hand the connection back (so the Processor
    may write to the socket and take the next request itself)."""
    _fd: int = attrs.field(init=False, default=-1)
    """The socket's descriptor for the Processor's non-blocking writes; -1 when the
    stream is not a socket (tests' in-memory streams): the task then does all the I/O."""
    _read_scope: trio.CancelScope | None = attrs.field(init=False, default=None)
    _reading: bool = attrs.field(init=False, default=False)
    """The task waits for the socket to become readable (unmuted, no request here)."""
    _read_since: float = attrs.field(init=False, default=0.0)
    _expired: bool = attrs.field(init=False, default=False)
    _stop: trio.Event = attrs.field(init=False, factory=trio.Event)
    _closed: trio.Event = attrs.field(init=False, factory=trio.Event)
    _reserved: int | None = attrs.field(init=False, default=None)
    """Bytes taken from the MemoryPool for the next frame, not yet handed to a Request
    (None: nothing taken; 0 is a real reservation, for an empty frame)."""
    _in_flight: Request | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        # Room for one: a muted connection has at most one request in flight.
        self._handed_back = HandOff(1)
        if isinstance(self.stream, trio.SocketStream):
            self._fd = self.stream.socket.fileno()

    def deliver(self, response: Response) -> None:
        """Called by the owning Processor with this connection's response.

        The fast path of the module docstring: write, complete, take the next request,
        all without the connection's task; whatever must wait is handed back to it.
        """
        self._in_flight = None
        handed: HandBack = response
        if self._parked and response.action is not ResponseAction.CLOSE:
            try:
                next_step = self._write_and_continue(response)
            except (
                Exception
            ) as e:  # a bad next frame: the task closes, as if it had read it
                next_step = e
            if isinstance(next_step, _Queued):
                return
            handed = next_step
        try:
            handed_over = self._handed_back.put_nowait(handed)
        except trio.ClosedResourceError:
            handed_over = False
        if not handed_over:
            log.warning(
                "%s: dropped a response for a connection that is not waiting", self.id
            )

    def _write_and_continue(self, response: Response) -> HandBack | _Queued:
        """Write ``response`` without blocking and queue the next request if it is here.

        Returns what the task must do next: finish a response (what was not written),
        queue a request (the RequestChannel is full: the task waits, that is
        backpressure), read (None), or nothing (``_QUEUED``: the next request is on its
        way, still muted).
        """
        if response.action is ResponseAction.SEND:
            left = self._write_nowait(response.parts)
            if left:
                return (
                    attrs.evolve(response, parts=left)
                    if left != response.parts
                    else response
                )
        self._completed(response.request)
        if self.sasl is not None:
            return None  # the task takes the next request: it passes the SASL gate
        request = self._take_request_nowait()
        if request is None:
            return None
        if self.processor.channel.try_send_request(request):
            return _QUEUED
        return request

    def _write_nowait(self, parts: tuple[Part, ...]) -> tuple[Part, ...]:
        """Write what the socket takes now; returns the parts (or rest of one) not written.

        File regions too (``write_nowait``): a fetch answer leaves in this write, not a
        turn later. An error is left to the task, whose write meets it and closes.
        """
        if self._fd < 0:
            return parts
        return write_nowait(self._fd, parts)

    @property
    def _idle_seconds(self) -> float:
        """``connections.max.idle.ms``, in trio's seconds."""
        return self.processor.config.connections_max_idle_ms / 1000

    def stop_reading(self) -> None:
        """Graceful shutdown: finish the request in flight, then close."""
        self._stop.set()
        if self._read_scope is not None:
            self._read_scope.cancel()
        if self._reading:
            self._wake_reader()

    async def run(self) -> None:
        logged = False
        try:
            if self.tls is not None:
                assert isinstance(self.stream, trio.SSLStream)
                self.principal = await tls_handshake(
                    self.stream, self.tls.mapper, self._idle_seconds
                )
            await self._serve()
        except TlsHandshakeFailed as e:
            self.close_reason = f"failed authentication: {e}"
            self.processor.authentication_failed(self, f"SSL handshake failed: {e}")
            logged = True
        except SaslClose as e:
            self.close_reason = f"SASL: {e}"
        except ForeignProtocol as e:
            self.close_reason = f"bad frame: {e}"
            log_foreign_protocol(self.id, self.listener, e)
            logged = True
        except FrameError as e:
            self.close_reason = f"bad frame: {e}"
        except InvalidRequest as e:
            self.close_reason = f"invalid request: {e}"
        except ShortFileRegion as e:
            self.close_reason = f"short file region: {e}"
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as e:
            self.close_reason = f"socket error: {e!r}"
        except Exception as e:
            # Last line of defence: whatever one connection triggers ends that
            # connection, never its Processor or the server.
            log.exception("%s: unexpected error; closing the connection", self.id)
            self.close_reason = f"internal error: {type(e).__name__}: {e}"
        finally:
            self._parked = False
            self._handed_back.close()
            self._release_memory()
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)
            if self.close_reason not in _QUIET_REASONS and not logged:
                log.info("closed %s: %s", self.id, self.close_reason)
            self.processor.connection_closed(self)
            self._closed.set()

    async def wait_closed(self) -> None:
        """Until the connection is closed and its Processor has let it go
        (``close_reason`` says why)."""
        await self._closed.wait()

    def _release_memory(self) -> None:
        """Whatever this connection still holds of the MemoryPool goes back to it."""
        pool = self.processor.memory_pool
        if pool is not None and self._reserved is not None:
            pool.release(self._reserved)
            self._reserved = None
        if self._in_flight is not None:
            # The handler may still hold it; release_buffer is idempotent.
            self._in_flight.release_buffer()
            self._in_flight = None

    async def _serve(self) -> None:
        request: Request | None = None
        while True:
            if request is None:
                request = await self._next_request()
                if request is None:
                    return
            if self.sasl is None or self.sasl.gate(self, request):
                await self.processor.channel.send_request(request)
            # Muted: the connection is the Processor's until it hands it back.
            self._parked = True
            try:
                handed = await self._handed_back.take()
            finally:
                self._parked = False
            if isinstance(handed, Exception):
                raise handed
            if isinstance(handed, Response):
                if not await self._finish(handed):
                    return
                request = None
            else:
                request = handed  # parsed but not queued, or None: read the next
            if self.sasl is not None and self.sasl.close_delay is not None:
                self.close_reason = await self.sasl.close_after_failure(self)
                return

    async def _finish(self, response: Response) -> bool:
        """Close, or write and complete, what the Processor handed back; False: closed."""
        request = response.request
        if response.action is ResponseAction.CLOSE:
            self.close_reason = f"closed by the {request.api_name} handler"
            return False
        if response.action is ResponseAction.SEND:
            # A client that stops reading is as idle as one that stops writing.
            with trio.move_on_after(self._idle_seconds) as write_scope:
                await self._write(response)
            if write_scope.cancelled_caught:
                self.close_reason = "idle: response not read"
                return False
        self._completed(request)
        return True

    def _completed(self, request: Request) -> None:
        """The response is written (or there is none): count it and unmute."""
        request.send_complete_time = trio.current_time()
        self.requests += 1
        self.processor.request_completed(self, request)
        self.muted = False

    async def _next_request(self) -> Request | None:
        """Read until a whole request is here, and mute; None when the connection ends."""
        while True:
            frame = await self._next_frame()
            if frame is None:
                return None
            if self.sasl is None or not await self.sasl.takes_frame(self, frame):
                return self._dispatch(frame)
            self._release_memory()  # the exchange's, not a request's

    def _take_request_nowait(self) -> Request | None:
        """The next request if it is already read and (with a pool) its memory is free now."""
        if self._stop.is_set():
            return None
        pool = self.processor.memory_pool
        if pool is not None and self._reserved is None:
            size = self.decoder.next_frame_size()
            if size is None or not pool.try_allocate(size):
                return None
            self._reserved = size
        frame = self.decoder.next_frame()
        if frame is None:
            return None
        return self._dispatch(frame)

    def _dispatch(self, frame: bytes) -> Request:
        # Kafka's startTimeNanos is taken before parsing: parse time counts as
        # request queue time, not as no time at all.
        request = self._parse(frame, received=self.processor.clock())
        self._hand_over_memory(request)
        self.muted = True
        return request

    def _hand_over_memory(self, request: Request) -> None:
        pool = self.processor.memory_pool
        if pool is None or self._reserved is None:
            return
        nbytes, self._reserved = self._reserved, None
        request.hold_buffer(lambda: pool.release(nbytes))
        self._in_flight = request

    async def _next_frame(self) -> bytes | None:
        """The next complete request frame, reading only while unmuted."""
        idle = self._idle_seconds
        read_size = self.processor.config.read_size
        pool = self.processor.memory_pool
        while True:
            if self._stop.is_set():
                break
            if pool is not None and self._reserved is None:
                size = self.decoder.next_frame_size()
                if size is not None:
                    await self._reserve(pool, size)
                    continue  # stopped, or reserved: either way, look again
            frame = self.decoder.next_frame()
            if frame is not None:
                return frame
            data: bytes | bytearray | None
            if self._fd >= 0:
                data = await self._read_socket(read_size)
            else:
                data = await self._read_stream(read_size, idle)
            if data is None:
                if self._stop.is_set():
                    break
                # connections.max.idle.ms: nothing arrived for that long.
                self.close_reason = "idle"
                return None
            if not data:
                self.close_reason = (
                    "closed by client mid-request"
                    if self.decoder.buffered
                    else "closed by client"
                )
                return None
            self.decoder.feed(data)
        self.close_reason = "shutdown"
        return None

    async def _read_socket(self, size: int) -> bytes | None:
        """One read from the socket; None if the Processor ended the wait (idle, shutdown).

        A plain non-blocking read first, and only if there is nothing to read a wait for
        readability: no deadline of its own, since the Processor closes idle connections
        (:meth:`expire_if_idle`), as Kafka's Selector does; a deadline per read would cost
        a cancel scope per request.
        """
        assert isinstance(self.stream, trio.SocketStream)
        sock = self.stream.socket
        while True:
            try:
                return os.read(self._fd, size)
            except BlockingIOError:
                pass
            self._read_since = trio.current_time()
            self._reading = True
            try:
                await trio.lowlevel.wait_readable(sock)
            except trio.ClosedResourceError:
                return None  # notify_closing: the Processor or stop_reading woke us
            finally:
                self._reading = False
            if self._expired or self._stop.is_set():
                return None

    async def _read_stream(self, size: int, idle: float) -> bytes | bytearray | None:
        """One read from any other stream (tests' in-memory pairs), with its own deadline."""
        with trio.move_on_after(idle) as scope:
            self._read_scope = scope
            data = await self.stream.receive_some(size)
        self._read_scope = None
        return None if scope.cancelled_caught else data

    def expire_if_idle(self, now: float, idle: float) -> None:
        """Close the connection if it has waited ``idle`` seconds for a request (called by
        the Processor's idle check; Kafka's ``Selector`` idle expiry)."""
        if self._reading and now - self._read_since >= idle:
            self._expired = True
            self._wake_reader()

    def _wake_reader(self) -> None:
        # Only ever followed by closing the socket: the task returns and run() closes it.
        if isinstance(self.stream, trio.SocketStream):
            trio.lowlevel.notify_closing(self.stream.socket)

    async def _reserve(self, pool: MemoryPool, size: int) -> None:
        """Take ``size`` bytes from the pool, waiting (muted) while it is exhausted."""
        while not pool.try_allocate(size):
            with trio.CancelScope() as scope:
                self._read_scope = scope  # stop_reading() cancels this wait too
                await pool.wait_for_memory()
            self._read_scope = None
            if self._stop.is_set():
                return
        self._reserved = size

    def _parse(self, frame: bytes, received: float) -> Request:
        """Header, API check and body: what Kafka's Processor does in ``parseRequestHeader``."""
        header, offset = parse_request_header(frame)
        supported: Mapping[int, tuple[int, int]] = self.processor.supported_apis
        versions = supported.get(header.api_key)
        if versions is None:
            raise UnknownApiKey(
                f"api key {header.api_key} ({api_name(header.api_key)}) is not served"
            )
        low, high = versions
        body = None
        if low <= header.api_version <= high:
            try:
                body = decode_request_body(
                    header.api_key, header.api_version, frame, offset
                )
            except BodyDecodeError as e:
                raise InvalidRequest(str(e)) from e
        elif header.api_key != ApiKey.API_VERSIONS:
            # Only ApiVersions is answered at a version we do not speak (KIP-511); the
            # handler replies in v0 with UNSUPPORTED_VERSION and the supported ranges.
            raise UnsupportedApiVersion(
                f"{api_name(header.api_key)} v{header.api_version} is not in {low}-{high}"
            )
        return Request(
            processor_id=self.processor.id,
            connection_id=self.id,
            header=header,
            body=body,
            size=len(frame),  # Kafka's RequestBytes: header and body, no size prefix
            listener=self.listener,
            start_time=received,
            deliver=self.processor.channel.send_response,
            clock=self.processor.clock,
            principal=self.principal,
        )

    async def _write(self, response: Response) -> None:
        if self._fd < 0:
            for part in response.parts:
                if isinstance(part, bytes):
                    await self.stream.send_all(part)
                else:
                    await send_file_region(self.stream, part)
            return
        parts = response.parts
        while parts:
            part = parts[0]
            if not isinstance(part, bytes):
                await send_file_region(self.stream, part, self._wait_writable)
                parts = parts[1:]
                continue
            left = write_parts(self._fd, parts)  # a socket error closes the connection
            if left == parts:
                await self._wait_writable()
            parts = left

    async def _wait_writable(self) -> None:
        """Wait until the socket takes more, reading ahead (bounded) meanwhile.

        Muted means no request is *taken*; the bytes may still be read. A client that
        pipelines keeps writing while its connection waits to write a response, and if
        nobody reads, the receive buffer fills. Linux then drops the client's segments
        (``TCPRcvQDrop``: a buffer set with ``socket.receive.buffer.bytes`` cannot
        grow), and with them the acknowledgements this write waits for: both ends back
        off exponentially and the connection freezes for seconds at a time (measured on
        loopback). So while it waits, the task reads ahead into the frame decoder,
        up to ``READ_AHEAD_READS`` reads buffered: the requests stay queued in order,
        untouched, and memory per connection stays bounded. The freeze becomes rare,
        not impossible; ``socket.receive.buffer.bytes=-1`` lets Linux size the buffer.
        """
        assert isinstance(self.stream, trio.SocketStream)
        sock = self.stream.socket
        limit = READ_AHEAD_READS * self.processor.config.read_size
        if self.decoder.buffered >= limit:
            await trio.lowlevel.wait_writable(sock)
            return

        async def read_ahead() -> None:
            while self.decoder.buffered < limit:
                await trio.lowlevel.wait_readable(sock)
                try:
                    data = os.read(self._fd, limit - self.decoder.buffered)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    break  # the write, or the next read, meets it and closes
                if not data:
                    break  # end of stream: the next read after this write sees it
                self.decoder.feed(data)
            await trio.sleep_forever()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_ahead)
            await trio.lowlevel.wait_writable(sock)
            nursery.cancel_scope.cancel()


def log_foreign_protocol(
    connection: str, listener: str, error: ForeignProtocol
) -> None:
    """One WARNING an operator can act on, instead of "a frame of 369 MB"."""
    if error.protocol == "TLS":
        log.warning(
            "%s: a client tried TLS on PLAINTEXT listener %s; closing the connection "
            "(the client must use security.protocol=PLAINTEXT on this listener)",
            connection,
            listener,
        )
    else:
        log.warning(
            "%s: a client sent an %s request to PLAINTEXT listener %s; closing the "
            "connection (this port speaks the Kafka protocol)",
            connection,
            error.protocol,
            listener,
        )
