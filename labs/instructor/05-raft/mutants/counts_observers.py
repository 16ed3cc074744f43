"""Wrong on purpose: observers' fetch offsets count toward the majority, as voters'."""

from __future__ import annotations

from minikafka.raft._leader import LeaderState


def majority_end_offset(self: LeaderState, own_flushed_end: int) -> int:
    replicas = {**self.voters, **self.observers}
    offsets = sorted(
        (
            own_flushed_end if node == self.node_id else progress.end_offset
            for node, progress in replicas.items()
        ),
        reverse=True,
    )
    return offsets[len(offsets) // 2]
