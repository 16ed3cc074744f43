"""``AdminClient``: topics, configs and groups, shaped like confluent-kafka's.

Each call returns at once with a ``concurrent.futures.Future`` per topic, resource or
group (``fs = admin.create_topics([...]); fs["orders"].result()``), as confluent-kafka's
AdminClient does; a worker thread does the I/O on trio. Where each request goes is
Kafka's rule: CreateTopics, DeleteTopics and CreatePartitions to the controller the
metadata names (a KRaft broker forwards them to the active controller when it is not
one), DescribeConfigs to any broker, ListGroups to every broker, DescribeGroups and
DeleteGroups to each group's coordinator (FindCoordinator).
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import attrs
import trio
from kio.schema.create_partitions.v1.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.create_partitions.v1.response import CreatePartitionsResponse
from kio.schema.create_topics.v4.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.create_topics.v4.response import CreateTopicsResponse
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest
from kio.schema.delete_groups.v1.response import DeleteGroupsResponse
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest
from kio.schema.delete_topics.v3.response import DeleteTopicsResponse
from kio.schema.describe_configs.v3.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.describe_configs.v3.response import DescribeConfigsResponse
from kio.schema.describe_groups.v4.request import DescribeGroupsRequest
from kio.schema.describe_groups.v4.response import DescribeGroupsResponse
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse
from kio.schema.list_groups.v2.request import ListGroupsRequest
from kio.schema.list_groups.v2.response import ListGroupsResponse
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta

from minikafka.coordination import decode_assignment
from minikafka.net import ClientError, NetworkClient, Node

from ._config import ConfigError, _bootstrap
from ._message import TRANSPORT, KafkaError, KafkaException, TopicPartition
from ._metadata import bootstrap_nodes

T = TypeVar("T")
RESOURCE_TOPIC = 2  # ConfigResource.Type.TOPIC
RESOURCE_BROKER = 4


@attrs.frozen
class NewTopic:
    topic: str
    num_partitions: int = -1  # -1: the broker's num.partitions (KIP-464)
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    config: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class NewPartitions:
    topic: str
    new_total_count: int


@attrs.frozen
class ConfigResource:
    restype: int
    name: str


@attrs.frozen
class ConfigEntry:
    name: str
    value: str | None
    is_read_only: bool
    is_default: bool
    is_sensitive: bool


@attrs.frozen
class PartitionMetadata:
    id: int
    leader: int
    replicas: tuple[int, ...]
    isrs: tuple[int, ...]


@attrs.frozen
class TopicMetadata:
    topic: str
    partitions: dict[int, PartitionMetadata]
    error: KafkaError | None


@attrs.frozen
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, Node]
    topics: dict[str, TopicMetadata]


@attrs.frozen
class MemberDescription:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]


@attrs.frozen
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    partition_assignor: str
    members: tuple[MemberDescription, ...]


def _error(code: int, message: str | None = None) -> KafkaError | None:
    return None if code == ErrorCode.none else KafkaError(code, message)


class AdminClient:
    """``AdminClient({"bootstrap.servers": "127.0.0.1:9092"})``."""

    def __init__(self, config: Mapping[str, object]) -> None:
        unknown = set(config) - {"bootstrap.servers", "client.id", "request.timeout.ms"}
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(f"{key}: not an admin client configuration key this client knows")
        try:
            servers = _bootstrap(config.get("bootstrap.servers"))
        except ValueError as exc:
            raise ConfigError(f"bootstrap.servers: invalid value: {exc}") from None
        self._bootstrap = bootstrap_nodes(servers)
        self._client_id = str(config.get("client.id", "minikafka-admin"))
        self._timeout = int(str(config.get("request.timeout.ms", 30_000))) / 1000
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minikafka-admin")

    # --- plumbing -----------------------------------------------------------------

    def _run(
        self, keys: Iterable[T], work: Callable[[NetworkClient], Awaitable[Mapping[T, Any]]]
    ) -> dict[T, Future[Any]]:
        """A future per key, completed by ``work`` (run on trio in the worker thread)."""
        futures: dict[T, Future[Any]] = {key: Future() for key in keys}

        def job() -> None:
            async def main() -> Mapping[T, Any]:
                async with NetworkClient.open(
                    client_id=self._client_id, request_timeout=self._timeout
                ) as client:
                    try:
                        return await work(client)
                    finally:
                        client.close()

            try:
                results = trio.run(main)
            except (ClientError, OSError) as exc:
                results = {key: KafkaError(TRANSPORT, str(exc)) for key in futures}
            for key, future in futures.items():
                outcome = results.get(key, KafkaError(ErrorCode.unknown_server_error, "no answer"))
                if isinstance(outcome, KafkaError):
                    future.set_exception(KafkaException(outcome))
                else:
                    future.set_result(outcome)

        self._pool.submit(job)
        return futures

    async def _metadata(
        self, client: NetworkClient, topics: Iterable[str] | None = None
    ) -> MetadataResponse:
        last: Exception | None = None
        for node in self._bootstrap:
            request = MetadataRequest(
                topics=None
                if topics is None
                else tuple(MetadataRequestTopic(name=TopicName(t)) for t in topics),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
            try:
                response = await client.send(node, request)
            except ClientError as exc:
                last = exc
                continue
            assert isinstance(response, MetadataResponse)
            return response
        raise ClientError(f"no bootstrap server answered: {last}")

    async def _controller(self, client: NetworkClient) -> Node:
        metadata = await self._metadata(client, ())
        brokers = {
            int(b.node_id): Node(int(b.node_id), b.host, int(b.port)) for b in metadata.brokers
        }
        return brokers.get(int(metadata.controller_id)) or next(iter(brokers.values()))

    def _timeout_ms(self) -> i32Timedelta:
        return i32Timedelta.parse(datetime.timedelta(seconds=self._timeout))

    # --- topics -------------------------------------------------------------------

    def create_topics(
        self, new_topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> dict[str, Future[None]]:
        topics = list(new_topics)

        async def work(client: NetworkClient) -> dict[str, object]:
            request = CreateTopicsRequest(
                topics=tuple(
                    CreatableTopic(
                        name=TopicName(t.topic),
                        num_partitions=i32(t.num_partitions),
                        replication_factor=i16(t.replication_factor),
                        assignments=(),
                        configs=tuple(
                            CreatableTopicConfig(name=k, value=v) for k, v in t.config.items()
                        ),
                    )
                    for t in topics
                ),
                timeout=self._timeout_ms(),
                validate_only=validate_only,
            )
            response = await client.send(await self._controller(client), request)
            assert isinstance(response, CreateTopicsResponse)
            return {
                str(r.name): _error(int(r.error_code), r.error_message) for r in response.topics
            }

        return self._run([t.topic for t in topics], work)

    def delete_topics(self, topics: Iterable[str]) -> dict[str, Future[None]]:
        names = list(topics)

        async def work(client: NetworkClient) -> dict[str, object]:
            request = DeleteTopicsRequest(
                topic_names=tuple(TopicName(t) for t in names), timeout=self._timeout_ms()
            )
            response = await client.send(await self._controller(client), request)
            assert isinstance(response, DeleteTopicsResponse)
            return {str(r.name): _error(int(r.error_code)) for r in response.responses}

        return self._run(names, work)

    def create_partitions(
        self, new_partitions: Iterable[NewPartitions], *, validate_only: bool = False
    ) -> dict[str, Future[None]]:
        wanted = list(new_partitions)

        async def work(client: NetworkClient) -> dict[str, object]:
            request = CreatePartitionsRequest(
                topics=tuple(
                    CreatePartitionsTopic(
                        name=TopicName(p.topic), count=i32(p.new_total_count), assignments=None
                    )
                    for p in wanted
                ),
                timeout=self._timeout_ms(),
                validate_only=validate_only,
            )
            response = await client.send(await self._controller(client), request)
            assert isinstance(response, CreatePartitionsResponse)
            return {
                str(r.name): _error(int(r.error_code), r.error_message) for r in response.results
            }

        return self._run([p.topic for p in wanted], work)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """The cluster's brokers and topics (or one topic), as confluent-kafka's."""

        async def work(client: NetworkClient) -> dict[str, ClusterMetadata]:
            response = await self._metadata(client, None if topic is None else [topic])
            topics = {
                str(t.name): TopicMetadata(
                    str(t.name),
                    {
                        int(p.partition_index): PartitionMetadata(
                            int(p.partition_index),
                            int(p.leader_id),
                            tuple(int(r) for r in p.replica_nodes),
                            tuple(int(r) for r in p.isr_nodes),
                        )
                        for p in t.partitions
                    },
                    _error(int(t.error_code)),
                )
                for t in response.topics
            }
            brokers = {
                int(b.node_id): Node(int(b.node_id), b.host, int(b.port)) for b in response.brokers
            }
            return {
                "": ClusterMetadata(
                    response.cluster_id, int(response.controller_id), brokers, topics
                )
            }

        wait = None if timeout is None or timeout < 0 else timeout
        result: ClusterMetadata = self._run([""], work)[""].result(wait)
        return result

    # --- configs ------------------------------------------------------------------

    def describe_configs(
        self, resources: Iterable[ConfigResource]
    ) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        wanted = list(resources)

        async def work(client: NetworkClient) -> dict[ConfigResource, object]:
            metadata = await self._metadata(client, ())
            node = Node(
                int(metadata.brokers[0].node_id),
                metadata.brokers[0].host,
                int(metadata.brokers[0].port),
            )
            request = DescribeConfigsRequest(
                resources=tuple(
                    DescribeConfigsResource(
                        resource_type=i8(r.restype), resource_name=r.name, configuration_keys=None
                    )
                    for r in wanted
                ),
                include_synonyms=False,
                include_documentation=False,
            )
            response = await client.send(node, request)
            assert isinstance(response, DescribeConfigsResponse)
            out: dict[ConfigResource, object] = {}
            for result in response.results:
                resource = ConfigResource(int(result.resource_type), result.resource_name)
                error = _error(int(result.error_code), result.error_message)
                out[resource] = error or {
                    c.name: ConfigEntry(
                        c.name, c.value, c.read_only, int(c.config_source) == 5, c.is_sensitive
                    )
                    for c in result.configs
                }
            return out

        return self._run(wanted, work)

    # --- groups -------------------------------------------------------------------

    def list_consumer_groups(self) -> Future[list[str]]:
        """Every group on every broker (ListGroups is answered per coordinator)."""

        async def work(client: NetworkClient) -> dict[str, object]:
            metadata = await self._metadata(client, ())
            groups: set[str] = set()
            for b in metadata.brokers:
                response = await client.send(
                    Node(int(b.node_id), b.host, int(b.port)), ListGroupsRequest()
                )
                assert isinstance(response, ListGroupsResponse)
                if response.error_code != ErrorCode.none:
                    return {"": KafkaError(int(response.error_code))}
                groups.update(str(g.group_id) for g in response.groups)
            return {"": sorted(groups)}

        return self._run([""], work)[""]

    async def _coordinator(self, client: NetworkClient, group: str) -> Node | KafkaError:
        response = await client.send(
            self._bootstrap[0], FindCoordinatorRequest(key=group, key_type=i8(0))
        )
        assert isinstance(response, FindCoordinatorResponse)
        if response.error_code != ErrorCode.none:
            return KafkaError(int(response.error_code), response.error_message)
        return Node(int(response.node_id), response.host, int(response.port))

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, Future[ConsumerGroupDescription]]:
        groups = list(group_ids)

        async def work(client: NetworkClient) -> dict[str, object]:
            out: dict[str, object] = {}
            for group in groups:
                node = await self._coordinator(client, group)
                if isinstance(node, KafkaError):
                    out[group] = node
                    continue
                response = await client.send(
                    node,
                    DescribeGroupsRequest(
                        groups=(GroupId(group),), include_authorized_operations=False
                    ),
                )
                assert isinstance(response, DescribeGroupsResponse)
                [described] = response.groups
                error = _error(int(described.error_code))
                out[group] = error or ConsumerGroupDescription(
                    group,
                    described.group_state,
                    described.protocol_type,
                    described.protocol_data,
                    tuple(
                        MemberDescription(
                            m.member_id,
                            m.client_id,
                            m.client_host,
                            m.group_instance_id,
                            _assignment(bytes(m.member_assignment)),
                        )
                        for m in described.members
                    ),
                )
            return out

        return self._run(groups, work)

    def delete_consumer_groups(self, group_ids: Iterable[str]) -> dict[str, Future[None]]:
        groups = list(group_ids)

        async def work(client: NetworkClient) -> dict[str, object]:
            out: dict[str, object] = {}
            for group in groups:
                node = await self._coordinator(client, group)
                if isinstance(node, KafkaError):
                    out[group] = node
                    continue
                response = await client.send(
                    node, DeleteGroupsRequest(groups_names=(GroupId(group),))
                )
                assert isinstance(response, DeleteGroupsResponse)
                out[group] = _error(int(response.results[0].error_code))
            return out

        return self._run(groups, work)


def _assignment(data: bytes) -> tuple[TopicPartition, ...]:
    if not data:
        return ()
    try:
        return tuple(
            TopicPartition(tp.topic, tp.partition) for tp in decode_assignment(data).partitions
        )
    except ValueError:  # not the consumer protocol's
        return ()
