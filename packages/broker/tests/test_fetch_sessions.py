"""The fetch session cache (KIP-227) as a core: contexts, incremental answers, eviction.

Each test drives :class:`FetchSessionCache` with made-up reads and times, and states the
rule of Kafka's FetchManager and FetchSessionCache it checks.
"""

from __future__ import annotations

import random
from pathlib import Path

from kio.schema.errors import ErrorCode

from minikafka.broker._fetch_sessions import (
    EVICTION_S,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ContextKind,
    FetchContext,
    FetchSessionCache,
    RequestedPartition,
    next_epoch,
)
from minikafka.common import TopicPartition
from minikafka.log import FileSlice
from minikafka.replication import FetchPartition, FetchPartitionResult

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def wanted(tp: TopicPartition, offset: int = 0) -> RequestedPartition:
    return RequestedPartition(FetchPartition(tp, offset, 1 << 20))


def quiet(hw: int = 5) -> FetchPartitionResult:
    """A read with nothing new: no records, the same offsets."""
    return FetchPartitionResult(ErrorCode.none, hw, hw, 0)


def cache(slots: int = 10) -> FetchSessionCache:
    return FetchSessionCache(slots, rng=random.Random(7))


def read(
    context: FetchContext, results: dict[TopicPartition, FetchPartitionResult]
) -> list[tuple[RequestedPartition, FetchPartitionResult]]:
    """The read of every partition the context asks for (``quiet`` unless given)."""
    return [(r, results.get(r.topic_partition, quiet())) for r in context.partitions]


def open_session(
    sessions: FetchSessionCache,
    partitions: list[TopicPartition],
    now: float = 0.0,
    privileged: bool = False,
) -> int:
    context = sessions.new_context(
        now,
        session_id=0,
        epoch=INITIAL_EPOCH,
        uses_topic_ids=False,
        privileged=privileged,
        requested=[wanted(tp) for tp in partitions],
    )
    answer = sessions.answer(context, now, read(context, {}))
    return answer.session_id


def incremental(
    sessions: FetchSessionCache,
    session_id: int,
    epoch: int,
    requested: list[RequestedPartition] = [],  # noqa: B006 - never mutated
    forgotten: list[TopicPartition] = [],  # noqa: B006
    now: float = 1.0,
    uses_topic_ids: bool = False,
) -> FetchContext:
    return sessions.new_context(
        now,
        session_id=session_id,
        epoch=epoch,
        uses_topic_ids=uses_topic_ids,
        privileged=False,
        requested=requested,
        forgotten=forgotten,
    )


def test_a_sessionless_fetch_answers_every_partition_with_session_id_0() -> None:
    sessions = cache()
    context = sessions.new_context(
        0.0,
        session_id=0,
        epoch=FINAL_EPOCH,
        uses_topic_ids=False,
        privileged=False,
        requested=[wanted(A0), wanted(A1)],
    )
    assert context.kind is ContextKind.SESSIONLESS
    answer = sessions.answer(context, 0.0, read(context, {}))
    assert (answer.error_code, answer.session_id) == (ErrorCode.none, 0)
    assert [r.topic_partition for r, _ in answer.partitions] == [A0, A1]
    assert not sessions.sessions


def test_a_full_fetch_with_epoch_0_opens_a_session_that_expects_epoch_1() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0, A1])
    assert session_id != 0
    assert sessions.sessions[session_id].epoch == 1
    context = incremental(sessions, session_id, 1)
    assert context.kind is ContextKind.INCREMENTAL
    assert sessions.sessions[session_id].epoch == 2


def test_an_incremental_fetch_reads_every_partition_of_the_session_where_it_left_them() -> (
    None
):
    """Partitions the request does not name are read at their cached offsets; a named
    one at its new offset; a new one is added; a forgotten one is dropped."""
    sessions = cache()
    session_id = open_session(sessions, [A0, A1])
    context = incremental(
        sessions, session_id, 1, [wanted(A0, 42), wanted(B0, 7)], forgotten=[A1]
    )
    assert [(r.topic_partition, r.fetch.fetch_offset) for r in context.partitions] == [
        (A0, 42),
        (B0, 7),
    ]


def test_an_incremental_answer_names_only_the_partitions_with_something_new() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0, A1, B0])
    context = incremental(sessions, session_id, 1)
    answer = sessions.answer(context, 1.0, read(context, {}))
    assert answer.partitions == [], "nothing changed since the full answer"
    assert answer.session_id == session_id

    context = incremental(sessions, session_id, 2)
    answer = sessions.answer(
        context,
        1.0,
        read(
            context,
            {A1: quiet(hw=6), B0: FetchPartitionResult(ErrorCode.none, 5, 5, 3)},
        ),
    )
    # A1's high watermark moved, B0's log start offset moved: both named.
    assert [r.topic_partition for r, _ in answer.partitions] == [A1, B0]

    context = incremental(sessions, session_id, 3)
    answer = sessions.answer(
        context,
        1.0,
        read(
            context,
            {A1: quiet(hw=6), B0: FetchPartitionResult(ErrorCode.none, 5, 5, 3)},
        ),
    )
    assert answer.partitions == [], "the moved offsets were remembered"


def test_a_partition_with_an_error_is_named_every_time_and_once_more_after() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    failed = {A0: FetchPartitionResult(ErrorCode.not_leader_or_follower)}
    for epoch in (1, 2):
        context = incremental(sessions, session_id, epoch)
        answer = sessions.answer(context, 1.0, read(context, failed))
        assert [r.topic_partition for r, _ in answer.partitions] == [A0]
    context = incremental(sessions, session_id, 3)
    answer = sessions.answer(context, 1.0, read(context, {}))
    assert [r.topic_partition for r, _ in answer.partitions] == [A0], (
        "the recovered partition is sent again, with its offsets"
    )


def test_partitions_that_returned_records_move_to_the_back() -> None:
    """So that a response filled to max_bytes by the first partitions does not starve
    the last ones in the next request."""
    sessions = cache()
    session_id = open_session(sessions, [A0, A1, B0])
    context = incremental(sessions, session_id, 1)
    with_records = FetchPartitionResult(
        ErrorCode.none, 5, 5, 0, FileSlice(0, Path("x"), 0, 10)
    )
    sessions.answer(context, 1.0, read(context, {A0: with_records}))
    context = incremental(sessions, session_id, 2)
    assert [r.topic_partition for r in context.partitions] == [A1, B0, A0]


def test_session_errors() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    unknown = incremental(sessions, session_id + 1, 1)
    assert unknown.error_code is ErrorCode.fetch_session_id_not_found
    wrong_epoch = incremental(sessions, session_id, 5)
    assert wrong_epoch.error_code is ErrorCode.invalid_fetch_session_epoch
    ids_now = incremental(sessions, session_id, 1, uses_topic_ids=True)
    assert ids_now.error_code is ErrorCode.fetch_session_topic_id_error
    for context in (unknown, wrong_epoch, ids_now):
        answer = sessions.answer(context, 1.0, [])
        assert (answer.session_id, answer.partitions) == (0, [])
    # None of them moved the session on: epoch 1 is still the one it expects.
    assert incremental(sessions, session_id, 1).kind is ContextKind.INCREMENTAL


def test_a_duplicate_request_answered_after_the_next_one_is_refused() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    first = incremental(sessions, session_id, 1)
    second = incremental(sessions, session_id, 2)
    answer = sessions.answer(first, 1.0, read(first, {}))
    assert (answer.error_code, answer.session_id) == (
        ErrorCode.invalid_fetch_session_epoch,
        session_id,
    )
    assert sessions.answer(second, 1.0, read(second, {})).error_code is ErrorCode.none


def test_a_full_fetch_closes_the_session_it_names() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    context = sessions.new_context(
        1.0,
        session_id=session_id,
        epoch=FINAL_EPOCH,
        uses_topic_ids=False,
        privileged=False,
        requested=[wanted(A0)],
    )
    assert context.kind is ContextKind.SESSIONLESS
    assert session_id not in sessions.sessions


def test_forgetting_every_partition_ends_the_session() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    context = incremental(sessions, session_id, 1, forgotten=[A0])
    assert context.kind is ContextKind.SESSIONLESS
    assert sessions.answer(context, 1.0, []).session_id == 0
    assert session_id not in sessions.sessions


def test_no_slots_no_sessions() -> None:
    assert open_session(cache(slots=0), [A0]) == 0


def test_a_full_cache_refuses_a_session_no_more_valuable_than_its_young_ones() -> None:
    sessions = cache(slots=1)
    assert open_session(sessions, [A0, A1]) != 0
    assert open_session(sessions, [A0, A1], now=10.0) == 0, "same size, not older"
    assert open_session(sessions, [A0, A1, B0], now=10.0) == 0, "larger, but too young"


def test_a_full_cache_evicts_a_stale_session() -> None:
    sessions = cache(slots=1)
    old = open_session(sessions, [A0, A1, B0])
    new = open_session(sessions, [A0], now=EVICTION_S + 1)
    assert new != 0
    assert old not in sessions.sessions
    assert sessions.evictions == 1


def test_a_larger_session_evicts_a_smaller_one_old_enough() -> None:
    sessions = cache(slots=1)
    small = open_session(sessions, [A0])
    # Used a moment ago, so not stale; but created long enough ago to be evictable.
    incremental(sessions, small, 1, now=EVICTION_S + 5)
    assert open_session(sessions, [A0], now=EVICTION_S + 6) == 0, "not larger"
    larger = open_session(sessions, [A0, A1], now=EVICTION_S + 6)
    assert larger != 0
    assert small not in sessions.sessions


def test_a_follower_s_session_evicts_a_young_consumer_session() -> None:
    sessions = cache(slots=1)
    consumer = open_session(sessions, [A0, A1, B0])
    follower = open_session(sessions, [A0], now=1.0, privileged=True)
    assert follower != 0
    assert consumer not in sessions.sessions
    # and a consumer cannot take a young follower's slot back
    assert open_session(sessions, [A0, A1, B0], now=2.0) == 0


def test_the_session_epoch_wraps_to_1() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(2**31 - 1) == 1


def test_a_diverging_epoch_is_named_though_nothing_else_changed() -> None:
    """The fetcher must truncate: the answer names the partition with where to."""
    sessions = cache()
    session_id = open_session(sessions, [A0, A1])
    context = incremental(sessions, session_id, 1)
    diverged = FetchPartitionResult(ErrorCode.none, 5, 5, 0, diverging_epoch=(0, 2))
    answer = sessions.answer(context, 1.0, read(context, {A1: diverged}))
    assert [r.topic_partition for r, _ in answer.partitions] == [A1]
