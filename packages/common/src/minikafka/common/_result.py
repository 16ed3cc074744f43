"""What a sans-IO core hands back to its shell: records to write, then an answer.

Kafka's newer group coordinator returns a ``CoordinatorResult(records, response)`` from
every handler: the records the shard wants appended to its log, and the response to send
once they are committed. Every minikafka core speaks the same way (ARCHITECTURE.md,
"Cores and shells"): it never writes, sends or sleeps itself; it returns what it wants
done, and the shell (trio, sockets, files) carries it out and reports back.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import attrs

RecordT = TypeVar("RecordT")
ResponseT = TypeVar("ResponseT")


@attrs.frozen
class CoreResult(Generic[RecordT, ResponseT]):
    """The outcome of one call into a core.

    ``records`` are to be appended, in order; ``response`` is the answer to the call, to be
    sent only once the records are durable (at once when there are none). Either may be
    empty: a heartbeat has a response and no records, a timer may have records and no one
    to answer.
    """

    records: tuple[RecordT, ...] = ()
    response: ResponseT | None = None

    @property
    def needs_write(self) -> bool:
        return bool(self.records)
