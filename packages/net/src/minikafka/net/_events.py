"""Trace events of the network layer (ARCHITECTURE.md, "Traces and labs").

``net.request`` carries Kafka's request time breakdown for every request, so the
labs can ask where a request spent its time: waiting in the RequestChannel, in the
handler, parked in a purgatory, waiting for its Processor, or being written.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event


@register_event
@attrs.frozen
class RequestCompleted(TraceEvent):
    COMPONENT: ClassVar[str] = "net"
    EVENT: ClassVar[str] = "request"

    listener: str
    connection_id: str
    processor_id: int
    client_id: str | None
    api_key: int
    api_name: str
    api_version: int
    correlation_id: int
    request_bytes: int
    response_bytes: int
    request_queue_ms: float
    local_ms: float
    remote_ms: float
    response_queue_ms: float
    response_send_ms: float
    total_ms: float


@register_event
@attrs.frozen
class ConnectionAccepted(TraceEvent):
    COMPONENT: ClassVar[str] = "net"
    EVENT: ClassVar[str] = "connection_accepted"

    listener: str
    connection_id: str
    processor_id: int


@register_event
@attrs.frozen
class ConnectionClosed(TraceEvent):
    COMPONENT: ClassVar[str] = "net"
    EVENT: ClassVar[str] = "connection_closed"

    connection_id: str
    processor_id: int
    reason: str
    requests: int
