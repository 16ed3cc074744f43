"""NetworkClient: negotiation, every advertised version, in-flight limit, timeouts."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v13.request import MetadataRequest as MetadataRequestV13

from minikafka.net import (
    DemoApis,
    DisconnectedError,
    FrameDecoder,
    NetworkClient,
    Node,
    Request,
    RequestTimedOut,
    SocketServer,
    UnsupportedVersionError,
    build,
    encode_entity,
    encode_frame,
    parse_request_header,
    request_schema,
    response_schema,
)
from minikafka.net.testing import (
    METADATA_V9,
    ScriptedHandler,
    echo_metadata,
    serving,
    wait_until,
)


def queued(client: NetworkClient, node: Node, count: int) -> bool:
    return sum(client.queued(node)) == count


def _node(server: SocketServer) -> Node:
    host, port = server.bound_address()
    return Node(1, host, port)


@pytest.mark.parametrize("version", range(13))
async def test_every_advertised_metadata_version_round_trips(version: int) -> None:
    schema = request_schema(3, version)
    assert schema is not None
    body = build(
        schema,
        topics=(),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    async with (
        serving(DemoApis(7, "127.0.0.1", 0)) as server,
        NetworkClient.open(client_id="tests") as client,
    ):
        response: Any = await client.send(_node(server), body)
        assert response is not None
        brokers = response.brokers
        assert [(b.node_id, b.host) for b in brokers] == [(7, "127.0.0.1")]
        assert response.topics == ()
        if version >= 1:
            assert response.controller_id == 7


async def test_a_version_the_broker_does_not_advertise_is_refused() -> None:
    async with (
        serving(DemoApis(1, "127.0.0.1", 0)) as server,
        NetworkClient.open() as client,
    ):
        versions = await client.api_versions(_node(server))
        assert versions[3] == (0, 12)
        body = MetadataRequestV13(
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        with pytest.raises(UnsupportedVersionError):
            await client.send(_node(server), body)


async def test_negotiation_falls_back_when_api_versions_v3_is_unknown() -> None:
    async def echo(request: Request) -> None:
        echo_metadata(request)

    old_broker = ScriptedHandler(echo, supported={18: (0, 2), 3: (0, 9)})
    async with serving(old_broker) as server, NetworkClient.open() as client:
        assert (await client.api_versions(_node(server)))[18] == (0, 2)
        assert await client.send(_node(server), METADATA_V9) is not None


def gated_echo(gate: trio.Event, order: list[int] | None = None) -> ScriptedHandler:
    """Answers Metadata only once ``gate`` is set, noting each correlation id in ``order``."""

    async def gated(request: Request) -> None:
        await gate.wait()
        if order is not None:
            order.append(request.header.correlation_id)
        echo_metadata(request)

    return ScriptedHandler(gated)


async def test_in_flight_requests_are_limited_and_the_rest_wait_unsent() -> None:
    gate = trio.Event()
    order: list[int] = []
    async with serving(gated_echo(gate, order)) as server:
        node = _node(server)
        async with NetworkClient.open(max_in_flight=2) as client:
            await client.api_versions(node)
            results: list[int] = []

            async def one(i: int) -> None:
                await client.send(node, METADATA_V9)
                results.append(i)

            async with trio.open_nursery() as nursery:
                for i in range(5):
                    nursery.start_soon(one, i)
                    await wait_until(functools.partial(queued, client, node, i + 1))
                await wait_until(lambda: client.queued(node) == (2, 3))
                gate.set()
            assert order == sorted(order)  # sent and answered in correlation order
            assert results == [0, 1, 2, 3, 4]


async def test_a_timeout_closes_the_connection_and_fails_what_was_in_flight() -> None:
    gate = trio.Event()
    async with serving(gated_echo(gate)) as server:
        node = _node(server)
        async with NetworkClient.open(request_timeout=0.2) as client:
            await client.api_versions(node)
            errors: list[Exception] = []

            async def one() -> None:
                try:
                    await client.send(node, METADATA_V9)
                except (RequestTimedOut, DisconnectedError) as e:
                    errors.append(e)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(one)
                nursery.start_soon(one)
            assert len(errors) == 2
            assert any(isinstance(e, RequestTimedOut) for e in errors)
            gate.set()
            # The next request reconnects and succeeds.
            assert await client.send(node, METADATA_V9) is not None


async def test_a_request_waits_its_own_timeout_not_the_clients() -> None:
    # Kafka's NetworkClient.send with a request's own timeout (a consumer's JoinGroup,
    # held by the coordinator up to the rebalance timeout): a request given a longer
    # timeout outlives the client's request.timeout.ms, one given a shorter fails first.
    gate = trio.Event()
    async with serving(gated_echo(gate)) as server:
        node = _node(server)
        async with (
            NetworkClient.open(request_timeout=0.2) as client,
            NetworkClient.open(request_timeout=60) as patient,
        ):
            await client.api_versions(node)
            await patient.api_versions(node)
            answered: list[object] = []

            async def long_wait() -> None:
                answered.append(
                    await client.send(node, METADATA_V9, request_timeout=60)
                )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(long_wait)
                await wait_until(lambda: client.queued(node) == (1, 0))
                # A request given 0.2 s (on a client whose own timeout is 60 s) fails:
                # that much time has passed, the long request still waiting.
                with pytest.raises(RequestTimedOut, match=r"after 0\.2s"):
                    await patient.send(node, METADATA_V9, request_timeout=0.2)
                assert client.queued(node) == (1, 0)
                gate.set()
            assert answered
            assert answered[0] is not None


async def test_connecting_to_nothing_fails_clearly() -> None:
    async with NetworkClient.open(connect_timeout=5) as client:
        with pytest.raises(DisconnectedError, match="cannot connect"):
            await client.send(Node(9, "127.0.0.1", 1), METADATA_V9)


async def test_negotiation_survives_an_unsupported_answer_in_the_requests_version() -> (
    None
):
    """librdkafka's mock cluster answers ApiVersions v3 with UNSUPPORTED_VERSION encoded
    in v3's own layout, not v0's (KIP-511): the client must still find a version in
    common (v0 here) instead of losing the connection, and go on to send requests."""

    versions_asked: list[int] = []

    async def handle(stream: trio.SocketStream) -> None:
        decoder = FrameDecoder(1 << 20)
        while data := await stream.receive_some(65536):
            decoder.feed(data)
            for frame in decoder.frames():
                header, _ = parse_request_header(frame)
                versions_asked.append(header.api_version)
                correlation = header.correlation_id.to_bytes(4, "big")
                if header.api_version == 3:  # the mock's bytes: error 35, one entry
                    # 18: v0-v2, throttle
                    body = bytes.fromhex("00230100120000000200000000")
                    await stream.send_all(encode_frame(correlation + body))
                    continue
                cls = response_schema(18, 0)
                assert cls is not None
                answer = build(cls, error_code=ErrorCode.none, api_keys=())
                await stream.send_all(encode_frame(correlation + encode_entity(answer)))

    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1")
        listeners = await nursery.start(serve)
        port = listeners[0].socket.getsockname()[1]
        async with NetworkClient.open(request_timeout=5) as client:
            assert await client.api_versions(Node(1, "127.0.0.1", port)) == {}
        assert versions_asked == [3, 0]
        nursery.cancel_scope.cancel()
