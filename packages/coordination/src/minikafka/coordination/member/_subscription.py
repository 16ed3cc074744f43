"""SubscriptionState: what a consumer reads and where it is (Kafka's class of that name).

A consumer either *subscribes* to topics, and the group decides which partitions it
gets, or *assigns* itself partitions. It subscribes by name, or by regular expression
(a ``^`` entry, ``_pattern.py``): under the classic protocol the member matches the
expression against the cluster's topics itself (:meth:`SubscriptionState.match_pattern`)
and the names it matched join :attr:`SubscriptionState.subscription`; under the
consumer protocol the coordinator resolves it. Either way each assigned partition has a
**position**: the offset of the next record to hand to the application. A new
partition has none: its position comes from the group's committed offset, or, without
one, from ``auto.offset.reset`` (``earliest``: the log start; ``latest``: the high
watermark; ``none``: an error). :meth:`seek` sets it by hand. A partition may be
paused (no fetches, position kept).

A core: plain data, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition

from ._pattern import SubscriptionPattern, split_subscription

EARLIEST = -2  # ListOffsets' timestamp for the log start offset
LATEST = -1  # ... and for the high watermark


@attrs.define
class TopicPartitionState:
    """One assigned partition's state (Kafka's ``SubscriptionState.TopicPartitionState``)."""

    position: int | None = None
    leader_epoch: int | None = None  # of the last record handed out (KIP-320)
    reset_to: int | None = None  # EARLIEST or LATEST while a reset is pending
    paused: bool = False
    high_watermark: int = -1
    # KIP-320: the partition's leader changed since its position was fetched; the
    # position is checked against the new leader's log before anything more is fetched.
    awaiting_validation: bool = False


@attrs.define
class SubscriptionState:
    auto_offset_reset: str = "latest"
    # What the member subscribes with by name: the names given, and (classic protocol)
    # those its pattern matched (Kafka's ``SubscriptionState.subscription``).
    subscription: frozenset[str] = frozenset()
    manual: bool = False  # assign() was used, not subscribe()
    assignment: dict[TopicPartition, TopicPartitionState] = attrs.field(factory=dict)
    named: frozenset[str] = frozenset()  # the names given to subscribe()
    pattern: SubscriptionPattern | None = None  # its ^ entries, as one expression
    # Classic protocol: the pattern was matched against the cluster's topics since
    # subscribe() (Kafka's consumer joins with fresh metadata only).
    pattern_matched: bool = False

    @property
    def subscribed(self) -> bool:
        """Subscribed by name or by pattern (the pattern may match nothing yet)."""
        return bool(self.named) or self.pattern is not None

    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to these names and ``^`` expressions (``_pattern.py``;
        ``InvalidPattern`` for one the broker would refuse, nothing changed then)."""
        if self.manual and self.assignment:
            raise ValueError("subscribe() after assign(): unassign() first")
        named, pattern = split_subscription(topics)
        self.named, self.pattern, self.manual = named, pattern, False
        self.subscription, self.pattern_matched = named, False

    def match_pattern(self, topics: Iterable[str]) -> bool:
        """Classic protocol: the subscription is now the names given and the
        ``topics`` the pattern matches (Kafka's ``subscribeFromPattern``); True if
        that changed it (then the member joins again)."""
        assert self.pattern is not None
        matched = self.named | self.pattern.matching(topics)
        changed = matched != self.subscription
        self.subscription, self.pattern_matched = matched, True
        return changed

    def assign_manually(self, partitions: Iterable[TopicPartition]) -> None:
        if self.subscribed:
            raise ValueError("assign() after subscribe(): unsubscribe() first")
        self.manual = True
        self.set_assignment(partitions)

    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """The assigned partitions are now these: positions of those kept are kept."""
        wanted = list(partitions)
        self.assignment = {
            tp: self.assignment.get(tp) or TopicPartitionState() for tp in wanted
        }

    def add(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.assignment.setdefault(tp, TopicPartitionState())

    def remove(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.assignment.pop(tp, None)

    def unsubscribe(self) -> None:
        self.subscription, self.manual = frozenset(), False
        self.named, self.pattern, self.pattern_matched = frozenset(), None, False
        self.assignment = {}

    # --- positions ----------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self._state(tp)
        state.leader_epoch, state.awaiting_validation = None, False  # a new position
        if offset in (EARLIEST, LATEST):
            state.position, state.reset_to = None, offset
        else:
            state.position, state.reset_to = offset, None

    def position(self, tp: TopicPartition) -> int | None:
        return self._state(tp).position

    def needs_position(self) -> list[TopicPartition]:
        """Assigned partitions with no position and no reset decided yet."""
        return [
            tp
            for tp, s in self.assignment.items()
            if s.position is None and s.reset_to is None
        ]

    def request_reset(self, tp: TopicPartition, strategy: str | None = None) -> bool:
        """Reset by ``auto.offset.reset`` (or ``strategy``); False for ``none``."""
        name = strategy or self.auto_offset_reset
        if name == "none":
            return False
        self._state(tp).reset_to = EARLIEST if name == "earliest" else LATEST
        self._state(tp).position = None
        return True

    def seek_to_committed(
        self, offsets: Mapping[TopicPartition, tuple[int, int]]
    ) -> bool:
        """Start each assigned partition with no position yet at its group's committed
        offset, ``(error, offset)`` per partition, an offset of -1 meaning none was
        committed (then ``auto.offset.reset`` decides). False if a partition's fetch
        failed: the member backs off and asks again."""
        fetched = True
        for tp, (error, offset) in offsets.items():
            if tp not in self.assignment:
                continue  # revoked while the fetch was out
            if error != ErrorCode.none:
                fetched = False
            elif offset >= 0:
                if self.position(tp) is None:
                    self.seek(tp, offset)
            else:
                self.request_reset(tp)
        return fetched

    def with_leader_epochs(
        self, offsets: Mapping[TopicPartition, int]
    ) -> tuple[tuple[TopicPartition, int, int], ...]:
        """``offsets`` to commit, in topic and partition order, each with the leader
        epoch its partition's position was read in (-1 when unknown, KIP-320): the
        broker stores it beside the offset for the next reader's truncation check."""
        return tuple(
            (tp, offset, self._leader_epoch(tp))
            for tp, offset in sorted(
                offsets.items(), key=lambda x: (x[0].topic, x[0].partition)
            )
        )

    def _leader_epoch(self, tp: TopicPartition) -> int:
        state = self.assignment.get(tp)
        return (state.leader_epoch if state is not None else None) or -1

    def awaiting_reset(self) -> dict[TopicPartition, int]:
        return {
            tp: s.reset_to
            for tp, s in self.assignment.items()
            if s.reset_to is not None
        }

    def reset_done(self, tp: TopicPartition, offset: int) -> None:
        state = self.assignment.get(tp)
        if state is not None and state.reset_to is not None:
            state.position, state.reset_to = offset, None

    def fetchable(self) -> list[TopicPartition]:
        return [
            tp
            for tp, s in self.assignment.items()
            if s.position is not None and not s.paused and not s.awaiting_validation
        ]

    def pause(self, partitions: Iterable[TopicPartition], paused: bool) -> None:
        for tp in partitions:
            self._state(tp).paused = paused

    def positions(self) -> dict[TopicPartition, int]:
        return {
            tp: s.position
            for tp, s in self.assignment.items()
            if s.position is not None
        }

    def _state(self, tp: TopicPartition) -> TopicPartitionState:
        state = self.assignment.get(tp)
        if state is None:
            raise ValueError(f"{tp} is not assigned to this consumer")
        return state
