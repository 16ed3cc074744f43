"""Trace events of the KRaft controller (ARCHITECTURE.md, "Traces and labs"; seed 004, KIP-500/631).

The controller's decisions are records in the metadata log; these events say which
decisions were taken and why, so a reader can line a broker's leadership changes up with
their cause: a batch of records applied (by the active controller as it writes them, or
by a controller replaying committed ones), a partition leader elected, a broker
registered, fenced or unfenced. The metadata quorum's own elections are its Raft node's
events (``minikafka.raft``'s ``state_change``).

The controller's ``now`` is the shell's trio clock, not the time of day, so these events
keep the tracer's default timestamp (the wall clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from minikafka.trace import TraceEvent, register_event

__all__ = [
    "BrokerRegistrationChanged",
    "PartitionLeaderElected",
    "RecordsApplied",
]


@register_event
@attrs.frozen
class RecordsApplied(TraceEvent):
    """A batch of metadata records was replayed into the controller's state.

    By the active controller when it writes them (``epoch`` is its epoch; the records
    are not committed yet, seed 004's pipelining), or by a controller that is not active
    replaying committed records or a snapshot (``epoch`` -1: it does not know the
    epochs they were written in). ``record_types`` counts the records by type name
    (``PartitionChangeRecord``...).
    """

    COMPONENT: ClassVar[str] = "controller"
    EVENT: ClassVar[str] = "records_applied"

    last_offset: int
    epoch: int
    count: int
    record_types: Mapping[str, int]


@register_event
@attrs.frozen
class PartitionLeaderElected(TraceEvent):
    """The active controller gave a partition a new leader (written as a record).

    ``reason`` is ``new_partition`` (CreateTopics, CreatePartitions: the first unfenced
    replica), ``broker_fenced`` (the leader was fenced: session expired, it asked to be
    fenced, or it registered again), ``controlled_shutdown`` (the leader asked to shut
    down and hands its leaderships over), ``broker_unfenced`` (a leaderless
    partition's replica came back), ``reassignment`` (a reassignment moved leadership off
    a removed replica), ``preferred`` (ElectLeaders), ``auto_rebalance``
    (``auto.leader.rebalance.enable``) or ``unclean`` (the new leader was not in the ISR:
    ``unclean.leader.election.enable``). ZooKeeper mode's controller says ``offline``
    for a leader whose broker is gone (its ``broker_fenced``), and ``broker_unregistered``
    is the leader's registration removed (UnregisterBroker). ``leader`` is -1 when no
    replica may lead (the partition goes offline) and ``previous_leader`` -1 for a new
    partition. ``isr`` is the ISR after the change.
    """

    COMPONENT: ClassVar[str] = "controller"
    EVENT: ClassVar[str] = "election"

    topic: str
    partition: int
    leader: int
    previous_leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    reason: str


@register_event
@attrs.frozen
class BrokerRegistrationChanged(TraceEvent):
    """A broker's registration changed (KIP-631).

    ``reason`` is ``registered`` (a BrokerRegistration; the broker starts fenced and
    ``broker_epoch`` is the new registration's), ``caught_up`` (a heartbeat showed it
    replayed the log past its registration: unfenced), ``session_timeout`` (no heartbeat
    for ``broker.session.timeout.ms``), ``fence_requested`` or ``controlled_shutdown``
    (a heartbeat asked to be fenced, or to shut down), ``unregistered`` (UnregisterBroker
    removed the registration; ``fenced`` is true: the broker may lead nothing).
    """

    COMPONENT: ClassVar[str] = "controller"
    EVENT: ClassVar[str] = "broker_registration"

    broker_id: int
    broker_epoch: int
    fenced: bool
    reason: str
