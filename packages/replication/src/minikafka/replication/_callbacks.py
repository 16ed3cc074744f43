"""Callbacks for the ReplicaManager's answers: the part of a shell that needs no event loop.

The core answers with values (:class:`ProduceResponse`, :class:`FetchResponse`), each
carrying the number its caller gave the request. A request handler would rather say "call
this with the answer", as Kafka's ``responseCallback`` does; :class:`ResponseCallbacks`
numbers each callback, and calls it with the response that carries its number. The trio
shell uses it, and so do tests and demos that drive the core by hand.

It is not the shell runtime's ``Waiters`` (``minikafka.common.shell``), which the group
coordinator's, the controller's and the Raft node's shells use, although both match an
answer to a request by its number: a waiter is awaited by the request's own task, held
until the answer comes. Produce and Fetch are not held: their handlers hand over a
callback and return, as Kafka's request handler threads do once a request is parked in
the purgatory, so an ``acks=all`` produce or a consumer's long poll (up to
``fetch.max.wait.ms``) keeps no task waiting, and the call that completes it (a
follower's fetch, the expiry timer, the controller's answer) sends its response at once.
And a callback needs no event loop: the tests, the demo and the book's cells drive the
core with these, without trio.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import attrs

from minikafka.common import TopicPartition

from ._results import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    FetchPartition,
    FetchPartitionResult,
    ProducePartitionResult,
    ProduceResponse,
    Response,
)

ProduceCallback = Callable[[dict[TopicPartition, ProducePartitionResult]], None]
FetchCallback = Callable[[list[tuple[FetchPartition, FetchPartitionResult]]], None]
DeleteRecordsCallback = Callable[
    [dict[TopicPartition, DeleteRecordsPartitionResult]], None
]


@attrs.define(eq=False)
class ResponseCallbacks:
    """The callback waiting for each request id."""

    _produce: dict[int, ProduceCallback] = attrs.field(init=False, factory=dict)
    _fetch: dict[int, FetchCallback] = attrs.field(init=False, factory=dict)
    _delete_records: dict[int, DeleteRecordsCallback] = attrs.field(
        init=False, factory=dict
    )
    _ids: itertools.count[int] = attrs.field(init=False, factory=itertools.count)

    def produce(self, respond: ProduceCallback) -> int:
        """A request id whose :class:`ProduceResponse` goes to ``respond``."""
        request_id = next(self._ids)
        self._produce[request_id] = respond
        return request_id

    def fetch(self, respond: FetchCallback) -> int:
        """A request id whose :class:`FetchResponse` goes to ``respond``."""
        request_id = next(self._ids)
        self._fetch[request_id] = respond
        return request_id

    def delete_records(self, respond: DeleteRecordsCallback) -> int:
        """A request id whose :class:`DeleteRecordsResponse` goes to ``respond``."""
        request_id = next(self._ids)
        self._delete_records[request_id] = respond
        return request_id

    @property
    def waiting(self) -> int:
        """How many requests have not been answered yet."""
        return len(self._produce) + len(self._fetch) + len(self._delete_records)

    def deliver(self, responses: Iterable[Response]) -> None:
        """Call each response's callback, once; every one, even if an earlier one raised
        (the first error is raised after the others were answered)."""
        error: BaseException | None = None
        for response in responses:
            try:
                if isinstance(response, ProduceResponse):
                    self._produce.pop(response.request_id)(response.results)
                elif isinstance(response, DeleteRecordsResponse):
                    self._delete_records.pop(response.request_id)(response.results)
                else:
                    self._fetch.pop(response.request_id)(response.results)
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error
