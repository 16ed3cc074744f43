"""The admin clients' topic changes: CreateTopics, DeleteTopics and CreatePartitions.

Each goes to the controller the metadata names (a KRaft broker forwards it to the
active controller, KIP-590), through :func:`~._admin_port.to_controller`: asked again
while the controller cannot be reached, and asked again whole, with fresh metadata,
when any topic's answer is NOT_CONTROLLER, as Kafka's ``KafkaAdminClient`` reads the
answer's ``errorCounts`` before it looks at a single topic
(``handleNotControllerError``): the controller moved, and nothing was done. Each
topic's answer is its error or None."""

from __future__ import annotations

from collections.abc import Iterable

from kio.schema.create_partitions.v1.request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.create_partitions.v1.response import CreatePartitionsResponse
from kio.schema.create_topics.v4.request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.create_topics.v4.response import CreateTopicsResponse
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest
from kio.schema.delete_topics.v3.response import DeleteTopicsResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32

from ._admin_port import AdminPort, to_controller
from ._admin_types import NewPartitions, NewTopic, error_or_none
from ._message import KafkaError


class TopicsAdmin:
    """Mixed into :class:`AsyncAdminClient`: its topic changes."""

    async def create_topics(
        self: AdminPort, new_topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> dict[str, KafkaError | None]:
        """CreateTopics v4 (-1 partitions or factor: the broker's defaults, KIP-464; a
        topic's ``replica_assignment`` places its partitions by hand)."""
        request = CreateTopicsRequest(
            topics=tuple(
                CreatableTopic(
                    name=TopicName(t.topic),
                    num_partitions=i32(t.num_partitions),
                    replication_factor=i16(t.replication_factor),
                    assignments=tuple(
                        CreatableReplicaAssignment(
                            partition_index=i32(index),
                            broker_ids=tuple(BrokerId(b) for b in replicas),
                        )
                        for index, replicas in enumerate(t.replica_assignment)
                    ),
                    configs=tuple(
                        CreatableTopicConfig(name=k, value=v)
                        for k, v in t.config.items()
                    ),
                )
                for t in new_topics
            ),
            timeout=self._timeout(),
            validate_only=validate_only,
        )
        response = await to_controller(
            self,
            lambda node: self.request(node, request, CreateTopicsResponse),
            lambda r: any(t.error_code == ErrorCode.not_controller for t in r.topics),
        )
        return {
            str(r.name): error_or_none(int(r.error_code), r.error_message)
            for r in response.topics
        }

    async def delete_topics(
        self: AdminPort, topics: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        """DeleteTopics v3, by name."""
        request = DeleteTopicsRequest(
            topic_names=tuple(TopicName(t) for t in topics), timeout=self._timeout()
        )
        response = await to_controller(
            self,
            lambda node: self.request(node, request, DeleteTopicsResponse),
            lambda r: any(
                t.error_code == ErrorCode.not_controller for t in r.responses
            ),
        )
        return {
            str(r.name): error_or_none(int(r.error_code)) for r in response.responses
        }

    async def create_partitions(
        self: AdminPort,
        new_partitions: Iterable[NewPartitions],
        *,
        validate_only: bool = False,
    ) -> dict[str, KafkaError | None]:
        """CreatePartitions v1: each topic grown to its new total count."""
        request = CreatePartitionsRequest(
            topics=tuple(
                CreatePartitionsTopic(
                    name=TopicName(p.topic),
                    count=i32(p.new_total_count),
                    assignments=None,
                )
                for p in new_partitions
            ),
            timeout=self._timeout(),
            validate_only=validate_only,
        )
        response = await to_controller(
            self,
            lambda node: self.request(node, request, CreatePartitionsResponse),
            lambda r: any(t.error_code == ErrorCode.not_controller for t in r.results),
        )
        return {
            str(r.name): error_or_none(int(r.error_code), r.error_message)
            for r in response.results
        }
