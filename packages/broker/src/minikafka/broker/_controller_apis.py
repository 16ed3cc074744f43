"""ControllerApis: what a controller serves on its own listener (Kafka's ``ControllerApis``).

A KRaft controller listens on ``controller.listener.names``, apart from the brokers'
listeners, and only other nodes talk to it. This handler serves the APIs a broker on
another node needs from its controller:

- ``Fetch`` of ``__cluster_metadata-0`` (KIP-595; topic id ``AAAAAAAAAAAAAAAAAAAAAQ``):
  the metadata log reaching the brokers (observers) and the other voters, answered by
  the controller's Raft node, which holds a fetch with nothing new (a long poll);
- ``FetchSnapshot`` (KIP-630): the latest snapshot, in pieces of ``max_bytes``;
- ``Vote``, ``BeginQuorumEpoch`` and ``EndQuorumEpoch`` (KIP-595): the elections, for
  the Raft node (a lone voter's quorum has nobody to send them);
- ``BrokerRegistration`` and ``BrokerHeartbeat`` (KIP-631), ``AlterPartition`` (KIP-497)
  and ``AllocateProducerIds`` (KIP-730): the wire forms of the requests the
  QuorumController already decides, handed to its event queue;
- ``CreateTopics``, ``DeleteTopics``, ``CreatePartitions``, ``ElectLeaders``,
  ``AlterPartitionReassignments``, ``ListPartitionReassignments``,
  ``IncrementalAlterConfigs`` and ``AlterConfigs``: a client's admin
  requests, forwarded by a broker (KIP-590), answered by the same handlers a combined
  node runs, except that a broker may create the internal ``__consumer_offsets``; the
  topics a CreateTopics v5+ answer describes (KIP-525) and those a DeleteTopics v6 names
  by id (KIP-516) are read from the controller's own committed image;
- ``DescribeCluster`` asking for controllers (KIP-919): the quorum's voters and its
  leader, how an Admin client given ``bootstrap.controllers`` finds the controller.

The versions served are those whose every field this controller honours; the Processor
answers any other with UNSUPPORTED_VERSION before it reaches this module.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping

import attrs
from kio.schema.allocate_producer_ids.v0 import response as producer_ids_v0
from kio.schema.allocate_producer_ids.v0.request import (
    AllocateProducerIdsRequest as ProducerIdsWire,
)
from kio.schema.alter_partition.v2 import response as alter_v2
from kio.schema.alter_partition.v2.request import (
    AlterPartitionRequest as AlterPartitionWire,
)
from kio.schema.broker_heartbeat.v0.request import (
    BrokerHeartbeatRequest as HeartbeatWire,
)
from kio.schema.broker_registration.v0.request import (
    BrokerRegistrationRequest as RegistrationWire,
)
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, ProducerId
from kio.static.primitive import i32, i32Timedelta, i64

from minikafka.controller import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerError,
    QuorumControllerShell,
)
from minikafka.net import (
    ApiKey,
    Request,
    answer_without_sasl,
    build,
    handle_api_versions,
    response_schema,
)
from minikafka.raft.wire import QuorumNode

from ._acl_apis import ACL_API_VERSIONS, handle_create_acls, handle_delete_acls
from ._admin import (
    TopicConfigs,
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
)
from ._alter_configs import handle_alter_configs, handle_incremental_alter_configs
from ._config import KafkaConfig
from ._controller_channel import ControllerChannel
from ._controller_raft_apis import (
    DESCRIBE_QUORUM_VERSIONS,
    RAFT_APIS,
    describe_quorum,
    handle_raft_request,
)
from ._describe import (
    CONTROLLER_DESCRIBE_CLUSTER_VERSIONS,
    handle_controller_describe_cluster,
)
from ._describe_configs import topic_config_entries
from ._features import image_features
from ._metadata_cache import MetadataCache
from ._reassignments import (
    handle_alter_partition_reassignments,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)
from ._roles import QuorumVoter
from ._scram_apis import SCRAM_API_VERSIONS, handle_alter_user_scram_credentials
from ._unregister_broker import UNREGISTER_BROKER_VERSIONS, handle_unregister_broker

METADATA_TOPIC_ID = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID``: the topic id of ``__cluster_metadata``."""

_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))

SUPPORTED: Mapping[int, tuple[int, int]] = {
    ApiKey.FETCH: (13, 13),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.FETCH_SNAPSHOT: (0, 0),
    # v0 only: the later versions add JBOD directory ids, ZooKeeper migration and
    # KIP-966's previous broker epoch, none of which this controller honours.
    ApiKey.BROKER_REGISTRATION: (0, 0),
    ApiKey.BROKER_HEARTBEAT: (0, 0),
    # v2: topic ids; v3 adds KIP-903's broker epochs in the ISR, not kept here.
    ApiKey.ALTER_PARTITION: (2, 2),
    ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
    # What a broker forwards: the versions its own clients may use (KafkaApis.TABLE).
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.UNREGISTER_BROKER: UNREGISTER_BROKER_VERSIONS,
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.DESCRIBE_QUORUM: DESCRIBE_QUORUM_VERSIONS,
    ApiKey.DESCRIBE_CLUSTER: CONTROLLER_DESCRIBE_CLUSTER_VERSIONS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: SCRAM_API_VERSIONS,
    ApiKey.CREATE_ACLS: ACL_API_VERSIONS,
    ApiKey.DELETE_ACLS: ACL_API_VERSIONS,
    # A SASL controller listener's connections authenticate in its channel (the
    # brokers and the other voters log in there); as on a broker, the Processor must
    # know the two APIs to hand their frames to the exchange.
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}


@attrs.define(eq=False)
class ControllerApis:
    """The controller listener's RequestHandler, over one QuorumControllerShell."""

    server: QuorumControllerShell
    cluster_id: str
    voters: tuple[QuorumVoter, ...] = ()
    """``controller.quorum.voters``: the controllers DescribeCluster lists."""
    nodes: tuple[QuorumNode, ...] = ()
    """The voters on their controller listener: what DescribeQuorum v2 lists."""
    config: KafkaConfig | None = None
    """This node's configuration: the log defaults a created topic's configs fall back
    to in a CreateTopics v5+ answer (None: the answer lists none)."""

    def _image_cache(self) -> MetadataCache:
        """The controller's committed image, as the broker-side handlers read one."""
        node_id = -1 if self.config is None else self.config.node_id
        return MetadataCache(node_id, image=self.server.image)

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return {**SUPPORTED, **RAFT_APIS}

    async def handle(self, request: Request) -> None:
        quorum = self.server.quorum
        match request.api_key:
            case ApiKey.API_VERSIONS:
                # the features committed to the metadata log, as Kafka's controller says
                features = image_features(self.server.image)
                handle_api_versions(request, self.api_versions(), features)
            case ApiKey.FETCH | ApiKey.FETCH_SNAPSHOT | ApiKey.VOTE:
                await handle_raft_request(request, quorum, self.cluster_id)
            case ApiKey.BEGIN_QUORUM_EPOCH | ApiKey.END_QUORUM_EPOCH:
                await handle_raft_request(request, quorum, self.cluster_id)
            case ApiKey.DESCRIBE_QUORUM:
                describe_quorum(request, self.server, self.nodes)
            case ApiKey.DESCRIBE_CLUSTER:
                handle_controller_describe_cluster(
                    request, self.voters, quorum.leader_id, self.cluster_id
                )
            case ApiKey.BROKER_REGISTRATION:
                await self._broker_registration(request)
            case ApiKey.BROKER_HEARTBEAT:
                await self._broker_heartbeat(request)
            case ApiKey.ALTER_PARTITION:
                await handle_alter_partition(request, self.server)
            case ApiKey.ALLOCATE_PRODUCER_IDS:
                await handle_allocate_producer_ids(request, self.server)
            case ApiKey.CREATE_TOPICS:
                await handle_create_topics(
                    request,
                    self.server,
                    guard_internal=False,
                    configs_of=self._configs_of(),
                )
            case ApiKey.DELETE_TOPICS:
                await handle_delete_topics(
                    request, self.server, self._image_cache(), guard_internal=False
                )
            case ApiKey.CREATE_PARTITIONS:
                await handle_create_partitions(
                    request, self.server, guard_internal=False
                )
            case ApiKey.ELECT_LEADERS:
                await handle_elect_leaders(request, self.server)
            case ApiKey.UNREGISTER_BROKER:
                await handle_unregister_broker(request, self.server)
            case ApiKey.INCREMENTAL_ALTER_CONFIGS:
                await handle_incremental_alter_configs(request, self.server, None)
            case ApiKey.ALTER_CONFIGS:
                await handle_alter_configs(request, self.server, None)
            case ApiKey.ALTER_PARTITION_REASSIGNMENTS:
                await handle_alter_partition_reassignments(request, self.server)
            case ApiKey.LIST_PARTITION_REASSIGNMENTS:
                await handle_list_partition_reassignments(request, self.server)
            case ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
                await handle_alter_user_scram_credentials(request, self.server)
            case ApiKey.CREATE_ACLS:
                await handle_create_acls(request, self.server, self._acls_enabled())
            case ApiKey.DELETE_ACLS:
                await handle_delete_acls(request, self.server, self._acls_enabled())
            case ApiKey.SASL_HANDSHAKE | ApiKey.SASL_AUTHENTICATE:
                answer_without_sasl(
                    request
                )  # not a SASL listener, or after the exchange

    def _acls_enabled(self) -> bool:
        """The controller's own ``authorizer.class.name`` decides, as in Kafka's
        ControllerApis; a controller built without a config trusts its brokers."""
        return self.config is None or self.config.authorizer.enabled

    def _configs_of(self) -> TopicConfigs | None:
        config = self.config
        if config is None:
            return None
        return lambda name, overrides: topic_config_entries(
            name, self._image_cache(), config, overrides
        )

    # --- broker lifecycle (KIP-631) --------------------------------------------------------

    async def _broker_registration(self, request: Request) -> None:
        body = request.body_as((RegistrationWire,))
        cls = response_schema(ApiKey.BROKER_REGISTRATION, request.api_version)
        assert cls is not None
        if body.cluster_id != self.cluster_id:
            request.respond(
                build(
                    cls,
                    throttle_time=_NO_THROTTLE,
                    error_code=ErrorCode.inconsistent_cluster_id,
                )
            )
            return
        endpoints = tuple(
            BrokerEndpoint(e.name, e.host, int(e.port), int(e.security_protocol))
            for e in body.listeners
        )
        incarnation = body.incarnation_id or uuid.UUID(int=0)
        internal = BrokerRegistrationRequest(
            int(body.broker_id), incarnation, endpoints, body.rack
        )
        try:
            answer = await self.server.submit(internal)
        except ControllerError as exc:
            request.respond(
                build(cls, throttle_time=_NO_THROTTLE, error_code=exc.error_code)
            )
            return
        assert isinstance(answer, BrokerRegistrationResponse)
        request.respond(
            build(
                cls,
                throttle_time=_NO_THROTTLE,
                error_code=answer.error_code,
                broker_epoch=i64(answer.broker_epoch),
            )
        )

    async def _broker_heartbeat(self, request: Request) -> None:
        body = request.body_as((HeartbeatWire,))
        cls = response_schema(ApiKey.BROKER_HEARTBEAT, request.api_version)
        assert cls is not None
        internal = BrokerHeartbeatRequest(
            int(body.broker_id),
            int(body.broker_epoch),
            int(body.current_metadata_offset),
            want_fence=body.want_fence,
            want_shutdown=body.want_shut_down,
        )
        try:
            answer = await self.server.submit(internal)
        except ControllerError as exc:
            request.respond(
                build(
                    cls,
                    throttle_time=_NO_THROTTLE,
                    error_code=exc.error_code,
                    should_shut_down=False,
                )
            )
            return
        assert isinstance(answer, BrokerHeartbeatResponse)
        request.respond(
            build(
                cls,
                throttle_time=_NO_THROTTLE,
                error_code=answer.error_code,
                is_caught_up=answer.is_caught_up,
                is_fenced=answer.is_fenced,
                should_shut_down=answer.should_shut_down,
            )
        )


async def handle_alter_partition(
    request: Request, controller: ControllerChannel
) -> None:
    """A leader's ISR proposal (KIP-497), for whichever controller ``controller`` is."""
    body = request.body_as((AlterPartitionWire,))
    items = tuple(
        AlterPartitionItem(
            topic.topic_id or uuid.UUID(int=0),
            int(p.partition_index),
            int(p.leader_epoch),
            tuple(int(b) for b in p.new_isr),
            int(p.partition_epoch),
        )
        for topic in body.topics
        for p in topic.partitions
    )
    internal = AlterPartitionRequest(int(body.broker_id), int(body.broker_epoch), items)
    try:
        answer = await controller.submit(internal)
    except ControllerError as exc:
        answer = AlterPartitionResponse(exc.error_code)
    assert isinstance(answer, AlterPartitionResponse)
    topics: dict[uuid.UUID, list[alter_v2.PartitionData]] = {}
    for r in answer.partitions:
        topics.setdefault(r.topic_id, []).append(
            alter_v2.PartitionData(
                partition_index=i32(r.partition),
                error_code=r.error_code,
                leader_id=BrokerId(r.leader),
                leader_epoch=i32(r.leader_epoch),
                isr=tuple(BrokerId(b) for b in r.isr),
                partition_epoch=i32(r.partition_epoch),
            )
        )
    request.respond(
        alter_v2.AlterPartitionResponse(
            throttle_time=_NO_THROTTLE,
            error_code=answer.error_code,
            topics=tuple(
                alter_v2.TopicData(topic_id=t, partitions=tuple(ps))
                for t, ps in topics.items()
            ),
        )
    )


async def handle_allocate_producer_ids(
    request: Request, controller: ControllerChannel
) -> None:
    body = request.body_as((ProducerIdsWire,))
    internal = AllocateProducerIdsRequest(int(body.broker_id), int(body.broker_epoch))
    try:
        answer = await controller.submit(internal)
    except ControllerError as exc:
        answer = AllocateProducerIdsResponse(exc.error_code)
    assert isinstance(answer, AllocateProducerIdsResponse)
    request.respond(
        producer_ids_v0.AllocateProducerIdsResponse(
            throttle_time=_NO_THROTTLE,
            error_code=answer.error_code,
            producer_id_start=ProducerId(answer.producer_id_start),
            producer_id_len=i32(answer.producer_id_len),
        )
    )
