"""ConnectionQuotas: how many connections the broker holds, in all and per address.

Kafka's ``SocketServer.ConnectionQuotas``, for two of its limits:

- ``max.connections`` (KIP-402): when the broker holds that many connections the
  Acceptors stop accepting until one closes. They do not accept-and-reset: a client
  over the limit waits in the listen backlog, and gets in as soon as a slot frees.
  The Acceptor waits for a free slot *before* ``accept()``, so the waiting client
  costs no descriptor; it takes the slot after ``accept()`` (waiting again, with the
  socket in hand as Kafka does, in the rare case another listener took it meanwhile).
- ``max.connections.per.ip`` with ``max.connections.per.ip.overrides``: a new
  connection from an address that already holds its limit is closed at once. The
  overrides name hosts or addresses; names are resolved once, when the server starts,
  and the override applies to every address a name resolves to (Kafka used only the
  first until KAFKA-19889).

Listener-prefixed limits (``listener.name.x.max.connections``), the inter-broker
listener's exemption and ``max.connection.creation.rate`` are not implemented.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Mapping

import attrs
import trio

from ._config import NetConfig

log = logging.getLogger("minikafka.net")


def normalise_address(address: str) -> str:
    """One spelling per address: IPv4-mapped IPv6 as IPv4, IPv6 compressed."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


@attrs.define(eq=False)
class ConnectionQuotas:
    max_connections: int
    max_connections_per_ip: int
    overrides: Mapping[str, int] = attrs.field(factory=dict)
    """Normalised address -> its limit (hosts already resolved)."""
    total: int = attrs.field(init=False, default=0)
    """Connections held (counted from accept() until their close)."""
    waiting_for_slot: int = attrs.field(init=False, default=0)
    """Acceptor loops blocked on ``max.connections``."""
    _per_address: dict[str, int] = attrs.field(init=False, factory=dict)
    _slot_freed: trio.Event = attrs.field(init=False, factory=trio.Event)

    @classmethod
    async def resolve(cls, config: NetConfig) -> ConnectionQuotas:
        """The quotas of ``config``, with the override hosts looked up once."""
        overrides: dict[str, int] = {}
        for host, limit in config.max_connections_per_ip_overrides:
            try:
                infos = await trio.socket.getaddrinfo(
                    host, None, type=socket.SOCK_STREAM
                )
            except OSError as e:
                log.warning(
                    "max.connections.per.ip.overrides: cannot resolve %r (%s); "
                    "its override applies to no connection",
                    host,
                    e,
                )
                continue
            for info in infos:
                overrides[normalise_address(str(info[4][0]))] = limit
        return cls(config.max_connections, config.max_connections_per_ip, overrides)

    def limit_for(self, address: str) -> int:
        return self.overrides.get(address, self.max_connections_per_ip)

    def connections_from(self, address: str) -> int:
        return self._per_address.get(address, 0)

    async def wait_for_slot(self) -> None:
        """Return once the broker holds fewer than ``max.connections``."""
        if self.total < self.max_connections:
            return
        self.waiting_for_slot += 1
        try:
            while self.total >= self.max_connections:
                await self._slot_freed.wait()
        finally:
            self.waiting_for_slot -= 1

    async def acquire_slot(self) -> None:
        """Wait for a free slot, then take it (no checkpoint between the two)."""
        await self.wait_for_slot()
        self.total += 1

    def release_slot(self) -> None:
        self.total -= 1
        self._slot_freed.set()
        self._slot_freed = trio.Event()

    def add_address(self, address: str) -> bool:
        """Count one more connection from ``address``; False (not counted) if over its limit."""
        count = self._per_address.get(address, 0)
        if count >= self.limit_for(address):
            return False
        self._per_address[address] = count + 1
        return True

    def connection_closed(self, address: str) -> None:
        """A connection counted by :meth:`add_address` is gone: free its slot too."""
        count = self._per_address.get(address, 0) - 1
        if count > 0:
            self._per_address[address] = count
        else:
            self._per_address.pop(address, None)
        self.release_slot()
