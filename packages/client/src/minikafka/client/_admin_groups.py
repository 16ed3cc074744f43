"""The admin clients' group calls beyond describe and delete: ListGroups with Kafka's
state and type filters (KIP-518, KIP-848), and a group's committed offsets read
(OffsetFetch), changed (OffsetCommit as an admin) and deleted (OffsetDelete, KIP-496).

Where each goes, as Kafka's Admin sends them: ListGroups to every broker (each knows only
the groups it coordinates); the offset requests to the group's coordinator, found with
FindCoordinator. An admin's OffsetCommit carries generation -1 and no member id: the
coordinator takes it only from a group with no members (Empty, or one it does not know,
which it creates), and answers a group with members UNKNOWN_MEMBER_ID, so offsets
cannot be moved under consumers that would overwrite them. Errors come back per group or
partition, as the other admin calls give them; :class:`KafkaException` only for what
fails as a whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kio.schema.errors import ErrorCode
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_groups.v5.response import ListGroupsResponse
from kio.schema.offset_commit.v7 import request as commit
from kio.schema.offset_commit.v7.response import OffsetCommitResponse
from kio.schema.offset_delete.v0 import request as delete
from kio.schema.offset_delete.v0.response import OffsetDeleteResponse
from kio.schema.offset_fetch.v5 import request as fetch
from kio.schema.offset_fetch.v5.response import OffsetFetchResponse
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from minikafka.common import TopicPartition as TopicPartitionKey
from minikafka.coordination import CONSUMER_PROTOCOL_TYPE

from ._admin_port import AdminPort, AnyPartition, HasTopicPartition, by_topic, key
from ._admin_types import ConsumerGroupListing, OffsetAndMetadata, error_or_none
from ._message import KafkaError, KafkaException

NO_OFFSET = -1  # OffsetFetch: nothing committed for the partition
NO_EPOCH = -1
ADMIN_GENERATION = -1  # OffsetCommit from outside the group (Kafka's admin commit)
Partitions = dict[TopicPartitionKey, KafkaError | None]


class GroupOffsetsAdmin:
    """Mixed into :class:`AsyncAdminClient`: its group listing and offset calls."""

    async def list_consumer_group_listings(
        self: AdminPort,
        *,
        states: Iterable[str] = (),
        types: Iterable[str] = (),
    ) -> list[ConsumerGroupListing]:
        """Every consumer group of every broker, by group id: ListGroups v5 to each,
        filtered by the brokers to ``states`` (Stable, Empty...; KIP-518) and ``types``
        (classic, consumer; KIP-848) when given. As Kafka's ``listConsumerGroups``, a
        group of another protocol (Connect's) is left out, and one that only ever
        committed offsets (protocol type "") is a simple consumer group."""
        await self.metadata([])
        body = ListGroupsRequest(states_filter=tuple(states), types_filter=tuple(types))
        found: dict[str, ConsumerGroupListing] = {}
        for node in list(self.brokers.values()):
            response = await self.request(node, body, ListGroupsResponse)
            if response.error_code != ErrorCode.none:
                message = f"ListGroups of broker {node.node_id}"
                raise KafkaException(KafkaError(int(response.error_code), message))
            for g in response.groups:
                if g.protocol_type in (CONSUMER_PROTOCOL_TYPE, ""):
                    found[str(g.group_id)] = ConsumerGroupListing(
                        str(g.group_id),
                        g.protocol_type == "",
                        g.group_state,
                        g.group_type,
                    )
        return [found[g] for g in sorted(found)]

    async def list_consumer_groups(
        self: AdminPort, *, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[str]:
        """The consumer groups of every broker, sorted (see
        :meth:`list_consumer_group_listings` for the filters)."""
        listings = await GroupOffsetsAdmin.list_consumer_group_listings(
            self, states=states, types=types
        )
        return [g.group_id for g in listings]

    async def list_consumer_group_offsets(
        self: AdminPort,
        group_ids: Iterable[str],
        partitions: Iterable[HasTopicPartition] | None = None,
    ) -> dict[str, dict[TopicPartitionKey, OffsetAndMetadata] | KafkaError]:
        """Each group's committed offsets (OffsetFetch v5 to its coordinator): of
        ``partitions``, or of every partition it committed (a null topic list). A
        partition with nothing committed is left out, so a group the coordinator does
        not know has none; a group's error, or one of its partitions', is the group's
        answer. Kafka's ``Admin.listConsumerGroupOffsets``."""
        wanted = None if partitions is None else [key(tp) for tp in partitions]
        body = fetch.OffsetFetchRequest(
            group_id=GroupId(""),
            topics=None
            if wanted is None
            else tuple(
                fetch.OffsetFetchRequestTopic(
                    name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)
                )
                for t, ps in by_topic(wanted).items()
            ),
        )
        out: dict[str, dict[TopicPartitionKey, OffsetAndMetadata] | KafkaError] = {}
        for group in dict.fromkeys(group_ids):
            try:
                node = await self.find_coordinator(group)
            except KafkaException as e:
                out[group] = e.args[0]
                continue
            asked = fetch.OffsetFetchRequest(
                group_id=GroupId(group), topics=body.topics
            )
            response = await self.request(node, asked, OffsetFetchResponse)
            out[group] = _committed(group, response)
        return out

    async def alter_consumer_group_offsets(
        self: AdminPort,
        group_id: str,
        offsets: Mapping[AnyPartition, OffsetAndMetadata | int],
    ) -> Partitions:
        """Commit ``offsets`` for ``group_id`` from outside the group (OffsetCommit v7,
        generation -1, no member id): each partition's error or None. The coordinator
        refuses a group with members (UNKNOWN_MEMBER_ID for every partition) and a
        partition of an unknown topic (UNKNOWN_TOPIC_OR_PARTITION). Kafka's
        ``Admin.alterConsumerGroupOffsets``, which ``--reset-offsets --execute`` uses."""
        wanted = {
            key(tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()
        }
        try:
            node = await self.find_coordinator(group_id)
        except KafkaException as e:
            return dict.fromkeys(wanted, e.args[0])
        body = commit.OffsetCommitRequest(
            group_id=GroupId(group_id),
            generation_id_or_member_epoch=i32(ADMIN_GENERATION),
            member_id="",
            group_instance_id=None,
            topics=tuple(
                commit.OffsetCommitRequestTopic(
                    name=TopicName(t),
                    partitions=tuple(
                        commit.OffsetCommitRequestPartition(
                            partition_index=i32(p),
                            committed_offset=i64(
                                wanted[TopicPartitionKey(t, p)].offset
                            ),
                            committed_leader_epoch=i32(
                                _epoch(wanted[TopicPartitionKey(t, p)])
                            ),
                            committed_metadata=wanted[TopicPartitionKey(t, p)].metadata,
                        )
                        for p in ps
                    ),
                )
                for t, ps in by_topic(list(wanted)).items()
            ),
        )
        response = await self.request(node, body, OffsetCommitResponse)
        answered: Partitions = {
            TopicPartitionKey(str(t.name), int(p.partition_index)): error_or_none(
                int(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }
        return {tp: answered.get(tp, _NO_ANSWER) for tp in wanted}

    async def delete_consumer_group_offsets(
        self: AdminPort, group_id: str, partitions: Iterable[HasTopicPartition]
    ) -> Partitions:
        """Delete ``group_id``'s committed offsets of ``partitions`` (OffsetDelete v0,
        KIP-496): each partition's error or None. The group's own error (GROUP_ID_NOT_FOUND,
        NON_EMPTY_GROUP for a live group of another protocol) is every partition's; a
        partition of a topic the group's members subscribe to is refused alone
        (GROUP_SUBSCRIBED_TO_TOPIC). Kafka's ``Admin.deleteConsumerGroupOffsets``."""
        wanted = list(dict.fromkeys(key(tp) for tp in partitions))
        try:
            node = await self.find_coordinator(group_id)
        except KafkaException as e:
            return dict.fromkeys(wanted, e.args[0])
        body = delete.OffsetDeleteRequest(
            group_id=GroupId(group_id),
            topics=tuple(
                delete.OffsetDeleteRequestTopic(
                    name=TopicName(t),
                    partitions=tuple(
                        delete.OffsetDeleteRequestPartition(partition_index=i32(p))
                        for p in ps
                    ),
                )
                for t, ps in by_topic(wanted).items()
            ),
        )
        response = await self.request(node, body, OffsetDeleteResponse)
        group_error = error_or_none(int(response.error_code))
        if group_error is not None:
            return dict.fromkeys(wanted, group_error)
        answered: Partitions = {
            TopicPartitionKey(str(t.name), int(p.partition_index)): error_or_none(
                int(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }
        return {tp: answered.get(tp, _NO_ANSWER) for tp in wanted}


_NO_ANSWER = KafkaError(ErrorCode.unknown_server_error, "no answer")


def _epoch(offset: OffsetAndMetadata) -> int:
    return NO_EPOCH if offset.leader_epoch is None else offset.leader_epoch


def _committed(
    group: str, response: OffsetFetchResponse
) -> dict[TopicPartitionKey, OffsetAndMetadata] | KafkaError:
    """A group's OffsetFetch answer: its offsets, or its (or a partition's) error."""
    error = error_or_none(int(response.error_code), f"OffsetFetch of group '{group}'")
    if error is not None:
        return error
    offsets = {}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartitionKey(str(topic.name), int(p.partition_index))
            if p.error_code != ErrorCode.none:
                return KafkaError(
                    int(p.error_code), f"OffsetFetch of group '{group}', {tp}"
                )
            if int(p.committed_offset) != NO_OFFSET:
                epoch = int(p.committed_leader_epoch)
                offsets[tp] = OffsetAndMetadata(
                    int(p.committed_offset),
                    p.metadata or "",
                    None if epoch == NO_EPOCH else epoch,
                )
    return offsets
