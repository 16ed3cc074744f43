"""``AsyncAdminClient``: Kafka's Admin for trio programs, and where each admin request goes.

Kafka's admin requests are not all sent to the same broker, and the rule is the Admin
client's to know: CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders and the
reassignment requests go to the controller the metadata names (a KRaft broker forwards
them to the active controller when it is not one, KIP-590), and again while it cannot
be reached or answers NOT_CONTROLLER where Kafka's Admin looks for that
(:func:`~._admin_port.to_controller`); DescribeConfigs, IncrementalAlterConfigs and
AlterConfigs to any broker except a broker's own resource, which goes to that broker,
ListGroups to every broker (each knows only the groups it coordinates), DescribeGroups,
DeleteGroups and a group's offset requests (OffsetFetch, OffsetCommit, OffsetDelete) to
each group's coordinator (FindCoordinator), ListOffsets to each partition's leader,
DescribeLogDirs to each broker asked about. The bootstrap servers are nodes -1, -2, ...
until a Metadata answer names the brokers, as in Kafka's ``ClientUtils``; after that
the known brokers are asked first.

A request any broker can answer (FindCoordinator, DescribeCluster) goes to the least
loaded broker (:class:`~._least_loaded.LeastLoaded`, Kafka's Admin's
``LeastLoadedNodeProvider``), and after a connection failure or request timeout to one
chosen again, until ``default.api.timeout.ms`` has passed since the call began (Kafka's
``Call`` retried on a disconnect until its deadline): a broker that stopped answering
costs one request timeout, not every call to it. Metadata asks the least loaded known
broker first, then the other known brokers and the bootstrap servers, once each.

This class holds the routing, the topic listing, configs and group descriptions; the
topic changes are mixed in from :mod:`._admin_topics`, the group listings and offsets
from :mod:`._admin_groups`, the partition and cluster calls (offsets, log dirs,
elections, reassignments, the quorum) from :mod:`._admin_cluster`, the transaction
listings and descriptions (KIP-664) from :mod:`._admin_txns`, all written against the
port in :mod:`._admin_port`.

The operations answer per topic, partition, resource or group with a value or the
:class:`KafkaError` the broker gave for it, and raise :class:`KafkaException` only for
what fails as a whole (``_TRANSPORT`` when no server can be reached, named by the
request and the server it went to). :meth:`request` sends any request body through the
same connections. The synchronous, confluent-kafka-shaped :class:`AdminClient` runs
this class on a thread.
"""

from __future__ import annotations

import datetime
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from typing import TypeVar

import trio
from kio.schema.alter_configs.v1.response import AlterConfigsResponse
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest
from kio.schema.delete_groups.v1.response import DeleteGroupsResponse
from kio.schema.describe_configs.v3.response import DescribeConfigsResponse
from kio.schema.describe_groups.v4.request import DescribeGroupsRequest
from kio.schema.describe_groups.v4.response import DescribeGroupsResponse
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse
from kio.schema.incremental_alter_configs.v1.response import (
    IncrementalAlterConfigsResponse,
)
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v8.response import MetadataResponse
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i32Timedelta
from kio.static.protocol import RequestPayload, ResponsePayload

from minikafka.common import ConfigError
from minikafka.net import (
    CLIENT_SECURITY_KEYS,
    AuthenticationFailed,
    ClientError,
    ClientSecurity,
    DisconnectedError,
    NetworkClient,
    Node,
    RequestTimedOut,
    api_name,
)

from ._admin_cluster import ClusterAdmin
from ._admin_configs import (
    Outcomes,
    alter_request,
    describe_request,
    described,
    incremental_request,
    outcomes,
    route,
)
from ._admin_groups import GroupOffsetsAdmin
from ._admin_port import where
from ._admin_topics import TopicsAdmin
from ._admin_txns import TransactionsAdmin
from ._admin_types import (
    AlterConfigOp,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConsumerGroupDescription,
    MemberDescription,
    PartitionMetadata,
    TopicMetadata,
    error_or_none,
    member_partitions,
)
from ._config import _bootstrap
from ._least_loaded import LeastLoaded
from ._message import TRANSPORT, KafkaError, KafkaException
from ._metadata import bootstrap_nodes

R = TypeVar("R", bound=ResponsePayload)
V = TypeVar("V")

ADMIN_KEYS = frozenset(
    {"bootstrap.servers", "client.id", "request.timeout.ms", "default.api.timeout.ms"}
)
DEFAULT_REQUEST_TIMEOUT_MS = 30_000  # request.timeout.ms
DEFAULT_API_TIMEOUT_MS = 60_000  # default.api.timeout.ms: a whole call, its retries too
RETRY_BACKOFF = 0.1  # retry.backoff.ms: before asking another broker
GROUP_KEY_TYPE = 0  # FindCoordinator: a group, not a transactional id


def admin_config(config: Mapping[str, object]) -> tuple[tuple[Node, ...], str, int]:
    """The bootstrap nodes, ``client.id`` and ``request.timeout.ms`` of an admin client's
    configuration; ConfigError naming the key for anything else or a bad value (the
    security keys are :func:`admin_security`'s)."""
    unknown = set(config) - ADMIN_KEYS - CLIENT_SECURITY_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(
            key, "not an admin client configuration key this client knows"
        )
    try:
        servers = _bootstrap(config.get("bootstrap.servers"))
    except ValueError as exc:
        raise ConfigError("bootstrap.servers", f"invalid value: {exc}") from None
    api_timeout_ms(config)  # refused here, naming the key
    return (
        bootstrap_nodes(servers),
        str(config.get("client.id", "minikafka-admin")),
        _positive_ms(config, "request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS),
    )


def api_timeout_ms(config: Mapping[str, object]) -> int:
    """``default.api.timeout.ms``: how long a call may take, its retries included; never
    less than ``request.timeout.ms`` (Kafka's Admin raises it to that, with a warning)."""
    return max(
        _positive_ms(config, "default.api.timeout.ms", DEFAULT_API_TIMEOUT_MS),
        _positive_ms(config, "request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS),
    )


def _positive_ms(config: Mapping[str, object], key: str, default: int) -> int:
    raw = str(config.get(key, default))
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(key, f"invalid value {raw!r}: expected ms > 0")
    return int(raw)


def admin_security(config: Mapping[str, object]) -> ClientSecurity | None:
    """``security.protocol`` and its ``ssl.*``/``sasl.*`` keys (None: PLAINTEXT)."""
    security = {k: v for k, v in config.items() if k in CLIENT_SECURITY_KEYS}
    return ClientSecurity.from_config(security) if security else None


def metadata_request(
    topics: Sequence[str] | None, *, allow_auto_topic_creation: bool = False
) -> MetadataRequest:
    """Metadata v8 for ``topics`` (None: every topic), no authorized operations (KIP-430)."""
    return MetadataRequest(
        topics=None
        if topics is None
        else tuple(MetadataRequestTopic(name=TopicName(t)) for t in topics),
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


# A connection that failed or a request not answered in time: another broker may answer.
_RETRIABLE = (DisconnectedError, RequestTimedOut, OSError)


class AsyncAdminClient(TopicsAdmin, GroupOffsetsAdmin, ClusterAdmin, TransactionsAdmin):
    """``async with AsyncAdminClient.open({"bootstrap.servers": ...}) as admin``."""

    def __init__(
        self,
        client: NetworkClient,
        bootstrap: tuple[Node, ...],
        request_timeout_ms: int,
        api_timeout_ms: int = DEFAULT_API_TIMEOUT_MS,
    ) -> None:
        self.client = client
        self.bootstrap = bootstrap
        self.request_timeout_ms = request_timeout_ms
        self.api_timeout_ms = api_timeout_ms
        self.brokers: dict[int, Node] = {}  # from the last Metadata answer
        self.controller_id = -1
        self._least_loaded = LeastLoaded()

    @classmethod
    @asynccontextmanager
    async def open(
        cls, config: Mapping[str, object]
    ) -> AsyncIterator[AsyncAdminClient]:
        bootstrap, client_id, timeout_ms = admin_config(config)
        async with NetworkClient.open(
            client_id=client_id,
            request_timeout=timeout_ms / 1000,
            security=admin_security(config),
        ) as client:
            try:
                yield cls(client, bootstrap, timeout_ms, api_timeout_ms(config))
            finally:
                client.close()

    # --- routing ------------------------------------------------------------------

    async def request(
        self, node: Node, body: RequestPayload, response_type: type[R]
    ) -> R:
        """Send ``body`` to ``node`` and return its response, checked to be a
        ``response_type``; KafkaException ``_TRANSPORT`` naming the request and the node
        if the connection fails."""
        try:
            response = await self.client.send(node, body)
        except AuthenticationFailed as e:
            # Kafka's AuthenticationException: fatal, not a transport error to retry.
            raise KafkaException(KafkaError(int(e.error_code), str(e))) from e
        except (ClientError, OSError) as e:
            text = f"{api_name(int(body.__api_key__))} to {where(node)}: {e}"
            raise KafkaException(KafkaError(TRANSPORT, text)) from e
        if not isinstance(response, response_type):
            raise KafkaException(
                KafkaError(
                    TRANSPORT, f"{api_name(int(body.__api_key__))}: got {response!r}"
                )
            )
        return response

    def least_loaded(self) -> Node:
        """The known broker (a bootstrap server before any is known) to send a request
        any broker can answer: the least loaded (Kafka's ``leastLoadedNode``)."""
        nodes = list(self.brokers.values()) or list(self.bootstrap)
        return self._least_loaded.choose(nodes, self.client.load, trio.current_time())

    async def at_any_broker(self, call: Callable[[Node], Awaitable[V]]) -> V:
        """``call(node)`` on the least loaded broker; after a connection failure or a
        request timeout there, on one chosen again, until ``default.api.timeout.ms``
        has passed since the first try: then REQUEST_TIMED_OUT, naming the last
        failure. What the broker answers, errors included, is ``call``'s to judge."""
        deadline = trio.current_time() + self.api_timeout_ms / 1000
        failure = "no broker tried"
        while trio.current_time() < deadline:
            node = self.least_loaded()
            with trio.move_on_at(deadline):
                try:
                    return await call(node)
                except KafkaException as e:
                    if not isinstance(e.__cause__, _RETRIABLE):
                        raise
                    failure = e.args[0].str()
                await trio.sleep(RETRY_BACKOFF)  # as retry.backoff.ms
        raise KafkaException(
            KafkaError(
                ErrorCode.request_timed_out,
                f"no answer within default.api.timeout.ms "
                f"({self.api_timeout_ms} ms): {failure}",
            )
        )

    async def metadata(
        self,
        topics: Sequence[str] | None = None,
        *,
        allow_auto_topic_creation: bool = False,
    ) -> MetadataResponse:
        """Metadata v8 for ``topics`` (None: every topic; ``[]``: only the brokers) from
        the first server that answers: the known brokers, then the bootstrap list."""
        body = metadata_request(
            topics, allow_auto_topic_creation=allow_auto_topic_creation
        )
        failure: KafkaException | None = None
        first = self.least_loaded()
        known = (first, *(n for n in self.brokers.values() if n != first))
        for node in dict.fromkeys((*known, *self.bootstrap)):
            try:
                response = await self.request(node, body, MetadataResponse)
            except KafkaException as e:
                failure = e
                continue
            self.brokers = {
                int(b.node_id): Node(int(b.node_id), b.host, int(b.port))
                for b in response.brokers
            }
            self.controller_id = int(response.controller_id)
            return response
        assert failure is not None
        raise failure

    def node(self, node_id: int) -> Node:
        """The broker ``node_id`` of the last metadata; LEADER_NOT_AVAILABLE if absent."""
        node = self.brokers.get(node_id)
        if node is None:
            raise KafkaException(
                KafkaError(
                    ErrorCode.leader_not_available, f"broker {node_id} is not alive"
                )
            )
        return node

    async def controller(self) -> Node:
        """Where Kafka's Admin sends CreateTopics and its kin: the controller the
        metadata names, else the least loaded broker (a KRaft broker forwards them to
        the active controller, KIP-590)."""
        await self.metadata([])
        return self.brokers.get(self.controller_id) or self.least_loaded()

    async def find_coordinator(
        self, group: str, key_type: int = GROUP_KEY_TYPE
    ) -> Node:
        """The group's coordinator, the broker leading the group's ``__consumer_offsets``
        partition (FindCoordinator to any broker; ``key_type`` 1: a transactional id's,
        leading its ``__transaction_state`` partition); KafkaException with its error
        (COORDINATOR_NOT_AVAILABLE while that partition has no leader). Any broker
        answers: the least loaded, another after a failure (:meth:`at_any_broker`)."""
        if not self.brokers:
            # learn the brokers from the bootstrap list
            await self.metadata([])
        body = FindCoordinatorRequest(key=group, key_type=i8(key_type))
        response = await self.at_any_broker(
            lambda node: self.request(node, body, FindCoordinatorResponse)
        )
        if response.error_code != ErrorCode.none:
            kind = "group" if key_type == GROUP_KEY_TYPE else "transactional id"
            message = response.error_message or f"FindCoordinator of {kind} '{group}'"
            raise KafkaException(KafkaError(int(response.error_code), message))
        return Node(int(response.node_id), response.host, int(response.port))

    def _timeout(self) -> i32Timedelta:
        return i32Timedelta.parse(
            datetime.timedelta(milliseconds=self.request_timeout_ms)
        )

    # --- topics (creating, deleting and growing them: _admin_topics) -------------

    async def list_topics(self, topic: str | None = None) -> ClusterMetadata:
        """The cluster's brokers and topics (or one topic), as confluent-kafka's."""
        response = await self.metadata(None if topic is None else [topic])
        topics = {
            str(t.name): TopicMetadata(
                str(t.name),
                {
                    int(p.partition_index): PartitionMetadata(
                        int(p.partition_index),
                        int(p.leader_id),
                        tuple(int(r) for r in p.replica_nodes),
                        tuple(int(r) for r in p.isr_nodes),
                        error_or_none(int(p.error_code)),
                    )
                    for p in t.partitions
                },
                error_or_none(int(t.error_code)),
                t.is_internal,
            )
            for t in response.topics
        }
        return ClusterMetadata(
            response.cluster_id, int(response.controller_id), dict(self.brokers), topics
        )

    # --- configs ------------------------------------------------------------------

    async def describe_configs(
        self, resources: Iterable[ConfigResource], *, include_synonyms: bool = False
    ) -> dict[ConfigResource, dict[str, ConfigEntry] | KafkaError]:
        """Each resource's configuration entries (DescribeConfigs v3): a broker's to that
        broker, the others to any; with ``include_synonyms``, every place that sets each
        key, the one in force first (KIP-226)."""

        async def send(
            node: Node, asked: list[ConfigResource]
        ) -> dict[ConfigResource, dict[str, ConfigEntry] | KafkaError]:
            body = describe_request(asked, include_synonyms=include_synonyms)
            response = await self.request(node, body, DescribeConfigsResponse)
            return {
                ConfigResource(int(r.resource_type), r.resource_name): described(r)
                for r in response.results
            }

        return await self._per_config_node(resources, send)

    async def incremental_alter_configs(
        self,
        configs: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
    ) -> dict[ConfigResource, KafkaError | None]:
        """Change some of each resource's configs (IncrementalAlterConfigs v1, KIP-339):
        SET, DELETE (back to the default), APPEND to or SUBTRACT from a LIST config.
        Each resource is changed whole or not at all; ``validate_only`` checks and
        changes nothing. Kafka's ``Admin.incrementalAlterConfigs``."""
        changes = {resource: tuple(ops) for resource, ops in configs.items()}

        async def send(node: Node, asked: list[ConfigResource]) -> Outcomes:
            body = incremental_request(changes, asked, validate_only=validate_only)
            response = await self.request(node, body, IncrementalAlterConfigsResponse)
            return outcomes(response, asked)

        return await self._per_config_node(changes, send)

    async def alter_configs(
        self,
        configs: Mapping[ConfigResource, Mapping[str, str]],
        *,
        validate_only: bool = False,
    ) -> dict[ConfigResource, KafkaError | None]:
        """Replace each resource's overrides with ``configs[resource]`` (the legacy
        AlterConfigs v1, KIP-133): a key left out goes back to its default. Kafka's
        deprecated ``Admin.alterConfigs``; prefer :meth:`incremental_alter_configs`."""
        wanted = {resource: dict(entries) for resource, entries in configs.items()}

        async def send(node: Node, asked: list[ConfigResource]) -> Outcomes:
            body = alter_request(wanted, asked, validate_only=validate_only)
            response = await self.request(node, body, AlterConfigsResponse)
            return outcomes(response, asked)

        return await self._per_config_node(wanted, send)

    async def _per_config_node(
        self,
        resources: Iterable[ConfigResource],
        send: Callable[
            [Node, list[ConfigResource]], Awaitable[Mapping[ConfigResource, V]]
        ],
    ) -> dict[ConfigResource, V | KafkaError]:
        """``send(node, its resources)`` for each node the resources go to (:func:`route`);
        a broker the metadata does not list answers for its resource with that error."""
        wanted = list(resources)
        anywhere = await self.controller()  # and the metadata's brokers
        by_node, out = route(wanted, anywhere, self.brokers)
        answers: dict[ConfigResource, V | KafkaError] = dict(out)
        for node, asked in by_node.items():
            answers.update(await send(node, asked))
        return {
            resource: answers[resource] for resource in wanted if resource in answers
        }

    # --- groups -------------------------------------------------------------------

    async def _per_group(
        self, group_ids: Iterable[str], ask: Callable[[str, Node], Awaitable[V]]
    ) -> dict[str, V | KafkaError]:
        """``ask(group, coordinator)`` for each group; a group whose coordinator cannot
        be found answers with that error."""
        out: dict[str, V | KafkaError] = {}
        for group in group_ids:
            try:
                node = await self.find_coordinator(group)
            except KafkaException as e:
                out[group] = e.args[0]
                continue
            out[group] = await ask(group, node)
        return out

    async def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ConsumerGroupDescription | KafkaError]:
        async def describe(
            group: str, node: Node
        ) -> ConsumerGroupDescription | KafkaError:
            request = DescribeGroupsRequest(
                groups=(GroupId(group),), include_authorized_operations=False
            )
            [described] = (
                await self.request(node, request, DescribeGroupsResponse)
            ).groups
            error = error_or_none(int(described.error_code))
            return error or ConsumerGroupDescription(
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
                        member_partitions(bytes(m.member_assignment)),
                    )
                    for m in described.members
                ),
                node,
            )

        return await self._per_group(group_ids, describe)

    async def delete_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        async def delete(group: str, node: Node) -> KafkaError | None:
            request = DeleteGroupsRequest(groups_names=(GroupId(group),))
            response = await self.request(node, request, DeleteGroupsResponse)
            return error_or_none(int(response.results[0].error_code))

        return await self._per_group(group_ids, delete)
