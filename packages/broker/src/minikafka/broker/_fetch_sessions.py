"""Fetch sessions (KIP-227): a consumer or follower that fetches the same partitions over
and over names them once, and after that only what changed.

A fetch request carries a session id and a session epoch:

- id 0, epoch -1 (``FINAL_EPOCH``): a full fetch outside any session (sessionless);
- id 0, epoch 0 (``INITIAL_EPOCH``): a full fetch that asks for a session; the answer
  carries the new session's id, or 0 when the cache has no room;
- id N, epoch -1 or 0: a full fetch that closes session N (and with 0 opens another);
- id N, epoch E > 0: an incremental fetch in session N. It names only the partitions
  that are new or whose fetch offset (or size, or epoch) changed, and lists in
  ``forgotten_topics_data`` those to drop; the rest are fetched where the session left
  them. The answer leaves out every partition with nothing new: no records, the same
  high watermark and log start offset, no error. E must be the epoch the session
  expects (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH otherwise), and a
  session opened with topic ids (v13+) must go on with them (FETCH_SESSION_TOPIC_ID_ERROR).

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions. A new
session may take the slot of one unused for two minutes, or else of the least valuable
one old enough to lose it: a follower's session outranks a consumer's, a larger one a
smaller (Kafka's FetchSessionCache, one shard of it).

This module is a core: the handler gives it the time (seconds) and carries out the read
the context asks for; it does no IO and reads no clock.
"""

from __future__ import annotations

import enum
import random
import uuid
from collections.abc import Iterable, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.replication import FetchPartition, FetchPartitionResult

from ._metadata_cache import ZERO_UUID

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_S = 120.0
"""How long a session must go unused before any new one may take its slot, and how old
a session must be before a more valuable one may (Kafka's
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, not a setting)."""
_MAX_INT32 = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: past the largest int32 it starts again at 1."""
    return 1 if epoch >= _MAX_INT32 else epoch + 1


@attrs.frozen
class RequestedPartition:
    """A partition as a fetch request names it (Kafka's ``FetchRequest.PartitionData``):
    what to read, and from v13 its topic's id, which the answer names it by."""

    fetch: FetchPartition
    topic_id: uuid.UUID = ZERO_UUID

    @property
    def topic_partition(self) -> TopicPartition:
        return self.fetch.topic_partition


@attrs.define
class CachedPartition:
    """A partition in a session: the last request's parameters, and what the last
    answer told the fetcher, to know whether the next answer must name it."""

    requested: RequestedPartition
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, result: FetchPartitionResult, update: bool) -> bool:
        """Whether the answer names this partition (Kafka's
        ``maybeUpdateResponseData``): records, a moved high watermark or log start,
        an error or a diverging epoch. ``update``: remember what is sent."""
        respond = result.size > 0 or result.diverging_epoch is not None
        if result.high_watermark != self.high_watermark:
            respond = True
            if update:
                self.high_watermark = result.high_watermark
        if result.log_start_offset != self.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = result.log_start_offset
        if result.error_code is not ErrorCode.none:
            # Sent every time; and once the error is gone the partition is sent again.
            respond = True
            if update:
                self.high_watermark = -1
        return respond


@attrs.define(eq=False)
class FetchSession:
    id: int
    privileged: bool
    """Opened by a follower: it outranks consumers' sessions when slots run short."""
    uses_topic_ids: bool
    created: float
    last_used: float
    epoch: int
    """The epoch the session's next incremental request must carry."""
    partitions: dict[TopicPartition, CachedPartition] = attrs.field(factory=dict)
    size: int = 0
    """The partition count the cache ranks the session by, as of its last use."""

    def update(
        self,
        requested: Iterable[RequestedPartition],
        forgotten: Iterable[TopicPartition],
    ) -> None:
        """An incremental request's changes: its partitions added or updated (the
        answer state kept), the forgotten ones removed."""
        for r in requested:
            cached = self.partitions.get(r.topic_partition)
            if cached is None:
                self.partitions[r.topic_partition] = CachedPartition(r)
            else:
                cached.requested = r
        for tp in forgotten:
            self.partitions.pop(tp, None)


class ContextKind(enum.Enum):
    """Kafka's four FetchContexts."""

    SESSION_ERROR = "session error"
    SESSIONLESS = "sessionless"
    FULL = "full"
    INCREMENTAL = "incremental"


@attrs.frozen
class FetchAnswer:
    """What the response says: its error and session id, and the partitions it names."""

    error_code: ErrorCode
    session_id: int
    partitions: list[tuple[RequestedPartition, FetchPartitionResult]]


@attrs.frozen
class FetchContext:
    """One request's view of its session: the partitions to read, and
    :meth:`FetchSessionCache.answer` to turn the read into the response."""

    kind: ContextKind
    partitions: Sequence[RequestedPartition] = ()
    error_code: ErrorCode = ErrorCode.none
    session: FetchSession | None = None
    request_epoch: int = FINAL_EPOCH
    privileged: bool = False
    uses_topic_ids: bool = False


@attrs.define
class FetchSessionCache:
    """The broker's fetch sessions, at most ``max_slots`` of them."""

    max_slots: int
    eviction_s: float = EVICTION_S
    rng: random.Random = attrs.field(factory=random.Random)
    sessions: dict[int, FetchSession] = attrs.field(factory=dict)
    evictions: int = 0

    def new_context(
        self,
        now: float,
        *,
        session_id: int,
        epoch: int,
        uses_topic_ids: bool,
        privileged: bool,
        requested: Sequence[RequestedPartition],
        forgotten: Sequence[TopicPartition] = (),
    ) -> FetchContext:
        """The context of a request (Kafka's ``FetchManager.newContext``)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            # A full request closes the session it names.
            self.sessions.pop(session_id, None)
            kind = ContextKind.SESSIONLESS if epoch == FINAL_EPOCH else ContextKind.FULL
            return FetchContext(
                kind, requested, privileged=privileged, uses_topic_ids=uses_topic_ids
            )
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext(
                ContextKind.SESSION_ERROR,
                error_code=ErrorCode.fetch_session_id_not_found,
            )
        if session.epoch != epoch:
            return FetchContext(
                ContextKind.SESSION_ERROR,
                error_code=ErrorCode.invalid_fetch_session_epoch,
            )
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext(
                ContextKind.SESSION_ERROR,
                error_code=ErrorCode.fetch_session_topic_id_error,
            )
        session.update(requested, forgotten)
        if not session.partitions:
            # Nothing left to fetch: the session ends, the request is answered alone.
            self.sessions.pop(session.id, None)
            return FetchContext(ContextKind.SESSIONLESS, requested)
        self._touch(session, now)
        session.epoch = next_epoch(session.epoch)
        return FetchContext(
            ContextKind.INCREMENTAL,
            [c.requested for c in session.partitions.values()],
            session=session,
            request_epoch=epoch,
        )

    def answer(
        self,
        context: FetchContext,
        now: float,
        results: Sequence[tuple[RequestedPartition, FetchPartitionResult]],
    ) -> FetchAnswer:
        """The response to the read of ``context``'s partitions (Kafka's
        ``updateAndGenerateResponseData``)."""
        kind = context.kind
        if kind is ContextKind.SESSION_ERROR:
            return FetchAnswer(context.error_code, INVALID_SESSION_ID, [])
        if kind is ContextKind.SESSIONLESS:
            return FetchAnswer(ErrorCode.none, INVALID_SESSION_ID, list(results))
        if kind is ContextKind.FULL:
            session_id = self._maybe_create(context, now, results)
            return FetchAnswer(ErrorCode.none, session_id, list(results))
        session = context.session
        assert session is not None
        if session.epoch != next_epoch(context.request_epoch):
            # Another request of the session came in while this one waited.
            return FetchAnswer(ErrorCode.invalid_fetch_session_epoch, session.id, [])
        named = []
        for requested, result in results:
            tp = requested.topic_partition
            cached = session.partitions.get(tp)
            if cached is None or not cached.must_respond(result, update=True):
                continue
            named.append((requested, result))
            if result.size > 0:
                # Partitions that just returned data go to the back of the line, so
                # that a response full to max_bytes does not starve the others.
                session.partitions[tp] = session.partitions.pop(tp)
        return FetchAnswer(ErrorCode.none, session.id, named)

    def _maybe_create(
        self,
        context: FetchContext,
        now: float,
        results: Sequence[tuple[RequestedPartition, FetchPartitionResult]],
    ) -> int:
        if len(self.sessions) >= self.max_slots and not self._try_evict(
            context.privileged, len(results), now
        ):
            return INVALID_SESSION_ID
        session = FetchSession(
            id=self._new_id(),
            privileged=context.privileged,
            uses_topic_ids=context.uses_topic_ids,
            created=now,
            last_used=now,
            epoch=next_epoch(INITIAL_EPOCH),
            partitions={
                r.topic_partition: CachedPartition(
                    r, result.high_watermark, result.log_start_offset
                )
                for r, result in results
            },
        )
        self.sessions[session.id] = session
        self._touch(session, now)
        return session.id

    def _new_id(self) -> int:
        while True:
            candidate = self.rng.randrange(1, _MAX_INT32)
            if candidate not in self.sessions:
                return candidate

    def _touch(self, session: FetchSession, now: float) -> None:
        session.last_used = now
        session.size = len(session.partitions)

    def _try_evict(self, privileged: bool, size: int, now: float) -> bool:
        """Free a slot for a new session of ``size`` partitions (Kafka's ``tryEvict``):
        the least recently used session if it is stale, or else the least valuable
        session old enough to be evicted, if it is worth less than the new one."""
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used, s.id))
        if now - stalest.last_used > self.eviction_s:
            return self._evict(stalest)
        # A follower's session may also take a consumer's that is not old yet.
        evictable = [
            s
            for s in self.sessions.values()
            if now - s.created > self.eviction_s or (privileged and not s.privileged)
        ]
        if not evictable:
            return False
        cheapest = min(evictable, key=lambda s: (s.privileged, s.size, s.id))
        if (privileged, size) <= (cheapest.privileged, cheapest.size):
            return False
        return self._evict(cheapest)

    def _evict(self, session: FetchSession) -> bool:
        del self.sessions[session.id]
        self.evictions += 1
        return True
