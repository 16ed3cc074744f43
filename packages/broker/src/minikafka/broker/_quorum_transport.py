"""How a controller's Raft node reaches the other voters: their controller listeners,
over this package's NetworkClient (the controller package never imports the network
layer; :class:`~minikafka.controller.RaftNodeShell` is handed this transport)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import trio
from kio.static.protocol import RequestPayload

from minikafka.net import ClientError, ClientSecurity, NetworkClient, Node


@attrs.define(eq=False)
class NetworkTransport:
    voters: Mapping[int, Node]
    client_id: str
    request_timeout: float
    security: ClientSecurity = attrs.field(factory=ClientSecurity, kw_only=True)
    """TLS and SASL towards the other voters (:mod:`._security_channels`)."""
    _client: NetworkClient | None = attrs.field(init=False, default=None)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with NetworkClient.open(
            client_id=self.client_id,
            request_timeout=self.request_timeout,
            security=self.security,
        ) as client:
            self._client = client
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._client = None

    async def send(self, destination: int, body: RequestPayload) -> object:
        if self._client is None:
            raise ConnectionError("the transport is not running")
        try:
            return await self._client.send(self.voters[destination], body)
        except ClientError as exc:
            raise ConnectionError(f"voter {destination}: {exc}") from exc

    def disconnect(self, destination: int) -> None:
        if self._client is not None:
            self._client.disconnect(self.voters[destination])
