"""``quorum-state``: what a voter must remember across a crash (KIP-595, "Persistent state").

Raft is safe only if a voter never votes twice in one epoch and never goes back to an
older epoch, even after a crash. So before a voter grants a vote or enters an epoch, the
epoch, the leader it knows and the candidate it voted for are written and fsynced; only
then does the answer leave the node. Kafka keeps them in a small JSON file,
``quorum-state``, beside the ``__cluster_metadata-0`` log; :class:`FileStateStore` writes
the same fields (``leaderEpoch``, ``leaderId``, ``votedId``, ``currentVoters``) through a
temporary file, fsync and rename, so a crash leaves the old state or the new, never half.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import attrs

QUORUM_STATE_FILE = "quorum-state"
NO_ID = -1
"""Kafka writes -1 for "no leader" and "no vote"."""


@attrs.frozen
class ElectionState:
    """The durable part of a voter's state: its epoch, the leader it knows of in that
    epoch (or None) and the voter it voted for in that epoch (or None)."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None:
        """The last state written, or None for a node that never wrote one."""
        ...

    def write(self, state: ElectionState) -> None:
        """Durably: when this returns, a crash keeps ``state``."""
        ...


class MemoryStateStore:
    """A store in memory: the simulator's disk (a write is durable when it returns)."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1


class FileStateStore:
    """Kafka's ``quorum-state`` file in ``directory``."""

    def __init__(self, directory: Path, voters: Sequence[int]) -> None:
        self.path = directory / QUORUM_STATE_FILE
        self.voters = tuple(voters)

    def read(self) -> ElectionState | None:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        leader, voted = int(raw["leaderId"]), int(raw["votedId"])
        return ElectionState(
            int(raw["leaderEpoch"]),
            None if leader == NO_ID else leader,
            None if voted == NO_ID else voted,
        )

    def write(self, state: ElectionState) -> None:
        body = {
            "clusterId": "",
            "leaderId": NO_ID if state.leader_id is None else state.leader_id,
            "leaderEpoch": state.epoch,
            "votedId": NO_ID if state.voted_id is None else state.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in self.voters],
            "data_version": 0,
        }
        temporary = self.path.with_name(self.path.name + ".tmp")
        with open(temporary, "w") as f:
            json.dump(body, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)
        # The rename itself is durable only once the directory is fsynced.
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
