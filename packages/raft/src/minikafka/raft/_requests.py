"""One request in flight per destination (Kafka's ``RequestManager`` in the raft module).

A quorum member never has two requests to the same node outstanding: a new one is sent
only once the last was answered, failed (the connection was refused or reset) or timed
out (``quorum.request.timeout.ms``), and after a failure only once the retry backoff
(``quorum.retry.backoff.ms``) has passed. An answer counts only if it carries the
correlation id of the request in flight, so a duplicated or late answer is ignored.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import attrs


@attrs.define
class _Inflight:
    correlation_id: int
    deadline: float


class RequestManager:
    def __init__(self, request_timeout: float, retry_backoff: float) -> None:
        self.request_timeout = request_timeout
        self.retry_backoff = retry_backoff
        self._correlation = itertools.count(1)
        self._inflight: dict[int, _Inflight] = {}
        self._retry_at: dict[int, float] = {}

    def ready(self, destination: int) -> bool:
        """May a request go to ``destination`` now?"""
        return destination not in self._inflight and destination not in self._retry_at

    @property
    def idle(self) -> bool:
        return not self._inflight

    def sent(self, destination: int, now: float) -> int:
        """A request leaves for ``destination``; returns its correlation id."""
        correlation_id = next(self._correlation)
        self._inflight[destination] = _Inflight(
            correlation_id, now + self.request_timeout
        )
        return correlation_id

    def answered(self, source: int, correlation_id: int) -> bool:
        """True if this answers the request in flight to ``source`` (which is then done)."""
        inflight = self._inflight.get(source)
        if inflight is None or inflight.correlation_id != correlation_id:
            return False
        del self._inflight[source]
        return True

    def failed(
        self, destination: int, now: float, correlation_id: int | None = None
    ) -> None:
        """The request to ``destination`` failed, or its answer was an error: back off.
        With ``correlation_id``, only if that request is still the one in flight (a
        failure reported late must not cancel a newer request)."""
        inflight = self._inflight.get(destination)
        if correlation_id is not None and (
            inflight is None or inflight.correlation_id != correlation_id
        ):
            return
        self._inflight.pop(destination, None)
        self._retry_at[destination] = now + self.retry_backoff

    def expire(self, now: float) -> Iterator[int]:
        """Give up the requests past their deadline (yielding their destinations) and
        end the backoffs that are over."""
        for destination, inflight in list(self._inflight.items()):
            if inflight.deadline <= now:
                self.failed(destination, now)
                yield destination
        for destination, at in list(self._retry_at.items()):
            if at <= now:
                del self._retry_at[destination]

    def forget(self) -> None:
        """A new state: answers to the old state's requests no longer matter."""
        self._inflight.clear()

    def deadlines(self) -> list[float]:
        return [i.deadline for i in self._inflight.values()] + list(
            self._retry_at.values()
        )
