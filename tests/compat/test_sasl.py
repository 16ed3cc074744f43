"""Real clients over SASL: confluent-kafka, kcat, kafka-python, aiokafka and minikafka's
own client authenticate with PLAIN and SCRAM-SHA-256/512 (and librdkafka with unsecured
OAUTHBEARER tokens) on SASL_PLAINTEXT and SASL_SSL listeners, then produce, and read
back what they wrote as a member of a consumer group that commits what it read.

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

import logging
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from minikafka.broker.testing import BrokerProcess, free_ports
from minikafka.net.testing import ThrowawayPki, make_pki
from tests.cluster._cluster import wait_for
from tests.compat._groups import unique_name
from tests.compat._secure_clients import (
    TIMEOUT,
    Secured,
    aiokafka_round_trip,
    confluent_round_trip,
    java_round_trip,
    java_round_trips,
    kafka_python_round_trip,
    kcat_round_trip,
    librdkafka_config,
    minikafka_config,
    minikafka_round_trip,
    values,
)
from tests.compat.conftest import GROUP_OVERRIDES

pytestmark = pytest.mark.external
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
MODULES = {
    "plain": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "scram-sha-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "scram-sha-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")
PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


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
        **GROUP_OVERRIDES,  # each round trip joins a group of its own
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


def secured(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    user: str = "alice",
    password: str | None = None,
) -> Secured:
    """``listener`` (SASL_PLAINTEXT or SASL_SSL, or another of the fixture's) with
    ``mechanism`` as ``user``."""
    return Secured(
        addresses[listener],
        "SASL_SSL" if listener == "SASL_SSL" else "SASL_PLAINTEXT",
        ca=pki.ca,
        mechanism=mechanism,
        user=user,
        password=USERS[user] if password is None else password,
    )


def librdkafka(
    pki: ThrowawayPki, listener: str, mechanism: str, user: str, password: str
) -> dict[str, Any]:
    return librdkafka_config(
        secured({listener: ""}, pki, listener, mechanism, user, password)
    )


@pytest.mark.security_matrix("confluent-kafka")
@pytest.mark.compat("SaslHandshake", "confluent-kafka")
@pytest.mark.compat("SaslAuthenticate", "confluent-kafka")
@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize(
    "mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
)
def test_confluent_kafka_authenticates_produces_and_consumes_in_a_group(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "sasl-confluent-")
    s = secured(addresses, pki, listener, mechanism)
    assert confluent_round_trip(s, topic) == values(topic)


@pytest.mark.security_matrix("minikafka")
@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize(
    "mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
)
def test_minikafka_authenticates_produces_and_consumes_in_a_group(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    """minikafka's Producer and a Consumer in a group, with Kafka's keys
    (``sasl.jaas.config``, PEM trust store), read back what they wrote."""
    topic = unique_name(request, "sasl-minikafka-")
    s = secured(addresses, pki, listener, mechanism, user="bob")
    assert minikafka_round_trip(s, topic) == values(topic)


@pytest.mark.security_matrix("java")
@pytest.mark.compat("SaslHandshake", "java")
@pytest.mark.compat("SaslAuthenticate", "java")
@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [("SASL_SSL", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "PLAIN")],
)
def test_the_java_client_authenticates_produces_and_consumes_in_a_group(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    """Kafka's Java client with ``sasl.jaas.config`` and a PEM trust store."""
    topic = unique_name(request, "sasl-java-")
    s = secured(addresses, pki, listener, mechanism)
    assert java_round_trip(s, topic) == values(topic)


@pytest.mark.security_matrix(
    "java", listener="SASL_PLAINTEXT", mechanism="SCRAM-SHA-256"
)
@pytest.mark.security_matrix(
    "java", listener="SASL_PLAINTEXT", mechanism="SCRAM-SHA-512"
)
@pytest.mark.security_matrix("java", listener="SASL_SSL", mechanism="PLAIN")
@pytest.mark.security_matrix("java", listener="SASL_SSL", mechanism="SCRAM-SHA-256")
def test_the_java_client_authenticates_with_every_other_mechanism_in_one_jvm(
    addresses: dict[str, str], pki: ThrowawayPki, request: pytest.FixtureRequest
) -> None:
    """The listener and mechanism pairs the test above leaves, one after the other in a
    single JVM (its start costs more than the round trips): each authenticates on its
    own connections, produces, and consumes in its own group what it wrote."""
    cases = [
        (
            secured(addresses, pki, listener, mechanism),
            unique_name(request, f"sasl-java-{listener}-{mechanism}-".lower()),
        )
        for listener, mechanism in [
            ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
            ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
            ("SASL_SSL", "PLAIN"),
            ("SASL_SSL", "SCRAM-SHA-256"),
        ]
    ]
    assert java_round_trips(cases) == [values(topic) for _s, topic in cases]


@pytest.mark.security_matrix("kcat", mechanism="PLAIN")
@pytest.mark.compat("SaslHandshake", "kcat")
@pytest.mark.compat("SaslAuthenticate", "kcat")
@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is installed by make test"
)
@pytest.mark.parametrize("listener", SASL_LISTENERS)
def test_kcat_authenticates_with_plain_produces_and_consumes_in_a_group(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "sasl-kcat-")
    s = secured(addresses, pki, listener, "PLAIN", user="bob")
    assert kcat_round_trip(s, topic) == values(topic)


@pytest.mark.security_matrix("kafka-python")
@pytest.mark.compat("SaslHandshake", "kafka-python")
@pytest.mark.compat("SaslAuthenticate", "kafka-python")
@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", PASSWORD_MECHANISMS)
def test_kafka_python_authenticates_produces_and_consumes_in_a_group(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "sasl-kafka-python-")
    s = secured(addresses, pki, listener, mechanism)
    assert kafka_python_round_trip(s, topic) == values(topic)


@pytest.mark.security_matrix("aiokafka")
@pytest.mark.compat("SaslHandshake", "aiokafka")
@pytest.mark.compat("SaslAuthenticate", "aiokafka")
@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", PASSWORD_MECHANISMS)
def test_aiokafka_authenticates_produces_and_consumes_in_a_group(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    request: pytest.FixtureRequest,
) -> None:
    topic = unique_name(request, "sasl-aiokafka-")
    s = secured(addresses, pki, listener, mechanism, user="bob")
    assert aiokafka_round_trip(s, topic) == values(topic)


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
    # The broker logs the failure when it closes the connection, after Kafka's delay:
    # possibly after the client has its answer.
    wait_for(
        lambda: (
            sum("Failed authentication" in line for line in process.output) > before
        ),
        "the broker logs the failed authentication",
    )
    assert "Traceback" not in "\n".join(process.output)


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


@pytest.mark.parametrize(
    ("listener", "mechanism", "user", "password"),
    [
        ("SASL_PLAINTEXT", "PLAIN", "alice", "guess"),
        ("SASL_SSL", "SCRAM-SHA-512", "alice", "guess"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-256", "mallory", "x"),
    ],
)
def test_minikafka_clients_refused_at_authentication_raise_kafkas_error(
    addresses: dict[str, str],
    pki: ThrowawayPki,
    listener: str,
    mechanism: str,
    user: str,
    password: str,
    request: pytest.FixtureRequest,
) -> None:
    """Bad credentials: minikafka's producer raises SASL_AUTHENTICATION_FAILED from
    ``produce`` (not max.block.ms's UNKNOWN_TOPIC_OR_PARTITION after a minute), its
    consumer's ``poll`` returns it as an error message, and its admin client raises it;
    the broker's message says why."""
    from minikafka.client import AdminClient as MiniAdmin
    from minikafka.client import Consumer as MiniConsumer
    from minikafka.client import KafkaException as MiniKafkaException
    from minikafka.client import Producer as MiniProducer

    topic = unique_name(request, "sasl-refused-")
    s = secured(addresses, pki, listener, mechanism, user=user, password=password)
    config = {"bootstrap.servers": s.bootstrap, **minikafka_config(s)}
    producer = MiniProducer(config)
    with pytest.raises(MiniKafkaException) as refused:
        producer.produce(topic, b"never", partition=0)
    producer.close()
    assert refused.value.args[0].name() == "SASL_AUTHENTICATION_FAILED"
    assert "Authentication failed" in refused.value.args[0].str() or (
        "invalid credentials" in refused.value.args[0].str()
    )
    with MiniConsumer({**config, "group.id": topic}) as consumer:
        consumer.subscribe([topic])
        error = None
        deadline = time.monotonic() + TIMEOUT
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            error = None if message is None else message.error()
    assert error is not None
    assert error.name() == "SASL_AUTHENTICATION_FAILED"
    with pytest.raises(MiniKafkaException) as admin_refused:
        MiniAdmin(config).list_topics(timeout=TIMEOUT)
    assert admin_refused.value.args[0].name() == "SASL_AUTHENTICATION_FAILED"
