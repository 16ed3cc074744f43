"""Scenarios of DeleteRecords (KIP-107) at every version minikafka advertises: the log
start moved below an offset and to the high watermark, a deletion below the start, and
Kafka's refusals (past the high watermark, below -1, an unknown topic or partition, a
compacted topic, the internal offsets topic), alone and in one request.

A scenario that deletes makes a topic of its own (``conf-delete-vN-case``, ten records
in two batches), so the fixture's topics stay whole for the scenarios after it; the
refusals, which change nothing, use the fixture's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import Case, each_version
from ._fixtures import COMPACT, DATA, MISSING, OFFSETS, batch, produce_ok
from ._scenario import Scenario, Session


def delete_body(v: int, offsets: dict[tuple[str, int], int]) -> Any:
    topics: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "offset": offset}
        )
    return make(
        ApiKey.DELETE_RECORDS,
        v,
        topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
        timeout=10_000,
    )


def _own_topic(s: Session, v: int, case: str) -> str:
    """A one-partition topic of this scenario's, holding offsets 0-9."""
    name = f"conf-delete-v{v}-{case}"
    s.call(
        make(
            ApiKey.CREATE_TOPICS,
            4,
            timeout=30_000,
            topics=[
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
        )
    )
    s.wait_topics([name])
    produce_ok(s, name, 0, batch(5))
    produce_ok(s, name, 0, batch(5, first=5))
    return name


def _moves_start(s: Session, v: int) -> None:
    topic = _own_topic(s, v, "moves-start")
    s.check(delete_body(v, {(topic, 0): 3}))
    # Below the new start: nothing moves back; the answer is the start.
    s.check(delete_body(v, {(topic, 0): 1}))
    s.check(
        make(
            ApiKey.LIST_OFFSETS,
            1,
            replica_id=-1,
            topics=[
                {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -2}]}
            ],
        )
    )


def _high_watermark(s: Session, v: int) -> None:
    topic = _own_topic(s, v, "high-watermark")
    s.check(delete_body(v, {(topic, 0): -1}))


def _refused(offsets: dict[tuple[str, int], int]) -> Case:
    return lambda s, v: s.check(delete_body(v, offsets))


CASES: dict[str, Case] = {
    "moves-start": _moves_start,
    "high-watermark": _high_watermark,
    "past-high-watermark": _refused({(DATA, 0): 11}),
    "below-minus-one": _refused({(DATA, 0): -2}),
    "unknown-partition": _refused({(DATA, 7): 1}),
    "unknown-topic": _refused({(MISSING, 0): 1}),
    "compacted": _refused({(COMPACT, 0): 0}),
    "internal-topic": _refused({(OFFSETS, 0): 0}),
    "several": _refused(
        {(DATA, 0): 11, (DATA, 1): -2, (MISSING, 0): 0, (COMPACT, 0): 0}
    ),
}


def scenarios() -> Iterator[Scenario]:
    yield from each_version(ApiKey.DELETE_RECORDS, "delete-records", CASES)
