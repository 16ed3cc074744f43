"""The states of a KRaft voter and every transition between them, in one table (KIP-595,
KIP-996; the h11 idiom: the rules live here, the node only asks).

A voter is always in exactly one state, and each state belongs to one epoch:

- **Unattached**: it knows no leader of its epoch and has voted for no one in it.
- **Voted**: it voted for a candidate in its epoch (and wrote that down first).
- **Prospective**: its election timer ran out; before disturbing anyone it asks for
  *pre-votes* (KIP-996), which change no one's epoch.
- **Candidate**: a majority would vote for it: it has entered the next epoch, voted for
  itself and asks for real votes.
- **Leader**: a majority voted for it; it appends, and commits what a majority has.
- **Follower**: it knows the leader of its epoch and fetches from it.
- **Resigned**: it was the leader and stepped down (shutdown, or check-quorum: no
  majority fetched from it lately); it waits for the next leader.

An observer (a broker) never votes: it is Unattached while it looks for the leader and a
Follower while it fetches from it.
"""

from __future__ import annotations

import enum


class State(enum.Enum):
    UNATTACHED = "Unattached"
    VOTED = "Voted"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


U, V, P, C, L, F, R = State

TRANSITIONS: dict[tuple[State, State], str] = {
    (U, U): "sees a higher epoch with no leader known",
    (U, V): "grants its vote to a candidate",
    (U, P): "election timeout: asks for pre-votes",
    (U, F): "learns the leader of its epoch or of a higher one",
    (V, U): "sees a higher epoch with no leader known",
    (V, P): "election timeout: asks for pre-votes",
    (V, F): "learns the leader of its epoch or of a higher one",
    (P, P): "the pre-vote round timed out with no leader known: asks again",
    (P, C): "a majority granted pre-votes: enters the next epoch and votes for itself",
    (P, V): "grants its vote to a candidate of its epoch",
    (P, U): "pre-vote lost, or sees a higher epoch with no leader known",
    (P, F): (
        "learns the leader of its epoch or of a higher one, or its pre-vote round "
        "timed out while it knew the leader"
    ),
    (C, L): "a majority voted for it",
    (C, P): "election lost or timed out: after a backoff, asks for pre-votes again",
    (C, U): "sees a higher epoch with no leader known",
    (C, F): "learns the leader of its epoch or of a higher one",
    (
        L,
        R,
    ): "shuts down, or check-quorum: no majority fetched within 1.5 fetch timeouts",
    (L, U): "sees a higher epoch with no leader known",
    (L, F): "learns the leader of a higher epoch",
    (F, U): "sees a higher epoch with no leader known; an observer loses its leader",
    (F, F): "learns the leader of a higher epoch",
    (
        F,
        P,
    ): "fetch timeout (no answer from the leader, or it resigned): asks for pre-votes",
    (R, U): "sees a higher epoch with no leader known",
    (R, F): "learns the leader of a higher epoch",
    (R, P): "election timeout after resigning",
}
"""``(from, to) -> why``. A move the table does not list is a bug in the node."""

OBSERVER_STATES = frozenset({U, F})
"""The only states an observer may be in."""


def check_transition(old: State, new: State, is_voter: bool) -> str:
    """Why ``old -> new`` may happen; raises if it may not."""
    reason = TRANSITIONS.get((old, new))
    if reason is None or (not is_voter and new not in OBSERVER_STATES):
        role = "voter" if is_voter else "observer"
        raise RaftStateError(f"a {role} cannot go from {old.value} to {new.value}")
    return reason


def after_election_timeout(
    state: State, leader_id: int | None, node_id: int
) -> tuple[State, str]:
    """Where a voter goes when its election timer runs out (a leader and a follower
    have none), and why. A Prospective whose pre-vote round ran out while it still knows
    the leader of its epoch (not itself: a Resigned one knows itself) follows that
    leader again, as Kafka's ``pollProspective`` has it (KIP-996): the leader's
    BeginQuorumEpoch of that same epoch is no news to it, so nothing else brings it back
    to a leader it can reach again. Any other asks for pre-votes."""
    if state is State.PROSPECTIVE and leader_id not in (None, node_id):
        return State.FOLLOWER, "pre-vote round timed out: follows the leader it knows"
    return State.PROSPECTIVE, "election timeout"


class RaftStateError(RuntimeError):
    """The node broke one of Raft's rules: a bug, never a network condition."""
