"""Real clients over SASL: confluent-kafka, kcat, kafka-python and aiokafka
authenticate with PLAIN and SCRAM-SHA-256/512 (and librdkafka with unsecured
OAUTHBEARER tokens) on SASL_PLAINTEXT and SASL_SSL listeners, then produce and consume,
and read back what they wrote.

A wrong password, an unknown user and a mechanism the listener does not enable are
refused with Kafka's errors (the client says which); the broker logs each failed
authentication once, serves the other clients meanwhile, and writes no traceback (the
compatibility suite's process watch fails a test whose broker wrote one).

kcat here links librdkafka 2.0.2, whose SCRAM client echoes the nonce wrongly (its
client-final message repeats its own nonce before the server's): Kafka's server, which
checks the nonce for equality, refuses it, and so does minikafka's; kcat is tested with
PLAIN only.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import BrokerProcess, free_ports
from minikafka.net.testing import ThrowawayPki, make_pki
from tests.compat._groups import unique_name

pytestmark = pytest.mark.external

COUNT = 30
TIMEOUT = 30.0
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
MODULES = {
    "plain": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "scram-sha-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "scram-sha-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayPki:
    return make_pki(tmp_path_factory.mktemp("pki"), clients=())


@pytest.fixture(scope="module")
def sasl_process(
    tmp_path_factory: pytest.TempPathFactory, pki: ThrowawayPki
) -> Iterator[tuple[BrokerProcess, dict[str, str]]]:
    """A broker with PLAINTEXT, SASL_PLAINTEXT, SASL_SSL, ONLYPLAIN (SASL_PLAINTEXT,
    PLAIN alone) and REAUTH (SASL_PLAINTEXT, sessions of 1.5 s) listeners; the bootstrap
    address of each."""
    names = ("PLAINTEXT", *SASL_LISTENERS, "ONLYPLAIN", "REAUTH")
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    users = " ".join(f'user_{user}="{password}"' for user, password in USERS.items())
    overrides = {
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:"
        "SASL_PLAINTEXT,SASL_SSL:SASL_SSL,ONLYPLAIN:SASL_PLAINTEXT,"
        "REAUTH:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.onlyplain.sasl.enabled.mechanisms": "PLAIN",
        "connections.max.reauth.ms": "600000",
        "listener.name.reauth.connections.max.reauth.ms": "1500",
        "ssl.keystore.location": str(pki.server.keystore),
        "ssl.truststore.location": str(pki.ca),
    }
    for listener in (*SASL_LISTENERS, "ONLYPLAIN", "REAUTH"):
        for mechanism, module in MODULES.items():
            key = f"listener.name.{listener.lower()}.{mechanism}.sasl.jaas.config"
            overrides[key] = f"{module} required {users};"
    with BrokerProcess(
        tmp_path_factory.mktemp("broker"), port=ports["PLAINTEXT"], overrides=overrides
    ) as process:
        yield process, {name: f"127.0.0.1:{port}" for name, port in ports.items()}


@pytest.fixture
def addresses(sasl_process: tuple[BrokerProcess, dict[str, str]]) -> dict[str, str]:
    return sasl_process[1]


def librdkafka(
    pki: ThrowawayPki, listener: str, mechanism: str, user: str, password: str
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "security.protocol": "SASL_SSL" if listener == "SASL_SSL" else "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
    }
    if mechanism == "OAUTHBEARER":
        config["enable.sasl.oauthbearer.unsecure.jwt"] = True
        config["sasl.oauthbearer.config"] = f"principal={user}"
    else:
        config["sasl.username"], config["sasl.password"] = user, password
    if listener == "SASL_SSL":
        config["ssl.ca.location"] = str(pki.ca)
    return config


def values(prefix: str) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(COUNT)]


def confluent_round_trip(config: dict[str, Any], topic: str) -> list[bytes]:
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
    return got


@pytest.mark.compat("SaslHandshake", "confluent-kafka")
@pytest.mark.compat("SaslAuthenticate", "confluent-kafka")
@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize(
    "mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
)
def test_confluent_kafka_authenticates_produces_and_consumes(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "sasl-confluent-")
    config = {
        "bootstrap.servers": addresses[listener],
        **librdkafka(pki, listener, mechanism, "alice", USERS["alice"]),
    }
    assert confluent_round_trip(config, topic) == values(topic)


@pytest.mark.compat("SaslHandshake", "kcat")
@pytest.mark.compat("SaslAuthenticate", "kcat")
@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is installed by make test"
)
@pytest.mark.parametrize("listener", SASL_LISTENERS)
def test_kcat_authenticates_with_plain_produces_and_consumes(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "sasl-kcat-")
    config = librdkafka(pki, listener, "PLAIN", "bob", USERS["bob"])
    flags = [arg for k, v in config.items() for arg in ("-X", f"{k}={v}")]
    base = ["kcat", "-b", addresses[listener], *flags, "-t", topic]
    stdin = b"\n".join(values(topic)) + b"\n"
    subprocess.run([*base, "-P", "-p", "0"], input=stdin, check=True, timeout=TIMEOUT)
    result = subprocess.run(
        [*base, "-C", "-p", "0", "-o", "beginning", "-e", "-q"],
        capture_output=True,
        check=True,
        timeout=TIMEOUT,
    )
    assert result.stdout.splitlines() == values(topic)


@pytest.mark.compat("SaslHandshake", "kafka-python")
@pytest.mark.compat("SaslAuthenticate", "kafka-python")
@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")],
)
def test_kafka_python_authenticates_produces_and_consumes(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaPythonTopicPartition

    topic = unique_name(request, "sasl-kafka-python-")
    sasl: dict[str, Any] = {
        "security_protocol": listener,
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": USERS["alice"],
    }
    if listener == "SASL_SSL":
        sasl["ssl_cafile"] = str(pki.ca)
    producer = KafkaProducer(bootstrap_servers=addresses[listener], **sasl)
    futures = [producer.send(topic, value, partition=0) for value in values(topic)]
    producer.flush(TIMEOUT)
    assert [f.get(TIMEOUT).offset for f in futures] == list(range(COUNT))
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=addresses[listener], enable_auto_commit=False, **sasl
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


@pytest.mark.compat("SaslHandshake", "aiokafka")
@pytest.mark.compat("SaslAuthenticate", "aiokafka")
@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [("SASL_SSL", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256")],
)
def test_aiokafka_authenticates_produces_and_consumes(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    from aiokafka import (  # type: ignore[import-untyped]
        AIOKafkaConsumer,
        AIOKafkaProducer,
    )
    from aiokafka import TopicPartition as AioTp
    from aiokafka.helpers import create_ssl_context  # type: ignore[import-untyped]

    topic = unique_name(request, "sasl-aiokafka-")
    sasl: dict[str, Any] = {
        "security_protocol": listener,
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "bob",
        "sasl_plain_password": USERS["bob"],
    }
    if listener == "SASL_SSL":
        sasl["ssl_context"] = create_ssl_context(cafile=str(pki.ca))

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=addresses[listener], **sasl)
        await producer.start()
        try:
            for value in values(topic):
                await producer.send_and_wait(topic, value, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=addresses[listener], enable_auto_commit=False, **sasl
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


def refusal(config: dict[str, Any]) -> str:
    """What librdkafka reports (its error callback, served by poll) when the broker
    refuses it."""
    errors: list[str] = []
    producer = Producer({**config, "error_cb": lambda e: errors.append(str(e))})
    deadline = time.monotonic() + TIMEOUT
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    return "\n".join(errors)


@pytest.mark.parametrize(
    ("listener", "mechanism", "user", "password", "words"),
    [
        ("SASL_SSL", "PLAIN", "alice", "guess", "Invalid username or password"),
        ("SASL_PLAINTEXT", "PLAIN", "mallory", "x", "Invalid username or password"),
        (
            "SASL_PLAINTEXT",
            "SCRAM-SHA-256",
            "alice",
            "guess",
            "invalid credentials with SASL mechanism SCRAM-SHA-256",
        ),
        (
            "SASL_PLAINTEXT",
            "SCRAM-SHA-512",
            "mallory",
            "x",
            "invalid credentials with SASL mechanism SCRAM-SHA-512",
        ),
        ("ONLYPLAIN", "SCRAM-SHA-512", "alice", USERS["alice"], "PLAIN"),
    ],
)
def test_refused_authentications_say_why_and_others_are_served(
    sasl_process: tuple[BrokerProcess, dict[str, str]],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    user: str,
    password: str,
    words: str,
) -> None:
    """A wrong password, an unknown user (PLAIN and SCRAM), a mechanism the listener
    does not enable: the client gets Kafka's error; the broker logs the failure and
    serves a good client on the same listener right after."""
    process, addresses = sasl_process
    before = sum("Failed authentication" in line for line in process.output)
    config = {
        "bootstrap.servers": addresses[listener],
        **librdkafka(pki, listener, mechanism, user, password),
    }
    assert words in refusal(config)
    good = {
        "bootstrap.servers": addresses[listener],
        **librdkafka(pki, listener, "PLAIN", "bob", USERS["bob"]),
    }
    assert AdminClient(good).list_topics(timeout=TIMEOUT).brokers
    log = "\n".join(process.output)
    assert sum("Failed authentication" in line for line in process.output) > before
    assert "Traceback" not in log


def test_librdkafka_reauthenticates_on_the_same_connection(
    sasl_process: tuple[BrokerProcess, dict[str, str]],
    pki: ThrowawayPki,
    request: pytest.FixtureRequest,
) -> None:
    """KIP-368 with listener.name.reauth.connections.max.reauth.ms=1500: the broker
    tells the client its session lifetime, the client re-authenticates before it ends
    (three times here) while producing, and no record is lost or connection closed."""
    process, addresses = sasl_process
    topic = unique_name(request, "sasl-reauth-")
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(f"librdkafka.{topic}")
    logger.addHandler(Collect())
    logger.setLevel(logging.DEBUG)
    config = {
        "bootstrap.servers": addresses["REAUTH"],
        **librdkafka(pki, "REAUTH", "PLAIN", "alice", USERS["alice"]),
        "debug": "security",
        "logger": logger,
    }
    producer = Producer(config)
    sent = 0
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if sum("Auth in state REAUTH" in line for line in lines) >= 3:
            break
        producer.produce(topic, b"%d" % sent, partition=0)
        sent += 1
        producer.poll(0.1)
    assert producer.flush(TIMEOUT) == 0
    assert sum("Auth in state REAUTH" in line for line in lines) >= 3
    assert all(
        "1500 ms" in line for line in lines if "Received session lifetime" in line
    )
    consumer = Consumer({**config, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    while len(got) < sent and time.monotonic() < deadline + TIMEOUT:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            got.append(message.value() or b"")
    consumer.close()
    assert got == [b"%d" % i for i in range(sent)]
    assert not [line for line in process.output if "session expired" in line]
