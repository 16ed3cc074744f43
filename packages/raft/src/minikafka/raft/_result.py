"""What a Raft node hands back from every call: the project's one ``CoreResult``.

Kafka's ``KafkaRaftClient`` sends its requests and answers itself and tells its state
machine what to apply through ``RaftClient.Listener``: ``handleLoadSnapshot`` when it
copied the leader's snapshot, ``handleCommit`` for batches that became committed. The
sans-IO node hands both back instead (ARCHITECTURE.md, "Cores and shells"): the
envelopes to send are the result's messages, and what the listener must hear are its
replies, as :class:`LoadSnapshot` and :class:`Committed`, in the order the listener must
read them (a snapshot first, then the entries committed after it). The node has no
records part: it writes its own log and ``quorum-state`` through the ports it was
given, since a vote must be on disk before its answer leaves.
"""

from __future__ import annotations

from typing import Never

import attrs

from minikafka.common import CoreResult

from ._log import Entry, Snapshot
from ._messages import Envelope


@attrs.frozen
class LoadSnapshot:
    """Start the state machine again from ``snapshot`` (Kafka's ``handleLoadSnapshot``):
    the node copied it from the leader, being behind the leader's log start."""

    snapshot: Snapshot


@attrs.frozen
class Committed:
    """Entries that became committed, in log order, for the state machine to apply
    (Kafka's ``handleCommit``); the control entries (LeaderChange) are left out."""

    entries: tuple[Entry, ...]


RaftReply = LoadSnapshot | Committed
"""What the state machine must hear, in order."""

RaftResult = CoreResult[Never, RaftReply, Envelope]
"""What every call that drives a :class:`~._node.RaftNode` returns."""
