"""Lab 10 exercises: a broker dies; how long were its partitions without a leader, and
how fast did every broker learn of the new ones, in KRaft mode and in ZooKeeper mode?

Write each function with Spark (``pyspark.sql.functions as F``, ``Window``) over the
DataFrames ``minikafka.labs.read_events`` gives for the two runs' traces, to which the
lab adds a ``mode`` column (``kraft`` or ``zookeeper``). Every DataFrame has the
envelope columns ``ts`` (seconds since the epoch), ``node`` (the node that wrote it),
``component``, ``event`` and ``time``, plus its event's fields:

- ``elections``: ``PartitionLeaderElected`` (``controller.election``), written by the
  active controller (KRaft's controller node, or the broker that is ZooKeeper mode's
  controller): ``topic``, ``partition``, ``leader`` (the new one, -1 for none),
  ``previous_leader``, ``leader_epoch`` (the new one), ``isr``, ``reason``
  (``new_partition`` when a topic is created; ``broker_fenced`` in KRaft mode and
  ``offline`` in ZooKeeper mode when a leader died);
- ``leaders``: ``BecameLeader`` (``replication.become_leader``), written by a broker
  when it starts leading a partition: ``topic``, ``partition``, ``leader_epoch``,
  ``replicas``, ``isr``, ``log_end_offset``;
- ``followers``: ``BecameFollower`` (``replication.become_follower``), written by a
  broker when it follows a new leader: ``topic``, ``partition``, ``leader``,
  ``leader_epoch``;
- ``fetches``: ``FollowerFetched`` (``replication.follower_fetch``), written by a leader
  for every fetch a follower sends it: ``topic``, ``partition``, ``follower``...

A broker killed with SIGKILL writes nothing more: its trace ends within the tracer's
flush interval (0.2 s) of its death.

``make lab 10`` checks your answers against what the scenario's clients recorded on
their own side. Until you write a function, it raises ``ExerciseNotDone``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from minikafka.labs import ExerciseNotDone


def leaderless(
    elections: DataFrame, leaders: DataFrame, fetches: DataFrame
) -> DataFrame:
    """Per failover: how long the partition had no leader, and where the time went.

    Question: when a leader dies, how long can nobody write to its partitions, and how
    much of that is the controller noticing?

    Mechanism: a dead broker says nothing; the controller learns of its death only when
    its liveness lapses (KRaft: no heartbeat for ``broker.session.timeout.ms``;
    ZooKeeper: its session expires after ``zookeeper.session.timeout.ms``). It then
    elects a new leader for each partition the dead broker led (a failover: an election
    whose ``reason`` is not ``new_partition``) at a new leader epoch, and the new leader
    starts leading when it learns of it (``become_leader`` at that epoch). The old
    leader is the node of the latest ``become_leader`` of the partition at an earlier
    epoch; its last sign of life is the last follower fetch it answered for the
    partition (the last ``fetches`` row it wrote). Measure from that moment.

    Output columns, one row per failover election, ordered by ``mode``, ``topic``,
    ``partition``: ``mode``; ``topic``; ``partition``; ``old_leader``; ``new_leader``;
    ``leader_epoch`` (the new one); ``last_seen_ts``; ``elected_ts``; ``led_ts`` (the
    new leader's ``become_leader``); ``detect_ms`` (``(elected_ts - last_seen_ts) *
    1000``); ``outage_ms`` (``(led_ts - last_seen_ts) * 1000``).
    """
    raise ExerciseNotDone(
        "leaderless", "the epoch before, then the old leader's last fetch"
    )


def propagation(
    elections: DataFrame, leaders: DataFrame, followers: DataFrame
) -> DataFrame:
    """Per failover and broker: how long until that broker acted on the election.

    Question: how long does a controller's decision take to reach each broker, when the
    brokers pull it (KRaft) and when the controller pushes it (ZooKeeper mode)?

    Mechanism: in KRaft mode the controller writes the election into the metadata log
    and every broker fetches the log and applies what it reads; in ZooKeeper mode the
    controller writes the new leader to ZooKeeper and then sends LeaderAndIsr (and
    UpdateMetadata) to every broker that needs it. Either way, a surviving replica acts
    on the new epoch by becoming its leader (``become_leader``) or a follower of the new
    leader (``become_follower``). For each failover election (``reason`` not
    ``new_partition``, a leader elected), find each broker's first such event at the
    election's ``leader_epoch``, at or after the election.

    Output columns, one row per (failover, broker), ordered by ``mode``, ``topic``,
    ``partition``, ``broker``: ``mode``; ``topic``; ``partition``; ``leader_epoch``;
    ``broker`` (the ``node`` that acted); ``role`` (``leader`` or ``follower``);
    ``elected_ts``; ``applied_ts``; ``delay_ms`` (``(applied_ts - elected_ts) * 1000``).
    """
    raise ExerciseNotDone("propagation", "a union of both roles, the first per broker")


def compare_modes(outages: DataFrame, delays: DataFrame) -> DataFrame:
    """KRaft against ZooKeeper mode on the same failure.

    Question: which of the stages (noticing, electing, telling the brokers) sets how
    long a partition is unwritable, in each mode?

    ``outages`` is what ``leaderless`` returns, ``delays`` what ``propagation`` returns.

    Output columns, one row per mode, ordered by ``mode``: ``mode``; ``partitions``
    (failovers); ``max_detect_ms``; ``max_outage_ms``; ``max_propagation_ms`` (the
    largest ``delay_ms``).
    """
    raise ExerciseNotDone("compare_modes", "group both by mode and join")
