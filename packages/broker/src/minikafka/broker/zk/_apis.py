"""The APIs of a ZooKeeper-mode broker, and its way to the controller.

Clients see the same broker in both modes: the rows of :class:`~.._apis.KafkaApis` are
reused as they are. What differs:

- the controller's requests to brokers, which only ZooKeeper mode has: LeaderAndIsr,
  UpdateMetadata and StopReplica, handed to the broker (:class:`ZkBrokerNode`);
- what only the controller broker answers, because the controller is a broker here:
  ControlledShutdown, AlterPartition (a leader's ISR change, KIP-497) and
  AllocateProducerIds;
- DescribeQuorum is not offered: there is no metadata quorum in this mode.

A broker's own requests to the controller (:class:`ZkControllerChannel`) go to its own
controller shell when it is the controller, and otherwise to the broker UpdateMetadata
named as the controller, over the inter-broker listener; except what a broker writes to
ZooKeeper itself, as Kafka 2.8's do: the creation of ``__consumer_offsets``, a
client's config changes (IncrementalAlterConfigs, AlterConfigs: :mod:`._config_changes`),
and, as Kafka 3.x's do, SCRAM credentials (AlterUserScramCredentials) and ACLs
(CreateAcls, DeleteAcls: :mod:`._security`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import ClassVar, Protocol

import attrs
from kazoo.exceptions import KazooException
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    AlterConfigsRequest,
    AlterUserScramCredentialsRequest,
    ControllerError,
    ControllerRequest,
    ControllerResponse,
    CreatableTopicResult,
    CreateAclsRequest,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    IncrementalAlterConfigsRequest,
)
from minikafka.controller.zk import (
    LeaderAndIsr,
    StopReplica,
    UpdateMetadata,
    admin_create_topics,
)
from minikafka.net import (
    NO_FEATURES,
    ApiKey,
    ApiSpec,
    ApiTable,
    ClientError,
    Features,
    Node,
    Request,
)
from minikafka.net import controlled_shutdown_v3 as cs
from minikafka.net import leader_and_isr_v5 as lai
from minikafka.net import stop_replica_v3 as sr
from minikafka.net import update_metadata_v7 as umr
from minikafka.zk import TOPICS, NodeExistsError, ZkCluster, read_brokers, read_topics

from .._apis import KafkaApis
from .._controller_apis import handle_allocate_producer_ids, handle_alter_partition
from .._controller_channel import RemoteController
from .._metadata_cache import INTERNAL_TOPICS
from ._config_changes import alter_configs_in_zookeeper
from ._controller_shell import ZkControllerShell
from ._metadata import ZkBrokerMetadata
from ._security import write_security_change
from ._wire import controlled_shutdown_response, from_wire

KRAFT_ONLY: frozenset[int] = frozenset(
    {ApiKey.DESCRIBE_QUORUM, ApiKey.UNREGISTER_BROKER}
)
"""What a ZooKeeper-mode broker does not offer: there is no metadata quorum, and no
registration but the ephemeral znode (Kafka 3.x's ZooKeeper broker does not list
UnregisterBroker: its listeners are KRaft's). SCRAM
credentials and ACLs are served, from ZooKeeper's ``/config/users`` and ``/kafka-acl``
(:mod:`._security`)."""


class ZkBrokerNode(Protocol):
    """What the controller's requests change on this broker (the ZkBrokerServer)."""

    async def on_leader_and_isr(
        self, request: LeaderAndIsr
    ) -> lai.LeaderAndIsrResponse: ...

    def on_update_metadata(
        self, request: UpdateMetadata
    ) -> umr.UpdateMetadataResponse: ...

    def on_stop_replica(self, request: StopReplica) -> sr.StopReplicaResponse: ...


@attrs.define(eq=False)
class ZkControllerChannel:
    shell: ZkControllerShell
    remote: RemoteController
    metadata: ZkBrokerMetadata
    listener: str

    async def submit(self, request: ControllerRequest) -> ControllerResponse:
        if isinstance(request, IncrementalAlterConfigsRequest | AlterConfigsRequest):
            # Kafka 2.8's brokers change configs in ZooKeeper themselves.
            return await alter_configs_in_zookeeper(self.shell.zk, request)
        if isinstance(
            request,
            AlterUserScramCredentialsRequest | CreateAclsRequest | DeleteAclsRequest,
        ):
            # Kafka 3.x's ZooKeeper-mode brokers write credentials and ACLs themselves.
            return await write_security_change(self.shell.zk, request)
        if self.shell.active:
            return await self.shell.submit(request)
        if isinstance(request, CreateTopicsRequest) and all(
            t.name in INTERNAL_TOPICS for t in request.topics
        ):
            return await self._create_internal_topics(request)
        self.remote.locator.voters = (self._controller_node(),)
        return await self.remote.submit(request)

    async def _create_internal_topics(
        self, request: CreateTopicsRequest
    ) -> CreateTopicsResponse:
        """``__consumer_offsets`` for this broker's group coordinator, created as Kafka
        2.8's brokers create it in ZooKeeper mode (``AutoTopicCreationManager`` through
        ``AdminZkClient``): its config and assignment written straight to ZooKeeper,
        placed as the controller would place it; the controller's watch on
        ``/brokers/topics`` does the rest. Not through the controller broker: there, a
        CreateTopics is a client's, and a client may not create an internal topic."""
        zk = self.shell.zk
        try:
            # What the placement and the existence checks need: the brokers and the
            # assignments (not every partition's state, which a creation never reads).
            names = await zk.get_children(TOPICS)
            cluster = ZkCluster(
                await read_brokers(zk, watch=False),
                await read_topics(zk, names, watch=False),
                {},
                frozenset(),
            )
            writes, response = admin_create_topics(
                cluster, self.shell.config, random.Random(), request
            )
            await zk.transaction(writes)
        except NodeExistsError:
            # Another broker wrote it first: it exists, which is all that was asked.
            return CreateTopicsResponse(
                tuple(
                    CreatableTopicResult(t.name, ErrorCode.topic_already_exists)
                    for t in request.topics
                )
            )
        except KazooException as exc:
            raise ControllerError(ErrorCode.coordinator_not_available) from exc
        return response

    def _controller_node(self) -> Node:
        controller_id = self.metadata.controller_id
        # Never to itself: a broker that was the controller and no longer is waits for
        # UpdateMetadata from the next one.
        registration = self.metadata.image.brokers.get(controller_id)
        if controller_id == self.metadata.broker_id or registration is None:
            raise ControllerError(ErrorCode.not_controller)
        for endpoint in registration.endpoints:
            if endpoint.name == self.listener:
                return Node(controller_id, endpoint.host, endpoint.port)
        raise ControllerError(ErrorCode.not_controller)

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, int]:
        """Ask the controller to move this broker's leaderships away: (error, how many
        partitions it still leads)."""
        if self.shell.active:
            result = await self.shell.controlled_shutdown(broker_id, broker_epoch)
            return result.error_code, len(result.remaining)
        client = self.remote.client
        if client is None:
            raise ControllerError(ErrorCode.request_timed_out)
        request = cs.ControlledShutdownRequest(
            broker_id=broker_id,  # type: ignore[arg-type]
            broker_epoch=broker_epoch,  # type: ignore[arg-type]
        )
        try:
            answer = await client.send(self._controller_node(), request)
        except ClientError as exc:
            raise ControllerError(ErrorCode.request_timed_out) from exc
        if not isinstance(answer, cs.ControlledShutdownResponse):
            raise ControllerError(ErrorCode.unknown_server_error)
        return answer.error_code, len(answer.remaining_partitions)


@attrs.define(eq=False, kw_only=True)
class ZkKafkaApis(KafkaApis):
    zk_channel: ZkControllerChannel
    node: ZkBrokerNode | None = None
    """The broker the controller's requests change (set once it is built)."""

    def _node(self) -> ZkBrokerNode:
        assert self.node is not None, "the ZkBrokerServer sets itself as node"
        return self.node

    def features(self) -> Features:
        """None: Kafka 2.8's brokers support no feature (KIP-584's versioning came with
        KRaft's metadata.version), and minikafka writes no ``/feature`` znode."""
        return NO_FEATURES

    async def _leader_and_isr(self, request: Request) -> None:
        body = request.body_as((lai.LeaderAndIsrRequest,))
        values = from_wire(body)
        assert isinstance(values, LeaderAndIsr)
        request.respond(await self._node().on_leader_and_isr(values))

    async def _update_metadata(self, request: Request) -> None:
        values = from_wire(request.body_as((umr.UpdateMetadataRequest,)))
        assert isinstance(values, UpdateMetadata)
        request.respond(self._node().on_update_metadata(values))

    async def _stop_replica(self, request: Request) -> None:
        values = from_wire(request.body_as((sr.StopReplicaRequest,)))
        assert isinstance(values, StopReplica)
        request.respond(self._node().on_stop_replica(values))

    async def _controlled_shutdown(self, request: Request) -> None:
        body = request.body_as((cs.ControlledShutdownRequest,))
        shell = self.zk_channel.shell
        if not shell.active:
            request.respond(controlled_shutdown_response(ErrorCode.not_controller, ()))
            return
        try:
            result = await shell.controlled_shutdown(
                int(body.broker_id), int(body.broker_epoch)
            )
        except ControllerError as exc:
            request.respond(controlled_shutdown_response(exc.error_code, ()))
            return
        request.respond(
            controlled_shutdown_response(result.error_code, result.remaining)
        )

    async def _alter_partition(self, request: Request) -> None:
        await handle_alter_partition(request, self.zk_channel)

    async def _allocate_producer_ids(self, request: Request) -> None:
        await handle_allocate_producer_ids(request, self.zk_channel)

    # KRaft's client rows, minus what needs a quorum, plus the controller's requests.
    TABLE: ClassVar[ApiTable[KafkaApis]] = ApiTable(
        *(spec for spec in KafkaApis.TABLE if spec.key not in KRAFT_ONLY),
        ApiSpec(ApiKey.LEADER_AND_ISR, 5, 5, _leader_and_isr),  # type: ignore[arg-type]
        ApiSpec(ApiKey.STOP_REPLICA, 3, 3, _stop_replica),  # type: ignore[arg-type]
        ApiSpec(ApiKey.UPDATE_METADATA, 7, 7, _update_metadata),  # type: ignore[arg-type]
        ApiSpec(ApiKey.CONTROLLED_SHUTDOWN, 3, 3, _controlled_shutdown),  # type: ignore[arg-type]
        ApiSpec(ApiKey.ALTER_PARTITION, 2, 2, _alter_partition),  # type: ignore[arg-type]
        ApiSpec(ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0, _allocate_producer_ids),  # type: ignore[arg-type]
    )
    SUPPORTED: ClassVar[Mapping[int, tuple[int, int]]] = TABLE.versions()
