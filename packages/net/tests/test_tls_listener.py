"""TLS listeners: Kafka's ``ssl.*`` keys, and TLS inside the channel.

- Each ``ssl.*`` key is read per listener (``listener.name.<name>.ssl.*`` first), and a
  bad value stops start-up with a ConfigError naming the key as the user wrote it.
- A request read over TLS is framed, muted and answered exactly as over plaintext, and
  carries its connection's principal: the client certificate's subject through
  ``ssl.principal.mapping.rules``, ``User:ANONYMOUS`` without a certificate.
- A failed handshake (a plaintext client, an untrusted or expired certificate with
  ``ssl.client.auth=required``, a subject no rule maps) closes that connection only,
  is counted and logged once; the listener serves the next client.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from minikafka.common import ConfigError
from minikafka.net import ApiKey, NetConfig, Request, SocketServer
from minikafka.net.testing import (
    METADATA_V9,
    RawConnection,
    ScriptedHandler,
    ThrowawayPki,
    echo_metadata,
    make_pki,
    request_frame,
)
from minikafka.trace import NullTracer


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(
        tmp_path_factory.mktemp("pki"), clients=("alice",), expired=("old",)
    )


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    """Another CA's client certificate: valid, but not one the broker trusts."""
    return make_pki(tmp_path_factory.mktemp("stranger"), clients=("mallory",))


def tls_props(pki: ThrowawayPki, **extra: str) -> dict[str, str]:
    return {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.location": str(pki.server.keystore),
        "ssl.truststore.location": str(pki.ca),
        **{key.replace("_", "."): value for key, value in extra.items()},
    }


def refused(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        NetConfig.from_properties(props)
    return err.value


# --- configuration --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("ssl.client.auth", "sometimes", "not one of none, requested, required"),
        ("ssl.keystore.type", "JKS", "only PEM"),
        ("ssl.truststore.type", "PKCS12", "only PEM"),
        ("ssl.keystore.location", "/nonexistent/keystore.pem", "no such file"),
        ("ssl.truststore.location", "/nonexistent/ca.pem", "cannot load"),
        ("ssl.enabled.protocols", "TLSv1.1", "must be among"),
        ("ssl.protocol", "SSLv3", "unsupported protocol"),
        ("ssl.cipher.suites", "TLS_NOT_A_SUITE", "unknown cipher suite"),
        ("ssl.principal.mapping.rules", "RULE:broken", "RULE"),
        ("ssl.keystore.password", "secret", "only ssl.key.password"),
        ("ssl.truststore.password", "secret", "PEM trust store"),
    ],
)
def test_a_bad_ssl_value_stops_start_up_naming_its_key(
    pki: ThrowawayPki, key: str, value: str, words: str
) -> None:
    error = refused({**tls_props(pki), key: value})
    assert error.key == key
    assert words in str(error)


def test_a_listener_override_wins_and_is_the_key_named(pki: ThrowawayPki) -> None:
    """``listener.name.ssl.ssl.client.auth`` beats ``ssl.client.auth``, and its bad value
    is reported under its own name."""
    props = {**tls_props(pki), "ssl.client.auth": "required"}
    config = NetConfig.from_properties(
        {**props, "listener.name.ssl.ssl.client.auth": "requested"}
    )
    context = config.listener_ssl[0].server_context()
    assert context.verify_mode is ssl.CERT_OPTIONAL
    error = refused({**props, "listener.name.ssl.ssl.client.auth": "maybe"})
    assert error.key == "listener.name.ssl.ssl.client.auth"


def test_a_tls_listener_without_a_key_store_is_refused(pki: ThrowawayPki) -> None:
    props = tls_props(pki)
    del props["ssl.keystore.location"]
    assert refused(props).key == "ssl.keystore.location"


def test_required_client_auth_without_a_trust_store_is_refused(
    pki: ThrowawayPki,
) -> None:
    props = {**tls_props(pki), "ssl.client.auth": "required"}
    del props["ssl.truststore.location"]
    assert refused(props).key == "ssl.client.auth"


def test_an_encrypted_key_needs_its_password(tmp_path: Path) -> None:
    """ssl.key.password decrypts a PKCS#8 key; a wrong one is named."""
    locked = make_pki(tmp_path, clients=(), server_key_password="s3cret")
    props = tls_props(locked)
    NetConfig.from_properties({**props, "ssl.key.password": "s3cret"})
    assert refused({**props, "ssl.key.password": "wrong"}).key == "ssl.key.password"


def test_the_key_store_may_be_given_inline(pki: ThrowawayPki) -> None:
    """ssl.keystore.key and ssl.keystore.certificate.chain as PEM text (KIP-651),
    with the line breaks a properties file may have turned into spaces."""
    props = tls_props(pki)
    del props["ssl.keystore.location"]
    props["ssl.keystore.key"] = pki.server.key.read_text().replace("\n", " ")
    props["ssl.keystore.certificate.chain"] = pki.server.cert.read_text()
    props["ssl.truststore.certificates"] = pki.ca.read_text()
    del props["ssl.truststore.location"]
    config = NetConfig.from_properties(props)
    assert config.listener_ssl[0].server_context().verify_mode is ssl.CERT_NONE


@pytest.mark.parametrize(
    ("suites", "tls13"),
    [
        ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", False),
        ("TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", True),
    ],
)
def test_cipher_suites_take_kafkas_iana_names(
    pki: ThrowawayPki, suites: str, tls13: bool
) -> None:
    """A list naming only TLS 1.2 suites turns TLS 1.3 off (no 1.3 suite is left)."""
    config = NetConfig.from_properties({**tls_props(pki), "ssl.cipher.suites": suites})
    context = config.listener_ssl[0].server_context()
    top = ssl.TLSVersion.TLSv1_3 if tls13 else ssl.TLSVersion.TLSv1_2
    assert context.maximum_version is top
    assert "ECDHE-RSA-AES" in " ".join(c["name"] for c in context.get_ciphers())


# --- the channel ----------------------------------------------------------------------


@asynccontextmanager
async def tls_server(
    pki: ThrowawayPki, seen: list[Request], **extra: str
) -> AsyncIterator[SocketServer]:
    async def on_metadata(request: Request) -> None:
        seen.append(request)
        echo_metadata(request)

    config = NetConfig.from_properties(tls_props(pki, **extra))
    server = SocketServer(config, ScriptedHandler(on_metadata), tracer=NullTracer())
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            await server.shutdown(grace_seconds=5)


async def tls_connection(
    server: SocketServer, pki: ThrowawayPki, client: Path | None = None
) -> RawConnection:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if client is not None:
        context.load_cert_chain(str(client))
    host, port = server.bound_address()
    tcp = await trio.open_tcp_stream(host, port)
    stream = trio.SSLStream(tcp, context, server_hostname="localhost")
    await stream.do_handshake()
    return RawConnection(stream)


async def metadata_round_trip(connection: RawConnection, count: int) -> list[str]:
    """Pipelined Metadata requests; the cluster ids of their answers, in order."""
    await connection.send(
        b"".join(request_frame(METADATA_V9, i, "tls") for i in range(count))
    )
    ids = []
    for _ in range(count):
        answer = await connection.receive_response(ApiKey.METADATA, 9)
        assert answer is not None
        ids.append(str(getattr(answer[1], "cluster_id")))  # noqa: B009 (a union)
    return ids


async def test_mtls_requests_carry_the_mapped_certificate_subject(
    pki: ThrowawayPki,
) -> None:
    """Pipelined requests over mTLS are answered in order, each carrying the principal
    ssl.principal.mapping.rules makes of the client's subject."""
    seen: list[Request] = []
    rules = "RULE:^CN=(.*?),OU=clients,O=minikafka$/$1/U,DEFAULT"
    async with tls_server(
        pki, seen, ssl_client_auth="required", ssl_principal_mapping_rules=rules
    ) as server:
        connection = await tls_connection(server, pki, pki.clients["alice"].keystore)
        assert await metadata_round_trip(connection, 20) == [
            f"tls/{i}" for i in range(20)
        ]
        await connection.aclose()
    assert {str(request.principal) for request in seen} == {"User:ALICE"}


async def test_without_a_client_certificate_the_principal_is_anonymous(
    pki: ThrowawayPki,
) -> None:
    seen: list[Request] = []
    async with tls_server(pki, seen, ssl_client_auth="requested") as server:
        connection = await tls_connection(server, pki)
        assert await metadata_round_trip(connection, 2) == ["tls/0", "tls/1"]
        await connection.aclose()
    assert {str(request.principal) for request in seen} == {"User:ANONYMOUS"}


async def test_failed_handshakes_close_only_their_connection(
    pki: ThrowawayPki, stranger: ThrowawayPki, caplog: pytest.LogCaptureFixture
) -> None:
    """A plaintext client, an expired and an untrusted certificate with
    ssl.client.auth=required: each closed, counted, logged as a failed authentication;
    a good client on the same listener is served before and after."""
    caplog.set_level(logging.INFO, logger="minikafka.net")
    seen: list[Request] = []
    async with tls_server(pki, seen, ssl_client_auth="required") as server:
        good = await tls_connection(server, pki, pki.clients["alice"].keystore)
        assert await metadata_round_trip(good, 1) == ["tls/0"]

        plain = await RawConnection.open(server)
        await plain.send(request_frame(METADATA_V9, 7))
        assert await plain.receive_frame() is None
        for bad in (pki.clients["old"].keystore, stranger.clients["mallory"].keystore):
            # TLS 1.3: the client's handshake ends before the server checks its
            # certificate; the refusal arrives as the connection's end.
            connection = await tls_connection(server, pki, bad)
            await connection.send(request_frame(METADATA_V9, 8))
            assert await connection.receive_frame() is None

        assert await metadata_round_trip(good, 1) == ["tls/0"]
        assert server.failed_authentications == 3
    failures = [r.getMessage() for r in caplog.records if "Failed auth" in r.message]
    assert len(failures) == 3
    assert "WRONG_VERSION_NUMBER" in failures[0]
    assert all("CERTIFICATE" in line for line in failures[1:])
    assert not [r for r in caplog.records if r.exc_info]
