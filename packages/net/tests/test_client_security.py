"""A broker's own client over TLS and SASL: the NetworkClient with a ClientSecurity.

- On a SASL_SSL listener the client completes TLS (checking the server's certificate
  against the listener's trust store), then ApiVersions, then SaslHandshake and
  SaslAuthenticate with the mechanism of ``sasl.mechanism.inter.broker.protocol`` and
  the ``username``/``password`` of the listener's JAAS line: PLAIN, SCRAM-SHA-512 and
  OAUTHBEARER; the server sees every later request as that user.
- A wrong password is refused with the server's reason, as :class:`AuthenticationFailed`
  and one ERROR line per node and reason however often it retries; a client with the
  right password is served after it.
- ``ssl.endpoint.identification.algorithm=https`` refuses a certificate that does not
  name the host connected to; an empty value accepts it. An untrusted CA is refused.
- On an mTLS listener the broker presents its own key store: its principal is the
  certificate's subject.
- A bad or missing value stops start-up naming its key.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from minikafka.common import ConfigError
from minikafka.net import (
    AuthenticationFailed,
    ClientSecurity,
    NetConfig,
    NetworkClient,
    Node,
    Request,
    SocketServer,
)
from minikafka.net.testing import (
    METADATA_V9,
    ScriptedHandler,
    ThrowawayPki,
    echo_metadata,
    make_pki,
    tls_listener_properties,
)
from minikafka.trace import NullTracer

from .test_sasl_listener import SUPPORTED

SERVER_JAAS = {
    "plain": "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="{pw}" user_broker="broker-secret";',
    "scram-sha-512": "org.apache.kafka.common.security.scram.ScramLoginModule "
    'required username="broker" password="{pw}" user_broker="broker-secret";',
    "oauthbearer": "org.apache.kafka.common.security.oauthbearer."
    'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";',
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(tmp_path_factory.mktemp("pki"), clients=())


def properties(
    pki: ThrowawayPki, password: str = "broker-secret", host: str = "127.0.0.1"
) -> dict[str, str]:
    """A SASL_SSL listener serving the three mechanisms, with the broker's own login."""
    return {
        "listeners": f"INTERNAL://{host}:0",
        "listener.security.protocol.map": "INTERNAL:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
        **tls_listener_properties(pki, "INTERNAL"),
        **{
            f"listener.name.internal.{m}.sasl.jaas.config": jaas.format(pw=password)
            for m, jaas in SERVER_JAAS.items()
        },
    }


@asynccontextmanager
async def listener(
    props: Mapping[str, str], seen: list[Request]
) -> AsyncIterator[SocketServer]:
    async def on_metadata(request: Request) -> None:
        seen.append(request)
        echo_metadata(request)

    server = SocketServer(
        NetConfig.from_properties(props),
        ScriptedHandler(on_metadata, SUPPORTED),
        tracer=NullTracer(),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            await server.shutdown(grace_seconds=5)


def security(props: Mapping[str, str], mechanism: str) -> ClientSecurity:
    return ClientSecurity.for_listener(
        {**props, "sasl.mechanism.inter.broker.protocol": mechanism},
        "INTERNAL",
        "SASL_SSL",
    )


async def metadata_as(
    server: SocketServer, client_security: ClientSecurity, host: str = "127.0.0.1"
) -> str:
    """Send one Metadata request; the client's failure to authenticate, or ``""``."""
    _, port = server.bound_address()
    async with NetworkClient.open(security=client_security) as client:
        try:
            await client.send(Node(1, host, port), METADATA_V9)
        except AuthenticationFailed as e:
            return str(e)
    return ""


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"])
async def test_the_broker_authenticates_over_tls_as_its_own_user(
    pki: ThrowawayPki, mechanism: str
) -> None:
    seen: list[Request] = []
    props = properties(pki)
    async with listener(props, seen) as server:
        assert await metadata_as(server, security(props, mechanism)) == ""
    assert [str(r.principal) for r in seen] == ["User:broker"]


async def test_a_wrong_password_is_refused_with_the_servers_reason_logged_once(
    pki: ThrowawayPki, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[Request] = []
    served = properties(pki)
    wrong = security(properties(pki, password="not-it"), "SCRAM-SHA-512")
    async with listener(served, seen) as server:
        _, port = server.bound_address()
        node = Node(1, "127.0.0.1", port)
        with caplog.at_level(logging.ERROR, "minikafka.net._client"):
            async with NetworkClient.open(security=wrong) as client:
                for _ in range(3):
                    with pytest.raises(AuthenticationFailed) as failed:
                        await client.send(node, METADATA_V9)
        assert "failed authentication" in str(failed.value)
        assert "Authentication failed" in str(failed.value)
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1, errors
        assert await metadata_as(server, security(served, "SCRAM-SHA-512")) == ""
    assert [str(r.principal) for r in seen] == ["User:broker"]


async def test_hostname_verification_refuses_a_certificate_for_another_host(
    pki: ThrowawayPki,
) -> None:
    """The certificate names localhost and 127.0.0.1; 127.0.0.2 is refused with https
    and accepted when the algorithm is empty."""
    seen: list[Request] = []
    props = properties(pki, host="0.0.0.0")
    async with listener(props, seen) as server:
        refused = await metadata_as(server, security(props, "PLAIN"), "127.0.0.2")
        assert "certificate is not valid for '127.0.0.2'" in refused
        unchecked = {**props, "ssl.endpoint.identification.algorithm": ""}
        assert (
            await metadata_as(server, security(unchecked, "PLAIN"), "127.0.0.2") == ""
        )
    assert len(seen) == 1


async def test_a_server_certificate_from_an_untrusted_ca_is_refused(
    pki: ThrowawayPki, tmp_path: Path
) -> None:
    stranger = make_pki(tmp_path / "stranger", clients=())
    seen: list[Request] = []
    props = properties(pki)
    async with listener(props, seen) as server:
        refused = await metadata_as(server, security(properties(stranger), "PLAIN"))
        assert "SSL handshake failed" in refused
    assert seen == []


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({}, "sasl.mechanism.inter.broker.protocol"),  # Kafka's default GSSAPI
        (
            {"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-1"},
            "sasl.mechanism.inter.broker.protocol",
        ),
        (
            {
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "listener.name.internal.plain.sasl.jaas.config": (
                    "org.apache.kafka.common.security.plain.PlainLoginModule "
                    'required user_broker="x";'
                ),
            },
            "listener.name.internal.plain.sasl.jaas.config",
        ),
        (
            {
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "ssl.endpoint.identification.algorithm": "dns",
            },
            "ssl.endpoint.identification.algorithm",
        ),
    ],
)
def test_a_bad_client_value_stops_start_up_naming_its_key(
    pki: ThrowawayPki, change: dict[str, str], key: str
) -> None:
    props = {**properties(pki), **change}
    with pytest.raises(ConfigError) as err:
        ClientSecurity.for_listener(props, "INTERNAL", "SASL_SSL")
    assert err.value.key == key


async def test_on_an_mtls_listener_the_broker_is_its_certificates_subject(
    pki: ThrowawayPki,
) -> None:
    """SSL with ``ssl.client.auth=required``: the client presents the listener's own key
    store, so the other node sees the principal its certificate's subject maps to."""
    seen: list[Request] = []
    props = {
        "listeners": "INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "INTERNAL:SSL",
        "ssl.client.auth": "required",
        **tls_listener_properties(pki, "INTERNAL"),
    }
    async with listener(props, seen) as server:
        client_side = ClientSecurity.for_listener(props, "INTERNAL", "SSL")
        assert await metadata_as(server, client_side) == ""
    assert [str(r.principal) for r in seen] == ["User:CN=localhost,O=minikafka"]
