"""A TCP fault proxy: one link between two nodes that a test can delay, stall or cut.

Distributed guarantees (acknowledged means durable, a follower that falls behind leaves
the ISR) only mean something under the faults that break them, and the faults that
matter between brokers are on the links: a slow network, a partition that holds bytes
back without closing anything, a connection that dies. A test puts a :class:`FaultProxy`
between a follower and its leader (or a broker and its controller), points the follower
at the proxy's port, and changes the link while the cluster runs:

- ``delay(seconds)``: every chunk is delivered that much later than it arrived, in order
  (a long, slow link; throughput is not limited);
- ``stall()``: nothing more is forwarded in either direction and nothing is closed, as
  in a network partition; the senders' socket buffers fill and TCP holds the rest back;
  ``heal()`` lets it all through, in order, and lifts any delay;
- ``cut()``: every open connection through the proxy is reset at once (the peers see
  ECONNRESET); new connections are accepted as before, unless ``refuse(True)``.

Faults apply per direction too (``upstream``: client to target, ``downstream``: target to
client), so a test can let requests through and hold the responses back.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Mapping
from typing import Literal

import attrs
import trio

Direction = Literal["upstream", "downstream"]
BOTH: tuple[Direction, Direction] = ("upstream", "downstream")
_CHUNK = 65_536
# Seconds the proxies' thread may take to start or stop on a loaded two-core machine.
_THREAD_TIMEOUT = 60.0
# SO_LINGER on with a zero timeout: close() sends RST instead of FIN (a "cut" link).
_RESET_ON_CLOSE = struct.pack("ii", 1, 0)


@attrs.define(eq=False)
class _Link:
    """What one direction of every connection obeys now."""

    delay: float = 0.0
    open: trio.Event = attrs.field(factory=trio.Event)
    bytes_forwarded: int = 0

    def __attrs_post_init__(self) -> None:
        self.open.set()


@attrs.define(eq=False)
class FaultProxy:
    """Listens on 127.0.0.1 and forwards every connection to ``target_host:target_port``."""

    target_host: str
    target_port: int
    _links: dict[Direction, _Link] = attrs.field(
        init=False, factory=lambda: {d: _Link() for d in BOTH}
    )
    _listener: trio.SocketListener | None = attrs.field(init=False, default=None)
    _connections: set[trio.CancelScope] = attrs.field(init=False, factory=set)
    _sockets: set[trio.SocketStream] = attrs.field(init=False, factory=set)
    _refusing: bool = attrs.field(init=False, default=False)
    connections_accepted: int = attrs.field(init=False, default=0)

    # --- the faults ------------------------------------------------------------------

    def delay(self, seconds: float, directions: tuple[Direction, ...] = BOTH) -> None:
        if seconds < 0:
            raise ValueError(f"a delay cannot be negative: {seconds}")
        for d in directions:
            self._links[d].delay = seconds

    def stall(self, directions: tuple[Direction, ...] = BOTH) -> None:
        for d in directions:
            if self._links[d].open.is_set():
                self._links[d].open = trio.Event()

    def heal(self, directions: tuple[Direction, ...] = BOTH) -> None:
        """No delay, nothing stalled (in ``directions``: a one-way fault healed while
        the other direction stays stalled), new connections accepted."""
        self._refusing = False
        for d in directions:
            self._links[d].delay = 0.0
            self._links[d].open.set()

    def refuse(self, refusing: bool) -> None:
        """Accept new connections and reset them at once (``True``), or serve them."""
        self._refusing = refusing

    def cut(self) -> None:
        """Reset every connection open now."""
        for stream in list(self._sockets):
            _reset(stream)
        for scope in list(self._connections):
            scope.cancel()

    # --- what a test reads -------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._listener is not None, "the proxy is not running"
        port: int = self._listener.socket.getsockname()[1]
        return port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def bytes_forwarded(self, direction: Direction) -> int:
        return self._links[direction].bytes_forwarded

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    # --- running -----------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until cancelled; started with ``nursery.start`` (the port is then known)."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self._listener = listeners[0]
        async with self._listener, trio.open_nursery() as nursery:
            task_status.started()
            while True:
                client = await self._listener.accept()
                self.connections_accepted += 1
                if self._refusing:
                    _reset(client)
                    continue
                nursery.start_soon(self._serve, client)

    async def serve(self, client: trio.SocketStream) -> None:
        """Forward one connection accepted elsewhere, until either end closes: a
        listener that picks, per connection, whose faults it obeys (one proxy per
        link between two nodes, behind one port) hands it over so."""
        self.connections_accepted += 1
        if self._refusing:
            _reset(client)
            return
        await self._serve(client)

    async def _serve(self, client: trio.SocketStream) -> None:
        scope = trio.CancelScope()
        self._connections.add(scope)
        self._sockets.add(client)
        target: trio.SocketStream | None = None
        try:
            with scope:
                try:
                    target = await trio.open_tcp_stream(
                        self.target_host, self.target_port
                    )
                except OSError:
                    # the target is down: the client sees its connection fail
                    _reset(client)
                    return
                self._sockets.add(target)
                async with trio.open_nursery() as nursery:
                    done = nursery.cancel_scope
                    nursery.start_soon(
                        self._pump, client, target, self._links["upstream"], done
                    )
                    nursery.start_soon(
                        self._pump, target, client, self._links["downstream"], done
                    )
        finally:
            self._connections.discard(scope)
            for stream in (client, target):
                if stream is not None:
                    self._sockets.discard(stream)
                    await trio.aclose_forcefully(stream)

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        link: _Link,
        done: trio.CancelScope,
    ) -> None:
        """Forward ``source`` to ``sink`` through ``link``; when either end closes, the
        whole connection is over (``done``: a half-close is passed on as a close)."""
        send, receive = trio.open_memory_channel[tuple[float, bytes]](64)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._deliver, receive, sink, link)
                async with send:
                    while True:
                        await link.open.wait()  # a stalled link reads nothing more
                        data = await source.receive_some(_CHUNK)
                        if not data:
                            break
                        await send.send((trio.current_time() + link.delay, data))
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            # One end went away (a reset arrives wrapped in the nursery's group): the
            # connection is over either way.
            pass
        finally:
            done.cancel()

    @staticmethod
    async def _deliver(
        receive: trio.MemoryReceiveChannel[tuple[float, bytes]],
        sink: trio.SocketStream,
        link: _Link,
    ) -> None:
        async with receive:
            async for due, data in receive:
                await trio.sleep_until(due)
                await link.open.wait()  # stalled after it was read: hold it here
                await sink.send_all(data)
                link.bytes_forwarded += len(data)


def _reset(stream: trio.SocketStream) -> None:
    """Close ``stream`` with a TCP reset, as a dead link looks to its peer."""
    with contextlib.suppress(OSError):  # already closed
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
    stream.socket.close()


class FaultProxies:
    """A :class:`FaultProxy` in front of each of several ports (a broker's REPLICATION
    listener, say), run by a trio loop in a thread of its own, for synchronous code (the
    cluster tests, the labs' scenarios): every node that connects to a proxied port goes
    through its proxy, so a caller can delay, stall or cut the links into one node while
    clients still reach it directly. ``targets`` maps a name (a broker id) to a port."""

    def __init__(self, targets: Mapping[int, int]) -> None:
        self.proxies = {b: FaultProxy("127.0.0.1", port) for b, port in targets.items()}
        self._started = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._started.wait(_THREAD_TIMEOUT):
            raise RuntimeError("the fault proxies did not start")

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # the test's cleanup reports it
            self.failure = exc
            self._started.set()

    async def _main(self) -> None:
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            for proxy in self.proxies.values():
                await nursery.start(proxy.run)
            self._token = trio.lowlevel.current_trio_token()
            self._started.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def port(self, broker: int) -> int:
        return self.proxies[broker].port

    def call(self, broker: int, fault: Callable[[FaultProxy], None]) -> None:
        """Apply ``fault`` (e.g. ``FaultProxy.stall``) to the links into ``broker``."""
        trio.from_thread.run_sync(fault, self.proxies[broker], trio_token=self._token)

    def close(self) -> None:
        """Stop the proxies; raises what stopped them early, if something did."""
        if self._thread.is_alive() and self._stop is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(_THREAD_TIMEOUT)
        if self.failure is not None:
            raise self.failure
