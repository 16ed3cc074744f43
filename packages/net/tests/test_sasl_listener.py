"""SASL listeners: Kafka's keys, and the authenticator's shell inside the channel.

- ``sasl.enabled.mechanisms`` and each mechanism's JAAS line are read per listener; a
  bad or missing value stops start-up naming the key.
- Before authentication only ApiVersions and SaslHandshake are taken: another request
  closes the connection unanswered, as Kafka's authenticator does.
- SaslHandshake v1 then SaslAuthenticate (PLAIN, SCRAM-SHA-256) authenticates, and every
  later request carries the user as its principal; SaslHandshake v0's bare tokens too.
- An unknown mechanism or a wrong password is answered with Kafka's error, counted and
  logged once, and the connection closed after
  ``connection.failed.authentication.delay.ms``; other connections are served.
- SaslAuthenticate v1+ tells the client ``connections.max.reauth.ms`` (KIP-368).
- A frame over ``sasl.server.max.receive.size`` before authentication, and a seeded
  sweep of random, truncated and garbled exchange frames, close only their connection.
"""

from __future__ import annotations

import datetime
import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import (
    SaslHandshakeRequest as SaslHandshakeRequestV0,
)
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from minikafka.common import ConfigError
from minikafka.net import ApiKey, NetConfig, Request, SocketServer
from minikafka.net._framing import SIZE_PREFIX
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    ScriptedHandler,
    echo_metadata,
    request_frame,
)
from minikafka.security import SCRAM_SHA_256, ScramSaslClient, plain_client_message
from minikafka.trace import NullTracer

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_alice="alice-secret" user_bob="bob-secret";'
)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'user_alice="alice-secret";'
)
SUPPORTED: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.METADATA: (0, 12),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}


def sasl_props(**extra: str) -> dict[str, str]:
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        **extra,
    }


def refused(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        NetConfig.from_properties(props)
    return err.value


# --- configuration --------------------------------------------------------------------


def test_kafkas_default_mechanism_gssapi_is_refused_naming_the_key() -> None:
    props = sasl_props()
    del props["sasl.enabled.mechanisms"]
    error = refused(props)
    assert error.key == "sasl.enabled.mechanisms"
    assert "GSSAPI" in str(error)


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        (
            {"sasl.enabled.mechanisms": "PLAIN,KERBEROS"},
            "sasl.enabled.mechanisms",
            "KERBEROS",
        ),
        (
            {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "DIGEST-MD5"},
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
            "DIGEST-MD5",
        ),
        (
            {"listener.name.sasl_plaintext.plain.sasl.jaas.config": ""},
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "set its users",
        ),
        (
            {"listener.name.sasl_plaintext.plain.sasl.jaas.config": SCRAM_JAAS},
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "PlainLoginModule",
        ),
        (
            {
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS[:-1],
            },
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "';'",
        ),
        ({"connections.max.reauth.ms": "soon"}, "connections.max.reauth.ms", "soon"),
    ],
)
def test_a_bad_sasl_value_stops_start_up_naming_its_key(
    change: dict[str, str], key: str, words: str
) -> None:
    error = refused(sasl_props(**change))
    assert error.key == key
    assert words in str(error)


# --- the channel ----------------------------------------------------------------------


@asynccontextmanager
async def sasl_server(seen: list[Request], **extra: str) -> AsyncIterator[SocketServer]:
    async def on_metadata(request: Request) -> None:
        seen.append(request)
        echo_metadata(request)

    config = NetConfig.from_properties(sasl_props(**extra))
    handler = ScriptedHandler(on_metadata, SUPPORTED)
    server = SocketServer(config, handler, tracer=NullTracer())
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            await server.shutdown(grace_seconds=5)


async def call(connection: RawConnection, body: object, correlation_id: int) -> object:
    await connection.send(request_frame(body, correlation_id))  # type: ignore[arg-type]
    api_key, version = int(body.__api_key__), int(body.__version__)  # type: ignore[attr-defined]
    answer = await connection.receive_response(api_key, version)
    assert answer is not None, "the connection was closed"
    assert answer[0] == correlation_id
    return answer[1]


async def plain_login(connection: RawConnection, user: str, password: str) -> object:
    handshake = await call(connection, SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert getattr(handshake, "error_code") == ErrorCode.none  # noqa: B009
    token = plain_client_message(user, password)
    return await call(connection, SaslAuthenticateRequest(auth_bytes=token), 2)


async def test_a_request_before_authentication_closes_the_connection() -> None:
    seen: list[Request] = []
    async with sasl_server(seen) as server:
        connection = await RawConnection.open(server)
        await connection.send(request_frame(METADATA_V9, 1))
        assert await connection.receive_frame() is None
    assert seen == []


async def test_plain_authenticates_and_requests_carry_the_user() -> None:
    """SaslHandshake v1, SaslAuthenticate v2 with PLAIN, then Metadata as User:alice;
    the session lifetime is connections.max.reauth.ms (KIP-368)."""
    seen: list[Request] = []
    async with sasl_server(seen, **{"connections.max.reauth.ms": "60000"}) as server:
        connection = await RawConnection.open(server)
        answer = await plain_login(connection, "alice", "alice-secret")
        assert getattr(answer, "error_code") == ErrorCode.none  # noqa: B009
        lifetime = getattr(answer, "session_lifetime")  # noqa: B009
        assert lifetime == datetime.timedelta(milliseconds=60000)
        await connection.send(
            b"".join(request_frame(METADATA_V9, i) for i in range(3, 13))
        )
        for i in range(3, 13):
            got = await connection.receive_response(ApiKey.METADATA, 9)
            assert got is not None
            assert got[0] == i
        await connection.aclose()
    assert {str(request.principal) for request in seen} == {"User:alice"}


async def test_scram_sha_256_authenticates_in_two_rounds() -> None:
    seen: list[Request] = []
    async with sasl_server(seen) as server:
        connection = await RawConnection.open(server)
        await call(connection, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
        client = ScramSaslClient(SCRAM_SHA_256, "alice", "alice-secret")
        first = await call(
            connection, SaslAuthenticateRequest(auth_bytes=client.first_message()), 2
        )
        final = client.evaluate_challenge(getattr(first, "auth_bytes"))  # noqa: B009
        last = await call(connection, SaslAuthenticateRequest(auth_bytes=final), 3)
        assert getattr(last, "error_code") == ErrorCode.none  # noqa: B009
        client.evaluate_challenge(getattr(last, "auth_bytes"))  # noqa: B009
        assert client.complete  # the server proved it holds alice's credential
        await call(connection, METADATA_V9, 4)
        await connection.aclose()
    assert [str(request.principal) for request in seen] == ["User:alice"]


async def test_handshake_v0_carries_bare_tokens() -> None:
    """Clients older than KIP-152: after SaslHandshake v0 the PLAIN token is a bare
    size-prefixed frame, and then requests follow as User:bob."""
    seen: list[Request] = []
    async with sasl_server(seen) as server:
        connection = await RawConnection.open(server)
        await call(connection, SaslHandshakeRequestV0(mechanism="PLAIN"), 1)
        token = plain_client_message("bob", "bob-secret")
        await connection.send(SIZE_PREFIX.pack(len(token)) + token)
        await call(connection, METADATA_V9, 2)
        await connection.aclose()
    assert [str(request.principal) for request in seen] == ["User:bob"]


@pytest.mark.parametrize(
    ("mechanism", "user", "password", "code", "message"),
    [
        ("PLAIN", "alice", "guess", ErrorCode.sasl_authentication_failed, "Invalid"),
        ("PLAIN", "carol", "x", ErrorCode.sasl_authentication_failed, "Invalid"),
        ("GSSAPI", "", "", ErrorCode.unsupported_sasl_mechanism, None),
    ],
)
async def test_a_failed_authentication_is_answered_then_closed_and_counted(
    mechanism: str,
    user: str,
    password: str,
    code: ErrorCode,
    message: str | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A wrong password, an unknown user, an unknown mechanism: Kafka's error, then the
    close (after the failed-authentication delay); one log line; a good client on the
    same listener is served meanwhile."""
    caplog.set_level(logging.INFO, logger="minikafka.net")
    seen: list[Request] = []
    async with sasl_server(seen) as server:
        good = await RawConnection.open(server)
        await plain_login(good, "alice", "alice-secret")
        bad = await RawConnection.open(server)
        handshake = await call(bad, SaslHandshakeRequest(mechanism=mechanism), 1)
        if mechanism == "PLAIN":
            answer = await call(
                bad,
                SaslAuthenticateRequest(
                    auth_bytes=plain_client_message(user, password)
                ),
                2,
            )
        else:
            answer = handshake
            assert getattr(handshake, "mechanisms") == ("PLAIN", "SCRAM-SHA-256")  # noqa: B009
        assert getattr(answer, "error_code") == code  # noqa: B009
        if message is not None:
            assert message in str(getattr(answer, "error_message"))  # noqa: B009
        with trio.fail_after(5):
            assert await bad.wait_closed()
        await call(good, METADATA_V9, 3)
        assert server.failed_authentications == 1
    failures = [r for r in caplog.records if "Failed authentication" in r.message]
    assert len(failures) == 1
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_frame_over_the_sasl_receive_size_fails_authentication() -> None:
    """Before authentication a frame may not exceed sasl.server.max.receive.size: the
    connection is closed as a failed authentication, and counted."""
    seen: list[Request] = []
    async with sasl_server(seen, **{"sasl.server.max.receive.size": "64"}) as server:
        connection = await RawConnection.open(server)
        await call(connection, SaslHandshakeRequest(mechanism="PLAIN"), 1)
        token = plain_client_message("alice", "x" * 100)
        await connection.send(
            request_frame(SaslAuthenticateRequest(auth_bytes=token), 2)
        )
        with trio.fail_after(5):
            assert await connection.wait_closed()
        assert server.failed_authentications == 1


async def test_random_exchange_frames_close_only_their_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A seeded sweep of what a hostile client may send during the exchange: random
    tokens of every size to PLAIN and SCRAM, truncated frames, garbage headers and
    requests out of order. Each connection is answered with an error or closed; none
    raises in the broker, and a good client is served after all of them."""
    caplog.set_level(logging.INFO, logger="minikafka.net")
    rng = random.Random(20261205)
    seen: list[Request] = []
    async with sasl_server(
        seen, **{"connection.failed.authentication.delay.ms": "0"}
    ) as server:
        for case in range(60):
            connection = await RawConnection.open(server)
            mechanism = rng.choice(("PLAIN", "SCRAM-SHA-256"))
            await connection.send(
                request_frame(SaslHandshakeRequest(mechanism=mechanism), 1)
            )
            token = rng.randbytes(rng.choice((0, 1, 3, 40, 300, 5000)))
            frame = request_frame(SaslAuthenticateRequest(auth_bytes=token), 2)
            kind = case % 3
            if kind == 1:
                frame = frame[: rng.randrange(4, len(frame))]  # truncated: then EOF
            elif kind == 2:
                frame = frame[:4] + rng.randbytes(len(frame) - 4)  # garbage after size
            await connection.send(frame)
            if kind == 1:
                await connection.send_eof()
            with trio.fail_after(5):
                assert await connection.wait_closed()
            await connection.aclose()
        good = await RawConnection.open(server)
        await plain_login(good, "alice", "alice-secret")
        await call(good, METADATA_V9, 3)
    assert [str(request.principal) for request in seen] == ["User:alice"]
    assert not [r for r in caplog.records if r.exc_info]
