"""What a sans-IO core hands back to its shell: records to write, answers, messages.

Kafka's newer group coordinator returns a ``CoordinatorResult(records, response)`` from
every handler: the records the shard wants appended to its log, and the response to send
once they are committed. Every minikafka core speaks one way, widened from that
(ARCHITECTURE.md, "Cores and shells"): a call returns one :class:`CoreResult` holding the
records to append, the replies to give and the messages to send to other nodes. The core
never writes, sends or sleeps itself; the shell (trio, sockets, files) carries the result
out and reports back with another call. When to call again is not in the result: the
shell asks the core's ``next_deadline()`` after each call.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import attrs

RecordT = TypeVar("RecordT")
ReplyT = TypeVar("ReplyT")
MessageT = TypeVar("MessageT")


@attrs.frozen
class CoreResult(Generic[RecordT, ReplyT, MessageT]):
    """The outcome of one call into a core; any part may be empty.

    - ``records``: to append to the core's log, in order;
    - ``replies``: answers to requests (or values for whoever listens to the core), to
      be given once this result's records are appended (at once when there are none).
      An answer that must wait until records are committed is not here: the core keeps
      the request and answers from the call that reports the commit (``on_commit``,
      ``complete_write``), as Kafka completes a ``CoordinatorResult``'s response;
    - ``messages``: requests for other nodes, sent, like the replies, once this
      result's records are appended (ZooKeeper mode's controller tells the brokers only
      what ZooKeeper holds).

    A heartbeat has a reply and no records; a timer may have records and no one to
    answer; a Raft node's tick may only send messages. A core that never sends a message
    (or never writes a record) types that part ``Never``.
    """

    records: tuple[RecordT, ...] = ()
    replies: tuple[ReplyT, ...] = ()
    messages: tuple[MessageT, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.records or self.replies or self.messages)

    def __add__(
        self, other: CoreResult[RecordT, ReplyT, MessageT]
    ) -> CoreResult[RecordT, ReplyT, MessageT]:
        """Both results, this one's parts first: what two steps of one call ask for."""
        return CoreResult(
            self.records + other.records,
            self.replies + other.replies,
            self.messages + other.messages,
        )
