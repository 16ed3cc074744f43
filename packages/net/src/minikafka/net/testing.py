"""Helpers other packages' tests reuse: a server on a free port, raw frames, a raw
reader, a scriptable handler, waiting for a condition with a deadline, the TCP fault
proxy that cluster tests put between nodes, and a throw-away CA for TLS listeners."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

import attrs
import trio
from kio.schema.metadata.v9.request import MetadataRequest
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.trace import NullTracer

from ._api_keys import ApiKey
from ._api_versions import handle_api_versions
from ._codec import build, decode_response_body, encode_entity, response_schema
from ._config import Listener, NetConfig
from ._fault_proxy import FaultProxies as FaultProxies
from ._fault_proxy import FaultProxy as FaultProxy
from ._framing import SIZE_PREFIX, FrameDecoder
from ._headers import (
    encode_request_header,
    parse_response_header,
    response_header_version,
)
from ._processor import RequestCompletedHook
from ._request import Request
from ._server import RequestHandler, SocketServer
from ._throwaway_pki import Certificate as Certificate
from ._throwaway_pki import ThrowawayPki as ThrowawayPki
from ._throwaway_pki import make_pki as make_pki
from ._throwaway_pki import tls_listener_properties as tls_listener_properties


@asynccontextmanager
async def serving(
    handler: RequestHandler,
    config: NetConfig | None = None,
    on_request_completed: RequestCompletedHook | None = None,
) -> AsyncIterator[SocketServer]:
    """A SocketServer on 127.0.0.1 with an OS-chosen port, shut down on exit."""
    config = config or NetConfig()
    config = attrs.evolve(config, listeners=(Listener("PLAINTEXT", "127.0.0.1", 0),))
    server = SocketServer(config, handler, on_request_completed, tracer=NullTracer())
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            await server.shutdown(grace_seconds=5)


def request_frame(
    body: RequestPayload, correlation_id: int, client_id: str | None = "test"
) -> bytes:
    """A whole request frame (size prefix, header, body), as a client would send it."""
    payload = encode_request_header(
        int(body.__api_key__), int(body.__version__), correlation_id, client_id
    ) + encode_entity(body)
    return SIZE_PREFIX.pack(len(payload)) + payload


@attrs.define(eq=False)
class RawConnection:
    """A bare socket to the server: send any bytes, read whole frames."""

    stream: trio.abc.Stream
    """The socket, or a TLS stream over it."""
    decoder: FrameDecoder = attrs.field(factory=FrameDecoder)

    @classmethod
    async def open(cls, server: SocketServer) -> RawConnection:
        host, port = server.bound_address()
        return cls(await trio.open_tcp_stream(host, port))

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def receive_frame(self) -> bytes | None:
        """The next response frame, or ``None`` when the server closed the connection."""
        while (frame := self.decoder.next_frame()) is None:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return None
            if not data:
                return None
            self.decoder.feed(data)
        return frame

    async def receive_response(
        self, api_key: int, api_version: int
    ) -> tuple[int, ResponsePayload] | None:
        """``(correlation_id, body)`` of the next response, ``None`` if closed."""
        frame = await self.receive_frame()
        if frame is None:
            return None
        correlation_id, offset = parse_response_header(
            frame, response_header_version(api_key, api_version)
        )
        return correlation_id, decode_response_body(api_key, api_version, frame, offset)

    async def wait_closed(self) -> bool:
        """True once the server has closed this connection (reads until EOF)."""
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return True
            if not data:
                return True

    async def send_eof(self) -> None:
        """Close the sending half (a plain socket's; TLS has no half-close)."""
        assert isinstance(self.stream, trio.SocketStream)
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


METADATA_V9 = MetadataRequest(
    topics=None,
    allow_auto_topic_creation=False,
    include_cluster_authorized_operations=False,
    include_topic_authorized_operations=False,
)


async def wait_until(predicate: Callable[[], bool], deadline: float = 10.0) -> None:
    """Wait for a condition, checking it between scheduler turns, failing after ``deadline``."""
    # Polling is deliberate: the conditions are internal counters with no event to
    # wait on, and the deadline turns "never" into a clear failure.
    with trio.fail_after(deadline):
        while not predicate():  # noqa: ASYNC110
            await trio.sleep(0.002)


def echo_metadata(request: Request) -> None:
    """A Metadata v9 response whose cluster id names the request it answers."""
    cls = response_schema(3, request.api_version)
    assert cls is not None
    request.respond(
        build(
            cls,
            throttle_time=datetime.timedelta(0),
            brokers=(),
            cluster_id=f"{request.header.client_id}/{request.header.correlation_id}",
            controller_id=-1,
            topics=(),
        )
    )


@attrs.define(eq=False)
class ScriptedHandler:
    """A handler whose Metadata behaviour a test scripts; ApiVersions from ``supported``."""

    on_metadata: Callable[[Request], Awaitable[None]]
    supported: Mapping[int, tuple[int, int]] = attrs.field(
        factory=lambda: {ApiKey.API_VERSIONS: (0, 4), ApiKey.METADATA: (0, 12)}
    )

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self.supported

    async def handle(self, request: Request) -> None:
        if request.api_key == ApiKey.METADATA:
            await self.on_metadata(request)
        else:
            handle_api_versions(request, self.supported)
