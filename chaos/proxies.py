"""Link faults without network namespaces: a TCP fault proxy on every link between two
nodes, each told its source by the kernel's socket tables.

Where namespaces cannot be made (not root, no iproute2), or when a run asks for it
(``--links proxies``), the nodes' inter-node traffic goes through
:class:`~minikafka.net.testing.FaultProxy`\\ s instead, and the partition kinds and
``slow`` are carried out on them:

- every node has one proxy port in front of its inter-node listener: a broker's
  ``REPLICATION`` listener (what the other brokers fetch from, and in ZooKeeper mode
  what the controller sends its requests to) is advertised at the proxy's port; a
  KRaft controller listens on a port of its own and ``controller.quorum.voters`` names
  the proxy's (:func:`place`). The clients' listener is not proxied (the harness's
  clients are outside every partition, as in namespace mode), nor is ZooKeeper's
  server (every broker reaches it, as in namespace mode);
- every node reaches broker B at one advertised address, so the port alone does not
  say which link a connection is on. When the proxy accepts one it looks the
  connecting socket up: the row of ``/proc/net/tcp`` (or ``tcp6``) whose local address
  is the connection's peer and whose remote one is the proxy gives the socket's inode,
  and the node whose process holds that inode among its ``/proc/PID/fd`` is the source
  (:func:`source_of`; Linux, no root needed: the nodes are this user's processes). The
  pids are read from the nodes' pid files at each lookup, so a node started again is
  known by its new one;
- the connection is then served by the :class:`FaultProxy` of its link ``(source,
  destination)``; a connection from no known node (a client, a tool) by the
  destination's unfaulted one, and counted (:attr:`LinkProxies.unidentified`).

A cut link ``(a, b)`` (``a``'s packets never reach ``b``) stalls what ``a`` sends on
both links between them: upstream on the connections ``a`` opened to ``b``, downstream
on those ``b`` opened to ``a``. A stalled direction holds its bytes and closes nothing,
as a DROP rule does (:class:`FaultProxy`'s ``stall``); healing lets them through, in
order. A slow node's bytes are delayed the same way on every link (``delay``).

What it does not do that namespaces do: a new connection across a cut is accepted by
the proxy (and then hears nothing) where a DROP rule lets its connect time out; a slow
node is slowed on its links to the other nodes only (its clients' traffic is not), by
a fixed delay (no jitter, no loss); and the proxies add a hop to every inter-node byte.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import trio

from minikafka.broker.testing import ProcessCluster, free_ports
from minikafka.net.testing import FaultProxy

Link = tuple[int, int]
Direction = Literal["upstream", "downstream"]
UP: Direction = "upstream"
DOWN: Direction = "downstream"
HOST = "127.0.0.1"
_THREAD_TIMEOUT = 60.0
"""Seconds the proxies' thread may take to start or stop on a loaded machine."""
PID_FILE_WAIT = 0.2
"""Seconds to wait before looking a connection's source up once more, when no node's
pid held it (in the lookup's own thread: no other connection waits)."""


def _address(text: str) -> tuple[str, int]:
    """A ``/proc/net/tcp*`` address (``0100007F:1F90``: the IP as the kernel's 32-bit
    words in host order, the port big-endian) as ``(ip, port)``; an IPv4-mapped IPv6
    address as its IPv4 one."""
    host, _, port = text.partition(":")
    words = [int(host[i : i + 8], 16) for i in range(0, len(host), 8)]
    packed = struct.pack(f"={len(words)}I", *words)
    ip = ipaddress.ip_address(packed)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(port, 16)


def _normal(address: tuple[str, int]) -> tuple[str, int]:
    ip = ipaddress.ip_address(address[0].split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), address[1]


def socket_inode(local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """The inode of the socket whose local address is ``local`` and remote one
    ``remote`` (this network namespace's ``/proc/net/tcp`` and ``tcp6``), or None."""
    local, remote = _normal(local), _normal(remote)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            next(rows, None)  # the header
            for row in rows:
                fields = row.split()
                if len(fields) < 10:
                    continue
                if _address(fields[1]) == local and _address(fields[2]) == remote:
                    inode = int(fields[9])
                    return inode or None
    return None


def holder(inode: int, pids: Mapping[int, int]) -> int | None:
    """Which of ``pids`` (pid -> node) holds the socket ``inode``: its node, or None."""
    wanted = f"socket:[{inode}]"
    for pid, node in pids.items():
        fds = f"/proc/{pid}/fd"
        try:
            names = os.listdir(fds)
        except OSError:  # gone, or not ours
            continue
        for name in names:
            with contextlib.suppress(OSError):  # closed meanwhile
                if os.readlink(f"{fds}/{name}") == wanted:
                    return node
    return None


def source_of(
    peer: tuple[str, int], proxy: tuple[str, int], pids: Mapping[int, int]
) -> int | None:
    """The node (of ``pids``: pid -> node) that opened the connection the proxy at
    ``proxy`` accepted from ``peer``, or None (a client, or a process gone)."""
    inode = socket_inode(peer, proxy)
    return None if inode is None else holder(inode, pids)


def _stranger(inode: int | None) -> str:
    """What holds the socket ``inode``, when no node does: for the run's summary."""
    if inode is None:
        return "closed"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if holder(inode, {int(pid): 0}) is not None:
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                return " ".join(part.decode(errors="replace") for part in command[:4])
    return "?"


def pid_file_reader(cluster: ProcessCluster) -> Callable[[int], int | None]:
    """A node's pid as its pid file says now (the file, not the cluster's state:
    read from the proxies' thread while the runner starts and kills nodes)."""

    def pid(node: int) -> int | None:
        try:
            return int(cluster.pid_file(node).read_text())
        except (OSError, ValueError):
            return None

    return pid


class LinkProxies:
    """A proxy port per node in ``targets`` (node -> the port its inter-node listener
    is on), and a :class:`FaultProxy` per link between two of them, run by a trio loop
    in a thread of its own; ``pid_of`` says a node's pid now (None: not running)."""

    def __init__(
        self, targets: Mapping[int, int], pid_of: Callable[[int], int | None]
    ) -> None:
        self.nodes = tuple(sorted(targets))
        self._pid_of = pid_of
        self.links = {
            (src, dst): FaultProxy(HOST, targets[dst])
            for dst in self.nodes
            for src in self.nodes
            if src != dst
        }
        self.unfaulted = {dst: FaultProxy(HOST, targets[dst]) for dst in self.nodes}
        self.cut_links: set[Link] = set()
        self.slowed: dict[int, float] = {}
        self.identified: Counter[Link] = Counter()
        """Connections served per link, by source and destination."""
        self.unidentified: Counter[int] = Counter()
        """Connections from no known node, or from a node to itself (not faulted),
        per destination."""
        self.strangers: Counter[str] = Counter()
        """Those connections, and a node's to itself, by what was found of their
        source: ``closed`` (no socket row with an inode: the connecting socket gone by
        the lookup), the command line of the process holding it (``?``: none of this
        user's), or ``node N to itself``."""
        self._ports: dict[int, int] = {}
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._started = threading.Event()
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._started.wait(_THREAD_TIMEOUT) or self.failure is not None:
            raise RuntimeError(f"the link proxies did not start: {self.failure!r}")

    def port(self, node: int) -> int:
        """The proxy's port in front of ``node``: where the other nodes reach it."""
        return self._ports[node]

    # --- the faults ------------------------------------------------------------------

    def cut(self, links: Iterable[Link]) -> None:
        """Hold every byte each link's source sends to its destination."""
        self.cut_links |= set(links)
        self._apply()

    def heal(self, links: Iterable[Link] | None = None) -> None:
        """Let ``links`` through again (every cut link if None)."""
        self.cut_links -= self.cut_links if links is None else set(links)
        self._apply()

    def slow(self, node: int, params: Mapping[str, float]) -> str:
        """Delay everything ``node`` sends to the other nodes; what was done."""
        delay_ms = params.get("delay_ms", 100.0)
        self.slowed[node] = delay_ms / 1000.0
        self._apply()
        return (
            f"fault proxies: {delay_ms:.0f} ms delay on node {node}'s links to the "
            "other nodes (no jitter or loss; its clients' traffic not slowed)"
        )

    def unslow(self, node: int) -> None:
        self.slowed.pop(node, None)
        self._apply()

    def _apply(self) -> None:
        assert self._token is not None
        trio.from_thread.run_sync(self._set_links, trio_token=self._token)

    def _set_links(self) -> None:
        """Every link's proxy set to what the cut links and slow nodes make it: the
        directions to let through healed first (only those: healing a direction that
        stays stalled would let its waiting bytes out), then delays, then stalls."""
        for (src, dst), proxy in self.links.items():
            # Upstream: what src sends on the connections it opened to dst;
            # downstream: what dst sends back on them.
            held = {
                UP: (src, dst) in self.cut_links,
                DOWN: (dst, src) in self.cut_links,
            }
            proxy.heal(tuple(d for d in (UP, DOWN) if not held[d]))
            proxy.delay(self.slowed.get(src, 0.0), (UP,))
            proxy.delay(self.slowed.get(dst, 0.0), (DOWN,))
            stalled = tuple(d for d in (UP, DOWN) if held[d])
            if stalled:
                proxy.stall(stalled)

    # --- running ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # close() reports it
            self.failure = exc
            self._started.set()

    async def _main(self) -> None:
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            for node in self.nodes:
                await nursery.start(self._listen, node)
            self._token = trio.lowlevel.current_trio_token()
            self._started.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    async def _listen(
        self,
        node: int,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        [listener] = await trio.open_tcp_listeners(0, host=HOST)
        self._ports[node] = listener.socket.getsockname()[1]
        async with listener, trio.open_nursery() as nursery:
            task_status.started()
            while True:
                client = await listener.accept()
                nursery.start_soon(self._route, node, client)

    async def _route(self, dst: int, client: trio.SocketStream) -> None:
        """Serve ``client`` through the proxy of its link, once its source is known."""
        peer = client.socket.getpeername()
        here = client.socket.getsockname()
        source = await trio.to_thread.run_sync(self._source, peer, here, dst)
        proxy = self.links.get((source, dst)) if source is not None else None
        if source is None or proxy is None:
            self.unidentified[dst] += 1
            await self.unfaulted[dst].serve(client)
            return
        self.identified[source, dst] += 1
        await proxy.serve(client)

    def _source(
        self, peer: tuple[str, int], here: tuple[str, int], dst: int
    ) -> int | None:
        inode = socket_inode(peer[:2], here[:2])
        node = None if inode is None else holder(inode, self._pids())
        if inode is not None and node is None:
            # A node started a moment ago may not have its pid file written yet.
            time.sleep(PID_FILE_WAIT)
            node = holder(inode, self._pids())
        if node == dst:  # ZooKeeper mode's controller has a channel to itself too
            self.strangers[f"node {node} to itself"] += 1
        elif node is None:
            self.strangers[_stranger(inode)] += 1
        return node

    def _pids(self) -> dict[int, int]:
        """Pid -> node, for the nodes running now."""
        return {
            pid: node for node in self.nodes if (pid := self._pid_of(node)) is not None
        }

    def close(self) -> None:
        """Stop the proxies (their connections closed); raises what stopped them
        early, if something did."""
        if self._thread.is_alive() and self._stop is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(_THREAD_TIMEOUT)
        if self.failure is not None:
            raise self.failure

    def summary(self) -> str:
        """The connections each proxy served, for the run's summary."""
        faulted = sum(self.identified.values())
        return (
            f"{faulted} inter-node connections through the link proxies, "
            f"{sum(self.unidentified.values())} not faulted (from no node, or a node's "
            "to itself"
            + "".join(f"; {n} {what}" for what, n in sorted(self.strangers.items()))
            + ")"
        )


def place(cluster: ProcessCluster, added: Sequence[int]) -> LinkProxies:
    """Start a proxy per node of ``cluster`` and per broker in ``added`` (to be added
    mid-run), and lay the nodes out behind them (before :meth:`ProcessCluster.up`):
    each broker gets a ``REPLICATION`` listener on a port of its own, advertised at its
    proxy's; each KRaft controller listens where it did, the voters naming its proxy's
    port. The properties of the nodes there now are written again; an added broker's
    are written when it is added (its replication port is in the layout already)."""
    brokers = [*sorted(cluster.broker_ports), *added]
    taken = {*cluster.broker_ports.values(), *cluster.controller_ports.values()}
    if cluster.zookeeper_port is not None:
        taken.add(cluster.zookeeper_port)
    ports = [p for p in free_ports(len(brokers) + len(taken)) if p not in taken]
    replication = dict(zip(brokers, ports, strict=False))
    targets = {c: cluster.listen_port(c) for c in cluster.controller_ids}
    targets |= replication
    proxies = LinkProxies(targets, pid_file_reader(cluster))
    try:
        for broker, port in replication.items():
            cluster.replication_ports[broker] = (port, proxies.port(broker))
        for controller in cluster.controller_ids:
            cluster.controller_listen_ports[controller] = targets[controller]
            cluster.controller_ports[controller] = proxies.port(controller)
        for node in cluster.node_ids:
            cluster.add_node(node)
        _save_layout(cluster)
    except BaseException:
        proxies.close()
        raise
    return proxies


def _save_layout(cluster: ProcessCluster) -> None:
    """The layout file as the nodes are now laid out (``minikafka cluster`` reads it)."""
    path = cluster.root / "cluster.json"
    layout = json.loads(path.read_text())
    layout["controller_ports"] = {
        str(c): p for c, p in cluster.controller_ports.items()
    }
    layout["controller_listen_ports"] = {
        str(c): p for c, p in cluster.controller_listen_ports.items()
    }
    layout["replication_ports"] = {
        str(b): list(p) for b, p in cluster.replication_ports.items()
    }
    path.write_text(json.dumps(layout, indent=2) + "\n")


def proxy_reason(links: str, no_namespaces: str | None) -> str | None:
    """Why a run's link faults go through the proxies (``links``: ``auto``,
    ``namespaces`` or ``proxies``; ``no_namespaces``: why namespaces cannot be made
    here, or None), or None when they are made in namespaces."""
    if links == "proxies":
        return "asked for (--links proxies)"
    if links == "auto" and no_namespaces is not None:
        return f"network namespaces cannot be made here: {no_namespaces}"
    return None


def links_line(namespaces: str | None, proxies: str | None) -> str:
    """The summary's ``link faults:`` line: ``namespaces``, the network's names (if
    the run made one), or ``proxies``, why it used them (if it did)."""
    if namespaces is not None:
        return (
            "link faults: partitions injected, each node in a network namespace "
            f"({namespaces}); slow links by tc netem, or tc tbf where the kernel lacks "
            "netem (each slow fault's line says which)"
        )
    if proxies is not None:
        return (
            "link faults: partitions and slow links on TCP fault proxies in front of "
            "each node's inter-node listener, each connection's source found in "
            f"/proc (no network namespaces: {proxies})"
        )
    return "link faults: none requested (partitions need --faults naming them)"
