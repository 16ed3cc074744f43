"""KIP-368 with minikafka's own client: a producer and a group consumer keep their
connections through several SASL sessions of ``connections.max.reauth.ms=3000``.

The broker tells each SaslAuthenticate v1+ client its session lifetime; minikafka's
NetworkClient re-authenticates before each session ends, on the same connection, between
requests. Read from the broker's trace (``net.connection_accepted``, ``net.request``,
``net.connection_closed``) over four lifetimes of steady work: no connection opened or
closed (no reconnection, none closed for an expired session), every Produce, every Fetch
and every Heartbeat travelled on one connection each, and each such connection answered
a SaslHandshake at least three times (three renewals); and every record written is read
back, once, in order.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest

from minikafka.broker.testing import BrokerProcess, free_ports
from minikafka.net import ApiKey
from minikafka.trace import read_trace
from tests.compat._groups import unique_name
from tests.compat._secure_clients import TIMEOUT, Secured, minikafka_config
from tests.compat.conftest import GROUP_OVERRIDES

pytestmark = pytest.mark.external
LIFETIME_MS = 3000
RUN_SECONDS = 4 * LIFETIME_MS / 1000
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.fixture
def reauth_broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[BrokerProcess, str]]:
    """A broker whose REAUTH listener (SASL_PLAINTEXT, PLAIN) gives sessions of
    LIFETIME_MS, tracing its connections and requests; the listener's address."""
    plaintext, reauth = free_ports(2)
    process = BrokerProcess(
        tmp_path_factory.mktemp("broker"),
        port=plaintext,
        overrides={
            **GROUP_OVERRIDES,
            "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},"
            f"REAUTH://127.0.0.1:{reauth}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
            "REAUTH:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.reauth.plain.sasl.jaas.config": (
                f'{PLAIN} required user_alice="alice-secret";'
            ),
            "connections.max.reauth.ms": str(LIFETIME_MS),
        },
        trace_dir=tmp_path_factory.mktemp("trace"),
        trace_events=[
            "net.connection_accepted",
            "net.connection_closed",
            "net.request",
        ],
    )
    process.start()
    try:
        yield process, f"127.0.0.1:{reauth}"
    finally:
        process.stop()


def test_minikafka_producer_and_consumer_reauthenticate_on_their_connections(
    reauth_broker: tuple[BrokerProcess, str], request: pytest.FixtureRequest
) -> None:
    from minikafka.client import Consumer, Producer

    broker, address = reauth_broker
    topic = unique_name(request, "reauth-")
    secured = Secured(
        address,
        "SASL_PLAINTEXT",
        mechanism="PLAIN",
        user="alice",
        password="alice-secret",
    )
    config = {"bootstrap.servers": secured.bootstrap, **minikafka_config(secured)}
    consumer = Consumer(
        {
            **config,
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    sent: list[bytes] = []
    got: list[bytes] = []

    def write_and_poll() -> None:
        value = f"{topic}-{len(sent)}".encode()
        producer.produce(topic, value, partition=0)
        sent.append(value)
        producer.poll(0)
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            got.append(message.value() or b"")

    with Producer(config) as producer:
        consumer.subscribe([topic])
        # Warm-up: the producer has its id and the consumer its assignment (a request
        # the broker holds longer than a session, as the first InitProducerId can be,
        # delays what was queued behind it past the session's end).
        deadline = time.monotonic() + TIMEOUT
        while not got and time.monotonic() < deadline:
            write_and_poll()
        assert got, "the consumer reads the first records"
        # Then both clients busy for four session lifetimes: a record written and a
        # poll every 50 ms or so.
        window = (time.time(), time.time() + RUN_SECONDS)
        while time.time() < window[1]:
            write_and_poll()
        assert producer.flush(TIMEOUT) == 0
    deadline = time.monotonic() + TIMEOUT
    while len(got) < len(sent) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value() or b"")
    consumer.close()
    assert got == sent, "every record read back once, in order"

    broker.stop()  # the trace is complete once the broker has stopped
    assert broker.trace_dir is not None
    records = [
        r
        for r in read_trace(broker.trace_dir)
        if window[0] <= float(str(r["ts"])) <= window[1]
    ]
    assert [r["event"] for r in records if r["event"] != "request"] == [], (
        "no connection opened or closed in the window"
    )
    handshakes = Counter(
        r["connection_id"] for r in records if r["api_key"] == ApiKey.SASL_HANDSHAKE
    )
    for api in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.HEARTBEAT):
        connections = {r["connection_id"] for r in records if r["api_key"] == api}
        assert len(connections) == 1, f"{api.name} travelled on one connection"
        (connection,) = connections
        assert handshakes[connection] >= 3, f"{api.name}'s connection re-authenticated"
