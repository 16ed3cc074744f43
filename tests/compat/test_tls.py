"""Real clients over TLS: kcat, confluent-kafka, kafka-python, aiokafka and minikafka's
own client produce through a broker's ``SSL`` listener (server authentication only)
and its mTLS listener (``ssl.client.auth=required``), and what each reads back as a
member of a consumer group (which then commits) is what it wrote.

The broker also keeps a PLAINTEXT listener. A plaintext client on a TLS port, a TLS
client on the plaintext port, and clients with an expired or untrusted certificate on
the mTLS port are refused; the broker serves the others meanwhile and logs no
traceback (the compatibility suite's process watch fails a test whose broker wrote one).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import BrokerProcess, free_ports
from minikafka.net.testing import ThrowawayPki, make_pki
from tests.compat._groups import unique_name
from tests.compat._secure_clients import (
    TIMEOUT,
    Secured,
    aiokafka_round_trip,
    confluent_round_trip,
    java_round_trip,
    kafka_python_round_trip,
    kcat_round_trip,
    minikafka_round_trip,
    values,
)
from tests.compat.conftest import GROUP_OVERRIDES

pytestmark = pytest.mark.external


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(
        tmp_path_factory.mktemp("pki"), clients=("alice",), expired=("old",)
    )


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(tmp_path_factory.mktemp("stranger"), clients=("mallory",))


@pytest.fixture(scope="module")
def tls_process(
    tmp_path_factory: pytest.TempPathFactory, pki: ThrowawayPki
) -> Iterator[tuple[BrokerProcess, dict[str, str]]]:
    """One broker with PLAINTEXT, SSL and MTLS (SSL, client certificates required)
    listeners; the bootstrap address of each, by name."""
    ports = dict(zip(("PLAINTEXT", "SSL", "MTLS"), free_ports(3), strict=True))
    overrides = {
        **GROUP_OVERRIDES,  # each round trip joins a group of its own
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
    }
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"), port=ports["PLAINTEXT"], overrides=overrides
    ) as process:
        yield process, {name: f"127.0.0.1:{port}" for name, port in ports.items()}


@pytest.fixture
def tls_broker(tls_process: tuple[BrokerProcess, dict[str, str]]) -> dict[str, str]:
    return tls_process[1]


def librdkafka_tls(pki: ThrowawayPki, listener: str, **extra: str) -> dict[str, str]:
    config = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca), **extra}
    if listener == "MTLS":
        config["ssl.certificate.location"] = str(pki.clients["alice"].cert)
        config["ssl.key.location"] = str(pki.clients["alice"].key)
    return config


def secured(tls_broker: dict[str, str], pki: ThrowawayPki, listener: str) -> Secured:
    """The SSL listener (server authentication), or MTLS with alice's certificate."""
    mtls = listener == "MTLS"
    return Secured(
        tls_broker[listener],
        "SSL",
        ca=pki.ca,
        cert=pki.clients["alice"].cert if mtls else None,
        key=pki.clients["alice"].key if mtls else None,
    )


LISTENERS = ["SSL", "MTLS"]
ROUND_TRIPS = {
    "confluent-kafka": confluent_round_trip,
    "kafka-python": kafka_python_round_trip,
    "aiokafka": aiokafka_round_trip,
    "minikafka": minikafka_round_trip,
}


@pytest.mark.security_matrix("confluent-kafka")
@pytest.mark.security_matrix("kafka-python")
@pytest.mark.security_matrix("aiokafka")
@pytest.mark.security_matrix("minikafka")
@pytest.mark.parametrize(
    "client", ["confluent-kafka", "kafka-python", "aiokafka", "minikafka"]
)
@pytest.mark.parametrize("listener", LISTENERS)
def test_each_client_produces_and_consumes_in_a_group_over_tls(
    tls_broker: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    client: str,
    request: pytest.FixtureRequest,
) -> None:
    """What each client wrote over TLS (and mTLS) it reads back, in order, as a
    member of a consumer group that then commits what it read."""
    topic = unique_name(request, f"tls-{client}-")
    round_trip = ROUND_TRIPS[client]
    assert round_trip(secured(tls_broker, pki, listener), topic) == values(topic)


@pytest.mark.security_matrix("java")
@pytest.mark.parametrize("listener", LISTENERS)
def test_the_java_client_produces_and_consumes_in_a_group_over_tls(
    tls_broker: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    """Kafka's Java client with PEM stores (KIP-651): the CA as its trust store, and on
    the mTLS listener alice's certificate and key as its key store."""
    topic = unique_name(request, "tls-java-")
    assert java_round_trip(secured(tls_broker, pki, listener), topic) == values(topic)


@pytest.mark.security_matrix("kcat")
@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is installed by make test"
)
@pytest.mark.parametrize("listener", LISTENERS)
def test_kcat_produces_and_consumes_in_a_group_over_tls(
    tls_broker: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "tls-kcat-")
    assert kcat_round_trip(secured(tls_broker, pki, listener), topic) == values(topic)


def metadata_fails(config: dict[str, Any]) -> str:
    """The error librdkafka gives when it cannot get metadata within 5 s."""
    admin = AdminClient(config)
    with pytest.raises(KafkaException) as err:
        admin.list_topics(timeout=5)
    return str(err.value)


def test_wrong_protocols_and_bad_certificates_are_refused_and_others_served(
    tls_process: tuple[BrokerProcess, dict[str, str]],
    pki: ThrowawayPki,
    stranger: ThrowawayPki,
) -> None:
    """Plaintext on the TLS port, TLS on the plaintext port, an expired and an
    untrusted certificate on the mTLS port: no metadata for any; a good client on
    every listener is served right after; the broker's log has each refusal."""
    process, tls_broker = tls_process
    mtls = tls_broker["MTLS"]
    metadata_fails({"bootstrap.servers": tls_broker["SSL"]})
    metadata_fails(
        {"bootstrap.servers": tls_broker["PLAINTEXT"], **librdkafka_tls(pki, "SSL")}
    )
    for who, bad in (("old", pki), ("mallory", stranger)):
        metadata_fails(
            {
                "bootstrap.servers": mtls,
                **librdkafka_tls(
                    pki,
                    "SSL",
                    **{
                        "ssl.certificate.location": str(bad.clients[who].cert),
                        "ssl.key.location": str(bad.clients[who].key),
                    },
                ),
            }
        )
    for listener, address in tls_broker.items():
        config: dict[str, Any] = {"bootstrap.servers": address}
        if listener != "PLAINTEXT":
            config.update(librdkafka_tls(pki, listener))
        assert AdminClient(config).list_topics(timeout=TIMEOUT).brokers
    log = "\n".join(process.output)
    assert "SSL handshake failed: WRONG_VERSION_NUMBER" in log
    assert "a client tried TLS on PLAINTEXT listener PLAINTEXT" in log
    assert "SSL handshake failed: CERTIFICATE_VERIFY_FAILED" in log
    assert "Traceback" not in log
