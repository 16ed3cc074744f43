"""One produce-and-consume round trip per client over a secured listener, shared by the
TLS and SASL compatibility tests.

A :class:`Secured` says how to reach a listener in client-neutral terms (the security
protocol, the CA, a client certificate for mTLS, a SASL mechanism and its user);
each ``*_round_trip`` turns it into that client's own configuration, produces
:data:`COUNT` values to partition 0 of a topic, reads them back, and returns what it
read, so a test asserts ``== values(topic)``. Every client reads them in a consumer
group named after the topic (subscribe, the group's assignment, every record, a commit),
and each round trip checks that the group's committed offset is then :data:`COUNT`.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import attrs
from confluent_kafka import Consumer, Producer, TopicPartition

from minikafka.common.testing import GROUP_POLL_MS

COUNT = 30
TIMEOUT = 30.0


def values(prefix: str) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(COUNT)]


@attrs.frozen
class Secured:
    """A listener's address and what a client needs to get in."""

    bootstrap: str
    protocol: str  # SSL, SASL_PLAINTEXT or SASL_SSL
    ca: Path | None = None
    cert: Path | None = None  # with key: a client certificate (mTLS)
    key: Path | None = None
    mechanism: str | None = None
    user: str = ""
    password: str = ""

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


# --- librdkafka: confluent-kafka and kcat ------------------------------------------


def librdkafka_config(s: Secured) -> dict[str, Any]:
    config: dict[str, Any] = {"security.protocol": s.protocol}
    if s.tls:
        config["ssl.ca.location"] = str(s.ca)
    if s.cert is not None:
        config["ssl.certificate.location"] = str(s.cert)
        config["ssl.key.location"] = str(s.key)
    if s.mechanism == "OAUTHBEARER":
        config["sasl.mechanism"] = s.mechanism
        config["enable.sasl.oauthbearer.unsecure.jwt"] = True
        config["sasl.oauthbearer.config"] = f"principal={s.user}"
    elif s.mechanism is not None:
        config["sasl.mechanism"] = s.mechanism
        config["sasl.username"], config["sasl.password"] = s.user, s.password
    return config


def _committed(config: dict[str, Any], group: str, topic: str) -> int:
    """The offset ``group`` committed for partition 0 of ``topic``, read with
    OffsetFetch by a consumer that does not join (``committed`` does not subscribe)."""
    reader = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        [tp] = reader.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)
        return int(tp.offset)
    finally:
        reader.close()


def confluent_round_trip(s: Secured, topic: str) -> list[bytes]:
    """confluent-kafka's Producer, then a Consumer in group ``topic`` (subscribe,
    assignment from the group, a synchronous commit of what it read)."""
    config = {"bootstrap.servers": s.bootstrap, **librdkafka_config(s)}
    producer = Producer(config)
    for value in values(topic):
        producer.produce(topic, value, partition=0)
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer(
        {
            **config,
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value() or b"")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()  # LeaveGroup
    assert _committed(config, topic, topic) == COUNT
    return got


def kcat_round_trip(s: Secured, topic: str) -> list[bytes]:
    """kcat produces, then consumes as a member of group ``topic`` (``-G``: librdkafka's
    KafkaConsumer, which auto-commits and commits again as it closes) until it has read
    :data:`COUNT` records."""
    config = librdkafka_config(s)
    flags = [a for k, v in config.items() for a in ("-X", f"{k}={v}")]
    base = ["kcat", "-b", s.bootstrap, *flags]
    stdin = b"\n".join(values(topic)) + b"\n"
    subprocess.run(
        [*base, "-t", topic, "-P", "-p", "0"], input=stdin, check=True, timeout=TIMEOUT
    )
    group = ["-X", "auto.offset.reset=earliest", "-c", str(COUNT), "-q", "-G", topic]
    result = subprocess.run(
        [*base, *group, topic],
        capture_output=True,
        check=True,
        timeout=TIMEOUT,
    )
    assert (
        _committed({"bootstrap.servers": s.bootstrap, **config}, topic, topic) == COUNT
    )
    return result.stdout.splitlines()


# --- kafka-python and aiokafka -------------------------------------------------------


def _python_client_config(s: Secured) -> dict[str, Any]:
    """The keyword arguments kafka-python and aiokafka share (aiokafka's TLS goes
    through an SSLContext: :func:`aiokafka_round_trip` makes it)."""
    config: dict[str, Any] = {"security_protocol": s.protocol}
    if s.mechanism is not None:
        config["sasl_mechanism"] = s.mechanism
        config["sasl_plain_username"] = s.user
        config["sasl_plain_password"] = s.password
    return config


def kafka_python_round_trip(s: Secured, topic: str) -> list[bytes]:
    """kafka-python's KafkaProducer, then a KafkaConsumer in group ``topic``
    (subscribe, assignment from the group, a synchronous commit of what it read)."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaPythonTopicPartition

    config = _python_client_config(s)
    if s.tls:
        config["ssl_cafile"] = str(s.ca)
    if s.cert is not None:
        config["ssl_certfile"], config["ssl_keyfile"] = str(s.cert), str(s.key)
    producer = KafkaProducer(bootstrap_servers=s.bootstrap, **config)
    futures = [producer.send(topic, value, partition=0) for value in values(topic)]
    producer.flush(TIMEOUT)
    assert [f.get(TIMEOUT).offset for f in futures] == list(range(COUNT))
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=s.bootstrap,
        group_id=topic,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **config,
    )
    tp = KafkaPythonTopicPartition(topic, 0)
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < COUNT and time.monotonic() < deadline:
            # GROUP_POLL_MS, not a shorter poll: a JoinGroup-SyncGroup round that
            # outlasts a poll can be lost by kafka-python (COMPAT.md, groups).
            for records in consumer.poll(timeout_ms=GROUP_POLL_MS).values():
                got.extend(record.value for record in records)
        consumer.commit()
        assert consumer.committed(tp) == COUNT
    finally:
        consumer.close()  # LeaveGroup
    return got


def aiokafka_round_trip(s: Secured, topic: str) -> list[bytes]:
    """aiokafka's producer, then an AIOKafkaConsumer in group ``topic`` (subscribe,
    assignment from the group, a commit of what it read)."""
    from aiokafka import (  # type: ignore[import-untyped]
        AIOKafkaConsumer,
        AIOKafkaProducer,
    )
    from aiokafka import TopicPartition as AioTp
    from aiokafka.helpers import create_ssl_context  # type: ignore[import-untyped]

    config = _python_client_config(s)
    if s.tls:
        config["ssl_context"] = create_ssl_context(
            cafile=str(s.ca),
            certfile=None if s.cert is None else str(s.cert),
            keyfile=None if s.key is None else str(s.key),
        )

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=s.bootstrap, **config)
        await producer.start()
        try:
            for value in values(topic):
                await producer.send_and_wait(topic, value, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=s.bootstrap,
            group_id=topic,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **config,
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            tp = AioTp(topic, 0)
            consumer.subscribe([topic])
            async with asyncio.timeout(TIMEOUT):
                while len(got) < COUNT:
                    batch = await consumer.getmany(timeout_ms=1000)
                    got.extend(r.value for r in batch.get(tp, []))
                await consumer.commit()
                assert await consumer.committed(tp) == COUNT
        finally:
            await consumer.stop()  # LeaveGroup
        return got

    return asyncio.run(scenario())


# --- minikafka's own client ----------------------------------------------------------


def minikafka_config(s: Secured) -> dict[str, object]:
    """Kafka's own keys, as the Java client takes them: PEM stores, a JAAS config."""
    config: dict[str, object] = {"security.protocol": s.protocol}
    if s.tls:
        config["ssl.truststore.type"] = "PEM"
        config["ssl.truststore.location"] = str(s.ca)
    if s.cert is not None and s.key is not None:
        config["ssl.keystore.type"] = "PEM"
        config["ssl.keystore.certificate.chain"] = s.cert.read_text()
        config["ssl.keystore.key"] = s.key.read_text()
    if s.mechanism is not None:
        config["sasl.mechanism"] = s.mechanism
        module = {
            "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
            "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer."
            "OAuthBearerLoginModule",
        }.get(s.mechanism, "org.apache.kafka.common.security.scram.ScramLoginModule")
        options = (
            f'unsecuredLoginStringClaim_sub="{s.user}"'
            if s.mechanism == "OAUTHBEARER"
            else f'username="{s.user}" password="{s.password}"'
        )
        config["sasl.jaas.config"] = f"{module} required {options};"
    return config


def minikafka_round_trip(s: Secured, topic: str) -> list[bytes]:
    """minikafka's Producer, then a Consumer in group ``topic`` (subscribe, assignment
    from the group, commit of what it read)."""
    from minikafka.client import Consumer as MiniConsumer
    from minikafka.client import Producer as MiniProducer

    config = {"bootstrap.servers": s.bootstrap, **minikafka_config(s)}
    with MiniProducer(config) as producer:
        for value in values(topic):
            producer.produce(topic, value, partition=0)
        assert producer.flush(TIMEOUT) == 0
    got: list[bytes] = []
    consumer = MiniConsumer(
        {
            **config,
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value() or b"")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


# --- Kafka's Java client -------------------------------------------------------------


def _java_steps(s: Secured, topic: str) -> list[dict[str, Any]]:
    """Admin creates ``topic``, a producer writes, a consumer in group ``topic`` reads
    back (subscribe, then a commit): three steps, the last one's result the records."""
    config = {k: str(v) for k, v in minikafka_config(s).items()}
    config["bootstrap.servers"] = s.bootstrap  # each case its own listener
    return [
        {
            "op": "admin",
            "action": "create_topics",
            "config": config,
            "topics": [
                {"name": topic, "partitions": 1, "replication": 1, "configs": {}}
            ],
        },
        {
            "op": "produce",
            "topic": topic,
            "config": config,
            "records": [
                {"key": None, "value": v.decode(), "partition": 0}
                for v in values(topic)
            ],
        },
        {
            "op": "consume",
            "subscribe": [topic],
            "count": COUNT,
            "commit": True,
            "config": {**config, "group.id": topic, "auto.offset.reset": "earliest"},
        },
    ]


def java_round_trips(cases: list[tuple[Secured, str]]) -> list[list[bytes]]:
    """Kafka's Java client (the reference bench's kafka-clients) with the same keys as
    minikafka's, for each ``(listener, topic)`` in turn, all in one JVM (a JVM's start
    costs more than a round trip): its Admin makes the topic, its producer writes, and a
    consumer in group ``topic`` reads the values back; what each case read."""
    from tests.compat import _java

    steps = [step for s, topic in cases for step in _java_steps(s, topic)]
    run = _java.scenario(cases[0][0].bootstrap, steps)
    return [
        [r["value"].encode() for r in run.result(3 * i + 2)["records"]]
        for i in range(len(cases))
    ]


def java_round_trip(s: Secured, topic: str) -> list[bytes]:
    """:func:`java_round_trips` for one listener."""
    return java_round_trips([(s, topic)])[0]
