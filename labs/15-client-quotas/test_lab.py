"""Lab 15's checks: client quotas, with a real broker process and real clients.

One broker runs for the whole module with ``quota.producer.default`` and
``quota.consumer.default`` set to :data:`QUOTA` bytes per second, and short windows
(``quota.window.num=3``, ``quota.window.size.seconds=1``) so a check converges in
seconds. confluent-kafka (librdkafka) produces and consumes through it and reports what
the broker said in its ``throttle_cb``; a bare socket sends Produce requests of two
versions and times what comes back.

Every timing here is a *lower* bound on a duration (a throttled client cannot have been
faster than its quota allows, a muted connection cannot have answered sooner), or an
upper bound many times larger than what the check expects, so a loaded two-core machine
makes the checks slower, not flaky.
"""

from __future__ import annotations

import datetime
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.produce.v5 import request as produce_v5
from kio.schema.produce.v8 import request as produce_v8
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from minikafka.broker.testing import BrokerFailed, BrokerProcess
from minikafka.common import ConfigError
from minikafka.log.testing import value_batch
from minikafka.net import (
    ApiKey,
    FrameDecoder,
    decode_response_body,
    parse_response_header,
    response_header_version,
)
from minikafka.net.testing import request_frame

pytestmark = pytest.mark.skipif(
    not os.environ.get("MINIKAFKA_LAB_EXTEND"),
    reason="an extend lab: run it with `make lab 15` (python -m minikafka.labs run 15)",
)

QUOTA = 256 * 1024
"""Bytes per second: quota.producer.default and quota.consumer.default."""
WINDOW_NUM = 3
WINDOW_SECONDS = 1
QUOTA_OVERRIDES = {
    "quota.producer.default": str(QUOTA),
    "quota.consumer.default": str(QUOTA),
    "quota.window.num": str(WINDOW_NUM),
    "quota.window.size.seconds": str(WINDOW_SECONDS),
    "num.partitions": "1",
}
FAST_BYTES = 10 * QUOTA
"""What the fast producer writes, and the consumer then reads: ten seconds' worth."""
MESSAGE = 8 * 1024
RAW_PARTITIONS = 2
TIMEOUT = 90.0  # seconds a whole client run may take before the check gives up


# --- the broker --------------------------------------------------------------------------


@attrs.define
class QuotaBroker:
    process: BrokerProcess | None
    failure: str = ""

    @property
    def bootstrap(self) -> str:
        assert self.process is not None, self.failure
        return self.process.bootstrap


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuotaBroker]:
    process = BrokerProcess(
        tmp_path_factory.mktemp("quotas") / "data", overrides=QUOTA_OVERRIDES
    )
    try:
        process.start()
    except BrokerFailed as exc:
        # Reported by each check as a failed assertion, not a fixture error.
        yield QuotaBroker(None, f"the broker does not start with the quota keys: {exc}")
        return
    try:
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        topics = [NewTopic(name, 1, 1) for name in ("fast", "slow")]
        topics.append(NewTopic("raw", RAW_PARTITIONS, 1))
        for future in admin.create_topics(topics).values():
            future.result(timeout=30)
        yield QuotaBroker(process)
    finally:
        process.stop()


# --- stage config ------------------------------------------------------------------------


def test_quota_keys_are_broker_configs(tmp_path: Path) -> None:
    from minikafka.broker import KafkaConfig

    base = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}
    try:
        KafkaConfig.from_properties({**base, **QUOTA_OVERRIDES})
    except ConfigError as exc:
        pytest.fail(f"the quota keys are not broker configs: {exc}")
    for key, bad in (
        ("quota.producer.default", "0"),
        ("quota.consumer.default", "-5"),
        ("quota.window.num", "0"),
        ("quota.window.size.seconds", "0"),
        ("quota.producer.default", "fast"),
    ):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            KafkaConfig.from_properties({**base, key: bad})


# --- stage produce -------------------------------------------------------------------------


@attrs.define
class ClientRun:
    """What one client did: bytes, seconds, and the throttle times it was told (ms)."""

    nbytes: int = 0
    seconds: float = 0.0
    throttles_ms: list[float] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)

    @property
    def rate(self) -> float:
        return self.nbytes / self.seconds if self.seconds > 0 else float("inf")


def _on_throttle(run: ClientRun) -> Any:
    def on_throttle(event: Any) -> None:
        run.throttles_ms.append(float(event.throttle_time) * 1000)

    return on_throttle


def _produce_fast(bootstrap: str, run: ClientRun, done: threading.Event) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "fast-producer",
            "linger.ms": 5,
            "throttle_cb": _on_throttle(run),
        }
    )

    def delivered(err: KafkaError | None, message: Any) -> None:
        if err is not None:
            run.errors.append(str(err))
        else:
            run.nbytes += len(message.value())

    value = os.urandom(MESSAGE)
    start = time.monotonic()
    deadline = start + TIMEOUT
    for _ in range(FAST_BYTES // MESSAGE):
        while True:
            try:
                producer.produce("fast", value, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)
    while producer.flush(0.5) and time.monotonic() < deadline:
        pass
    run.seconds = time.monotonic() - start
    producer.poll(0)
    done.set()


def _produce_slow(bootstrap: str, run: ClientRun, done: threading.Event) -> None:
    """A fifth of the quota, in small steps, for as long as the fast producer runs."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "slow-producer",
            "linger.ms": 0,
            "throttle_cb": _on_throttle(run),
        }
    )
    value = os.urandom(MESSAGE)
    interval = MESSAGE / (QUOTA / 5)
    start = time.monotonic()
    next_send = start
    while not done.is_set() and time.monotonic() - start < TIMEOUT:
        producer.produce("slow", value)
        run.nbytes += MESSAGE
        # Behind schedule (a loaded machine): no catching up in a burst.
        next_send = max(next_send + interval, time.monotonic())
        # poll returns early when it serves an event: wait out the interval in full.
        while (left := next_send - time.monotonic()) > 0:
            producer.poll(left)
    producer.flush(30)
    producer.poll(0)
    run.seconds = time.monotonic() - start


@attrs.define
class ProduceRuns:
    fast: ClientRun
    slow: ClientRun


@pytest.fixture(scope="module")
def produced(broker: QuotaBroker) -> ProduceRuns:
    """The fast and the slow producer, side by side, on the quota broker."""
    runs = ProduceRuns(ClientRun(), ClientRun())
    if broker.process is None:
        return runs
    done = threading.Event()
    slow = threading.Thread(
        target=_produce_slow, args=(broker.bootstrap, runs.slow, done), daemon=True
    )
    slow.start()
    try:
        _produce_fast(broker.bootstrap, runs.fast, done)
    finally:
        done.set()
        slow.join(TIMEOUT)
    return runs


def test_producer_over_its_quota_is_throttled(
    broker: QuotaBroker, produced: ProduceRuns
) -> None:
    assert broker.process is not None, broker.failure
    fast = produced.fast
    assert not fast.errors, fast.errors[:3]
    assert fast.nbytes == FAST_BYTES, "not every record of the fast producer arrived"
    assert max(fast.throttles_ms, default=0) > 0, (
        "a producer at many times its quota was never told a throttle_time_ms"
    )
    # About the quota: the samples' first window lets a burst through, so allow 3x;
    # unthrottled, this producer runs tens of times faster.
    assert fast.rate < 3 * QUOTA, (
        f"{fast.nbytes} bytes in {fast.seconds:.1f}s: {fast.rate / 1024:.0f} KiB/s "
        f"against a quota of {QUOTA / 1024:.0f} KiB/s"
    )
    # Throttled to the quota, not starved far below it.
    assert fast.rate > QUOTA / 5, (
        f"{fast.rate / 1024:.0f} KiB/s: throttled far below the quota"
    )


def test_producer_under_its_quota_is_not_throttled(
    broker: QuotaBroker, produced: ProduceRuns
) -> None:
    assert broker.process is not None, broker.failure
    slow = produced.slow
    assert slow.nbytes > 0
    told = [t for t in slow.throttles_ms if t > 0]
    assert not told, (
        f"a client id at a fifth of its quota was throttled (max {max(told):.0f} ms) "
        "while another client id went over its own"
    )


def test_kafka_python_producer_is_told_its_throttle(broker: QuotaBroker) -> None:
    """Another client, another client id: kafka-python keeps the throttle times it is
    told in its ``throttle-time-max`` metric."""
    from kafka import KafkaProducer

    assert broker.process is not None, broker.failure
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, client_id="kafka-python-producer"
    )
    try:
        value = os.urandom(MESSAGE)
        futures = [producer.send("slow", value) for _ in range(5 * QUOTA // MESSAGE)]
        producer.flush(TIMEOUT)
        for future in futures:
            future.get(timeout=TIMEOUT)
        told = [
            float(metric_value)
            for group in producer.metrics().values()
            for name, metric_value in group.items()
            if name == "throttle-time-max" and metric_value == metric_value  # not NaN
        ]
    finally:
        producer.close()
    assert max(told, default=0.0) > 0, (
        "kafka-python, producing five times its quota, was never told a throttle time"
    )


# --- stage mute: throttle_time_ms and the muted connection ---------------------------------


class RawClient:
    """A bare socket speaking Produce and ApiVersions, timing the answers."""

    def __init__(self, bootstrap: str, client_id: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        self.client_id = client_id
        self.decoder = FrameDecoder()
        self.correlation = 0

    def send(self, body: Any) -> None:
        self.correlation += 1
        self.sock.sendall(request_frame(body, self.correlation, self.client_id))

    def receive(self, api_key: int, version: int) -> Any:
        while (frame := self.decoder.next_frame()) is None:
            data = self.sock.recv(1 << 20)
            assert data, "the broker closed the connection"
            self.decoder.feed(data)
        _, offset = parse_response_header(
            frame, response_header_version(api_key, version)
        )
        return decode_response_body(api_key, version, frame, offset)

    def close(self) -> None:
        self.sock.close()


def produce_body(schema: ModuleType, nbytes: int) -> Any:
    """A Produce request of ``schema``'s version: ``nbytes`` of values, one batch for
    each of the raw topic's partitions (a batch stays under max.message.bytes)."""
    count = nbytes // 1000 // RAW_PARTITIONS
    records = bytes(value_batch(count, 1000))
    return schema.ProduceRequest(
        transactional_id=None,
        acks=i16(1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(
            schema.TopicProduceData(
                name=TopicName("raw"),
                partition_data=tuple(
                    schema.PartitionProduceData(index=i32(p), records=Records(records))
                    for p in range(RAW_PARTITIONS)
                ),
            ),
        ),
    )


API_VERSIONS_V0 = ApiVersionsRequest()

BIG = 6 * QUOTA
"""One request of six seconds' quota: with the samples' span of at least
(quota.window.num - 1) windows, its rate is three times the quota, and the time back to
the quota is (3 - 1) x 2 s = 4 s."""
EXPECTED_THROTTLE_MS = 4000


def test_throttle_time_is_the_time_back_to_the_quota(broker: QuotaBroker) -> None:
    assert broker.process is not None, broker.failure
    client = RawClient(broker.bootstrap, "raw-throttle-time")
    try:
        client.send(produce_body(produce_v8, BIG))
        response = client.receive(ApiKey.PRODUCE, 8)
    finally:
        client.close()
    [topic] = response.responses
    errors = [int(p.error_code) for p in topic.partition_responses]
    assert errors == [0] * RAW_PARTITIONS, topic.partition_responses
    throttle_ms = response.throttle_time.total_seconds() * 1000
    assert EXPECTED_THROTTLE_MS / 2 <= throttle_ms <= EXPECTED_THROTTLE_MS * 2, (
        f"throttle_time_ms {throttle_ms:.0f} for a request at three times the quota "
        f"(expected about {EXPECTED_THROTTLE_MS})"
    )


def test_throttled_connection_is_not_read(broker: QuotaBroker) -> None:
    """Produce v8 (KIP-219): the answer comes at once, then the connection is muted."""
    assert broker.process is not None, broker.failure
    client = RawClient(broker.bootstrap, "raw-muted")
    try:
        sent = time.monotonic()
        client.send(produce_body(produce_v8, BIG))
        response = client.receive(ApiKey.PRODUCE, 8)
        answered = time.monotonic()
        throttle_s = response.throttle_time.total_seconds()
        assert throttle_s > 1, f"throttle_time_ms {throttle_s * 1000:.0f}"
        # The client throttles itself: holding its answer too would throttle it twice.
        assert answered - sent < throttle_s / 2, (
            f"a v8 produce was answered after {answered - sent:.1f}s: the response "
            f"was held for its throttle time ({throttle_s:.1f}s)"
        )
        client.send(API_VERSIONS_V0)
        client.receive(ApiKey.API_VERSIONS, 0)
        waited = time.monotonic() - answered
    finally:
        client.close()
    assert waited >= throttle_s / 2, (
        f"the next request was answered {waited:.2f}s after a throttle of "
        f"{throttle_s:.1f}s: the connection was read while throttled"
    )


def test_old_client_response_is_held(broker: QuotaBroker) -> None:
    """Produce v5 (before KIP-219): the client does not wait, so the broker holds the
    answer for the throttle time."""
    assert broker.process is not None, broker.failure
    client = RawClient(broker.bootstrap, "raw-held")
    try:
        sent = time.monotonic()
        client.send(produce_body(produce_v5, BIG))
        response = client.receive(ApiKey.PRODUCE, 5)
        answered = time.monotonic()
    finally:
        client.close()
    throttle_s = response.throttle_time.total_seconds()
    assert throttle_s > 1, f"throttle_time_ms {throttle_s * 1000:.0f}"
    assert answered - sent >= throttle_s / 2, (
        f"a v5 produce throttled for {throttle_s:.1f}s was answered after "
        f"{answered - sent:.2f}s: an old client's response is held for the throttle"
    )


# --- stage fetch ---------------------------------------------------------------------------


def test_consumer_over_its_quota_is_throttled(
    broker: QuotaBroker, produced: ProduceRuns
) -> None:
    assert broker.process is not None, broker.failure
    assert produced.fast.nbytes == FAST_BYTES, "the fast producer's records are missing"
    run = ClientRun()
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "fast-consumer",
            "group.id": "quota-lab",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "throttle_cb": _on_throttle(run),
        }
    )
    try:
        consumer.subscribe(["fast"])
        start = time.monotonic()
        while run.nbytes < FAST_BYTES and time.monotonic() - start < TIMEOUT:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            run.nbytes += len(message.value() or b"")
        run.seconds = time.monotonic() - start
    finally:
        consumer.close()
    assert run.nbytes == FAST_BYTES, f"read {run.nbytes} of {FAST_BYTES} bytes"
    assert max(run.throttles_ms, default=0) > 0, (
        "a consumer at many times its quota was never told a throttle_time_ms"
    )
    assert run.rate < 3 * QUOTA, (
        f"{run.nbytes} bytes in {run.seconds:.1f}s: {run.rate / 1024:.0f} KiB/s "
        f"against a quota of {QUOTA / 1024:.0f} KiB/s"
    )
