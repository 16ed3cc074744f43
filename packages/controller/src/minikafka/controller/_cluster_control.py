"""ClusterControlManager: broker registration, heartbeats and fencing (KIP-631).

A KRaft broker registers with the controller (BrokerRegistration) and is given a broker
epoch: the offset of its RegisterBrokerRecord in the metadata log. It starts *fenced*:
it may not lead partitions or be in any ISR. It then heartbeats every
``broker.heartbeat.interval.ms``; once a heartbeat reports that the broker has replayed
the metadata log up to its own registration, the controller unfences it. A broker that
stops heartbeating for ``broker.session.timeout.ms`` is fenced again, and the replication
manager moves its leaderships elsewhere. This replaces ZooKeeper's ephemeral
``/brokers/ids/<id>`` znodes of seed 001.

Registrations live in a TimelineHashMap because they are replicated state; the time of
each broker's last heartbeat does not: only the active controller tracks it (Kafka's
BrokerHeartbeatManager), and a new leader starts every broker's session afresh.
"""

from __future__ import annotations

from typing import Never

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult, Deadlines
from minikafka.common.timeline import LATEST_EPOCH, SnapshotRegistry, TimelineHashMap

from ._image import BrokerRegistration
from ._placement import BrokerMetadata
from ._records import (
    FenceBrokerRecord,
    MetadataRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from ._requests import (
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)


@attrs.define(eq=False)
class ClusterControlManager:
    registry: SnapshotRegistry
    session_timeout: float  # seconds
    brokers: TimelineHashMap[int, BrokerRegistration] = attrs.field(init=False)
    _last_contact: dict[int, float] = attrs.field(init=False, factory=dict)
    # When each broker's session runs out, earliest first: next_deadline() reads the top
    # instead of scanning every broker. A cache of _last_contact, rebuilt after a revert.
    _sessions: Deadlines[int] = attrs.field(init=False, factory=Deadlines)
    # in this term, for real
    _heard_from: set[int] = attrs.field(init=False, factory=set)

    def __attrs_post_init__(self) -> None:
        self.brokers = TimelineHashMap(self.registry)

    # --- replay: the only way state changes ------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        match record:
            case RegisterBrokerRecord():
                self.brokers.put(
                    record.broker_id, BrokerRegistration.from_record(record)
                )
            case UnregisterBrokerRecord():
                self.brokers.remove(record.broker_id)
            case FenceBrokerRecord() | UnfenceBrokerRecord():
                current = self.brokers[record.broker_id]
                fenced = isinstance(record, FenceBrokerRecord)
                self.brokers.put(record.broker_id, attrs.evolve(current, fenced=fenced))
            case _:
                pass

    # --- reads -------------------------------------------------------------------------

    def is_unfenced(self, broker_id: int, epoch: int = LATEST_EPOCH) -> bool:
        registration = self.brokers.get(broker_id, epoch)
        return registration is not None and not registration.fenced

    def usable_brokers(self) -> list[BrokerMetadata]:
        """Brokers new replicas may be placed on: registered and unfenced."""
        return [
            BrokerMetadata(b.broker_id, b.rack)
            for b in self.brokers.values()
            if not b.fenced
        ]

    def check_epoch(self, broker_id: int, broker_epoch: int) -> ErrorCode:
        registration = self.brokers.get(broker_id)
        if registration is None:
            return ErrorCode.broker_id_not_registered
        if registration.epoch != broker_epoch:
            return ErrorCode.stale_broker_epoch
        return ErrorCode.none

    # --- requests ------------------------------------------------------------------------

    def register(
        self, request: BrokerRegistrationRequest, next_offset: int, now: float
    ) -> CoreResult[MetadataRecord, BrokerRegistrationResponse, Never]:
        existing = self.brokers.get(request.broker_id)
        if (
            existing is not None
            and existing.incarnation_id != request.incarnation_id
            and not existing.fenced  # a fenced broker has no session (Kafka: hasValidSession)
            and request.broker_id in self._heard_from
            and self._session_alive(request.broker_id, now)
        ):
            # Another process with this node.id is alive: two brokers must not share an id.
            duplicate = BrokerRegistrationResponse(
                ErrorCode.duplicate_broker_registration
            )
            return CoreResult(replies=(duplicate,))
        record = RegisterBrokerRecord(
            broker_id=request.broker_id,
            incarnation_id=request.incarnation_id,
            broker_epoch=next_offset,
            endpoints=request.endpoints,
            rack=request.rack,
            fenced=True,
        )
        self.touch(request.broker_id, now)
        return CoreResult(
            (record,), (BrokerRegistrationResponse(ErrorCode.none, next_offset),)
        )

    def unregister(self, broker_id: int) -> UnregisterBrokerRecord | None:
        """The record that removes ``broker_id``'s registration, fenced or not (Kafka
        refuses only a broker it does not know); None if it is not registered.

        Its session needs no change: a departed broker is not unfenced, so its deadline
        is dropped when it comes up (:meth:`next_deadline`), and a revert that brings
        the registration back finds its last contact where it was."""
        registration = self.brokers.get(broker_id)
        if registration is None:
            return None
        return UnregisterBrokerRecord(broker_id, registration.epoch)

    def fence(self, broker_id: int) -> FenceBrokerRecord:
        return FenceBrokerRecord(broker_id, self.brokers[broker_id].epoch)

    def unfence(self, broker_id: int) -> UnfenceBrokerRecord:
        return UnfenceBrokerRecord(broker_id, self.brokers[broker_id].epoch)

    # --- sessions (leader-only, not replicated) --------------------------------------

    def touch(self, broker_id: int, now: float) -> None:
        self._last_contact[broker_id] = now
        self._sessions.schedule(broker_id, now + self.session_timeout)
        self._heard_from.add(broker_id)

    def reset_sessions(self, now: float) -> None:
        """A new active controller gives every broker a full session to heartbeat in.

        Only a broker heard from in this term counts as alive when another process
        registers with its id: after a restart of a combined node, the broker's new
        incarnation must be able to take over its own old registration.
        """
        self._last_contact = dict.fromkeys(self.brokers, now)
        self._heard_from = set()
        self.resync_sessions()

    def resync_sessions(self) -> None:
        """Rebuild the deadlines from the last contacts, after the timeline was reverted.

        A revert can unfence a broker again (its FenceBrokerRecord was never written)
        without any heartbeat; its session deadline, dropped when it was fenced, must
        come back, or a dead broker would never be fenced.
        """
        self._sessions = Deadlines()
        for broker_id, last in self._last_contact.items():
            self._sessions.schedule(broker_id, last + self.session_timeout)

    def _session_alive(self, broker_id: int, now: float) -> bool:
        last = self._last_contact.get(broker_id)
        return last is not None and now < last + self.session_timeout

    def expired(self, now: float) -> list[int]:
        """Unfenced brokers whose session ran out, lowest id first."""
        due = self._sessions.pop_due(now)
        return sorted(
            b for b in due if self.is_unfenced(b) and not self._session_alive(b, now)
        )

    def next_deadline(self) -> float | None:
        """When the first unfenced broker's session runs out (None: no one to fence).

        Deadlines of fenced or departed brokers are dropped as they reach the top: a
        broker is unfenced again only by a heartbeat, which schedules it anew, or by a
        revert, after which :meth:`resync_sessions` rebuilds them all.
        """
        while (top := self._sessions.peek()) is not None:
            when, broker_id = top
            if self.is_unfenced(broker_id):
                return when
            self._sessions.cancel(broker_id)
        return None
