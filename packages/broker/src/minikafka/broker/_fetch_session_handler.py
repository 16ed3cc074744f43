"""The fetcher's half of fetch sessions (KIP-227; Kafka's ``FetchSessionHandler``).

:mod:`._fetch_sessions` is the leader's half: it keeps what each session last asked for
and answers only what changed. This is the fetcher's: it remembers which partitions the
session holds, with the parameters last sent for each, and turns the partitions the
fetcher wants now into the next request's session id and epoch, the partitions to name
and the ones to forget:

- a **full** request (epoch 0) names every partition and asks for a session (an id it
  names as well closes that session first);
- an **incremental** request (the session's id, its next epoch) names only the
  partitions that are new to the session or whose fetch offset, log start offset,
  leader epoch or size changed since the request that last named them, and forgets
  those the fetcher no longer wants. The leader reads the unnamed ones from where the
  session left them, and its answer names only the partitions with something new: an
  absent partition has nothing new.

The answer decides the next request. A session id of 0 means the leader opened none
(its cache is full, or sessions are off): the next request is full again. A
session-level error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
FETCH_SESSION_TOPIC_ID_ERROR), an answer naming a partition the session does not hold
(or, to a full request, leaving one out), or a round that failed on the way (the
connection cut) makes the next request a full one that opens a new session: the answer
is not used, and the partitions are all named again.

A core: it does no IO and reads no clock; the replica fetchers' shell
(:mod:`._replica_fetchers`) sends what :meth:`FetchSessionHandler.build` returns and hands
the decoded answer to :meth:`FetchSessionHandler.handle_response`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.replication import FetchedPartition, FetchPartition

from ._fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch


@attrs.frozen
class SessionFetchRequest:
    """What a fetch request says of its session: its id and epoch, the partitions it
    names (all of them in a full request), and the ones it forgets."""

    session_id: int
    epoch: int
    partitions: tuple[FetchPartition, ...]
    forgotten: tuple[TopicPartition, ...] = ()

    @property
    def full(self) -> bool:
        """A full request (names every partition), not an incremental one."""
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


@attrs.frozen
class SessionFetchResponse:
    """The decoded answer: its top-level error, its session id, and the partitions it
    names."""

    error_code: ErrorCode
    session_id: int
    partitions: Sequence[FetchedPartition]


@attrs.define
class FetchSessionHandler:
    """One fetcher's session with one leader (Kafka keeps one per broker it fetches
    from)."""

    node: int
    """The leader's broker id (for the messages)."""
    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH
    """The next request's epoch: 0 for a full request, else its place in the session."""
    partitions: dict[TopicPartition, FetchPartition] = attrs.field(factory=dict)
    """The session's partitions, each as the request that last named it asked."""

    @property
    def full(self) -> bool:
        """Whether the next (or the in-flight) request is a full one."""
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def build(self, wanted: Iterable[FetchPartition]) -> SessionFetchRequest:
        """The next request, for the partitions the fetcher wants now (Kafka's
        ``FetchSessionHandler.Builder.build``). The session takes them as sent; its
        id and epoch move on when the answer comes."""
        now_wanted = {f.topic_partition: f for f in wanted}
        if self.full:
            self.partitions = now_wanted
            return SessionFetchRequest(
                self.session_id, self.epoch, tuple(now_wanted.values())
            )
        forgotten = [tp for tp in self.partitions if tp not in now_wanted]
        for tp in forgotten:
            del self.partitions[tp]
        named = []
        for tp, fetch in now_wanted.items():
            if self.partitions.get(tp) != fetch:  # new, or asked differently
                self.partitions[tp] = fetch
                named.append(fetch)
        return SessionFetchRequest(
            self.session_id, self.epoch, tuple(named), tuple(forgotten)
        )

    def handle_response(self, response: SessionFetchResponse) -> str | None:
        """Move the session on with the answer to the last request built (Kafka's
        ``handleResponse``): None if its partitions may be used, else why not, and
        the next request is a full one."""
        error = response.error_code
        if error is not ErrorCode.none:
            problem = f"the session was refused ({error.name.upper()})"
            if error is ErrorCode.fetch_session_id_not_found:
                self._start_over(INVALID_SESSION_ID)  # nothing to close
            else:
                self._start_over(self.session_id)  # close it, ask for a new one
            return problem
        named = [p.topic_partition for p in response.partitions]
        extra = [tp for tp in named if tp not in self.partitions]
        if self.full:
            omitted = set(self.partitions) - set(named)
            if extra or omitted:
                self._start_over(INVALID_SESSION_ID)
                return _invalid("full", extra, omitted)
            # A new session (its next request is its epoch 1), or none opened.
            self.session_id = response.session_id
            self.epoch = (
                INITIAL_EPOCH
                if response.session_id == INVALID_SESSION_ID
                else next_epoch(INITIAL_EPOCH)
            )
            return None
        if extra:
            self._start_over(self.session_id)
            return _invalid("incremental", extra, ())
        if response.session_id == INVALID_SESSION_ID:
            self._start_over(INVALID_SESSION_ID)  # the leader closed the session
        else:
            self.epoch = next_epoch(self.epoch)
        return None

    def handle_error(self) -> None:
        """The request, or its answer, was lost on the way (Kafka's ``handleError``):
        the next request closes the session and asks for a new one."""
        self._start_over(self.session_id)

    def _start_over(self, close: int) -> None:
        """The next request is full, closing session ``close`` (0: none)."""
        self.session_id = close
        self.epoch = INITIAL_EPOCH


def _invalid(
    kind: str, extra: Iterable[TopicPartition], omitted: Iterable[TopicPartition]
) -> str:
    parts = []
    if extra:
        parts.append("not in the session: " + ", ".join(map(str, sorted(extra))))
    if omitted:
        parts.append("left out: " + ", ".join(map(str, sorted(omitted))))
    return f"an invalid {kind} answer ({'; '.join(parts)})"
