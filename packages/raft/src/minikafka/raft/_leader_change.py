"""The LeaderChange record (KIP-595): what a new leader writes first, said in full.

Election appends a control entry of the new epoch as its first act; the entry commits
everything before it, and what it holds is Kafka's ``LeaderChangeMessage``: the new
leader, the epoch's voters and the voters who granted it their vote. This part fills that
value in as the entry is appended, so the parts that decide when to write it (and lab 5's
learners, who write them) need only say ``Entry(offset, epoch, b"", control=True)``;
Kafka's own tools then read the metadata log's control records as they read Kafka's.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ._base import RaftNodeBase
from ._batches import encode_leader_change
from ._log import Entry


class LeaderChangeRecord(RaftNodeBase):
    """Fills a new leader's control entry with its LeaderChange message."""

    def _append_as_leader(self, entries: Sequence[Entry], now: float) -> None:
        filled = [
            attrs.evolve(entry, data=self._leader_change())
            if entry.control and not entry.data
            else entry
            for entry in entries
        ]
        # LeaderReplication's, next in RaftNode's order of parts.
        super()._append_as_leader(filled, now)  # type: ignore[safe-super]

    def _leader_change(self) -> bytes:
        return encode_leader_change(self.node_id, self.voters, self._granting)
