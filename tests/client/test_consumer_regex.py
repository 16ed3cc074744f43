"""minikafka's Consumer subscribed by regular expression (confluent-kafka's ``^`` names)
against the broker, under both group protocols.

Guarantees under test: a member subscribed to ``^<name>-.*`` reads every record of the
two matching topics once and nothing of a third that does not match; a matching topic
created later is picked up (classic: the member's own Metadata refresh every
``metadata.max.age.ms`` finds it and the member joins again; consumer: the coordinator
resolves the expression again and assigns it); a pattern the broker refuses is refused
at ``subscribe`` with INVALID_REGULAR_EXPRESSION and the broker's words, and the
broker's own INVALID_REGULAR_EXPRESSION stops a consumer-protocol member with Kafka's
message, from ``poll``. The AsyncConsumer subscribes the same way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
import trio
from kio.schema.errors import ErrorCode

from minikafka.broker.testing import BrokerProcess
from minikafka.client import AsyncConsumer, Consumer, KafkaException, Message
from minikafka.coordination.member import SubscriptionPattern
from tests.client.conftest import GROUP_OVERRIDES
from tests.client.test_consumer import FAST_GROUP, create_topic, produce
from tests.compat._groups import WAIT, unique_name

# KIP-848 members heartbeat every half second (Kafka's default is 5 s).
OVERRIDES = {**GROUP_OVERRIDES, "group.consumer.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker"), overrides=OVERRIDES) as b:
        yield b


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return unique_name(request, "re-")


def member(broker: BrokerProcess, group: str, protocol: str) -> Consumer:
    config: dict[str, object] = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "metadata.max.age.ms": 1_000,  # the classic member's pattern refresh
    }
    if protocol == "classic":
        config.update(FAST_GROUP)
    return Consumer(config)


def read_until(consumer: Consumer, got: list[Message], count: int) -> None:
    """Poll until ``got`` holds ``count`` records; no error may come back."""
    deadline = time.monotonic() + WAIT
    while len(got) < count and time.monotonic() < deadline:
        for message in consumer.consume(500, 0.2):
            assert message.error() is None, message.error()
            got.append(message)
    assert len(got) >= count, f"{len(got)} of {count} records within {WAIT}s"


def records(got: list[Message]) -> set[tuple[str, int, int]]:
    return {(m.topic(), m.partition(), m.offset()) for m in got}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_pattern_reads_the_matching_topics_and_picks_up_a_new_one(
    broker: BrokerProcess, name: str, protocol: str
) -> None:
    create_topic(broker.bootstrap, f"{name}-a", 2)
    create_topic(broker.bootstrap, f"{name}-b", 1)
    create_topic(broker.bootstrap, f"other-{name}", 1)  # does not match
    for topic in (f"{name}-a", f"{name}-b", f"other-{name}"):
        produce(broker.bootstrap, topic, 20)
    consumer = member(broker, name, protocol)
    try:
        consumer.subscribe([f"^{name}-.*"])
        got: list[Message] = []
        read_until(consumer, got, 40)
        assert {m.topic() for m in got} == {f"{name}-a", f"{name}-b"}
        assert {(p.topic, p.partition) for p in consumer.assignment()} == {
            (f"{name}-a", 0),
            (f"{name}-a", 1),
            (f"{name}-b", 0),
        }
        create_topic(broker.bootstrap, f"{name}-c", 1)
        produce(broker.bootstrap, f"{name}-c", 10)
        read_until(consumer, got, 50)
        assert len(got) == len(records(got)) == 50  # each record once
        assert {m.topic() for m in got} == {f"{name}-a", f"{name}-b", f"{name}-c"}
    finally:
        consumer.close()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_pattern_the_broker_refuses_is_refused_at_subscribe(
    broker: BrokerProcess, name: str, protocol: str
) -> None:
    consumer = member(broker, name, protocol)
    try:
        with pytest.raises(KafkaException) as refused:
            consumer.subscribe([f"^{name}-(?=a)"])
        error = refused.value.args[0]
        assert error.code() == ErrorCode.invalid_regular_expression
        assert error.str() == (
            "Invalid RE2J SubscriptionPattern provided in the call to subscribe. "
            f"SubscribedTopicRegex `^{name}-(?=a)` is not a valid regular "
            "expression: invalid or unsupported Perl syntax."
        )
        assert consumer.assignment() == []
    finally:
        consumer.close()


def test_the_brokers_invalid_regular_expression_stops_a_consumer_protocol_member(
    broker: BrokerProcess, name: str
) -> None:
    consumer = member(broker, name, "consumer")
    try:
        # A pattern as another client would send it unchecked: this one checks at
        # subscribe, so it is put in the subscription directly.
        regex = f"^{name}-(?=a)"
        with consumer._lock:
            consumer._subscriptions.pattern = SubscriptionPattern(regex, re.compile(""))
        consumer._wake()
        messages = consumer.consume(10, WAIT)
        errors = [m.error() for m in messages if m.error() is not None]
        assert [(e.code(), e.fatal()) for e in errors if e is not None] == [
            (ErrorCode.invalid_regular_expression, True)
        ]
        assert errors[0] is not None
        assert errors[0].str() == (
            "Invalid RE2J SubscriptionPattern provided in the call to subscribe. "
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
            "invalid or unsupported Perl syntax."
        )
    finally:
        consumer.close()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_the_async_consumer_subscribes_by_pattern_too(
    broker: BrokerProcess, name: str, protocol: str
) -> None:
    create_topic(broker.bootstrap, f"{name}-a", 2)
    create_topic(broker.bootstrap, f"other-{name}", 1)
    for topic in (f"{name}-a", f"other-{name}"):
        produce(broker.bootstrap, topic, 20)
    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": name,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        **FAST_GROUP,
    }
    got: list[Message] = []
    async with AsyncConsumer.open(config) as consumer:
        consumer.subscribe([f"^{name}-.*"])
        with trio.fail_after(WAIT):
            while len(got) < 20:
                got += await consumer.getmany()
        with pytest.raises(KafkaException) as refused:
            consumer.subscribe(["^(a+)+"])
    assert refused.value.args[0].code() == ErrorCode.invalid_regular_expression
    assert {m.topic() for m in got} == {f"{name}-a"}
    assert len(records(got)) == 20
