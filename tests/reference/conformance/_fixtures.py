"""The state every scenario starts from, made by the same requests on both brokers.

Topics with the settings the error paths need (a compacted one, a LogAppendTime one,
one with a small ``max.message.bytes``, one that needs two in-sync replicas), records
at known offsets and timestamps, and ``__consumer_offsets`` (created by the first
FindCoordinator), so that no scenario depends on what happened to exist before.
"""

from __future__ import annotations

import struct
import time
from typing import Any

from minikafka.log import build_batch, make_records
from minikafka.net import ApiKey

from ._build import make
from ._scenario import Session

DATA = "conf-data"
"""Three partitions: 0 holds offsets 0-9 in two batches of five, 1 is empty, 2 holds
three records."""
PRODUCE = "conf-produce"
"""Two partitions the Produce scenarios append to."""
COMPACT = "conf-compact"
APPEND_TIME = "conf-append-time"
SMALL = "conf-small"
"""``max.message.bytes`` 200: a batch of a few hundred bytes is too large."""
ISR2 = "conf-isr2"
"""``min.insync.replicas`` 2, more than a one-node cluster has."""
MISSING = "conf-missing"
"""A topic no scenario creates."""
OFFSETS = "__consumer_offsets"
T0 = (int(time.time()) // 3600 - 1) * 3_600_000
"""The create time of the fixture's records (ms): the start of the hour before this run.
Recent, because both brokers delete by ``retention.ms`` (seven days by default) at each
``log.retention.check.interval.ms``, the active segment included: records written in 2023
were gone from the shared Kafka node once its check ran during the corpus, and its
answers (log sizes, fetches) then depended on when that happened. One value for the
whole run, so both brokers hold the same bytes."""

TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    DATA: (3, {}),
    PRODUCE: (2, {}),
    COMPACT: (1, {"cleanup.policy": "compact"}),
    APPEND_TIME: (1, {"message.timestamp.type": "LogAppendTime"}),
    SMALL: (1, {"max.message.bytes": "200"}),
    ISR2: (1, {"min.insync.replicas": "2"}),
}


def batch(
    count: int = 2,
    *,
    first: int = 0,
    value_size: int = 8,
    keyed: bool = True,
    ts: int = T0,
    **kw: int,
) -> bytes:
    """A producer's v2 batch of ``count`` records (``kw``: producer id, epoch, sequence)."""
    pairs = [
        (
            f"k{first + i}".encode() if keyed else None,
            bytes([97 + (first + i) % 26]) * value_size,
        )
        for i in range(count)
    ]
    records = make_records(pairs, timestamp_ms=ts)
    return build_batch(records, **kw)  # type: ignore[arg-type]


def with_crc(data: bytes, crc: int | None = None) -> bytes:
    """``data`` (one batch) with its CRC field set to ``crc`` (default: a wrong one)."""
    wrong = (struct.unpack_from(">I", data, 17)[0] ^ 0xFFFF) if crc is None else crc
    return data[:17] + struct.pack(">I", wrong) + data[21:]


def with_magic(data: bytes, magic: int) -> bytes:
    return data[:16] + bytes([magic]) + data[17:]


def produce(
    topic: str,
    partition: int,
    records: bytes,
    acks: int = 1,
    version: int = 8,
    topic_id: Any = None,
) -> Any:
    """A Produce request; from v13 the topic is named by ``topic_id`` (KIP-516)."""
    return make(
        ApiKey.PRODUCE,
        version,
        acks=acks,
        timeout=5000,
        topic_data=[
            {
                "name": topic,
                "topic_id": topic_id,
                "partition_data": [{"index": partition, "records": records}],
            }
        ],
    )


def prepare(session: Session) -> None:
    """Creates the fixture's topics and records on one broker, and waits for them."""
    answer = session.call(
        make(
            ApiKey.CREATE_TOPICS,
            4,
            timeout=30_000,
            topics=[
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
                for name, (partitions, configs) in TOPICS.items()
            ],
        )
    )
    for topic in answer.topics:
        assert int(topic.error_code) == 0, topic
    session.wait_topics(TOPICS, partitions=1)
    for records, partition in (
        (batch(5, ts=T0), 0),
        (batch(5, first=5, ts=T0 + 10), 0),
        (batch(3, ts=T0 + 20), 2),
    ):
        produce_ok(session, DATA, partition, records)
    produce_ok(session, APPEND_TIME, 0, batch(2))
    deadline = time.monotonic() + 60  # a loaded 2-core machine: generous
    while True:  # the group coordinator creates __consumer_offsets on first use
        found = session.call(make(ApiKey.FIND_COORDINATOR, 0, key="conf-prepare"))
        if int(found.error_code) == 0:
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.1)
    session.wait_topics([OFFSETS], partitions=50)
    while True:  # Kafka's producer id manager asks its controller for a first block
        init = session.call(
            make(
                ApiKey.INIT_PRODUCER_ID,
                1,
                transactional_id=None,
                transaction_timeout=60_000,
            )
        )
        if int(init.error_code) == 0:
            break
        assert time.monotonic() < deadline, init
        time.sleep(0.1)
    # Kafka's coordinator loads each __consumer_offsets partition after it leads it,
    # answering NOT_COORDINATOR meanwhile: ask about groups of every partition (200
    # names cover the 50 partitions) until none is refused.
    probes = [f"conf-probe-{i}" for i in range(200)]
    while True:
        described = session.call(make(ApiKey.DESCRIBE_GROUPS, 0, groups=probes))
        if all(int(g.error_code) == 0 for g in described.groups):
            break
        assert time.monotonic() < deadline, described
        time.sleep(0.1)


def produce_ok(session: Session, topic: str, partition: int, records: bytes) -> None:
    # A new leader may refuse for a moment after Metadata names it (it becomes leader
    # when it applies the metadata record): NOT_LEADER_OR_FOLLOWER is retried.
    deadline = time.monotonic() + 30
    while True:
        answer = session.call(produce(topic, partition, records))
        error = int(answer.responses[0].partition_responses[0].error_code)
        if error == 0:
            return
        assert error == 6, answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)
