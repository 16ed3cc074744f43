"""InitProducerId: producer ids for idempotent producers (KIP-98, KIP-730).

An idempotent producer numbers its batches per partition; the leader keeps the last
sequence numbers per producer id and drops a retried batch it already has. That only
works if no two producers ever share an id, across restarts too. So ids come in blocks
of 1000 from the controller, which writes each block into the metadata log
(``ProducerIdsRecord``) before handing it out; the broker gives ids from its block one
by one and asks for a new block when it runs out (Kafka's ProducerIdManager).

Without a transactional id every InitProducerId gets a fresh id with epoch 0, also
from v3 on when the producer names its current id and epoch (KIP-360: an idempotent
producer that lost track of its sequences starts again under a new id, as Kafka's
coordinator gives it; one of the two named without the other is INVALID_REQUEST).
A transactional id goes to the transaction coordinator (if this broker leads the id's
partition of ``__transaction_state``), which bumps the id's epoch, fencing the
producer that had it, and takes a new producer id from the same block when it needs one.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import ApiError
from minikafka.controller import AllocateProducerIdsResponse
from minikafka.coordination import TransactionCoordinatorShell
from minikafka.net import ApiKey, Request, build, response_schema

from ._body import INIT_PRODUCER_ID, INIT_PRODUCER_ID_WITH_PRODUCER
from ._transactions import for_version

NO_THROTTLE = datetime.timedelta(0)
NO_PRODUCER_ID = NO_PRODUCER_EPOCH = -1


class ProducerIdsUnavailable(ApiError):
    def __init__(self, error_code: ErrorCode) -> None:
        super().__init__(error_code.name)
        self.error_code = error_code


@attrs.define(eq=False)
class ProducerIdManager:
    """Hands out ids from the current block; fetches the next block when it runs dry."""

    allocate_block: Callable[[], Awaitable[AllocateProducerIdsResponse]]
    _next: int = attrs.field(init=False, default=0)
    _end: int = attrs.field(init=False, default=0)
    _lock: trio.Lock = attrs.field(init=False, factory=trio.Lock)

    async def generate_producer_id(self) -> int:
        await self.ensure_available()
        return self.take()

    async def ensure_available(self) -> None:
        """Fetch the next block if this one is used up (raises ProducerIdsUnavailable
        if the controller refuses)."""
        async with self._lock:  # one block request at a time; the others wait for it
            if self._next >= self._end:
                block = await self.allocate_block()
                if block.error_code is not ErrorCode.none:
                    raise ProducerIdsUnavailable(block.error_code)
                self._next = block.producer_id_start
                self._end = block.producer_id_start + block.producer_id_len

    def take(self) -> int:
        """The next id of the block, at once (the transaction coordinator's core asks
        synchronously, after :meth:`ensure_available`); a block used up meanwhile is
        COORDINATOR_LOAD_IN_PROGRESS, which the producer retries, as Kafka's
        ProducerIdManager answers while its next block is on its way."""
        if self._next >= self._end:
            raise ProducerIdsUnavailable(ErrorCode.coordinator_load_in_progress)
        producer_id = self._next
        self._next += 1
        return producer_id


async def handle_init_producer_id(
    request: Request,
    manager: ProducerIdManager,
    transactions: TransactionCoordinatorShell,
) -> None:
    body = request.body_as(INIT_PRODUCER_ID)
    cls = response_schema(ApiKey.INIT_PRODUCER_ID, request.api_version)
    assert cls is not None
    producer_id, epoch, error = -1, -1, ErrorCode.none
    named = (
        (int(body.producer_id), int(body.producer_epoch))
        if isinstance(body, INIT_PRODUCER_ID_WITH_PRODUCER)
        else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    )
    if (named[0] == NO_PRODUCER_ID) != (named[1] == NO_PRODUCER_EPOCH):
        error = ErrorCode.invalid_request  # an id without its epoch, or the reverse
    elif body.transactional_id is not None:
        try:
            await manager.ensure_available()  # a new id is taken synchronously
        except ProducerIdsUnavailable as exc:
            error = exc.error_code
        else:
            reply = await transactions.init_producer_id(
                body.transactional_id,
                body.transaction_timeout // datetime.timedelta(milliseconds=1),
                None if named[0] == NO_PRODUCER_ID else named,
            )
            error = for_version(reply.error_code, request.api_version, 4)
            producer_id, epoch = reply.producer_id, reply.producer_epoch
    else:
        try:
            producer_id, epoch = await manager.generate_producer_id(), 0
        except ProducerIdsUnavailable as exc:
            error = exc.error_code
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=error,
            producer_id=producer_id,
            producer_epoch=epoch,
        )
    )
