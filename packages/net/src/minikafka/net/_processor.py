"""Processors: the network threads of Kafka's Reactor, as trio task groups.

Seed 000: the Acceptor hands each new connection to one of ``num.network.threads``
Processors, round robin, and that Processor alone reads its requests and writes its
responses for the rest of the connection's life. Kafka needs several because a
Processor is a thread running one NIO Selector: framing, copying and (with TLS)
encryption for thousands of sockets saturate one core, so the load is spread over
several threads and cores.

In trio all tasks share one thread and one event loop (epoll is our Selector), so a
Processor here is not a thread: it is the owner of a set of connections (a nursery
holding one task per connection) and of a response queue. We keep it because the
structure is what the seeds teach and what the metrics measure: a response goes from
the handler to the RequestChannel to its Processor's queue to the connection, and
the time it waits there is Kafka's ``ResponseQueueTimeMs``.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Mapping

import attrs
import trio

from minikafka.trace import Tracer

from ._channel import RequestChannel
from ._codec import api_name
from ._config import NetConfig
from ._connection import KafkaChannel
from ._events import ConnectionAccepted, ConnectionClosed, RequestCompleted
from ._framing import FrameDecoder
from ._handoff import HandOff
from ._memory_pool import MemoryPool
from ._quotas import ConnectionQuotas
from ._request import Request, RequestMetrics, Response
from ._sasl_channel import SaslListener
from ._tls import TlsListener

log = logging.getLogger("minikafka.net")

RequestCompletedHook = Callable[[Request, RequestMetrics], None]

# The API's name in every net.request line: built from the key once, not per request.
_api_name = functools.cache(api_name)


@attrs.define(eq=False)
class Processor:
    id: int
    config: NetConfig
    channel: RequestChannel
    supported_apis: Mapping[int, tuple[int, int]]
    tracer: Tracer
    on_request_completed: RequestCompletedHook | None = None
    memory_pool: MemoryPool | None = None
    """``queued.max.request.bytes``, shared by every Processor; None: unbounded."""
    quotas: ConnectionQuotas | None = None
    """The SocketServer's ConnectionQuotas: told when a counted connection closes."""
    connections: dict[str, KafkaChannel] = attrs.field(init=False, factory=dict)
    failed_authentications: int = attrs.field(init=False, default=0)
    """Kafka's ``failed-authentication-total`` of this Processor's connections."""
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    _responses: HandOff[Response] = attrs.field(init=False)
    _connection_index: int = attrs.field(init=False, default=0)
    _all_closed: trio.Event = attrs.field(init=False, factory=trio.Event)
    clock: Callable[[], float] = attrs.field(init=False, default=trio.current_time)
    """trio's clock, read for the request metrics' timestamps: the run's clock's own
    method once running (``trio.current_time`` looks the run up on every call)."""

    def __attrs_post_init__(self) -> None:
        # Kafka's responseQueue is unbounded: a handler never waits on a Processor.
        self._responses = HandOff(math.inf)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        self.clock = trio.lowlevel.current_clock().current_time
        self.channel.add_processor(self)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._process_responses)
                nursery.start_soon(self._close_idle_connections)
                task_status.started()
        finally:
            self.channel.remove_processor(self.id)

    def accept(
        self,
        stream: trio.abc.Stream,
        listener: str,
        peer_address: str | None = None,
        tls: TlsListener | None = None,
        sasl: SaslListener | None = None,
    ) -> KafkaChannel:
        """Take ownership of a new connection (called by the Acceptor).

        ``peer_address`` is given for a connection the Acceptor counted in the
        ConnectionQuotas; its slot is freed when the connection closes. With ``tls``
        the connection reads and writes the socket through TLS (``_tls.py``); with
        ``sasl`` it authenticates before its first request (``_sasl_channel.py``).
        """
        if self._nursery is None:
            raise RuntimeError(f"processor {self.id} is not running")
        self._connection_index += 1
        connection = KafkaChannel(
            id=f"{_describe(stream)}-{self.id}-{self._connection_index}",
            listener=listener,
            stream=stream if tls is None else tls.wrap(stream),
            processor=self,
            decoder=FrameDecoder(self.config.socket_request_max_bytes),
            peer_address=peer_address,
            tls=tls,
            sasl=None if sasl is None else sasl.channel(),
        )
        self.connections[connection.id] = connection
        self._all_closed = trio.Event()
        if self.tracer.enabled:
            self.tracer.emit(ConnectionAccepted(listener, connection.id, self.id))
        self._nursery.start_soon(connection.run)
        return connection

    def enqueue_response(self, response: Response) -> None:
        # Once stopped, the connection is gone, and so is the need to answer.
        if not self._responses.closed:
            self._responses.put_nowait(response)  # unbounded: never full

    async def _process_responses(self) -> None:
        responses = self._responses
        while True:
            # Everything already queued is delivered before this task waits again:
            # responses that arrive together cost one wake-up, not one each.
            try:
                response = await responses.take()
            except trio.EndOfChannel:
                return
            response.request.response_dequeue_time = self.clock()
            connection = self.connections.get(response.request.connection_id)
            if connection is not None:
                connection.deliver(response)

    async def _close_idle_connections(self) -> None:
        """``connections.max.idle.ms``: close connections that have waited that long for a
        request. Kafka's Selector checks its least recently used channel on every poll;
        here the Processor looks at its connections a few times per idle period (at most
        once a second), so one closes at most a tenth of the period (or 1 s) late."""
        idle = self.config.connections_max_idle_ms / 1000
        while True:
            await trio.sleep(min(idle / 10, 1.0))
            now = trio.current_time()
            for connection in list(self.connections.values()):
                connection.expire_if_idle(now, idle)

    def request_completed(self, connection: KafkaChannel, request: Request) -> None:
        traced = self.tracer.wants(RequestCompleted)
        if not traced and self.on_request_completed is None:
            return  # nobody reads the breakdown: do not build it
        breakdown = request.time_breakdown()
        if traced:
            header = request.header  # read directly: this runs once per request
            request_queue, local, remote, response_queue, response_send, total = (
                breakdown
            )
            # The event's field values in its field order, not the frozen event: a
            # tuple costs a tenth of building sixteen fields (and *breakdown, a list).
            self.tracer.emit_fields(
                RequestCompleted,
                (
                    request.listener,
                    connection.id,
                    self.id,
                    header.client_id,
                    header.api_key,
                    _api_name(header.api_key),
                    header.api_version,
                    header.correlation_id,
                    request.size,
                    request.response_size,
                    request_queue,
                    local,
                    remote,
                    response_queue,
                    response_send,
                    total,
                ),
            )
        if self.on_request_completed is not None:
            try:
                self.on_request_completed(request, RequestMetrics(*breakdown))
            except Exception:
                log.exception("on_request_completed hook failed")

    def authentication_failed(self, connection: KafkaChannel, reason: str) -> None:
        """Count a failed authentication and say so once, as Kafka's Selector does."""
        self.failed_authentications += 1
        log.info(
            "Failed authentication with %s (channelId=%s) (%s)",
            connection.peer_address or _remote(connection.id),
            connection.id,
            reason,
        )

    def connection_closed(self, connection: KafkaChannel) -> None:
        self.connections.pop(connection.id, None)
        if self.quotas is not None and connection.peer_address is not None:
            self.quotas.connection_closed(connection.peer_address)
        if self.tracer.enabled:
            self.tracer.emit(
                ConnectionClosed(
                    connection.id, self.id, connection.close_reason, connection.requests
                )
            )
        if not self.connections:
            self._all_closed.set()

    async def close_connections(self) -> None:
        """Graceful: stop reading everywhere, let requests in flight finish, wait for all."""
        for connection in list(self.connections.values()):
            connection.stop_reading()
        if self.connections:
            await self._all_closed.wait()

    def stop(self) -> None:
        self.channel.remove_processor(self.id)
        self._responses.close()
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()


def _describe(stream: trio.abc.Stream) -> str:
    """Kafka's connection id: ``local-remote``, when the stream is a socket."""
    if isinstance(stream, trio.SocketStream):
        try:
            local = stream.socket.getsockname()
            remote = stream.socket.getpeername()
            return f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}"
        except OSError:
            pass
    return type(stream).__name__


def _remote(connection_id: str) -> str:
    """The client's address in a ``local-remote-processor-index`` connection id."""
    parts = connection_id.split("-")
    return parts[1].rpartition(":")[0] if len(parts) == 4 else connection_id
