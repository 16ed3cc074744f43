"""The SocketServer: Acceptors, Processors, the RequestChannel and the handler pool.

Seed 000's Reactor, assembled: one Acceptor per listener accepts connections and deals
them round robin to ``num.network.threads`` Processors; Processors frame requests and
put them into the RequestChannel (bounded by ``queued.max.requests``);
``num.io.threads`` handler tasks take them out and call the :class:`RequestHandler`
(the broker's KafkaApis); responses travel back through the owning Processor.

The limits an attacker (or a runaway client) meets here: ``max.connections`` and
``max.connections.per.ip`` (the ConnectionQuotas, see ``_quotas.py``),
``queued.max.request.bytes`` (the MemoryPool, see ``_memory_pool.py``), and the
process's own descriptor limit: when ``accept()`` fails with EMFILE/ENFILE the Acceptor
says so once, backs off and tries again, while the connections the broker already
holds are served as before.

Shutdown is graceful, in Kafka's order: stop accepting, stop reading new requests,
let the requests in flight be answered, close the connections, stop the handlers.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
from collections.abc import Mapping
from typing import Protocol

import attrs
import trio

from minikafka.trace import Tracer

from ._channel import RequestChannel
from ._config import INT_MAX, Listener, NetConfig
from ._memory_pool import MemoryPool
from ._processor import Processor, RequestCompletedHook
from ._quotas import ConnectionQuotas, normalise_address
from ._request import Request
from ._sasl_channel import SaslListener
from ._tls import TlsListener

log = logging.getLogger("minikafka.net")

# accept() errors that mean "out of resources right now", not "the listener is broken"
_TRANSIENT_ACCEPT_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
# While accept() keeps failing: wait this long, doubling up to the maximum, so a broker
# out of descriptors does not spin, yet accepts again soon after some are freed.
_ACCEPT_BACKOFF = (0.01, 0.5)
# A failing accept() or a full max.connections is logged at most this often.
_LOG_EVERY_SECONDS = 60.0
_MAX_RATE_LIMITED = 1024


class RequestHandler(Protocol):
    """The broker side of the Reactor: Kafka's ``KafkaApis``."""

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """API key -> (min, max) version this handler serves; exactly what it
        advertises."""
        ...

    async def handle(self, request: Request) -> None:
        """Answer ``request`` (now, or later from another task) by one of its respond
        methods."""
        ...


@attrs.define(eq=False)
class Acceptor:
    """Accepts connections on one listener and deals them out round robin."""

    listener: Listener
    processors: list[Processor]
    quotas: ConnectionQuotas | None = None
    send_buffer_bytes: int = -1
    """``socket.send.buffer.bytes``: SO_SNDBUF of each accepted socket (-1: the OS's)."""
    receive_buffer_bytes: int = -1
    """``socket.receive.buffer.bytes``: SO_RCVBUF of the listening socket, which accepted
    sockets inherit; set before any connection arrives, since TCP settles its window
    scale in the handshake."""
    tls: TlsListener | None = None
    """The listener's TLS (``SSL``, ``SASL_SSL``), handed to each connection."""
    sasl: SaslListener | None = None
    """The listener's SASL (``SASL_PLAINTEXT``, ``SASL_SSL``), for each connection."""
    bound: list[tuple[str, int]] = attrs.field(init=False, factory=list)
    accept_failures: int = attrs.field(init=False, default=0)
    """accept() calls that failed for want of descriptors or memory, ever."""
    _listeners: list[trio.SocketListener] = attrs.field(init=False, factory=list)
    _next_processor: int = attrs.field(init=False, default=0)
    _last_logged: dict[str, float] = attrs.field(init=False, factory=dict)

    async def bind(self) -> None:
        self._listeners = await trio.open_tcp_listeners(
            self.listener.port, host=self.listener.host
        )
        for socket_listener in self._listeners:
            if self.receive_buffer_bytes > 0:
                socket_listener.socket.setsockopt(
                    socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer_bytes
                )
            address = socket_listener.socket.getsockname()
            self.bound.append((address[0], address[1]))

    async def aclose(self) -> None:
        for socket_listener in self._listeners:
            await socket_listener.aclose()

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for socket_listener in self._listeners:
                nursery.start_soon(self._accept_loop, socket_listener)

    async def _accept_loop(self, socket_listener: trio.SocketListener) -> None:
        async with socket_listener:
            while True:
                if self.quotas is None:
                    stream = await self._accept(socket_listener)
                    self._hand_over(stream)
                    continue
                await self._wait_for_slot(self.quotas)
                stream = await self._accept(socket_listener)
                try:
                    # at once, unless another listener won
                    await self.quotas.acquire_slot()
                except BaseException:
                    await trio.aclose_forcefully(stream)
                    raise
                address = _peer_address(stream)
                if not self.quotas.add_address(address):
                    self.quotas.release_slot()
                    await trio.aclose_forcefully(stream)
                    # Kafka logs every rejection; a flood of them would flood the log.
                    if self._may_log(f"per-ip {address}"):
                        log.info(
                            "rejected a connection from %s on %s: it already holds the "
                            "maximum of %d connections (max.connections.per.ip; logged "
                            "at "
                            "most once a minute per address)",
                            address,
                            self._where,
                            self.quotas.limit_for(address),
                        )
                    continue
                try:
                    self._hand_over(stream, address)
                except BaseException:
                    self.quotas.connection_closed(address)
                    await trio.aclose_forcefully(stream)
                    raise

    def _hand_over(self, stream: trio.SocketStream, address: str | None = None) -> None:
        """Give the connection to the next Processor, with the listener's TLS and SASL."""
        self._next().accept(
            stream, self.listener.name, address, tls=self.tls, sasl=self.sasl
        )

    def _next(self) -> Processor:
        processor = self.processors[self._next_processor % len(self.processors)]
        self._next_processor += 1
        return processor

    async def _wait_for_slot(self, quotas: ConnectionQuotas) -> None:
        """max.connections: block (not reset) until the broker holds fewer connections."""
        if quotas.total >= quotas.max_connections and self._may_log("slot"):
            log.info(
                "%s: the broker holds max.connections=%d connections; accepting more "
                "once one closes",
                self._where,
                quotas.max_connections,
            )
        await quotas.wait_for_slot()

    async def _accept(self, socket_listener: trio.SocketListener) -> trio.SocketStream:
        """accept(), riding out EMFILE/ENFILE: existing connections are served
        meanwhile."""
        backoff, longest = _ACCEPT_BACKOFF
        failed = 0
        while True:
            try:
                stream = await socket_listener.accept()
            except OSError as e:
                if e.errno not in _TRANSIENT_ACCEPT_ERRORS:
                    raise
                failed += 1
                self.accept_failures += 1
                if self._may_log("accept failed"):
                    log.warning(
                        "accept on %s failed: %s; connections already open are still "
                        "served; retrying (logged at most once a minute)",
                        self._where,
                        e.strerror or e,
                    )
                await trio.sleep(backoff)
                backoff = min(backoff * 2, longest)
                continue
            if failed and self._may_log("accept resumed"):
                log.info(
                    "%s: accepting again after %d failed accept()s", self._where, failed
                )
            if self.send_buffer_bytes > 0:
                # Kafka's Acceptor.configureAcceptedSocketChannel. A socket the client
                # has already reset may refuse; its first read will close it.
                with contextlib.suppress(OSError):
                    stream.socket.setsockopt(
                        socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes
                    )
            return stream

    @property
    def _where(self) -> str:
        """The listener as bound (port 0 resolved), for log lines."""
        if not self.bound:
            return str(self.listener)
        host, port = self.bound[0]
        return f"{self.listener.name}://{host}:{port}"

    def _may_log(self, what: str) -> bool:
        """Rate limit: True at most once per ``_LOG_EVERY_SECONDS`` for each ``what``."""
        now = trio.current_time()
        last = self._last_logged.get(what)
        if last is not None and now - last < _LOG_EVERY_SECONDS:
            return False
        if len(self._last_logged) >= _MAX_RATE_LIMITED:
            # Many addresses rejected at once: forget them rather than grow without end.
            self._last_logged.clear()
        self._last_logged[what] = now
        return True


def _peer_address(stream: trio.SocketStream) -> str:
    try:
        return normalise_address(str(stream.socket.getpeername()[0]))
    except OSError:
        return "unknown"  # already reset by the client; it will close at its first read


@attrs.define(eq=False)
class SocketServer:
    config: NetConfig
    handler: RequestHandler
    on_request_completed: RequestCompletedHook | None = None
    tracer: Tracer = attrs.field(kw_only=True)
    """Where the Reactor's events go, with this node's id: given by whoever builds the
    server (the broker passes its node's tracer), never looked up globally."""
    channel: RequestChannel = attrs.field(init=False)
    processors: list[Processor] = attrs.field(init=False, factory=list)
    acceptors: list[Acceptor] = attrs.field(init=False, factory=list)
    memory_pool: MemoryPool | None = attrs.field(init=False, default=None)
    """``queued.max.request.bytes``; None when unbounded (Kafka's default, -1)."""
    quotas: ConnectionQuotas | None = attrs.field(init=False, default=None)
    """max.connections and max.connections.per.ip; None when neither is set."""
    _acceptor_scope: trio.CancelScope = attrs.field(
        init=False, factory=trio.CancelScope
    )
    _handler_scope: trio.CancelScope = attrs.field(init=False, factory=trio.CancelScope)
    _stopped: trio.Event = attrs.field(init=False, factory=trio.Event)
    _shutting_down: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self.channel = RequestChannel(self.config.queued_max_requests)
        if self.config.memory_pool_bytes is not None:
            self.memory_pool = MemoryPool(self.config.memory_pool_bytes)

    def bound_address(self, listener: str | None = None) -> tuple[str, int]:
        """(host, port) actually bound for a listener (the first one by default)."""
        for acceptor in self.acceptors:
            if listener is None or acceptor.listener.name == listener:
                return acceptor.bound[0]
        raise KeyError(listener)

    async def serve(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Bind every listener, then serve until :meth:`shutdown` has finished."""
        supported = dict(self.handler.api_versions())
        if _has_connection_limits(self.config):
            self.quotas = await ConnectionQuotas.resolve(self.config)
        # Bind first, outside any nursery, so "address already in use" reaches the
        # caller as a plain OSError and no half-started server is left behind.
        tls = {
            settings.listener: TlsListener.from_settings(settings)
            for settings in self.config.listener_ssl
        }
        sasl = {
            settings.listener: SaslListener(settings)
            for settings in self.config.listener_sasl
        }
        try:
            for listener in self.config.listeners:
                acceptor = Acceptor(
                    listener,
                    self.processors,
                    self.quotas,
                    send_buffer_bytes=self.config.socket_send_buffer_bytes,
                    receive_buffer_bytes=self.config.socket_receive_buffer_bytes,
                    tls=tls.get(listener.name),
                    sasl=sasl.get(listener.name),
                )
                await acceptor.bind()
                self.acceptors.append(acceptor)
        except OSError:
            for acceptor in self.acceptors:
                await acceptor.aclose()
            raise
        async with trio.open_nursery() as nursery:
            for i in range(self.config.num_network_threads):
                processor = Processor(
                    i,
                    self.config,
                    self.channel,
                    supported,
                    self.tracer,
                    self.on_request_completed,
                    memory_pool=self.memory_pool,
                    quotas=self.quotas,
                )
                self.processors.append(processor)
                await nursery.start(processor.run)
            nursery.start_soon(self._run_acceptors)
            nursery.start_soon(self._run_handlers)
            task_status.started()
            await self._stopped.wait()
            nursery.cancel_scope.cancel()

    async def _run_acceptors(self) -> None:
        with self._acceptor_scope:
            async with trio.open_nursery() as nursery:
                for acceptor in self.acceptors:
                    nursery.start_soon(acceptor.run)

    async def _run_handlers(self) -> None:
        with self._handler_scope:
            async with trio.open_nursery() as nursery:
                for _ in range(self.config.num_io_threads):
                    nursery.start_soon(self._handler_loop)

    async def _handler_loop(self) -> None:
        """One KafkaRequestHandler: take a request, hand it to the handler, repeat."""
        now = trio.lowlevel.current_clock().current_time  # trio.current_time, bound
        while True:
            try:
                request = await self.channel.receive_request()
            except trio.EndOfChannel:
                return
            request.dequeue_time = now()
            try:
                await self.handler.handle(request)
            except Exception:
                log.exception(
                    "%s request from %s failed; closing the connection",
                    request.api_name,
                    request.connection_id,
                )
                if not request.responded:
                    request.close_connection()
            finally:
                # Kafka's KafkaRequestHandler: the handler is done with the request's
                # bytes (a delayed answer keeps only what it built from them).
                request.release_buffer()
            if request.api_local_complete_time is None:
                # Not answered yet: the rest is remote time (a delayed operation).
                request.api_local_complete_time = now()

    @property
    def failed_authentications(self) -> int:
        """Kafka's ``failed-authentication-total``, over every listener."""
        return sum(processor.failed_authentications for processor in self.processors)

    @property
    def connection_count(self) -> int:
        return sum(len(processor.connections) for processor in self.processors)

    async def shutdown(self, grace_seconds: float = 30.0) -> None:
        """Stop accepting, finish requests in flight, close connections, stop
        handlers."""
        if self._shutting_down:
            await self._stopped.wait()
            return
        self._shutting_down = True
        self._acceptor_scope.cancel()
        with trio.move_on_after(grace_seconds) as scope:
            async with trio.open_nursery() as nursery:
                for processor in self.processors:
                    nursery.start_soon(processor.close_connections)
        if scope.cancelled_caught:
            log.warning(
                "requests still in flight after %.1fs; closing anyway", grace_seconds
            )
        self.channel.close()
        self._handler_scope.cancel()
        for processor in self.processors:
            processor.stop()
        self.tracer.flush()
        self._stopped.set()


def _has_connection_limits(config: NetConfig) -> bool:
    # Without limits there is nothing to count: the accept path stays as it was.
    return (
        config.max_connections < INT_MAX
        or config.max_connections_per_ip < INT_MAX
        or bool(config.max_connections_per_ip_overrides)
    )
