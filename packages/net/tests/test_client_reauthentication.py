"""KIP-368 on the client: the NetworkClient re-authenticates a live SASL connection.

The listener gives sessions of ``connections.max.reauth.ms=4000``; the client keeps one
connection through several lifetimes, whether its ``ClientSecurity`` is a client
application's (``from_config``: minikafka's producer, consumer, admin and tools) or a
broker's own channel to another node (``for_listener``: replica fetchers, the controller
channel, the marker sender, the Raft transport):

- under a steady stream of pipelined requests, SaslHandshake and SaslAuthenticate are
  sent again before each session ends, between requests: every request is answered, in
  order, as the same user, on the one connection the server accepted, which it never
  closes;
- an idle connection re-authenticates on its timer too, so a request sent after several
  lifetimes of silence is answered on the same connection.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from minikafka.net import (
    ApiKey,
    ClientSecurity,
    ConnectionAccepted,
    ConnectionClosed,
    NetConfig,
    NetworkClient,
    Node,
    Request,
    RequestCompleted,
    SocketServer,
)
from minikafka.net.testing import (
    METADATA_V9,
    ScriptedHandler,
    echo_metadata,
    wait_until,
)
from minikafka.trace.testing import RecordingTracer

from .test_sasl_listener import SUPPORTED, sasl_props

LIFETIME_MS = 4000
"""Kafka's broker refuses a re-authentication within a second of the last one, so no
shorter than that; and the client renews at 85-95% of it, after the requests in flight
are answered, which on a loaded two-core machine can take a few hundred milliseconds: at
2 s (100-300 ms to spare) a renewal now and then began after the session's end, and the
broker closes such a connection, as Kafka's does."""
DEADLINE = 30.0
PROPS = sasl_props(
    **{
        # The listener's users, and the line a broker's own login reads.
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka."
        'common.security.plain.PlainLoginModule required username="alice" '
        'password="alice-secret" user_alice="alice-secret";',
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
    }
)


@asynccontextmanager
async def reauth_listener(
    seen: list[Request], tracer: RecordingTracer
) -> AsyncIterator[Node]:
    """A SASL_PLAINTEXT listener with sessions of LIFETIME_MS; the node to dial."""

    async def on_metadata(request: Request) -> None:
        seen.append(request)
        echo_metadata(request)

    props = {**PROPS, "connections.max.reauth.ms": str(LIFETIME_MS)}
    server = SocketServer(
        NetConfig.from_properties(props),
        ScriptedHandler(on_metadata, SUPPORTED),
        tracer=tracer,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        host, port = server.bound_address()
        try:
            yield Node(1, host, port)
        finally:
            await server.shutdown(grace_seconds=5)


def alice(kind: str) -> ClientSecurity:
    """User:alice with PLAIN: a client application's settings, or a broker's."""
    if kind == "broker":
        return ClientSecurity.for_listener(PROPS, "SASL_PLAINTEXT", "SASL_PLAINTEXT")
    return ClientSecurity.from_config(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain."
            'PlainLoginModule required username="alice" password="alice-secret";',
        }
    )


KINDS = pytest.mark.parametrize("kind", ["application", "broker"])


def handshakes(tracer: RecordingTracer) -> list[str]:
    """The connection id of each SaslHandshake the server answered."""
    return [
        event.connection_id
        for event in tracer.of_type(RequestCompleted)
        if event.api_key == ApiKey.SASL_HANDSHAKE
    ]


@KINDS
async def test_a_busy_connection_reauthenticates_between_requests_without_closing(
    caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="minikafka.net._client")
    seen: list[Request] = []
    tracer = RecordingTracer()
    answered = 0
    async with (
        reauth_listener(seen, tracer) as node,
        NetworkClient.open(security=alice(kind), max_in_flight=5) as client,
    ):
        with trio.fail_after(DEADLINE):
            # Five requests queued at a time, answered in order, until the session
            # has been renewed twice.
            while len(handshakes(tracer)) < 3:
                pending = [await client.enqueue(node, METADATA_V9) for _ in range(5)]
                for request in pending:
                    assert await request.response() is not None
                    answered += 1
    accepted = tracer.of_type(ConnectionAccepted)
    assert len(accepted) == 1, "the client connected once"
    (connection_id,) = {event.connection_id for event in accepted}
    assert set(handshakes(tracer)) == {connection_id}
    assert len(seen) == answered
    assert {r.connection_id for r in seen} == {connection_id}
    assert {str(r.principal) for r in seen} == {"User:alice"}
    closed = tracer.of_type(ConnectionClosed)
    assert all(event.reason != "session expired" for event in closed)
    assert sum("Re-authenticating to node 1" in m for m in caplog.messages) >= 2


async def test_an_idle_connection_reauthenticates_on_its_timer() -> None:
    seen: list[Request] = []
    tracer = RecordingTracer()
    async with (
        reauth_listener(seen, tracer) as node,
        NetworkClient.open(security=alice("application")) as client,
    ):
        await client.send(node, METADATA_V9)
        # Two renewals with nothing else sent.
        await wait_until(lambda: len(handshakes(tracer)) >= 3, DEADLINE)
        assert len(seen) == 1
        await client.send(node, METADATA_V9)
    assert len(tracer.of_type(ConnectionAccepted)) == 1
    assert len({r.connection_id for r in seen}) == 1
