"""The RequestChannel: the one queue between the Processors and the handlers.

Seed 000: Processors put complete requests into ``RequestChannel.requestQueue``,
``num.io.threads`` KafkaRequestHandlers take them out and call KafkaApis, and each
response goes back to the queue of the Processor that owns the connection. The
request queue is bounded by ``queued.max.requests``: when it is full a Processor
waits to put, stops reading its sockets, and TCP's flow control pushes back on the
clients. That is the broker's backpressure.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from ._handoff import HandOff
from ._request import Request, Response


class ResponseQueue(Protocol):
    """What the RequestChannel needs of a Processor."""

    id: int

    def enqueue_response(self, response: Response) -> None: ...


@attrs.define(eq=False)
class RequestChannel:
    queued_max_requests: int
    _queue: HandOff[Request] = attrs.field(init=False)
    _processors: dict[int, ResponseQueue] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        self._queue = HandOff(self.queued_max_requests)

    def add_processor(self, processor: ResponseQueue) -> None:
        self._processors[processor.id] = processor

    def remove_processor(self, processor_id: int) -> None:
        self._processors.pop(processor_id, None)

    async def send_request(self, request: Request) -> None:
        """Queue a request; waits while ``queued.max.requests`` are already queued."""
        # With room, no trip through trio's scheduler (see ``_handoff.py``).
        await self._queue.put(request)

    def try_send_request(self, request: Request) -> bool:
        """Queue a request if there is room now (the Processor's path); False if
        full."""
        return self._queue.put_nowait(request)

    async def receive_request(self) -> Request:
        """The next request; raises ``trio.EndOfChannel`` once closed and drained."""
        # A handler takes what is already queued without yielding to the scheduler:
        # requests queued together are handled together.
        return await self._queue.take()

    def send_response(self, response: Response) -> None:
        """Route a response to the Processor that owns its connection."""
        processor = self._processors.get(response.request.processor_id)
        if processor is not None:
            processor.enqueue_response(response)
        # else: that Processor has shut down and its connections are gone.

    @property
    def queue_size(self) -> int:
        return len(self._queue)

    @property
    def waiting_senders(self) -> int:
        """Processors' connections blocked because the queue is full."""
        return self._queue.waiting_putters

    def close(self) -> None:
        """No more requests; handlers drain what is queued, then stop."""
        self._queue.close()
