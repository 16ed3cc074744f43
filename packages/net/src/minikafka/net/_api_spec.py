"""A server's protocol surface as one table: which APIs, which versions, which handler.

Kafka's ``KafkaApis`` dispatches on the API key in one ``match``, advertises its
versions from another place (``ApiVersionsResponse``) and decides in a third which
requests wait in a purgatory. Here a server declares each API once, as an
:class:`ApiSpec` row of its :class:`ApiTable` (the shape of aioquic's frame-handler
table, which holds each handler with its limits), and everything else is derived from
the rows: the ApiVersions answer (:meth:`ApiTable.versions`), the Processor's version
check (it asks the handler for those versions), the dispatch and whether a request
parks. An API cannot be advertised without a handler, or handled without being
advertised.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Generic, TypeVar

import attrs

from ._api_keys import ApiKey
from ._request import Request

S = TypeVar("S")


@attrs.frozen
class ApiSpec(Generic[S]):
    """One API a server ``S`` answers: its key, its version range and its handler.

    ``handler`` is an unbound method (or any function) of the server, called as
    ``handler(server, request)``. ``parks`` marks a request that waits for other
    clients (a JoinGroup held until the group has rejoined): the server runs it in a
    task of its own instead of holding one of the ``num.io.threads`` handler tasks.
    """

    key: ApiKey
    min_version: int
    max_version: int
    handler: Callable[[S, Request], Awaitable[None]]
    parks: bool = False

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.min_version <= self.max_version:
            raise ValueError(
                f"{self.key.name}: bad version range {self.min_version}-{self.max_version}"
            )


class ApiTable(Generic[S]):
    """The rows of a server, one per API key, in key order."""

    def __init__(self, *specs: ApiSpec[S]) -> None:
        by_key: dict[int, ApiSpec[S]] = {}
        for spec in sorted(specs, key=lambda s: s.key):
            if spec.key in by_key:
                raise ValueError(f"{spec.key.name} is declared twice")
            by_key[spec.key] = spec
        self._by_key = by_key

    def __getitem__(self, api_key: int) -> ApiSpec[S]:
        return self._by_key[api_key]

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._by_key

    def __iter__(self) -> Iterator[ApiSpec[S]]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def versions(self) -> Mapping[int, tuple[int, int]]:
        """API key -> (min, max) version: what ApiVersions advertises, exactly."""
        return {key: (s.min_version, s.max_version) for key, s in self._by_key.items()}

    async def dispatch(self, server: S, request: Request) -> None:
        """Run the handler of ``request``'s API (the Processor let through only listed keys)."""
        await self._by_key[request.api_key].handler(server, request)
