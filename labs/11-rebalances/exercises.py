"""Lab 11 exercises: what did each rebalance cost, and who caused it?

Write each function with Spark (``pyspark.sql.functions as F``, ``Window``) over the
DataFrames ``minikafka.labs.read_events`` gives for a run's traces. Every DataFrame has
the envelope columns ``ts`` (seconds since the epoch, the coordinator's clock), ``node``,
``component``, ``event`` and ``time`` (``ts`` as a timestamp), plus its event's fields:

- ``starts``: ``RebalanceStarted`` (``rebalance_start``): ``group_id``,
  ``generation_id`` (the generation being left), ``reason``, ``member_id``,
  ``client_id`` (the member whose action started it), ``members``;
- ``ends``: ``RebalanceCompleted`` (``rebalance_end``): ``group_id``, ``generation_id``
  (the new one), ``protocol_name`` (the assignor), ``leader_id``, ``members``,
  ``duration_ms``, ``assignment_sizes``;
- ``joins``: ``MemberJoined`` (``member_join``): ``group_id``, ``member_id``,
  ``client_id``, ``generation_id``, ``state`` (the group's, when the JoinGroup arrived);
- ``syncs``: ``MemberAssigned`` (``member_sync``): ``group_id``, ``member_id``,
  ``client_id``, ``generation_id``, ``partitions`` (how many it was given);
- ``changes``: ``GroupStateChanged`` (``state_change``): ``group_id``,
  ``previous_state``, ``state``, ``generation_id``, ``members``;
- ``requests``: ``RequestCompleted`` (``net.request``): ``client_id``, ``api_name``,
  ``total_ms``, ... one per request the broker answered.

``make lab 11`` checks your answers against what the scenario's consumers recorded on
their own side. Until you write a function, it raises ``ExerciseNotDone``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import ExerciseNotDone

COOPERATIVE_PROTOCOLS = ("cooperative-sticky",)
"""Assignor names that rebalance cooperatively (KIP-429): a member keeps its partitions
while it rejoins. Every other protocol (``range``, ``roundrobin``, ``sticky``) is eager."""


def rebalances(starts: DataFrame, ends: DataFrame) -> DataFrame:
    """Every completed rebalance of every group: when it started, ended and why.

    Question: how many rebalances did each group go through, how long did each take, and
    what started it?

    Mechanism: a rebalance starts when the group enters PreparingRebalance
    (``rebalance_start``, with the ``reason``) and ends when the leader's assignment has
    been stored and the group is Stable (``rebalance_end``, with the new generation). The
    join phase ends when every known member has sent JoinGroup; the sync phase when the
    leader's SyncGroup carries the assignment. Match each end with the latest start of
    the same group at or before it (an "as-of" join: join on ``group_id`` with
    ``start ts <= end ts``, then keep the latest start per end with a window). A start
    that never ends (the group became Empty) is not a rebalance here.

    Output columns, one row per ``rebalance_end``, ordered by ``group_id`` and
    ``generation_id``: ``group_id``; ``generation_id`` (the generation it created);
    ``start_ts`` and ``end_ts`` (the ``ts`` of the start and of the end, seconds);
    ``duration_ms`` (``(end_ts - start_ts) * 1000``); ``reason`` (the start's);
    ``members`` (the end's: members of the new generation).
    """
    raise ExerciseNotDone("rebalances", "an as-of join of starts and ends per group_id")


def stop_the_world(joins: DataFrame, syncs: DataFrame, ends: DataFrame) -> DataFrame:
    """How long each member stood without partitions: before its first ones, and after.

    Question: what does a rebalance cost the members? Under the eager protocol every
    member gives up everything at every rebalance; under the cooperative one (KIP-429)
    only the partitions that move are revoked, in a second rebalance.

    Mechanism: a member holds what its last SyncGroup gave it (``syncs.partitions``). An
    *eager* member revokes everything before it rejoins, so from each of its
    ``member_join`` events it holds nothing until its next ``member_sync``; a
    *cooperative* member keeps its partitions through a rejoin. A group is cooperative
    when its ``ends.protocol_name`` is in ``COOPERATIVE_PROTOCOLS``. Walk each member's
    joins and syncs in time order (``ts``, a join before a sync at the same ``ts``); the
    time from one of its events to its next one counts when it held no partition in
    between, as:

    - waiting, while it has never held a partition yet (from its first JoinGroup to the
      first SyncGroup that gives it some);
    - stopped, once it has held some (a working member that stands still).

    Nothing after a member's last event counts.

    Output columns, one row per group and member, ordered by ``group_id`` and
    ``client_id``: ``group_id``; ``client_id``; ``rebalances`` (how many ``member_sync``
    it got: the rebalances it took part in); ``waiting_ms``; ``stopped_ms`` (both
    milliseconds, 0.0 when none).
    """
    raise ExerciseNotDone("stop_the_world", "lead() over each member's joins and syncs")


def generations(changes: DataFrame) -> DataFrame:
    """How many generations each group went through, and its last generation id.

    Question: what is a group's generation, and how often does it change?

    Mechanism: every join phase that ends starts a new generation (the coordinator adds
    one to ``generation_id`` as the group moves to CompletingRebalance); a member whose
    requests carry an older generation is fenced with ILLEGAL_GENERATION. Each state
    change carries the generation after the move, so every generation a group went
    through appears there; generation 0 is the group before its first rebalance.

    Output columns, one row per group, ordered by ``group_id``: ``group_id``;
    ``generations`` (the number of distinct generation ids above 0); ``final_generation``
    (the highest).
    """
    raise ExerciseNotDone("generations", "count the distinct generation ids per group")


def rebalance_causes(starts: DataFrame, requests: DataFrame) -> DataFrame:
    """Which member's action started each rebalance, and how long it had been silent.

    Question: who caused each rebalance, and how does a crash differ from a clean leave?

    Mechanism: a member that joins sends JoinGroup (``member_joined``), a cooperative
    member that revoked partitions rejoins at once (``member_rejoined``), a member that
    closes sends LeaveGroup (``member_left``). A member that crashes sends nothing: the
    coordinator removes it when no Heartbeat has come for ``session.timeout.ms``
    (``session_timeout``). Measure that silence: the time from the causing client's last
    Heartbeat (a ``requests`` row with ``api_name == "Heartbeat"`` and the same
    ``client_id``) at or before the start, to the start.

    Output columns, one row per ``rebalance_start``, ordered by ``group_id`` and
    ``generation_id``: ``group_id``; ``generation_id`` (the generation left);
    ``reason``; ``client_id``; ``silent_ms`` (``(start ts - last heartbeat ts) * 1000``,
    null when that client had sent no Heartbeat yet, as a new member has not).
    """
    raise ExerciseNotDone(
        "rebalance_causes", "a left join with the client's heartbeats"
    )
