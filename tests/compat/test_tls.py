"""Real clients over TLS: kcat, confluent-kafka, kafka-python and aiokafka produce and
consume through a broker's ``SSL`` listener (server authentication only) and its mTLS
listener (``ssl.client.auth=required``), and what they read back is what they wrote.

The broker also keeps a PLAINTEXT listener. A plaintext client on a TLS port, a TLS
client on the plaintext port, and clients with an expired or untrusted certificate on
the mTLS port are refused; the broker serves the others meanwhile and logs no
traceback (the compatibility suite's process watch fails a test whose broker wrote one).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import BrokerProcess, free_ports
from minikafka.net.testing import ThrowawayPki, make_pki
from tests.compat._groups import unique_name

pytestmark = pytest.mark.external

COUNT = 50
TIMEOUT = 30.0


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


def values(prefix: str) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(COUNT)]


LISTENERS = ["SSL", "MTLS"]


@pytest.mark.parametrize("listener", LISTENERS)
def test_confluent_kafka_produces_and_consumes_over_tls(
    tls_broker: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "tls-confluent-")
    config = {
        "bootstrap.servers": tls_broker[listener],
        **librdkafka_tls(pki, listener),
    }
    producer = Producer(config)
    for value in values(topic):
        producer.produce(topic, value, partition=0)
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer({**config, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < COUNT and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            got.append(message.value() or b"")
    consumer.close()
    assert got == values(topic)


@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is installed by make test"
)
@pytest.mark.parametrize("listener", LISTENERS)
def test_kcat_produces_and_consumes_over_tls(
    tls_broker: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "tls-kcat-")
    flags = [
        arg
        for key, value in librdkafka_tls(pki, listener).items()
        for arg in ("-X", f"{key}={value}")
    ]
    base = ["kcat", "-b", tls_broker[listener], *flags, "-t", topic]
    stdin = b"\n".join(values(topic)) + b"\n"
    subprocess.run([*base, "-P", "-p", "0"], input=stdin, check=True, timeout=TIMEOUT)
    result = subprocess.run(
        [*base, "-C", "-p", "0", "-o", "beginning", "-e", "-q"],
        capture_output=True,
        check=True,
        timeout=TIMEOUT,
    )
    assert result.stdout.splitlines() == values(topic)


@pytest.mark.parametrize("listener", LISTENERS)
def test_kafka_python_produces_and_consumes_over_tls(
    tls_broker: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaPythonTopicPartition

    topic = unique_name(request, "tls-kafka-python-")
    ssl: dict[str, Any] = {"security_protocol": "SSL", "ssl_cafile": str(pki.ca)}
    if listener == "MTLS":
        ssl["ssl_certfile"] = str(pki.clients["alice"].cert)
        ssl["ssl_keyfile"] = str(pki.clients["alice"].key)
    producer = KafkaProducer(bootstrap_servers=tls_broker[listener], **ssl)
    futures = [producer.send(topic, value, partition=0) for value in values(topic)]
    producer.flush(TIMEOUT)
    assert [f.get(TIMEOUT).offset for f in futures] == list(range(COUNT))
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=tls_broker[listener], enable_auto_commit=False, **ssl
    )
    tp = KafkaPythonTopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < COUNT and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            got.extend(record.value for record in records)
    consumer.close()
    assert got == values(topic)


@pytest.mark.parametrize("listener", LISTENERS)
def test_aiokafka_produces_and_consumes_over_tls(
    tls_broker: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    from aiokafka import (  # type: ignore[import-untyped]
        AIOKafkaConsumer,
        AIOKafkaProducer,
    )
    from aiokafka import TopicPartition as AioTp
    from aiokafka.helpers import create_ssl_context  # type: ignore[import-untyped]

    topic = unique_name(request, "tls-aiokafka-")
    mtls = listener == "MTLS"
    context = create_ssl_context(
        cafile=str(pki.ca),
        certfile=str(pki.clients["alice"].cert) if mtls else None,
        keyfile=str(pki.clients["alice"].key) if mtls else None,
    )
    ssl: dict[str, Any] = {"security_protocol": "SSL", "ssl_context": context}

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=tls_broker[listener], **ssl)
        await producer.start()
        try:
            for value in values(topic):
                await producer.send_and_wait(topic, value, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=tls_broker[listener], enable_auto_commit=False, **ssl
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            tp = AioTp(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            async with asyncio.timeout(TIMEOUT):
                while len(got) < COUNT:
                    batch = await consumer.getmany(tp, timeout_ms=1000)
                    got.extend(r.value for r in batch.get(tp, []))
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(scenario()) == values(topic)


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
