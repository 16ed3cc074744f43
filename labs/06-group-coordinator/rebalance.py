"""Lab 6: write the end of the join phase and the sync phase of a rebalance (seed 002
§§2-3; the Consumer groups chapter).

The coordinator keeps each group as a ``GroupMetadata`` moving through the states of
``_group_state.py`` (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead); a
request it cannot answer yet is parked on the member (``member.awaiting_join``,
``member.awaiting_sync``). Each function below is a method of the ``Rebalancer`` (its
first argument, ``self``: ``self.metadata`` writes group records, ``self.tracer``
traces) and returns the actions it wants done: a ``GroupReply(parked, response)`` per
answered request, an ``append(records, then)`` for a write to ``__consumer_offsets``.

``make lab 6 EX=join`` checks :func:`complete_join`, ``make lab 6 EX=sync`` the other
two; minikafka's own code runs the rest.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from minikafka.coordination.group._group import GroupMetadata
from minikafka.coordination.group._group_requests import SyncGroupResponse
from minikafka.coordination.group._group_state import GroupState
from minikafka.coordination.group._group_trace import (
    trace_assigned,
    trace_completed,
    trace_removed,
)
from minikafka.coordination.group._rebalance import (
    Rebalancer,
    join_response,
    schedule_heartbeat,
)
from minikafka.coordination.group._results import (
    AssignmentStored,
    GroupAction,
    GroupReply,
    Unanswered,
    append,
    store_group_error,
)
from minikafka.labs import ExerciseNotDone

FILE = "labs/06-group-coordinator/rebalance.py"

__all__ = [
    "AssignmentStored",
    "ErrorCode",
    "GroupAction",
    "GroupMetadata",
    "GroupReply",
    "GroupState",
    "Rebalancer",
    "SyncGroupResponse",
    "Unanswered",
    "append",
    "assignment_stored",
    "complete_join",
    "join_response",
    "propagate_assignment",
    "schedule_heartbeat",
    "store_group_error",
    "trace_assigned",
    "trace_completed",
    "trace_removed",
]


def complete_join(
    self: Rebalancer, group: GroupMetadata, now: float
) -> list[GroupAction]:
    """The join phase is over (all members rejoined, or the rebalance timeout passed).

    In order: clear the group's join deadline; remove the dynamic members that did not
    rejoin (``group.not_yet_rejoined_members()``; static members stay until their
    session expires), tracing each with ``trace_removed(..., "join_timeout", now)``; if
    no leader can be elected among those who joined (``maybe_elect_new_joined_leader``)
    while members remain, wait one more rebalance timeout; otherwise start the next
    generation (``group.init_next_generation(now, self.tracer)``). A group left empty
    still writes its record (the generation moved on). Else answer every parked
    JoinGroup with ``join_response`` (only the leader's carries the members), restart
    every member's session, mark it no longer new and pending its SyncGroup, and give
    the sync phase a deadline of one rebalance timeout.
    """
    raise ExerciseNotDone("complete_join", "the docstring is the recipe", FILE)


def propagate_assignment(
    self: Rebalancer, group: GroupMetadata, error: ErrorCode, now: float
) -> list[GroupAction]:
    """Answer every parked SyncGroup: with ``error``, or (no error) with the member's
    own assignment and the group's protocol; restart each answered member's session and
    trace the assignment (``trace_assigned``) when it succeeded."""
    raise ExerciseNotDone("propagate_assignment", file=FILE)


def assignment_stored(
    self: Rebalancer, stored: AssignmentStored, error: ErrorCode, now: float
) -> list[GroupAction]:
    """The leader's plan was written to ``__consumer_offsets`` (or failed to be).

    Ignore it if the group was unloaded, left CompletingRebalance or moved to another
    generation meanwhile (whatever overtook the write answered the members). A failed
    write answers every waiting member with ``store_group_error(error)`` and rebalances
    (``self.maybe_prepare_rebalance(group, now, "write_failed")``). A stored one gives
    each member its part, answers them, and the group becomes Stable
    (``group.transition_to``, then ``trace_completed``).
    """
    raise ExerciseNotDone("assignment_stored", file=FILE)
