"""ZooKeeper from trio: kazoo's client, never blocking the event loop (Kafka's
``ZooKeeperClient``, under ``KafkaZkClient``).

kazoo runs its connection in threads of its own and hands back results through
``IAsyncResult`` objects that call a function when done. :meth:`ZkClient._call` links
one to a trio event (through the trio token, from kazoo's thread), so a trio task awaits
a znode read the way it awaits a socket. The calls that only exist blocking in kazoo
(connecting, closing) run in a worker thread.

Watches are ZooKeeper's one-shot triggers: a read that sets one is told once when the
znode (or its children) changes, and must read again (and set a new watch) to hear of the
next change. Kafka's controller turns every watch into an event on its single queue
(``ControllerEventManager``); here every watch set through a client, and every change of
its session (suspended, reconnected, expired), is put on :attr:`ZkClient.events`, one
channel the owner reads in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs
import trio
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, RolledBackError, SessionExpiredError
from kazoo.protocol.states import KazooState, WatchedEvent, ZnodeStat

SESSION_LOST = "LOST"
SESSION_SUSPENDED = "SUSPENDED"
SESSION_CONNECTED = "CONNECTED"


@attrs.frozen
class WatchFired:
    """A watch set on ``path`` fired: ``kind`` is ZooKeeper's event type (``CREATED``,
    ``DELETED``, ``CHANGED``, ``CHILD``). ZooKeeper says only that something happened,
    not what: the owner reads the znode again."""

    kind: str
    path: str


@attrs.frozen
class SessionChanged:
    """The session's state: ``SUSPENDED`` (the connection dropped, the session may
    survive), ``CONNECTED`` (again), ``LOST`` (expired: every ephemeral znode of this
    session is gone, and so are its watches)."""

    state: str


ZkEvent = WatchFired | SessionChanged


@attrs.frozen
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    parents: bool = False
    """Create the missing parents too, in the same transaction (empty persistent znodes),
    as Kafka creates a partition's ``partitions/<p>`` znodes with its state znode."""
    sequence: bool = False
    """ZooKeeper appends a 10-digit number, one higher than any its parent gave before
    (Kafka's change notifications: ``/config/changes/config_change_``)."""


@attrs.frozen
class SetData:
    path: str
    data: bytes
    version: int = -1


@attrs.frozen
class Check:
    path: str
    version: int


@attrs.frozen
class Delete:
    path: str
    version: int = -1
    recursive: bool = False
    """Delete the znode's descendants first, in the same transaction (a deleted topic's
    partitions and their state znodes)."""
    must_exist: bool = True
    """False: a znode that is not there is no error (left out of the transaction)."""


Op = Create | SetData | Check | Delete


def _ancestors(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/a", "/a/b"]``, shallowest first."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: depth + 1]) for depth in range(len(parts))]


"""One operation of a :meth:`ZkClient.transaction`."""


@attrs.frozen
class Stat:
    """What a read learns besides the data: ``version`` for a conditional update (KIP-497's
    AlterPartition writes the ISR only over the version it read), ``ephemeral_owner`` the
    session that owns an ephemeral znode (0 for a persistent one)."""

    version: int
    ephemeral_owner: int
    children: int
    created_zxid: int = 0
    """The transaction that created the znode: a broker's registration's is its broker
    epoch in ZooKeeper mode (Kafka's ``czxid``), new at every registration."""
    created_ms: int = 0
    """When the server created it (``ctime``, ms since the epoch): how old a change
    notification is."""

    @classmethod
    def of(cls, stat: ZnodeStat) -> Stat:
        return cls(
            int(stat.version),
            int(stat.ephemeralOwner),
            int(stat.numChildren),
            int(stat.czxid),
            int(stat.ctime),
        )


HOST_ATTEMPTS = 3
"""How many servers' worth of answers a session's timeout is shared between."""


def _connect_string(hosts: str) -> str:
    """``hosts`` with its servers listed over, up to :data:`HOST_ATTEMPTS` entries.

    Kazoo (like ZooKeeper's Java client) waits for a server's answer to its Connect for
    the session timeout divided by the number of servers listed. A server restarting
    can take the connection and never answer it; with one server listed, the client
    would wait out the whole session timeout, and the session it came to resume would
    expire while it waited. Listed three times, the one server is given up on after a
    third of the timeout and asked again, as one of a three-server ensemble would be.
    """
    servers, slash, chroot = hosts.partition("/")
    listed = [h.strip() for h in servers.split(",") if h.strip()]
    repeats = max(1, -(-HOST_ATTEMPTS // max(1, len(listed))))
    return ",".join(listed * repeats) + slash + chroot


@attrs.define(eq=False)
class ZkClient:
    """A connection to ZooKeeper at ``hosts`` (``zookeeper.connect``) with a session of
    ``session_timeout`` seconds (``zookeeper.session.timeout.ms``)."""

    hosts: str
    session_timeout: float = 18.0
    _kazoo: Any = attrs.field(init=False, default=None)
    _token: trio.lowlevel.TrioToken | None = attrs.field(init=False, default=None)
    _send: trio.MemorySendChannel[ZkEvent] = attrs.field(init=False)
    events: trio.MemoryReceiveChannel[ZkEvent] = attrs.field(init=False)
    _sessions_ended: int = attrs.field(init=False, default=0)
    # Counted in kazoo's thread, by the listener kazoo calls before it fails the requests
    # an expired session took with it: what :attr:`session` reads.
    _state_changed: trio.Event = attrs.field(init=False, factory=trio.Event)
    # Set (and replaced) in trio's thread at each change of the session's state.

    def __attrs_post_init__(self) -> None:
        self._send, self.events = trio.open_memory_channel(float("inf"))

    # --- the session ------------------------------------------------------------------

    async def connect(self, connect_timeout: float = 30.0) -> None:
        """Open the session (in a worker thread: kazoo connects blocking); raises
        kazoo's ``KazooTimeoutError`` if no server answered within ``connect_timeout``."""
        self._token = trio.lowlevel.current_trio_token()
        # Reconnecting at most a second apart, as ZooKeeper's own Java client does:
        # kazoo's default backoff doubles up to an hour, so a server down for a few
        # seconds would be tried again only after the sessions it restored expired.
        self._kazoo = KazooClient(
            hosts=_connect_string(self.hosts),
            timeout=self.session_timeout,
            connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0},
        )
        self._kazoo.add_listener(self._on_state)
        kazoo = self._kazoo
        await trio.to_thread.run_sync(lambda: kazoo.start(timeout=connect_timeout))

    async def close(self) -> None:
        """End the session: ZooKeeper deletes its ephemeral znodes at once."""
        if self._kazoo is None:
            return
        kazoo, self._kazoo = self._kazoo, None
        await trio.to_thread.run_sync(kazoo.stop)
        await trio.to_thread.run_sync(kazoo.close)

    @property
    def session_id(self) -> int:
        """The session's id (what an ephemeral znode's ``ephemeral_owner`` names)."""
        return int(self._client().client_id[0])

    @property
    def session(self) -> int:
        """Which of this client's sessions is the current one: 0 for the first, one more
        each time one ends (expires). Unlike :attr:`session_id` it can be read while the
        connection is lost: a request that began in session ``n`` may go on only while
        this is still ``n``."""
        return self._sessions_ended

    async def wait_until_connected(self, session: int) -> None:
        """Return once the client is connected in ``session`` (at once if it is): Kafka's
        ``ZooKeeperClient.waitUntilConnected``. Raises kazoo's ``SessionExpiredError`` if
        that session ended meanwhile, or if no connection came back within the session
        timeout: a session ZooKeeper has not heard from for so long is one it expires."""
        kazoo = self._client()
        with trio.move_on_after(self.session_timeout):
            while True:
                changed = self._state_changed
                # Connected first, then the count: a connection seen live before the
                # count is seen unchanged was this session's (kazoo counts a session's
                # end before it connects the next one).
                connected = bool(kazoo.connected)
                if self._sessions_ended != session:
                    raise SessionExpiredError("the session expired")
                if connected:
                    return
                await changed.wait()
        raise SessionExpiredError(
            f"no connection to ZooKeeper within the session timeout "
            f"({self.session_timeout} s)"
        )

    def _on_state(self, state: str) -> None:
        # kazoo's thread: hand over to the trio loop; the listener must not block.
        if state == KazooState.LOST:
            self._sessions_ended += 1
        names = {
            KazooState.LOST: SESSION_LOST,
            KazooState.SUSPENDED: SESSION_SUSPENDED,
            KazooState.CONNECTED: SESSION_CONNECTED,
        }
        changed = SessionChanged(names.get(state, str(state)))
        token = self._token
        if token is None:
            return
        with contextlib.suppress(trio.RunFinishedError):  # the trio program has ended
            token.run_sync_soon(self._session_changed, changed)

    def _session_changed(self, changed: SessionChanged) -> None:
        # trio's thread: wake whoever waits for the connection, then tell the owner.
        self._state_changed.set()
        self._state_changed = trio.Event()
        self._send.send_nowait(changed)

    def _deliver(self, event: ZkEvent) -> None:
        token = self._token
        if token is None:
            return
        with contextlib.suppress(trio.RunFinishedError):  # the trio program has ended
            token.run_sync_soon(self._send.send_nowait, event)

    def _watch(self, event: WatchedEvent) -> None:
        self._deliver(WatchFired(str(event.type), str(event.path)))

    # --- reads and writes ---------------------------------------------------------------

    def _client(self) -> Any:
        if self._kazoo is None:
            raise RuntimeError("the ZooKeeper client is not connected")
        return self._kazoo

    async def _call(self, start: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one of kazoo's ``*_async`` calls; its result, or its exception raised."""
        return await self._wait(start(*args, **kwargs))

    async def _wait(self, result: Any) -> Any:
        """Wait for one of kazoo's async results without blocking the event loop."""
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        result.rawlink(lambda _: token.run_sync_soon(done.set))
        await done.wait()
        return result.get(block=False)

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        makepath: bool = False,
        sequence: bool = False,
    ) -> str:
        """Create ``path``; raises ``NodeExistsError`` if it exists (how Kafka's controller
        election is won or lost: one ephemeral ``/controller``, first come). The path
        created is returned: with ``sequence``, ``path`` and the number ZooKeeper gave."""
        client = self._client()
        created = await self._call(
            client.create_async,
            path,
            data,
            ephemeral=ephemeral,
            sequence=sequence,
            makepath=makepath,
        )
        return str(created)

    async def get(self, path: str, *, watch: bool = False) -> tuple[bytes, Stat]:
        """The znode's data and stat; raises ``NoNodeError``. With ``watch``, a
        :class:`WatchFired` arrives on :attr:`events` when it next changes or goes."""
        client = self._client()
        data, stat = await self._call(
            client.get_async, path, self._watch if watch else None
        )
        return bytes(data or b""), Stat.of(stat)

    async def get_many(
        self, paths: Sequence[str], *, watch: bool = False, chunk: int = 500
    ) -> dict[str, tuple[bytes, Stat] | None]:
        """Many reads at once: kazoo pipelines up to ``chunk`` requests before the first
        answer is awaited, so reading a whole cluster costs a few round trips, not one
        per znode (Kafka's controller reads the same way). A missing znode is None."""
        client = self._client()
        found: dict[str, tuple[bytes, Stat] | None] = {}
        for start in range(0, len(paths), chunk):
            asked = [
                (path, client.get_async(path, self._watch if watch else None))
                for path in paths[start : start + chunk]
            ]
            for path, result in asked:
                try:
                    data, stat = await self._wait(result)
                except NoNodeError:
                    found[path] = None
                    continue
                found[path] = (bytes(data or b""), Stat.of(stat))
        return found

    async def exists(self, path: str, *, watch: bool = False) -> Stat | None:
        """The stat, or None; with ``watch``, hear when it is created, changed or deleted."""
        client = self._client()
        stat = await self._call(
            client.exists_async, path, self._watch if watch else None
        )
        return None if stat is None else Stat.of(stat)

    async def get_children(self, path: str, *, watch: bool = False) -> list[str]:
        """The children's names, sorted; with ``watch``, hear when the list changes."""
        client = self._client()
        children = await self._call(
            client.get_children_async, path, self._watch if watch else None
        )
        return sorted(cast(list[str], children))

    async def set(self, path: str, data: bytes, *, version: int = -1) -> Stat:
        """Write ``data``; with ``version``, only over that version (``BadVersionError``
        otherwise: someone wrote since it was read)."""
        client = self._client()
        return Stat.of(await self._call(client.set_async, path, data, version))

    async def delete(
        self, path: str, *, version: int = -1, recursive: bool = False
    ) -> None:
        client = self._client()
        if recursive:
            await trio.to_thread.run_sync(
                lambda: client.delete(path, version, recursive=True)
            )
        else:
            await self._call(client.delete_async, path, version)

    async def transaction(self, ops: Sequence[Op]) -> None:
        """Apply ``ops`` atomically (ZooKeeper's multi): all of them or, if one fails,
        none, raising that one's error (``NodeExistsError``, ``BadVersionError``...)."""
        client = self._client()
        tx = client.transaction()
        missing = await self._missing_parents(ops)
        for op in ops:
            match op:
                case Create(path, data, ephemeral, parents, sequence):
                    for ancestor in _ancestors(path) if parents else ():
                        if ancestor in missing:
                            # created once, just before it is needed
                            missing.remove(ancestor)
                            tx.create(ancestor, b"")
                    tx.create(path, data, ephemeral=ephemeral, sequence=sequence)
                case SetData(path, data, version):
                    tx.set_data(path, data, version)
                case Check(path, version):
                    tx.check(path, version)
                case Delete(path, version, recursive, must_exist):
                    if not must_exist and await self.exists(path) is None:
                        continue
                    if recursive:
                        for descendant in await self._descendants(path):
                            tx.delete(descendant)
                    tx.delete(path, version)
        results = await self._call(tx.commit_async)
        for result in results:
            # The op that failed carries its error; the others say they were rolled back.
            if isinstance(result, Exception) and not isinstance(
                result, RolledBackError
            ):
                raise result

    async def _missing_parents(self, ops: Sequence[Op]) -> list[str]:
        """The ancestors of ``parents=True`` creates that neither exist nor are created by
        ``ops``: created in the same transaction. Their existence is asked all at once
        (kazoo pipelines the requests), one round trip in all."""
        created = {op.path for op in ops if isinstance(op, Create)}
        wanted = {
            ancestor
            for op in ops
            if isinstance(op, Create) and op.parents
            for ancestor in _ancestors(op.path)
            if ancestor not in created
        }
        client = self._client()
        asked = [(path, client.exists_async(path)) for path in sorted(wanted)]
        return [path for path, result in asked if await self._wait(result) is None]

    async def _descendants(self, path: str) -> list[str]:
        """Every znode under ``path``, deepest first (an absent ``path`` has none)."""
        try:
            children = await self.get_children(path)
        except NoNodeError:
            return []
        found: list[str] = []
        for child in children:
            below = f"{path}/{child}"
            found.extend(await self._descendants(below))
            found.append(below)
        return found

    async def ensure_path(self, path: str) -> None:
        """Create ``path`` and its parents where missing (Kafka's persistent paths)."""
        client = self._client()
        await self._call(client.ensure_path_async, path)
