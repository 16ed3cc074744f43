"""Scenarios of the data path: ApiVersions, Metadata, Produce, Fetch, ListOffsets and
OffsetForLeaderEpoch, each case at every version minikafka advertises."""

from __future__ import annotations

import dataclasses
import struct
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from minikafka.broker import KafkaApis
from minikafka.log import CompressionType
from minikafka.net import ApiKey, decode_response_body

from ._build import make
from ._fixtures import (
    APPEND_TIME,
    COMPACT,
    DATA,
    ISR2,
    MISSING,
    OFFSETS,
    PRODUCE,
    SMALL,
    T0,
    batch,
    produce,
    with_crc,
    with_magic,
)
from ._normalise import to_tree
from ._scenario import Scenario, Session

Case = Callable[[Session, int], None]


def versions(api: ApiKey) -> range:
    low, high = KafkaApis.SUPPORTED[api]
    return range(low, high + 1)


def each_version(
    api: ApiKey,
    prefix: str,
    cases: dict[str, Case],
    since: dict[str, int] | None = None,
) -> Iterator[Scenario]:
    """One scenario per case and advertised version: ``prefix.vN.case``."""
    for name, case in cases.items():
        for version in versions(api):
            if version < (since or {}).get(name, 0):
                continue
            yield Scenario(f"{prefix}.v{version}.{name}", _bind(case, version))


def _bind(case: Case, version: int) -> Callable[[Session], None]:
    return lambda session: case(session, version)


# --- ApiVersions --------------------------------------------------------------------


def _api_versions(s: Session, v: int) -> None:
    s.check(
        make(
            ApiKey.API_VERSIONS,
            v,
            client_software_name="conformance",
            client_software_version="1.0",
        )
    )


def _api_versions_unknown(s: Session, v: int) -> None:
    # A version newer than any the broker knows (KIP-511): answered in v0 with
    # UNSUPPORTED_VERSION. kio has no v99 header to encode, so the header is written
    # here: api key, version, correlation id 7, client id, no tagged fields.
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 7, 4) + b"conf" + b"\x00"
    conn = s.connection
    conn.correlation_id = 6  # raw_call numbers this request 7, as the header says
    payload = conn.raw_call(ApiKey.API_VERSIONS, 99, b"", header_override=header)
    assert payload is not None
    s.record(
        "ApiVersions",
        s.normaliser(to_tree(decode_response_body(ApiKey.API_VERSIONS, 0, payload, 4))),
    )


# --- Metadata -----------------------------------------------------------------------


def _metadata(
    topics: list[str] | None, *, auto: bool = False, trim: str | None = None
) -> Case:
    def case(s: Session, v: int) -> None:
        body = make(
            ApiKey.METADATA,
            v,
            topics=None if topics is None else [{"name": t} for t in topics],
            allow_auto_topic_creation=auto,
        )
        s.check(body, trim=trim)

    return case


def _metadata_auto_create(s: Session, v: int) -> None:
    # v1-v3 always allow creation; v4+ ask for it. A fresh name per version.
    name = f"conf-auto-{v}"
    s.check(
        make(
            ApiKey.METADATA, v, topics=[{"name": name}], allow_auto_topic_creation=True
        )
    )
    s.wait_topics([name])
    s.check(
        make(
            ApiKey.METADATA, v, topics=[{"name": name}], allow_auto_topic_creation=False
        )
    )


# An id no topic has, the same on both brokers (a topic's id is random on each).
NO_SUCH_TOPIC_ID = uuid.UUID("5ca1ab1e-0000-4000-8000-00000000c0de")


def _metadata_unknown_id(s: Session, v: int) -> None:
    # v10-11 carry topic ids but may not use them (the whole request is refused);
    # from v12 a topic may be named by its id alone (KIP-516).
    name = None if v >= 12 else DATA
    s.check(
        make(
            ApiKey.METADATA,
            v,
            topics=[{"name": name, "topic_id": NO_SUCH_TOPIC_ID}],
            allow_auto_topic_creation=False,
        )
    )


def _metadata_by_id(s: Session, v: int) -> None:
    # The id each broker gave the topic, asked by name first.
    named: Any = s.call(make(ApiKey.METADATA, v, topics=[{"name": DATA}]))
    topic_id = named.topics[0].topic_id
    s.check(
        make(
            ApiKey.METADATA,
            v,
            topics=[{"name": None, "topic_id": topic_id}],
            allow_auto_topic_creation=False,
        )
    )


METADATA_CASES: dict[str, Case] = {
    "topic": _metadata([DATA]),
    "unknown-topic": _metadata([MISSING]),
    "all-topics": _metadata(None, trim="conf-"),
    "no-topics": _metadata([]),
    "internal-topic": _metadata([OFFSETS]),
    "listed-twice": _metadata([DATA, DATA]),
    "invalid-name": _metadata(["conf bad name!"]),
    "auto-create": _metadata_auto_create,
    "unknown-topic-id": _metadata_unknown_id,
    "by-topic-id": _metadata_by_id,
}


# --- Produce ------------------------------------------------------------------------


def _produce_to(
    s: Session, v: int, topic: str, partition: int, records: bytes, acks: int = 1
) -> Any:
    """Produce ``v`` to ``topic``: by name, or from v13 by this broker's id for it."""
    topic_id = s.topic_id(topic) if v >= 13 else None
    return produce(topic, partition, records, acks=acks, version=v, topic_id=topic_id)


def _produce(
    topic: str, partition: int, records: Callable[[], bytes], acks: int = 1
) -> Case:
    def case(s: Session, v: int) -> None:
        s.check(_produce_to(s, v, topic, partition, records(), acks=acks))

    return case


def _produce_unknown_topic_id(s: Session, v: int) -> None:
    body = produce(PRODUCE, 0, batch(1), version=v, topic_id=NO_SUCH_TOPIC_ID)
    s.check(body)


def _produce_acks0(s: Session, v: int) -> None:
    # acks=0 is never answered; the ListOffsets behind it shows the append happened.
    s.connection.send_only(_produce_to(s, v, PRODUCE, 1, batch(1), acks=0))
    s.check(_list_offsets_body(5, PRODUCE, 1, -1))


def _produce_transactional_id(s: Session, v: int) -> None:
    # A transactional id on a request whose batch is not transactional.
    body = make(
        ApiKey.PRODUCE,
        v,
        acks=1,
        timeout=5000,
        transactional_id="conf-tx-plain",
        topic_data=[_topic_data(s, PRODUCE, 0)],
    )
    s.check(body)


def _topic_data(s: Session, topic: str, partition: int) -> dict[str, Any]:
    """One batch of one record for ``partition``, the topic by name and by id (each
    version keeps the field it has)."""
    return {
        "name": topic,
        "topic_id": s.topic_id(topic),
        "partition_data": [{"index": partition, "records": batch(1)}],
    }


def _produce_two_batches(s: Session, v: int) -> None:
    s.check(_produce_to(s, v, PRODUCE, 0, batch(2) + batch(3, first=2)))


def _produce_mixed(s: Session, v: int) -> None:
    s.check(_produce_to(s, v, PRODUCE, 0, batch(2) + with_crc(batch(2, first=2))))


def _produce_truncated(s: Session, v: int) -> None:
    s.check(_produce_to(s, v, PRODUCE, 0, batch(2)[:-5]))


def _produce_listed_twice(s: Session, v: int) -> None:
    body = make(
        ApiKey.PRODUCE,
        v,
        acks=1,
        timeout=5000,
        topic_data=[_topic_data(s, PRODUCE, 0), _topic_data(s, PRODUCE, 1)],
    )
    s.check(body)


def _produce_idempotent(s: Session, v: int) -> None:
    init = s.call(
        make(
            ApiKey.INIT_PRODUCER_ID,
            1,
            transactional_id=None,
            transaction_timeout=60_000,
        )
    )
    pid, epoch = int(init.producer_id), int(init.producer_epoch)

    def send(seq: int, label: str, p: int = pid, e: int = epoch) -> None:
        records = batch(2, producer_id=p, producer_epoch=e, base_sequence=seq)
        s.check(_produce_to(s, v, PRODUCE, 1, records), label)

    send(0, "first")
    send(0, "retried")  # the same sequence again: deduplicated, same base offset
    send(5, "gap")  # sequence 2 expected
    send(2, "next")
    send(4, "stale-epoch", e=epoch - 1 if epoch > 0 else 32767)
    send(3, "unknown-producer", p=pid + 100_000)


def _batch_v1() -> bytes:
    # A magic 1 message set of one record (offset, size, crc, magic, attributes,
    # timestamp, key, value): Produce v3+ accepts only magic 2.
    body = struct.pack(">bbqi", 1, 0, T0, -1) + struct.pack(">i", 1) + b"x"
    crc = __import__("zlib").crc32(body)
    message = struct.pack(">I", crc) + body
    return struct.pack(">qi", 0, len(message)) + message


PRODUCE_CASES: dict[str, Case] = {
    "acks-1": _produce(PRODUCE, 0, lambda: batch(2)),
    "acks-all": _produce(PRODUCE, 0, lambda: batch(2), acks=-1),
    "acks-0": _produce_acks0,
    "acks-invalid": _produce(PRODUCE, 0, lambda: batch(1), acks=2),
    "gzip": _produce(PRODUCE, 0, lambda: batch(3, compression=CompressionType.GZIP)),
    "two-batches": _produce_two_batches,
    "unknown-topic": _produce(MISSING, 0, lambda: batch(1)),
    "unknown-topic-id": _produce_unknown_topic_id,
    "bad-partition": _produce(PRODUCE, 7, lambda: batch(1)),
    "bad-crc": _produce(PRODUCE, 0, lambda: with_crc(batch(2))),
    "bad-magic": _produce(PRODUCE, 0, lambda: with_magic(batch(2), 3)),
    "magic-1": _produce(PRODUCE, 0, _batch_v1),
    "mixed-good-and-bad": _produce_mixed,
    "truncated": _produce_truncated,
    "empty-records": _produce(PRODUCE, 0, lambda: b""),
    "too-large": _produce(SMALL, 0, lambda: batch(4, value_size=100)),
    "compacted-null-key": _produce(COMPACT, 0, lambda: batch(2, keyed=False)),
    "not-enough-replicas": _produce(ISR2, 0, lambda: batch(1), acks=-1),
    "internal-topic": _produce(OFFSETS, 0, lambda: batch(1)),
    "listed-twice": _produce_listed_twice,
    "idempotent": _produce_idempotent,
    "append-time": _produce(APPEND_TIME, 0, lambda: batch(1)),
    "transactional-id-plain-batch": _produce_transactional_id,
    # A record stamped two hours ahead of the broker's clock (Kafka 4.0's default
    # message.timestamp.after.max.ms is one hour).
    "far-future-timestamp": _produce(
        PRODUCE, 0, lambda: batch(2, ts=int(time.time() * 1000) + 7_200_000)
    ),
}

PRODUCE_SINCE = {"unknown-topic-id": 13}  # topics named by id from v13 (KIP-516)


# --- Fetch --------------------------------------------------------------------------


def _fetch_body(
    s: Session,
    v: int,
    parts: list[tuple[str, int, int]],
    *,
    epoch: int = -1,
    max_bytes: int = 1 << 20,
    isolation: int = 0,
    replica_id: int = -1,
    last_fetched_epoch: int = -1,
    session: tuple[int, int] = (0, -1),
    forgotten: Sequence[tuple[str, int]] = (),
) -> Any:
    """A Fetch of ``parts`` (topic, partition, offset); from v13 each topic named by the
    id this broker gave it (KIP-516), from v15 the follower's id in ``replica_state``;
    ``session``: the session id and epoch (KIP-227), with ``forgotten`` partitions."""
    topics: dict[str, list[dict[str, object]]] = {}
    for topic, partition, offset in parts:
        topics.setdefault(topic, []).append(
            {
                "partition": partition,
                "fetch_offset": offset,
                "partition_max_bytes": max_bytes,
                "current_leader_epoch": epoch,
                "last_fetched_epoch": last_fetched_epoch,
                "log_start_offset": -1,
            }
        )

    def named(topic: str) -> dict[str, object]:
        return {"topic": topic, "topic_id": s.topic_id(topic) if v >= 13 else None}

    dropped: dict[str, list[int]] = {}
    for topic, partition in forgotten:
        dropped.setdefault(topic, []).append(partition)
    return make(
        ApiKey.FETCH,
        v,
        replica_id=replica_id,
        replica_state={"replica_id": replica_id, "replica_epoch": -1},
        max_wait=0,
        min_bytes=0,
        max_bytes=50 << 20,
        isolation_level=isolation,
        session_id=session[0],
        session_epoch=session[1],
        topics=[{**named(t), "partitions": p} for t, p in topics.items()],
        forgotten_topics_data=[
            {**named(t), "partitions": p} for t, p in dropped.items()
        ],
        rack_id="",
    )


def _fetch(parts: list[tuple[str, int, int]], **kw: Any) -> Case:
    def case(s: Session, v: int) -> None:
        s.check(_fetch_body(s, v, parts, **kw))

    return case


def _fetch_listed_twice(s: Session, v: int) -> None:
    body = _fetch_body(s, v, [(DATA, 0, 8)])
    # The same topic as a second entry of the request, for partition 2.
    [topic] = body.topics
    [part] = topic.partitions
    again = dataclasses.replace(
        topic, partitions=(dataclasses.replace(part, partition=2, fetch_offset=0),)
    )
    s.check(dataclasses.replace(body, topics=(topic, again)))


def _fetch_unknown_topic_id(s: Session, v: int) -> None:
    body = _fetch_body(s, v, [(DATA, 0, 0)])
    stranger = dataclasses.replace(body.topics[0], topic_id=NO_SUCH_TOPIC_ID)
    s.check(dataclasses.replace(body, topics=(stranger,)))


def _fetch_session(s: Session, v: int) -> None:
    """KIP-227: a full fetch opens a session; an incremental one with nothing new names
    no partition; one that names a partition at a new offset reads from there; one with
    a stale epoch or an unknown id is refused; a full one with the id closes it."""
    parts = [(DATA, 0, 0), (DATA, 1, 0)]
    opened = s.check(_fetch_body(s, v, parts, session=(0, 0)), "open")
    session = int(opened.session_id)
    s.check(_fetch_body(s, v, [], session=(session, 1)), "nothing-new")
    s.check(_fetch_body(s, v, [(DATA, 0, 8)], session=(session, 2)), "moved")
    s.check(_fetch_body(s, v, [], session=(session, 2)), "stale-epoch")
    other = session + 1 if session < 2**31 - 1 else 1
    s.check(_fetch_body(s, v, [], session=(other, 3)), "unknown-id")
    s.check(
        _fetch_body(s, v, [], session=(session, 3), forgotten=[(DATA, 1)]), "forget"
    )
    s.check(_fetch_body(s, v, parts, session=(session, -1)), "close")
    s.check(_fetch_body(s, v, [], session=(session, 4)), "closed")


FETCH_CASES: dict[str, Case] = {
    "from-start": _fetch([(DATA, 0, 0)]),
    "mid-batch": _fetch([(DATA, 0, 7)]),
    "at-end": _fetch([(DATA, 0, 10)]),
    "empty-partition": _fetch([(DATA, 1, 0)]),
    "three-partitions": _fetch([(DATA, 0, 5), (DATA, 1, 0), (DATA, 2, 1)]),
    "out-of-range": _fetch([(DATA, 0, 100)]),
    "negative-offset": _fetch([(DATA, 0, -5)]),
    "unknown-topic": _fetch([(MISSING, 0, 0)]),
    "bad-partition": _fetch([(DATA, 9, 0)]),
    "small-max-bytes": _fetch([(DATA, 0, 0)], max_bytes=10),
    "read-committed": _fetch([(DATA, 2, 0)], isolation=1),
    "append-time": _fetch([(APPEND_TIME, 0, 0)]),
    "future-leader-epoch": _fetch([(DATA, 0, 0)], epoch=5),
    "current-leader-epoch": _fetch([(DATA, 0, 0)], epoch=0),
    "listed-twice": _fetch_listed_twice,
    # A follower's fetch from a broker that is no replica of the partition.
    "unknown-follower": _fetch([(DATA, 0, 0)], replica_id=5),
    "unknown-topic-id": _fetch_unknown_topic_id,
    "session": _fetch_session,
    # v12+: the epoch of the fetcher's last record. Epoch 0 ends at the log end (10):
    # from 8 the logs agree; from 100 the fetcher's log diverged (it is told epoch 0
    # ends at 10); epoch 5 is one this log never had.
    "last-fetched-epoch-agrees": _fetch([(DATA, 0, 8)], last_fetched_epoch=0),
    "last-fetched-epoch-diverged": _fetch([(DATA, 0, 100)], last_fetched_epoch=0),
    "last-fetched-epoch-unknown": _fetch([(DATA, 0, 8)], last_fetched_epoch=5),
}
FETCH_SINCE = {
    "future-leader-epoch": 9,
    "current-leader-epoch": 9,
    "unknown-topic-id": 13,
    "session": 7,
    "last-fetched-epoch-agrees": 12,
    "last-fetched-epoch-diverged": 12,
    "last-fetched-epoch-unknown": 12,
}


# --- ListOffsets --------------------------------------------------------------------


def _list_offsets_body(
    v: int,
    topic: str,
    partition: int,
    timestamp: int,
    *,
    epoch: int = -1,
    isolation: int = 0,
) -> Any:
    return make(
        ApiKey.LIST_OFFSETS,
        v,
        replica_id=-1,
        isolation_level=isolation,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "timestamp": timestamp,
                        "current_leader_epoch": epoch,
                        "max_num_offsets": 1,
                    }
                ],
            }
        ],
    )


def _list_offsets(topic: str, partition: int, timestamp: int, **kw: int) -> Case:
    def case(s: Session, v: int) -> None:
        s.check(_list_offsets_body(v, topic, partition, timestamp, **kw))

    return case


LIST_OFFSETS_CASES: dict[str, Case] = {
    "latest": _list_offsets(DATA, 0, -1),
    "earliest": _list_offsets(DATA, 0, -2),
    "empty-latest": _list_offsets(DATA, 1, -1),
    "by-time": _list_offsets(DATA, 0, T0 + 5),
    "by-time-exact": _list_offsets(DATA, 0, T0 + 10),
    "after-last": _list_offsets(DATA, 0, T0 + 1_000_000),
    "unknown-topic": _list_offsets(MISSING, 0, -1),
    "bad-partition": _list_offsets(DATA, 5, -1),
    "read-committed": _list_offsets(DATA, 0, -1, isolation=1),
    "future-leader-epoch": _list_offsets(DATA, 0, -1, epoch=3),
    "current-leader-epoch": _list_offsets(DATA, 0, -1, epoch=0),
}
LIST_OFFSETS_SINCE = {
    "read-committed": 2,
    "future-leader-epoch": 4,
    "current-leader-epoch": 4,
}


# --- OffsetForLeaderEpoch -----------------------------------------------------------


def _epoch(topic: str, partition: int, leader_epoch: int, current: int = -1) -> Case:
    def case(s: Session, v: int) -> None:
        body = make(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            v,
            replica_id=-1,
            topics=[
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": current,
                            "leader_epoch": leader_epoch,
                        }
                    ],
                }
            ],
        )
        s.check(body)

    return case


EPOCH_CASES: dict[str, Case] = {
    "epoch-0": _epoch(DATA, 0, 0),
    "later-epoch": _epoch(DATA, 0, 4),
    "empty-partition": _epoch(DATA, 1, 0),
    "unknown-topic": _epoch(MISSING, 0, 0),
    "bad-partition": _epoch(DATA, 6, 0),
    "future-current-epoch": _epoch(DATA, 0, 0, current=2),
    "current-epoch": _epoch(DATA, 0, 0, current=0),
}


def scenarios() -> Iterator[Scenario]:
    yield from each_version(ApiKey.API_VERSIONS, "api-versions", {"all": _api_versions})
    yield Scenario(
        "api-versions.v99.unknown-version", lambda s: _api_versions_unknown(s, 99)
    )
    # Before v4 a Metadata request always allows auto-creation: an unknown name is
    # created (the auto-create case covers it), so unknown-topic starts at v4.
    yield from each_version(
        ApiKey.METADATA,
        "metadata",
        METADATA_CASES,
        {"unknown-topic": 4, "unknown-topic-id": 10, "by-topic-id": 12},
    )
    yield from each_version(ApiKey.PRODUCE, "produce", PRODUCE_CASES, PRODUCE_SINCE)
    yield from each_version(ApiKey.FETCH, "fetch", FETCH_CASES, FETCH_SINCE)
    yield from each_version(
        ApiKey.LIST_OFFSETS, "list-offsets", LIST_OFFSETS_CASES, LIST_OFFSETS_SINCE
    )
    yield from each_version(
        ApiKey.OFFSET_FOR_LEADER_EPOCH, "offset-for-leader-epoch", EPOCH_CASES
    )
