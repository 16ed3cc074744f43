"""The ZooKeeper-mode controller's channel to each broker (seed 001; Kafka 2.8's
``ControllerChannelManager`` and its ``RequestSendThread``s).

One queue and one sender task per live broker: the requests an event decided
(LeaderAndIsr, UpdateMetadata, StopReplica) go to each broker in the order they were
decided, each retried until the broker answers or is gone. A broker that moved (a new
registration at another address) gets a new sender; one that left loses its own, with
whatever was still queued for it: the broker that comes back is told everything again.
StopReplica answers go back to the controller as events (the deletion manager waits
for them); every request sent is traced with the answer it got.

A sender never ends on a fault, as Kafka's RequestSendThread does not: a send that
fails, whatever the exception, is logged, the connection dropped and the request sent
again after :data:`RETRY_S`; a fault before the send (encoding the request) or after the
answer (handling it) is logged at ERROR, and the sender goes on with the next request.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.controller.zk import (
    BrokerRequest,
    ControllerRequestSent,
    StopReplica,
)
from minikafka.net import ClientError, NetworkClient, Node
from minikafka.net import stop_replica_v3 as sr
from minikafka.trace import Tracer

from ._wire import stop_replica_errors, to_wire

_logger = logging.getLogger("minikafka.broker.zk_controller")

RETRY_S = 0.2
"""How soon a request to a broker that did not answer is sent again."""

StopReplicaAnswered = Callable[[int, Mapping[tuple[str, int], ErrorCode]], None]
"""Told a broker's StopReplica answer: the broker and each partition's error."""


@attrs.define(eq=False)
class ControllerChannelManager:
    client: NetworkClient
    nursery: trio.Nursery
    tracer: Tracer
    on_stop_replica: StopReplicaAnswered
    _senders: dict[
        int, tuple[Node, trio.MemorySendChannel[BrokerRequest], trio.CancelScope]
    ] = attrs.field(init=False, factory=dict)

    def sync(self, brokers: Mapping[int, Node]) -> None:
        """One sender per broker of ``brokers``, at its current address; none for others."""
        for broker_id in list(self._senders):
            if brokers.get(broker_id) != self._senders[broker_id][0]:
                self._senders.pop(broker_id)[2].cancel()
        for broker_id, node in brokers.items():
            if broker_id not in self._senders:
                send, receive = trio.open_memory_channel[BrokerRequest](math.inf)
                scope = trio.CancelScope()
                self._senders[broker_id] = (node, send, scope)
                self.nursery.start_soon(self._send_to, node, receive, scope)

    def send(self, requests: Iterable[BrokerRequest]) -> None:
        """Queue each request for its broker (dropped if that broker has no sender)."""
        for request in requests:
            sender = self._senders.get(request.broker_id)
            if sender is not None:
                sender[1].send_nowait(request)

    def stop(self) -> None:
        for _, _, scope in self._senders.values():
            scope.cancel()
        self._senders.clear()

    async def _send_to(
        self,
        node: Node,
        queue: trio.MemoryReceiveChannel[BrokerRequest],
        scope: trio.CancelScope,
    ) -> None:
        """Kafka's RequestSendThread: each request in order, until it is answered."""
        with scope:
            async for request in queue:
                try:
                    await self._send_one(node, request)
                except Exception:
                    # Kafka's: "Controller fails to send a request to broker"; the
                    # connection may be unusable, and the next request goes.
                    _logger.exception(
                        "controller fails to send %s to broker %d",
                        request.api,
                        request.broker_id,
                    )
                    self.client.disconnect(node)

    async def _send_one(self, node: Node, request: BrokerRequest) -> None:
        wire = to_wire(request.payload)
        while True:
            try:
                answer = await self.client.send(node, wire)
            except Exception as exc:
                # Unreachable, or a failure nobody foresaw: the same way (Kafka's
                # RequestSendThread catches every Throwable here), a new connection and
                # the request again.
                if not isinstance(exc, ClientError):
                    _logger.warning(
                        "controller fails to send %s to broker %d: %r; reconnecting",
                        request.api,
                        request.broker_id,
                        exc,
                    )
                self._trace(request, f"unreachable: {exc}")
                self.client.disconnect(node)
                await trio.sleep(RETRY_S)
                continue
            error = getattr(answer, "error_code", ErrorCode.none)
            self._trace(
                request,
                error.name.upper() if isinstance(error, ErrorCode) else str(error),
            )
            stop = request.payload
            if isinstance(answer, sr.StopReplicaResponse) and isinstance(
                stop, StopReplica
            ):
                errors = stop_replica_errors(answer)
                if answer.error_code is not ErrorCode.none:  # the whole request failed
                    errors = {
                        (p.topic, p.partition): answer.error_code
                        for p in stop.partitions
                    }
                self.on_stop_replica(request.broker_id, errors)
            return

    def _trace(self, request: BrokerRequest, error: str) -> None:
        if self.tracer.enabled:
            partitions = len(getattr(request.payload, "partitions", ()))
            self.tracer.emit(
                ControllerRequestSent(
                    request.api,
                    request.broker_id,
                    request.payload.controller_epoch,
                    partitions,
                    error,
                )
            )
