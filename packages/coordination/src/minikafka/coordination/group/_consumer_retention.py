"""``offsets.retention.minutes`` for consumer groups (KIP-848), Kafka 4's rule.

A classic group's offsets all wait for the group to be Empty, then expire together
(``_offset_expiration.py``). A consumer group's expire topic by topic
(Kafka's ``OffsetMetadataManager.cleanupExpiredOffsets`` with
``ConsumerGroup.offsetExpirationCondition``): an offset of a topic no member subscribes
to, by name or through a resolved regular expression, expires ``retention`` after it
was committed (or at its explicit expire timestamp); an offset of a subscribed topic
never expires. An Empty group subscribes to nothing, so all its offsets age out, and
once none is left (and no transaction holds one pending) the group goes too, with
tombstones for its records (``ConsumerGroup.createGroupTombstoneRecords``).
"""

from __future__ import annotations

from collections.abc import Mapping

from minikafka.common import TopicPartition

from ._consumer_group import ConsumerGroup, ConsumerGroupState
from ._consumer_records import changed_records, group_records
from ._group_metadata_manager import GroupMetadataManager
from ._offsets_records import OffsetValue
from ._regex_subscriptions import expand
from ._results import Append, Unanswered, append

__all__ = ["expire_consumer_offsets", "expired_consumer_offsets", "subscribed_topics"]


def subscribed_topics(group: ConsumerGroup) -> frozenset[str]:
    """Kafka's ``ConsumerGroup.isSubscribedToTopic``: every topic some member reads,
    by name or by its expression's resolution."""
    expanded = expand(group.subscriptions, group.regex.resolved)
    return frozenset(t for s in expanded.values() for t in s.subscribed_topic_names)


def expired_consumer_offsets(
    group: ConsumerGroup,
    offsets: Mapping[TopicPartition, OffsetValue],
    now: float,
    retention_ms: int,
) -> list[TopicPartition]:
    """The offsets of ``group`` that have expired at ``now``: those of topics nobody
    subscribes to, committed ``retention_ms`` ago or more (their commit timestamp is
    the base, as Kafka's condition for consumer groups)."""
    subscribed = subscribed_topics(group)
    now_ms = now * 1000
    expired = []
    for tp, value in sorted(offsets.items()):
        if tp.topic in subscribed:
            continue
        if value.expire_timestamp is not None:
            due = value.expire_timestamp
        else:
            due = value.commit_timestamp + retention_ms
        if now_ms >= due:
            expired.append(tp)
    return expired


def expire_consumer_offsets(
    manager: GroupMetadataManager, now: float, retention_ms: int
) -> list[Append]:
    """The writes one retention check makes for the consumer groups: tombstones for
    expired offsets (an offset a transaction still holds pending stays), and an Empty
    group left without offsets deleted with its records' tombstones."""
    out = []
    for group in list(manager.consumer_groups.values()):
        group_id = group.group_id
        offsets = manager.current_offsets(group_id)
        pending = manager.pending_partitions(group_id)
        expired = [
            tp
            for tp in expired_consumer_offsets(group, offsets, now, retention_ms)
            if tp not in pending
        ]
        records = manager.offset_records(group_id, [(tp, None) for tp in expired])
        if (
            group.state is ConsumerGroupState.EMPTY
            and len(expired) == len(offsets)
            and not pending
        ):
            records += changed_records(group_records(group, group.topic_ids), {})
            del manager.consumer_groups[group_id]
        if records:
            out.append(append(records, Unanswered(group_id)))
    return out
