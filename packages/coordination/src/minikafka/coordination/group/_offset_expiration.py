"""When a classic group's committed offsets expire: ``offsets.retention.minutes``
(KIP-211).

Kafka's ``OffsetExpirationConditionImpl`` with the base timestamp a classic group gives
it (``ClassicGroup.offsetExpirationCondition``): an offset expires ``retention`` after
its base, or at the expire timestamp it was committed with (OffsetCommit v2-v4's
retention time). Since KIP-211 (Kafka 2.1) a group's offsets do not expire while it has
members; once it is Empty, the base is the moment it became Empty, or the offset's
commit for a group without a protocol type (a standalone consumer that only commits).

``OffsetsManager.expire_offsets`` (``_offsets.py``) asks this at each
``offsets.retention.check.interval.ms`` and writes the tombstones; a consumer group's
rule (KIP-848, topic by topic) is ``_consumer_retention.py``'s. A pure function of the
group, its offsets and ``now`` (seconds, wall clock).
"""

from __future__ import annotations

from minikafka.common import TopicPartition

from ._group import GroupMetadata
from ._group_state import GroupState
from ._offsets_records import OffsetValue

__all__ = ["expired_offsets"]


def expired_offsets(
    group: GroupMetadata,
    offsets: dict[TopicPartition, OffsetValue],
    now: float,
    retention_ms: int,
) -> list[TopicPartition]:
    """The group's ``offsets`` past ``offsets.retention.minutes`` (KIP-211): a
    group's offsets live as long as it has members; once it is Empty they expire
    ``retention`` after it became Empty (or after their commit, for a group that
    never had members). An offset committed with an explicit expire timestamp
    (OffsetCommit v2-v4's retention time) expires then."""
    if group.state is not GroupState.EMPTY:
        return []
    return [
        tp
        for tp, value in offsets.items()
        if _expires_at(group, value, retention_ms) <= now
    ]


def _expires_at(group: GroupMetadata, value: OffsetValue, retention_ms: int) -> float:
    if value.expire_timestamp is not None:
        return value.expire_timestamp / 1000
    since = value.commit_timestamp / 1000
    if group.protocol_type and group.state_timestamp is not None:
        since = group.state_timestamp
    return since + retention_ms / 1000
