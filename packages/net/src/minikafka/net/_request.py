"""What travels through the RequestChannel: requests in, responses out.

Kafka's ``RequestChannel.Request`` carries the parsed header and body plus the
timestamps its request metrics are made from; a ``Response`` says what the owning
Processor must do: send bytes, send nothing (acks=0 produce) and just unmute, or close
the connection. We keep Kafka's timestamps and metric names (``RequestQueueTimeMs``,
``LocalTimeMs``, ``RemoteTimeMs``, ``ResponseQueueTimeMs``, ``ResponseSendTimeMs``,
``TotalTimeMs``) so a trace reads like Kafka's request log.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TypeVar

import attrs
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.common import FileRegion
from minikafka.security import ANONYMOUS, KafkaPrincipal

from ._codec import api_name, encode_entity, response_schema
from ._framing import SIZE_PREFIX
from ._headers import RequestHeader, encode_response_header, response_header_version

B = TypeVar("B", bound=RequestPayload)


Part = bytes | FileRegion
"""One piece of a response: bytes written as they are, or a file region."""


class ResponseAction(enum.Enum):
    SEND = "send"
    NO_OP = "no-op"  # nothing to write, but the connection must still be unmuted
    CLOSE = "close"


@attrs.frozen
class Response:
    request: Request
    action: ResponseAction
    parts: tuple[Part, ...] = ()
    """The whole frame for SEND: size prefix, header and body, in order."""

    @property
    def size(self) -> int:
        return sum(len(p) if isinstance(p, bytes) else p.length for p in self.parts)


@attrs.frozen
class RequestMetrics:
    """Kafka's request time breakdown, in milliseconds."""

    request_queue_ms: float
    local_ms: float
    remote_ms: float
    response_queue_ms: float
    response_send_ms: float
    total_ms: float


@attrs.define(eq=False)
class Request:
    """One request read from a connection, on its way to a handler and back.

    A handler answers by calling exactly one of :meth:`respond`,
    :meth:`respond_parts`, :meth:`respond_nothing` or :meth:`close_connection`, now or
    later (a delayed operation answers from another task); the answer goes to the
    Processor that owns the connection, which writes it and unmutes the connection.
    """

    processor_id: int
    connection_id: str
    header: RequestHeader
    body: RequestPayload | None
    """``None`` only for an ApiVersions request of a version we cannot read."""
    size: int
    listener: str
    start_time: float
    """When the whole request had been read (Kafka's ``startTimeNanos``)."""
    _deliver: Callable[[Response], None]
    _clock: Callable[[], float]
    principal: KafkaPrincipal = attrs.field(default=ANONYMOUS, kw_only=True)
    """Who sent it: the connection's principal (Kafka's ``RequestContext.principal``)."""
    dequeue_time: float | None = attrs.field(init=False, default=None)
    api_local_complete_time: float | None = attrs.field(init=False, default=None)
    response_complete_time: float | None = attrs.field(init=False, default=None)
    response_dequeue_time: float | None = attrs.field(init=False, default=None)
    send_complete_time: float | None = attrs.field(init=False, default=None)
    response_size: int = attrs.field(init=False, default=0)
    _release: Callable[[], None] | None = attrs.field(init=False, default=None)

    def hold_buffer(self, release: Callable[[], None]) -> None:
        """The request holds memory from ``queued.max.request.bytes``; ``release`` frees it."""
        self._release = release

    def release_buffer(self) -> None:
        """Give the request's bytes back to the pool (Kafka's ``releaseBuffer``): once the
        handler is done with it, or its connection closed first. Idempotent."""
        release, self._release = self._release, None
        if release is not None:
            release()

    def body_as(self, versions: tuple[type[B], ...]) -> B:
        """The body, typed as one of ``versions``: the kio classes of the versions served.

        kio generates one class per API version (``ProduceRequest`` of v3 and of v8 are
        different types), so a handler names the classes of the versions it serves (a
        Union type, one member per version) and reads the fields they share; a field
        that only some versions have is read after an ``isinstance`` check against
        those versions. A body of any other class is a bug in the server's table.
        """
        body = self.body
        if not isinstance(body, versions):
            raise TypeError(
                f"{self.api_name} v{self.api_version}: unexpected body {body!r:.80}"
            )
        return body

    def response_class(self) -> type[ResponsePayload]:
        """The kio class of this request's answer, of the request's own version."""
        cls = response_schema(self.api_key, self.api_version)
        assert cls is not None, f"no response schema for {self.api_name}"
        return cls

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def api_name(self) -> str:
        return api_name(self.header.api_key)

    @property
    def responded(self) -> bool:
        return self.response_complete_time is not None

    def respond(self, body: ResponsePayload) -> None:
        """Encode ``body`` with this request's response header and send it."""
        self.respond_parts((encode_entity(body),))

    def respond_parts(self, body: Sequence[Part]) -> None:
        """Send a body made of bytes and file regions (a zero-copy fetch response)."""
        version = response_header_version(self.header.api_key, self.header.api_version)
        header = encode_response_header(self.header.correlation_id, version)
        size = len(header)  # Kafka's ResponseBytes, as the request's: no size prefix
        for part in body:
            size += len(part) if isinstance(part, bytes) else part.length
        first = SIZE_PREFIX.pack(size) + header
        # Coalesce a leading bytes part with the prefix: one write instead of two.
        if body and isinstance(body[0], bytes):
            parts: tuple[Part, ...] = (first + body[0], *body[1:])
        else:
            parts = (first, *body)
        self._complete(Response(self, ResponseAction.SEND, parts), size)

    def respond_nothing(self) -> None:
        """No response on the wire (acks=0 produce); the connection is unmuted all the same."""
        self._complete(Response(self, ResponseAction.NO_OP), 0)

    def close_connection(self) -> None:
        self._complete(Response(self, ResponseAction.CLOSE), 0)

    def _complete(self, response: Response, size: int) -> None:
        if self.response_complete_time is not None:
            raise RuntimeError(
                f"{self.api_name} request {self.header.correlation_id} answered twice"
            )
        now = self._clock()
        self.response_complete_time = now
        # Kafka's RequestChannel.sendResponse: answered before the handler returned
        # means all the work was local; otherwise the gap is "remote" (purgatory) time.
        if self.api_local_complete_time is None:
            self.api_local_complete_time = now
        self.response_size = size
        self._deliver(response)

    def metrics(self) -> RequestMetrics:
        """The breakdown once the response has been sent (Kafka's
        ``updateRequestMetrics``)."""
        return RequestMetrics(*self.time_breakdown())

    def time_breakdown(self) -> tuple[float, float, float, float, float, float]:
        """:class:`RequestMetrics`' six values, in its field order: what the
        ``net.request`` trace event is built from, with no metrics object between."""
        # A time not reached yet is the next one's (no response: no queue time). Spelled
        # out, not `x or default` (0.0 is a real time on trio's virtual clock) and not a
        # helper call per time: this runs once per traced request.
        start, end = self.start_time, self.send_complete_time
        if end is None:
            end = self._clock()
        dequeue = self.dequeue_time
        if dequeue is None:
            dequeue = start
        complete = self.response_complete_time
        if complete is None:
            complete = end
        local_done = self.api_local_complete_time
        if local_done is None:
            local_done = complete
        response_dequeue = self.response_dequeue_time
        if response_dequeue is None:
            response_dequeue = complete
        ms = 1000.0
        return (
            (dequeue - start) * ms,  # request_queue_ms
            (local_done - dequeue) * ms,  # local_ms
            (complete - local_done) * ms,  # remote_ms
            (response_dequeue - complete) * ms,  # response_queue_ms
            (end - response_dequeue) * ms,  # response_send_ms
            (end - start) * ms,  # total_ms
        )


REQUEST_TIME_COMPONENTS: tuple[str, ...] = tuple(
    field.name for field in attrs.fields(RequestMetrics)
)
"""The breakdown's names in the order a request lives through them (``request_queue_ms``
... ``response_send_ms``), then ``total_ms``, their sum: the columns of ``net.request``."""
