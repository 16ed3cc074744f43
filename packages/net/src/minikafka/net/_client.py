"""The client side: Kafka's NetworkClient, with ConsumerNetworkClient's unsent queue.

Seed 000 ("Client 端"): a Kafka client keeps one connection per broker; each request
gets a correlation id; at most ``max.in.flight.requests.per.connection`` requests are
sent and unanswered at once; and because one connection sends one request at a time,
requests for a node wait in that node's queue of unsent requests (what
ConsumerNetworkClient adds so the Fetcher and the ConsumerCoordinator can share one
connection). Responses come back in request order, which the client checks: a
response whose correlation id is not the oldest in flight means the connection is
broken. A request not answered within ``request.timeout.ms`` fails, and, as in Kafka,
the connection is closed, failing everything else in flight on it.

On connecting, the client asks the broker which versions it speaks (ApiVersions, v3,
falling back to the version the broker names if it answers UNSUPPORTED_VERSION) and
refuses to send a version the broker did not advertise. With a :class:`ClientSecurity`
(a client's ``security.protocol``, or a broker's client of another node's TLS or SASL
listener) it first completes the TLS handshake and, after ApiVersions, authenticates
(``_client_security.py``); a connection takes no other request until both are done. A
refusal is logged once per node at ERROR, as Kafka's NetworkClient logs a failed
authentication, and fails the request with :class:`AuthenticationFailed`. When the
broker's SaslAuthenticate answer gives the session a lifetime (KIP-368,
``connections.max.reauth.ms``), the connection re-authenticates before it ends, between
two requests and without closing (``minikafka.security``'s
:class:`~minikafka.security.ClientReauthentication` says when).
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

import attrs
import trio
from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.security import ClientReauthentication

from ._api_keys import ApiKey
from ._api_versions import API_VERSIONS_RESPONSES
from ._client_errors import (
    AuthenticationFailed,
    ClientError,
    DisconnectedError,
    RequestTimedOut,
    UnsupportedVersionError,
)
from ._client_security import ClientSecurity
from ._codec import (
    BodyDecodeError,
    api_name,
    build,
    decode_response_body,
    encode_entity,
    request_schema,
    response_schema,
)
from ._framing import SIZE_PREFIX, FrameDecoder, FrameError
from ._headers import (
    InvalidRequest,
    encode_request_header,
    parse_response_header,
    response_header_version,
)

_logger = logging.getLogger(__name__)


@attrs.frozen
class Node:
    node_id: int
    host: str
    port: int


@attrs.define(eq=False)
class _InFlight:
    correlation_id: int
    api_key: int
    api_version: int
    expect_response: bool
    frame: bytes
    done: trio.Event = attrs.field(factory=trio.Event)
    response: ResponsePayload | None = None
    error: Exception | None = None

    def finish(
        self, response: ResponsePayload | None = None, error: Exception | None = None
    ) -> None:
        if not self.done.is_set():
            self.response, self.error = response, error
            self.done.set()


@attrs.define(eq=False)
class _NodeConnection:
    node: Node
    stream: trio.abc.Stream
    max_in_flight: int
    max_frame_bytes: int
    api_versions: dict[int, tuple[int, int]] = attrs.field(factory=dict)
    unsent: collections.deque[_InFlight] = attrs.field(factory=collections.deque)
    in_flight: collections.deque[_InFlight] = attrs.field(factory=collections.deque)
    closed: bool = False
    # Set once ApiVersions is answered and, on a SASL listener, the client is
    # authenticated: until then no other request may be queued on the connection.
    ready: trio.Event = attrs.field(factory=trio.Event)
    _wakeup: trio.Event = attrs.field(factory=trio.Event)
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    # KIP-368: what a re-authentication needs (the client's SASL login, a builder of
    # the connection's request frames, how long to wait for each answer) and, once the
    # broker gave the session a lifetime, when to re-authenticate.
    security: ClientSecurity | None = None
    build: Callable[[RequestPayload], _InFlight] | None = None
    request_timeout: float = math.inf
    session: ClientReauthentication | None = None

    def enqueue(self, item: _InFlight) -> None:
        if self.closed:
            raise DisconnectedError(f"connection to node {self.node.node_id} is closed")
        self.unsent.append(item)
        self._wakeup.set()

    async def run(self) -> None:
        try:
            with self.scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._guard, self._send_loop)
                    nursery.start_soon(self._guard, self._receive_loop)
        finally:
            self.fail(DisconnectedError(f"disconnected from node {self.node.node_id}"))

    async def _guard(self, loop: Callable[[], Awaitable[None]]) -> None:
        try:
            await loop()
        except _CONNECTION_ERRORS as e:
            self.fail(
                DisconnectedError(f"connection to node {self.node.node_id} failed: {e}")
            )

    def fail(self, error: Exception) -> None:
        """Close the connection; everything unsent or in flight fails with ``error``."""
        self.closed = True
        self.scope.cancel()
        for item in (*self.in_flight, *self.unsent):
            item.finish(error=error)
        self.in_flight.clear()
        self.unsent.clear()
        self._wakeup.set()

    def authenticated(self, session_lifetime_ms: int) -> None:
        """The SASL exchange completed with this session lifetime (0: none)."""
        if session_lifetime_ms > 0 and self.session is None:
            self.session = ClientReauthentication()
        if self.session is not None:
            self.session.authenticated(session_lifetime_ms, trio.current_time())
            self._wakeup.set()  # the send loop's timer takes the new deadline

    async def _send_loop(self) -> None:
        while True:
            session = self.session
            if session is not None and session.due(trio.current_time()):
                await self._reauthenticate(session)
            elif self.unsent and len(self.in_flight) < self.max_in_flight:
                # The oldest unsent request, once fewer than max_in_flight await answers.
                await self._send(self.unsent.popleft())
            else:
                self._wakeup = trio.Event()
                deadline = None if session is None else session.next_deadline()
                if deadline is None:  # most connections: no session to renew, no timer
                    await self._wakeup.wait()
                    continue
                with trio.move_on_at(deadline):
                    await self._wakeup.wait()

    async def _send(self, item: _InFlight) -> None:
        if item.expect_response:
            self.in_flight.append(item)
        await self.stream.send_all(item.frame)
        if not item.expect_response:
            item.finish()

    async def _reauthenticate(self, session: ClientReauthentication) -> None:
        """KIP-368: SaslHandshake and SaslAuthenticate again on this connection. Once it
        is due no new request is sent, those in flight are answered first, and the
        queue waits until the exchange completes: the broker reads the connection's
        requests in order, and no other answer may come between the exchange's own.
        Kafka's client starts it when it next has a request to send; here the timer
        starts it too, so that an idle connection's session does not lapse unseen."""
        while self.in_flight:
            self._wakeup = trio.Event()
            await self._wakeup.wait()
        assert self.security is not None
        node = self.node
        late = (
            " (after the session's end)" if session.expired(trio.current_time()) else ""
        )
        _logger.debug("Re-authenticating to node %d%s", node.node_id, late)
        try:
            lifetime = await self.security.authenticate(self._exchange)
        except AuthenticationFailed as e:
            _logger.error(
                "Connection to node %d (%s:%d) failed re-authentication due to: %s",
                *(node.node_id, node.host, node.port, e),
            )
            raise
        self.authenticated(lifetime)

    async def _exchange(self, body: RequestPayload) -> ResponsePayload | None:
        """One request of a re-authentication: sent at once, its answer awaited within
        ``request.timeout.ms`` (past it the connection fails, as any request's would)."""
        assert self.build is not None
        item = self.build(body)
        await self._send(item)
        with trio.move_on_after(self.request_timeout):
            await item.done.wait()
        if not item.done.is_set():
            raise RequestTimedOut(
                f"{api_name(item.api_key)} to node {self.node.node_id} timed out "
                f"after {self.request_timeout}s"
            )
        if item.error is not None:
            raise item.error
        return item.response

    async def _receive_loop(self) -> None:
        decoder = FrameDecoder(self.max_frame_bytes)
        while True:
            data = await self.stream.receive_some(65536)
            if not data:
                raise DisconnectedError(
                    f"node {self.node.node_id} closed the connection"
                )
            decoder.feed(data)
            for frame in decoder.frames():
                self._complete(frame)

    def _complete(self, frame: bytes) -> None:
        if not self.in_flight:
            raise FrameError("a response arrived with no request in flight")
        item = self.in_flight.popleft()
        version = response_header_version(item.api_key, item.api_version)
        correlation_id, offset = parse_response_header(frame, version)
        if correlation_id != item.correlation_id:
            # Responses come back in request order on one connection (seed 003).
            raise FrameError(
                f"correlation id {correlation_id}, expected {item.correlation_id}"
            )
        api_version = item.api_version
        if (
            item.api_key == ApiKey.API_VERSIONS
            and _error_code(frame, offset) == ErrorCode.unsupported_version
        ):
            item.finish(_unsupported_api_versions(frame, offset))
            self._wakeup.set()
            return
        try:
            item.finish(decode_response_body(item.api_key, api_version, frame, offset))
        except BodyDecodeError as error:
            item.finish(error=error)  # taken out of in_flight: the connection's failure
            raise  # will not reach it, so it hears of this one itself
        self._wakeup.set()


def _unsupported_api_versions(frame: bytes, offset: int) -> ResponsePayload:
    """A broker's answer to an ApiVersions version it does not speak (KIP-511): Kafka
    answers in v0 with the range of ApiVersions it does speak; some brokers (librdkafka's
    mock cluster) answer in the request's version instead. A body that does not read as
    v0 gives an empty list, and the client asks again in v0, which every broker speaks."""
    try:
        return decode_response_body(ApiKey.API_VERSIONS, 0, frame, offset)
    except BodyDecodeError:
        cls = response_schema(ApiKey.API_VERSIONS, 0)
        assert cls is not None
        return build(cls, error_code=ErrorCode.unsupported_version, api_keys=())


_CONNECTION_ERRORS = (
    ClientError,
    FrameError,
    InvalidRequest,
    BodyDecodeError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    OSError,
)


def _error_code(frame: bytes, offset: int) -> int:
    return int.from_bytes(frame[offset : offset + 2], "big", signed=True)


@attrs.define(eq=False)
class NetworkClient:
    """Connections to brokers, opened on first use. Create with :meth:`open`."""

    client_id: str = "minikafka"
    max_in_flight: int = 5
    """``max.in.flight.requests.per.connection``"""
    request_timeout: float = 30.0
    """``request.timeout.ms`` / 1000"""
    connect_timeout: float = 10.0
    max_frame_bytes: int = 100 * 1024 * 1024
    security: ClientSecurity | None = None
    """``security.protocol`` with its TLS and SASL settings (None: PLAINTEXT): a client
    application's, or a broker's inter-broker or controller client's."""
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    _connections: dict[Node, _NodeConnection] = attrs.field(init=False, factory=dict)
    _connecting: dict[Node, trio.Lock] = attrs.field(init=False, factory=dict)
    _next_correlation_id: int = attrs.field(init=False, default=0)
    _refused: dict[Node, str] = attrs.field(init=False, factory=dict)

    @classmethod
    @asynccontextmanager
    async def open(cls, **settings: object) -> AsyncIterator[NetworkClient]:
        client = cls(**settings)  # type: ignore[arg-type]
        async with trio.open_nursery() as nursery:
            client._nursery = nursery
            try:
                yield client
            finally:
                client.close()

    def close(self) -> None:
        for connection in list(self._connections.values()):
            connection.fail(DisconnectedError("client closed"))
        self._connections.clear()

    def disconnect(self, node: Node) -> None:
        connection = self._connections.pop(node, None)
        if connection is not None:
            connection.fail(DisconnectedError(f"disconnected from node {node.node_id}"))

    def queued(self, node: Node) -> tuple[int, int]:
        """(in flight, waiting unsent) requests on the connection to ``node``, (0, 0)
        without one: the first is what ``max_in_flight`` bounds, the rest wait their turn."""
        connection = self._connections.get(node)
        if connection is None:
            return 0, 0
        return len(connection.in_flight), len(connection.unsent)

    def load(self, node: Node) -> int | None:
        """Requests on the connection to ``node`` not answered yet (in flight and
        waiting to be sent); None without a connection ready for requests (none, or
        one still in its handshake). What Kafka's ``NetworkClient.leastLoadedNode``
        weighs a broker by (``inFlightRequests.count``, ``connectionStates.isReady``)."""
        connection = self._connections.get(node)
        if connection is None or connection.closed or not connection.ready.is_set():
            return None
        return len(connection.in_flight) + len(connection.unsent)

    async def api_versions(self, node: Node) -> Mapping[int, tuple[int, int]]:
        """What the broker advertised when this client connected."""
        return (await self._connection(node)).api_versions

    async def send(
        self,
        node: Node,
        body: RequestPayload,
        *,
        expect_response: bool = True,
        request_timeout: float | None = None,
    ) -> ResponsePayload | None:
        """Send ``body`` (its kio class fixes API and version) and wait for the
        response.

        ``expect_response=False`` is for requests the broker does not answer (acks=0
        produce): the call returns once the request is written. ``request_timeout``:
        the seconds this request may wait for its answer, if not the client's (Kafka's
        ``NetworkClient.send`` with a request's own ``requestTimeoutMs``: a consumer's
        JoinGroup, which the coordinator holds until the group has rejoined).
        """
        pending = await self.enqueue(
            node,
            body,
            expect_response=expect_response,
            request_timeout=request_timeout,
        )
        return await pending.response()

    async def enqueue(
        self,
        node: Node,
        body: RequestPayload,
        *,
        expect_response: bool = True,
        request_timeout: float | None = None,
    ) -> PendingRequest:
        """Queue ``body`` on the connection to ``node`` (connecting first if need be) and
        return without waiting for the response: what a producer's Sender needs, whose
        requests to one node must go out in the order it made them (seed 000: ordering
        per partition) while several are in flight. Two calls from one task are sent in
        the order they were made; await :meth:`PendingRequest.response` for the answer.
        """
        connection = await self._connection(node)
        api_key, api_version = int(body.__api_key__), int(body.__version__)
        low, high = connection.api_versions.get(api_key, (0, -1))
        if not low <= api_version <= high:
            raise UnsupportedVersionError(
                f"node {node.node_id} does not serve {api_name(api_key)} v{api_version}"
            )
        pending = self._enqueue_on(connection, body, expect_response)
        if request_timeout is not None:
            pending.timeout = request_timeout
        return pending

    async def _send_on(
        self,
        connection: _NodeConnection,
        body: RequestPayload,
        expect_response: bool = True,
    ) -> ResponsePayload | None:
        return await self._enqueue_on(connection, body, expect_response).response()

    def _enqueue_on(
        self, connection: _NodeConnection, body: RequestPayload, expect_response: bool
    ) -> PendingRequest:
        item = self._item(body, expect_response)
        connection.enqueue(item)
        return PendingRequest(self, connection, item)

    def _item(self, body: RequestPayload, expect_response: bool = True) -> _InFlight:
        """``body`` framed with its header and the next correlation id."""
        api_key, api_version = int(body.__api_key__), int(body.__version__)
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) % 2**31
        payload = encode_request_header(
            api_key, api_version, correlation_id, self.client_id
        )
        payload += encode_entity(body)
        return _InFlight(
            correlation_id,
            api_key,
            api_version,
            expect_response,
            SIZE_PREFIX.pack(len(payload)) + payload,
        )

    def _drop(self, connection: _NodeConnection, error: Exception) -> None:
        if self._connections.get(connection.node) is connection:
            del self._connections[connection.node]
        connection.fail(error)

    async def _connection(self, node: Node) -> _NodeConnection:
        existing = self._connections.get(node)
        if existing is not None and not existing.closed and existing.ready.is_set():
            return existing
        lock = self._connecting.setdefault(node, trio.Lock())
        async with lock:  # held while connecting: a second caller waits for the first
            existing = self._connections.get(node)
            if existing is not None and not existing.closed and existing.ready.is_set():
                return existing
            return await self._connect(node)

    async def _connect(self, node: Node) -> _NodeConnection:
        if self._nursery is None:
            raise RuntimeError("use `async with NetworkClient.open() as client`")
        try:
            with trio.fail_after(self.connect_timeout):
                socket = await trio.open_tcp_stream(node.host, node.port)
        except (OSError, trio.TooSlowError) as e:
            raise DisconnectedError(
                f"cannot connect to node {node.node_id} at {node.host}:{node.port}: {e}"
            ) from e
        security = self.security
        stream: trio.abc.Stream = socket
        if security is not None:
            stream = await self._secure(node, socket, security)
        connection = _NodeConnection(
            node, stream, self.max_in_flight, self.max_frame_bytes
        )
        connection.security, connection.build = security, self._item
        connection.request_timeout = self.request_timeout
        self._nursery.start_soon(_run_connection, connection, stream)
        self._connections[node] = connection
        try:
            connection.api_versions = await self._negotiate(connection)
            if security is not None:
                connection.authenticated(
                    await security.authenticate(
                        lambda body: self._send_on(connection, body)
                    )
                )
        except AuthenticationFailed as e:
            self._drop(connection, DisconnectedError("authentication failed"))
            raise self._refusal(node, e) from None
        except BaseException:
            self._drop(connection, DisconnectedError("ApiVersions handshake failed"))
            raise
        connection.ready.set()
        if self._refused.pop(node, None) is not None:
            _logger.info("Connection to node %d authenticated again", node.node_id)
        return connection

    async def _secure(
        self, node: Node, socket: trio.SocketStream, security: ClientSecurity
    ) -> trio.abc.Stream:
        """TLS over ``socket`` if the protocol says so, within ``connect_timeout``."""
        try:
            with trio.fail_after(self.connect_timeout):
                return await security.wrap(socket, node.host)
        except trio.TooSlowError:
            await trio.aclose_forcefully(socket)
            raise DisconnectedError(
                f"no TLS handshake with node {node.node_id} within "
                f"{self.connect_timeout}s"
            ) from None
        except AuthenticationFailed as e:
            raise self._refusal(node, e) from None
        except BaseException:
            await trio.aclose_forcefully(socket)
            raise

    def _refusal(
        self, node: Node, refused: AuthenticationFailed
    ) -> AuthenticationFailed:
        """Kafka's NetworkClient: "Connection to node X failed authentication due to:
        ...", at ERROR, here once per node and reason (callers retry with backoff)."""
        reason = str(refused)
        message = (
            f"Connection to node {node.node_id} ({node.host}:{node.port}) failed "
            f"authentication due to: {reason}"
        )
        if self._refused.get(node) != reason:
            self._refused[node] = reason
            _logger.error("[%s] %s", self.client_id, message)
        return refused.at_node(message)

    async def _negotiate(
        self, connection: _NodeConnection
    ) -> dict[int, tuple[int, int]]:
        version = 3
        for _ in range(3):
            cls = request_schema(ApiKey.API_VERSIONS, version)
            assert cls is not None
            request = build(
                cls, client_software_name="minikafka", client_software_version="0.1.0"
            )
            response = await self._send_on(connection, request)
            if not isinstance(response, API_VERSIONS_RESPONSES):
                raise ClientError(
                    f"ApiVersions answered with {type(response).__name__}"
                )
            error = int(response.error_code)
            ranges = {
                int(k.api_key): (int(k.min_version), int(k.max_version))
                for k in response.api_keys
            }
            if error == ErrorCode.unsupported_version and version > 0:
                offered = ranges.get(ApiKey.API_VERSIONS, (0, 0))[1]
                version = offered if offered < version else 0
                continue
            if error != ErrorCode.none:
                raise ClientError(f"ApiVersions failed with error {error}")
            return ranges
        raise ClientError("no ApiVersions version in common with the broker")


@attrs.define(eq=False)
class PendingRequest:
    """A request queued by :meth:`NetworkClient.enqueue`: its response, when it comes."""

    _client: NetworkClient
    _connection: _NodeConnection
    _item: _InFlight
    timeout: float | None = None
    """Seconds to wait for the answer; None: the client's ``request_timeout``."""

    async def response(self) -> ResponsePayload | None:
        """Wait for the response (None for a request the broker does not answer); raises
        what the connection failed with. Past ``request.timeout.ms`` the connection is
        closed, as in Kafka's ``NetworkClient.handleTimedOutRequests``, failing everything
        else in flight on it."""
        item, connection = self._item, self._connection
        timeout = self._client.request_timeout if self.timeout is None else self.timeout
        with trio.move_on_after(timeout) as scope:
            await item.done.wait()
        if scope.cancelled_caught and not item.done.is_set():
            self._client._drop(
                connection,
                RequestTimedOut(
                    f"{api_name(item.api_key)} to node {connection.node.node_id} timed out "
                    f"after {timeout}s"
                ),
            )
        if not item.done.is_set():  # the connection went without failing this item
            item.finish(
                error=RequestTimedOut(f"{api_name(item.api_key)} got no answer")
            )
        if item.error is not None:
            raise item.error
        return item.response


async def _run_connection(connection: _NodeConnection, stream: trio.abc.Stream) -> None:
    try:
        await connection.run()
    finally:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(stream)
