"""The fetcher's half of fetch sessions (KIP-227; Kafka's ``FetchSessionHandler``).

A full request names every partition and asks for a session; once the leader opens one,
each request names only what is new or changed and forgets what is no longer wanted,
the epoch moving on with every answer. Whatever makes the session unusable (an error of
the session, an answer naming a partition the session does not hold, a lost round)
makes the next request a full one again. Each request here is also put to the leader's
half (``FetchSessionCache``), which must accept it and read exactly the partitions the
fetcher wants.
"""

from __future__ import annotations

from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from minikafka.broker._fetch_session_handler import (
    FetchSessionHandler,
    SessionFetchRequest,
    SessionFetchResponse,
)
from minikafka.broker._fetch_sessions import (
    ContextKind,
    FetchContext,
    FetchSessionCache,
    RequestedPartition,
)
from minikafka.common import TopicPartition
from minikafka.replication import FetchedPartition, FetchPartition, FetchPartitionResult

TPS = [TopicPartition("t", p) for p in range(3)]
MAX_BYTES = 1 << 20


def wanted(offsets: Iterable[int], epoch: int = 0) -> list[FetchPartition]:
    """The fetcher's partitions 0, 1, ... at these fetch offsets."""
    return [
        FetchPartition(TPS[p], offset, MAX_BYTES, epoch, 0)
        for p, offset in enumerate(offsets)
    ]


def answer(
    session_id: int,
    named: Iterable[TopicPartition] = (),
    error: ErrorCode = ErrorCode.none,
) -> SessionFetchResponse:
    return SessionFetchResponse(
        error, session_id, [FetchedPartition(tp, ErrorCode.none, 0, 0) for tp in named]
    )


def named(request: SessionFetchRequest) -> list[int]:
    return [f.topic_partition.partition for f in request.partitions]


def opened(handler: FetchSessionHandler, session_id: int = 7) -> None:
    """A full fetch of partitions 0-2 at offset 0, answered with a new session."""
    request = handler.build(wanted([0, 0, 0]))
    assert (request.session_id, request.epoch, named(request)) == (0, 0, [0, 1, 2])
    assert handler.handle_response(answer(session_id, TPS)) is None


def asked(
    cache: FetchSessionCache, now: float, request: SessionFetchRequest
) -> FetchContext:
    """The leader's context for ``request``, a follower's (privileged)."""
    return cache.new_context(
        now,
        session_id=request.session_id,
        epoch=request.epoch,
        uses_topic_ids=False,
        privileged=True,
        requested=[RequestedPartition(f) for f in request.partitions],
        forgotten=request.forgotten,
    )


def test_a_full_fetch_opens_a_session_and_then_only_changes_are_named() -> None:
    handler = FetchSessionHandler(1)
    opened(handler)
    first = handler.build(wanted([0, 0, 0]))
    assert (first.session_id, first.epoch, named(first), first.forgotten) == (
        7,
        1,
        [],
        (),
    ), "nothing changed: nothing named"
    assert not first.full
    # An answer with nothing new names nothing; the epoch moves on all the same.
    assert handler.handle_response(answer(7)) is None
    second = handler.build(wanted([0, 5, 0]))
    assert (second.epoch, named(second)) == (2, [1]), "only the changed offset"
    assert second.partitions[0].fetch_offset == 5
    assert handler.handle_response(answer(7, [TPS[1]])) is None
    third = handler.build(wanted([0, 5, 0]))
    assert (third.epoch, named(third)) == (3, []), "sent once, then the session has it"


def test_a_changed_leader_epoch_log_start_or_size_is_named_again() -> None:
    handler = FetchSessionHandler(1)
    opened(handler)
    moved = [
        FetchPartition(TPS[0], 0, MAX_BYTES, 1, 0),  # a new leader epoch
        FetchPartition(TPS[1], 0, MAX_BYTES, 0, 3),  # its log start moved
        FetchPartition(TPS[2], 0, MAX_BYTES // 2, 0, 0),  # another size
    ]
    assert named(handler.build(moved)) == [0, 1, 2]


def test_an_added_partition_is_named_and_a_removed_one_forgotten() -> None:
    handler = FetchSessionHandler(1)
    opened(handler)
    extra = FetchPartition(TopicPartition("u", 0), 4, MAX_BYTES, 0, 0)
    request = handler.build([*wanted([0, 0]), extra])  # partition 2 gone, u-0 new
    assert [f.topic_partition for f in request.partitions] == [extra.topic_partition]
    assert request.forgotten == (TPS[2],)
    assert handler.handle_response(answer(7)) is None
    again = handler.build([*wanted([0, 0]), extra])
    assert (named(again), again.forgotten) == ([], ()), "forgotten once"
    # Back again: named again, as a partition new to the session.
    assert handler.handle_response(answer(7)) is None
    assert named(handler.build(wanted([0, 0, 0]))) == [2]


def test_a_session_error_makes_the_next_fetch_full() -> None:
    for error, closes in [
        (ErrorCode.fetch_session_id_not_found, 0),  # the leader has none to close
        (ErrorCode.invalid_fetch_session_epoch, 7),
        (ErrorCode.fetch_session_topic_id_error, 7),
    ]:
        handler = FetchSessionHandler(1)
        opened(handler)
        handler.build(wanted([1, 0, 0]))
        problem = handler.handle_response(answer(0, error=error))
        assert problem is not None
        assert error.name.upper() in problem
        full = handler.build(wanted([1, 0, 0]))
        assert (full.session_id, full.epoch, named(full)) == (closes, 0, [0, 1, 2])
        assert handler.handle_response(answer(9, TPS)) is None
        assert (handler.session_id, handler.epoch) == (9, 1), "a new session"


def test_a_lost_round_makes_the_next_fetch_full_and_closes_the_session() -> None:
    handler = FetchSessionHandler(1)
    opened(handler)
    handler.build(wanted([0, 0, 0]))
    handler.handle_error()  # the connection was cut: the answer never came
    full = handler.build(wanted([0, 0, 0]))
    assert (full.session_id, full.epoch, named(full)) == (7, 0, [0, 1, 2])


def test_a_leader_that_opens_no_session_gets_full_fetches() -> None:
    handler = FetchSessionHandler(1)
    for _ in range(3):
        request = handler.build(wanted([0, 0, 0]))
        assert (request.session_id, request.epoch, named(request)) == (0, 0, [0, 1, 2])
        assert handler.handle_response(answer(0, TPS)) is None


def test_an_incremental_answer_naming_a_partition_outside_the_session_resets_it() -> (
    None
):
    handler = FetchSessionHandler(1)
    opened(handler)
    handler.build(wanted([0, 0, 0]))
    stranger = TopicPartition("u", 0)
    problem = handler.handle_response(answer(7, [TPS[0], stranger]))
    assert problem is not None
    assert "u-0" in problem
    full = handler.build(wanted([0, 0, 0]))
    assert (full.session_id, full.epoch, named(full)) == (7, 0, [0, 1, 2])


def test_a_full_answer_must_name_every_partition() -> None:
    handler = FetchSessionHandler(1)
    handler.build(wanted([0, 0, 0]))
    problem = handler.handle_response(answer(7, TPS[:2]))
    assert problem is not None
    assert "t-2" in problem
    assert (handler.session_id, handler.epoch) == (0, 0), "no session taken"


def test_an_incremental_answer_closing_the_session_makes_the_next_fetch_full() -> None:
    handler = FetchSessionHandler(1)
    opened(handler)
    handler.build(wanted([0, 0, 0]))
    assert handler.handle_response(answer(0, [TPS[0]])) is None  # used, then closed
    assert handler.build(wanted([0, 0, 0])).full


def test_the_epoch_wraps_past_the_largest_int32_to_one() -> None:
    handler = FetchSessionHandler(1)
    opened(handler)
    handler.epoch = 2**31 - 1
    handler.build(wanted([0, 0, 0]))
    assert handler.handle_response(answer(7)) is None
    assert handler.epoch == 1


def test_the_leader_accepts_every_request_and_reads_what_the_fetcher_wants() -> None:
    """Both halves together: through opens, changes, adds, removals and a lost session,
    the leader's cache takes each request and reads exactly the partitions wanted, at
    the offsets wanted."""
    cache = FetchSessionCache(max_slots=10)
    handler = FetchSessionHandler(1)
    extra = FetchPartition(TopicPartition("u", 0), 4, MAX_BYTES, 0, 0)
    rounds = [
        wanted([0, 0, 0]),
        wanted([0, 0, 0]),
        wanted([3, 0, 0]),
        [*wanted([3, 0]), extra],
        [*wanted([3, 2]), extra],
        "evicted",
        wanted([3, 2, 1]),
        wanted([4, 2, 1], epoch=1),
    ]
    now = 0.0
    for want in rounds:
        now += 1
        if want == "evicted":
            cache.sessions.clear()
            continue
        assert isinstance(want, list)
        request = handler.build(want)
        context = asked(cache, now, request)
        if context.kind is ContextKind.SESSION_ERROR:
            response = cache.answer(context, now, [])
            assert handler.handle_response(
                SessionFetchResponse(response.error_code, response.session_id, [])
            )
            request = handler.build(want)
            assert request.full
            context = asked(cache, now, request)
        assert sorted(
            (r.fetch for r in context.partitions), key=lambda f: f.topic_partition
        ) == sorted(want, key=lambda f: f.topic_partition)
        results = [
            (r, FetchPartitionResult(ErrorCode.none, 0, 0, 0))
            for r in context.partitions
        ]
        response = cache.answer(context, now, results)
        fetched = [
            FetchedPartition(r.topic_partition, result.error_code, 0, 0)
            for r, result in response.partitions
        ]
        assert (
            handler.handle_response(
                SessionFetchResponse(response.error_code, response.session_id, fetched)
            )
            is None
        )
        assert handler.session_id != 0
        assert not handler.full
