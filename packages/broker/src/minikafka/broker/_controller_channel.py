"""How a broker reaches its controller (Kafka's ``NodeToControllerChannelManager``; KIP-590,
KIP-631, KIP-497).

Everything a KRaft broker cannot decide alone goes to the active controller as one of the
controller's requests: registering and heartbeating (KIP-631), proposing an ISR change
(AlterPartition, KIP-497), taking a block of producer ids, and creating, deleting or
growing topics for a client (KIP-590 forwards these; the broker never writes metadata).
:class:`ControllerChannel` is that one operation, ``submit``. In combined mode the
controller is in the same process and the :class:`~minikafka.controller.QuorumControllerShell`
itself is the channel; a broker-only node uses :class:`RemoteController`, which carries
the same requests over the controller's listener as the wire APIs
:class:`~minikafka.broker._controller_apis.ControllerApis` serves, and turns the answers
back into the controller's response types. Callers cannot tell the two apart, so the
handlers of :mod:`._admin`, the ISR proposals and the producer id blocks are one code path
in both modes.

With several controllers (``controller.quorum.voters`` naming three), only the active one
answers; the others say NOT_CONTROLLER. A :class:`ControllerLocator` says which voter to
ask: the leader that the broker's metadata fetcher last heard of (a voter that does not
lead names the leader in its Fetch answer, KIP-595) or, on a combined node that is one
of the voters, the leader its own Raft node knows of; while none is known, the next
voter after one that failed to answer. A request that voter did not answer (the
connection dropped, or it said NOT_CONTROLLER) goes again to the next one named, until
Kafka's forwarding timeout (:mod:`._controller_retry`), so a client never hears
NOT_CONTROLLER from a broker; the broker's heartbeats get one attempt each, bounded by
half ``broker.session.timeout.ms`` (:attr:`RemoteController.lifecycle_timeout`), and
their loop sends the next.

Kafka wraps a client's admin request in an Envelope with the client's principal; there
is no authorization here, so the broker sends the request itself, in the newest version
both ends read (CreateTopics v4, DeleteTopics v3, CreatePartitions v1).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, cast

import attrs
import trio
from kio.schema.allocate_producer_ids.v0 import request as producer_ids_v0
from kio.schema.allocate_producer_ids.v0 import response as producer_ids_v0_response
from kio.schema.alter_configs.v1.response import (
    AlterConfigsResponse as AlterConfigsWire,
)
from kio.schema.alter_partition.v2 import request as alter_v2
from kio.schema.alter_partition.v2 import response as alter_v2_response
from kio.schema.alter_partition_reassignments.v1.response import (
    AlterPartitionReassignmentsResponse as AlterReassignmentsWire,
)
from kio.schema.broker_heartbeat.v0 import request as heartbeat_v0
from kio.schema.broker_heartbeat.v0 import response as heartbeat_v0_response
from kio.schema.broker_registration.v0 import request as registration_v0
from kio.schema.broker_registration.v0 import response as registration_v0_response
from kio.schema.create_partitions.v1 import request as partitions_v1
from kio.schema.create_partitions.v1 import response as partitions_v1_response
from kio.schema.create_topics.v4 import request as create_v4
from kio.schema.create_topics.v4 import response as create_v4_response
from kio.schema.delete_topics.v3 import request as delete_v3
from kio.schema.delete_topics.v3 import response as delete_v3_response
from kio.schema.elect_leaders.v1.response import (
    ElectLeadersResponse as ElectLeadersWire,
)
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1.response import (
    IncrementalAlterConfigsResponse as IncrementalAlterConfigsWire,
)
from kio.schema.list_partition_reassignments.v0.response import (
    ListPartitionReassignmentsResponse as ListReassignmentsWire,
)
from kio.schema.types import BrokerId, TopicName
from kio.schema.unregister_broker.v0.response import (
    UnregisterBrokerResponse as UnregisterBrokerWire,
)
from kio.static.primitive import i16, i32, i32Timedelta, i64, u16
from kio.static.protocol import RequestPayload

from minikafka.controller import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerError,
    ControllerRequest,
    ControllerResponse,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    UnregisterBrokerRequest,
)
from minikafka.net import (
    ClientError,
    ClientSecurity,
    NetworkClient,
    Node,
    RequestTimedOut,
)

from ._alter_configs import (
    alter_configs_to_wire,
    config_change_from_wire,
    incremental_alter_configs_to_wire,
)
from ._controller_locator import ControllerLocator as ControllerLocator
from ._controller_retry import (
    FORWARDING_RETRY_TIMEOUT,
    ControllerRetry,
    from_stale_controller,
    retry_timeout,
)
from ._reassignments import (
    alter_reassignments_from_wire,
    alter_reassignments_to_wire,
    elect_leaders_from_wire,
    elect_leaders_to_wire,
    list_reassignments_from_wire,
    list_reassignments_to_wire,
)
from ._unregister_broker import unregister_broker_from_wire, unregister_broker_to_wire

_logger = logging.getLogger(__name__)

ADMIN_TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))
"""The ``timeout_ms`` of forwarded admin requests: the controller answers once its
records commit, which is what Kafka's AdminClient default of 30 s allows for."""


class ControllerChannel(Protocol):
    """Submit one of the controller's requests; the answer comes once its records are
    committed. Raises :class:`~minikafka.controller.ControllerError` with the error every
    item of the request gets (the controller is unreachable, not active, ...)."""

    async def submit(self, request: ControllerRequest) -> ControllerResponse: ...


@attrs.define(eq=False)
class RemoteController:
    """The channel to the active controller on another node, over its controller listener.

    Its connection lives while :meth:`run` does; a request submitted before that, or
    after, fails as the unreachable controller does."""

    locator: ControllerLocator
    cluster_id: str
    client_id: str = "minikafka-controller-channel"
    security: ClientSecurity = attrs.field(factory=ClientSecurity, kw_only=True)
    """TLS and SASL towards the controller (KRaft: its controller listener; ZooKeeper mode:
    the inter-broker listener) (:mod:`._security_channels`)."""
    retries: bool = attrs.field(default=True, kw_only=True)
    """Whether a request the controller did not answer goes again (KRaft, as Kafka's
    forwarding channel); ZooKeeper mode's channel names one controller per request and
    hands its NOT_CONTROLLER on, as a Kafka 2.8 broker's clients heard it."""
    lifecycle_timeout: float = attrs.field(default=30.0, kw_only=True)
    """Seconds a registration or a heartbeat may take, connecting included, before the
    connection is dropped and the locator moves on: Kafka's heartbeat channel times its
    requests out at half ``broker.session.timeout.ms`` (at most
    ``controller.socket.timeout.ms``, 30 s; KAFKA-14392), so a broker whose controller
    went silent, cut off, asks the next voter while its session still lasts, instead
    of being fenced by the new controller for heartbeats it sent to the old one."""
    _client: NetworkClient | None = attrs.field(init=False, default=None)

    @property
    def node(self) -> Node:
        """The controller the next request goes to."""
        return self.locator.node

    @property
    def client(self) -> NetworkClient | None:
        """The connection pool, while :meth:`run` runs (ZooKeeper mode sends its
        ControlledShutdown on it)."""
        return self._client

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with NetworkClient.open(
            client_id=self.client_id, security=self.security
        ) as client:
            self._client = client
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._client = None

    async def submit(
        self, request: ControllerRequest, *, retry_for: float | None = None
    ) -> ControllerResponse:
        """``retry_for``: seconds to send ``request`` again (0: one attempt); by default
        Kafka's timeout for its kind (:func:`~._controller_retry.retry_timeout`)."""
        if retry_for is None:
            retry_for = retry_timeout(request)
        answer = await self._until_answered(
            lambda: self._submit(request), retry_for if self.retries else 0.0
        )
        return cast(ControllerResponse, answer)

    async def forward(self, body: RequestPayload) -> object:
        """Send a client's request as it is to the active controller (DescribeQuorum,
        CreateAcls, DeleteAcls, AlterUserScramCredentials), sent again as
        :meth:`submit`'s are."""
        timeout = FORWARDING_RETRY_TIMEOUT if self.retries else 0.0
        return await self._until_answered(
            lambda: self._send(body, object), timeout, api_key=int(body.__api_key__)
        )

    async def _until_answered(
        self,
        attempt: Callable[[], Awaitable[object]],
        retry_for: float,
        *,
        api_key: int | None = None,
    ) -> object:
        """Kafka's request thread (:mod:`._controller_retry`): a dropped connection
        and an answer from a voter that does not lead make the request go again, to
        the next controller the locator names, for ``retry_for`` seconds; then
        REQUEST_TIMED_OUT. With no retry (``retry_for`` 0) the caller hears the first
        outcome as it was."""
        if self._client is None:
            raise ControllerError(ErrorCode.request_timed_out)
        retry = ControllerRetry(trio.current_time(), retry_for)
        while True:
            node = self.node
            failure: BaseException | None = None
            answer: object = None
            try:
                answer = await attempt()
            except ClientError as exc:  # unreachable, dropped, or too slow
                failure = ControllerError(ErrorCode.request_timed_out)
                failure.__cause__ = exc
            except (
                ControllerError
            ) as exc:  # an answer's own error, raised on reading it
                if exc.error_code is not ErrorCode.not_controller:
                    raise
                failure = exc
            else:
                if not from_stale_controller(answer, api_key):
                    return answer
            # Forget that controller: the next attempt goes to the next one named,
            # unless the metadata fetcher learns the new leader first.
            self.locator.failed(node)
            wait = retry.after_failure(trio.current_time())
            if wait is None:
                if retry.retries:
                    raise ControllerError(ErrorCode.request_timed_out) from failure
                if failure is not None:
                    raise failure
                return answer
            _logger.debug(
                "controller %d did not answer (%s); attempt %d",
                node.node_id,
                "NOT_CONTROLLER" if failure is None else failure,
                retry.attempts,
            )
            await trio.sleep(wait)

    async def _submit(self, request: ControllerRequest) -> ControllerResponse:
        match request:
            case BrokerRegistrationRequest():
                return await self._register(request)
            case BrokerHeartbeatRequest():
                return await self._heartbeat(request)
            case AlterPartitionRequest():
                return await self._alter_partition(request)
            case AllocateProducerIdsRequest():
                return await self._allocate_producer_ids(request)
            case CreateTopicsRequest():
                return await self._create_topics(request)
            case DeleteTopicsRequest():
                return await self._delete_topics(request)
            case CreatePartitionsRequest():
                return await self._create_partitions(request)
            case AlterPartitionReassignmentsRequest():
                answer = await self._send(
                    alter_reassignments_to_wire(request), AlterReassignmentsWire
                )
                assert isinstance(answer, AlterReassignmentsWire)
                return alter_reassignments_from_wire(answer)
            case ListPartitionReassignmentsRequest():
                listed = await self._send(
                    list_reassignments_to_wire(), ListReassignmentsWire
                )
                assert isinstance(listed, ListReassignmentsWire)
                return list_reassignments_from_wire(listed)
            case ElectLeadersRequest():
                elected = await self._send(
                    elect_leaders_to_wire(request), ElectLeadersWire
                )
                assert isinstance(elected, ElectLeadersWire)
                return elect_leaders_from_wire(elected)
            case UnregisterBrokerRequest():
                unregistered = await self._send(
                    unregister_broker_to_wire(request), UnregisterBrokerWire
                )
                assert isinstance(unregistered, UnregisterBrokerWire)
                return unregister_broker_from_wire(unregistered)
            case IncrementalAlterConfigsRequest():
                altered = await self._send(
                    incremental_alter_configs_to_wire(request),
                    IncrementalAlterConfigsWire,
                )
                assert isinstance(altered, IncrementalAlterConfigsWire)
                return IncrementalAlterConfigsResponse(
                    *config_change_from_wire(altered)
                )
            case AlterConfigsRequest():
                replaced = await self._send(
                    alter_configs_to_wire(request), AlterConfigsWire
                )
                assert isinstance(replaced, AlterConfigsWire)
                return AlterConfigsResponse(*config_change_from_wire(replaced))
        # DescribeConfigs is read from this broker's own metadata image.
        raise ControllerError(ErrorCode.unsupported_version)

    async def _send(self, body: RequestPayload, expected: type[object]) -> object:
        if self._client is None:  # the broker is stopping
            raise ControllerError(ErrorCode.request_timed_out)
        response = await self._client.send(self.node, body)
        if not isinstance(response, expected):
            raise ControllerError(ErrorCode.unknown_server_error)
        return response

    # --- broker lifecycle (KIP-631) ----------------------------------------------------------

    async def _lifecycle_send(
        self, body: RequestPayload, expected: type[object]
    ) -> object:
        """``body`` sent as :meth:`_send` does, within :attr:`lifecycle_timeout`; past
        it the connection is dropped (Kafka's ``NetworkClient`` closes a connection
        whose request timed out) and the caller hears REQUEST_TIMED_OUT."""
        node = self.node
        with trio.move_on_after(self.lifecycle_timeout):
            return await self._send(body, expected)
        if self._client is not None:
            self._client.disconnect(node)
        raise RequestTimedOut(
            f"{type(body).__name__} to controller {node.node_id} got no answer within "
            f"{self.lifecycle_timeout}s"
        )

    async def _register(
        self, request: BrokerRegistrationRequest
    ) -> BrokerRegistrationResponse:
        wire = registration_v0.BrokerRegistrationRequest(
            broker_id=BrokerId(request.broker_id),
            cluster_id=self.cluster_id,
            incarnation_id=request.incarnation_id,
            listeners=tuple(
                registration_v0.Listener(
                    name=e.name,
                    host=e.host,
                    port=u16(e.port),
                    security_protocol=i16(e.security_protocol),
                )
                for e in request.endpoints
            ),
            features=(),
            rack=request.rack,
        )
        answer = await self._lifecycle_send(
            wire, registration_v0_response.BrokerRegistrationResponse
        )
        assert isinstance(answer, registration_v0_response.BrokerRegistrationResponse)
        return BrokerRegistrationResponse(answer.error_code, int(answer.broker_epoch))

    async def _heartbeat(
        self, request: BrokerHeartbeatRequest
    ) -> BrokerHeartbeatResponse:
        wire = heartbeat_v0.BrokerHeartbeatRequest(
            broker_id=BrokerId(request.broker_id),
            broker_epoch=i64(request.broker_epoch),
            current_metadata_offset=i64(request.current_metadata_offset),
            want_fence=request.want_fence,
            want_shut_down=request.want_shutdown,
        )
        answer = await self._lifecycle_send(
            wire, heartbeat_v0_response.BrokerHeartbeatResponse
        )
        assert isinstance(answer, heartbeat_v0_response.BrokerHeartbeatResponse)
        return BrokerHeartbeatResponse(
            answer.error_code,
            answer.is_caught_up,
            answer.is_fenced,
            answer.should_shut_down,
        )

    # --- what a leader and a producer-id manager ask for ---------------------------------

    async def _alter_partition(
        self, request: AlterPartitionRequest
    ) -> AlterPartitionResponse:
        topics: dict[object, list[alter_v2.PartitionData]] = {}
        for item in request.partitions:
            topics.setdefault(item.topic_id, []).append(
                alter_v2.PartitionData(
                    partition_index=i32(item.partition),
                    leader_epoch=i32(item.leader_epoch),
                    new_isr=tuple(BrokerId(b) for b in item.new_isr),
                    partition_epoch=i32(item.partition_epoch),
                )
            )
        wire = alter_v2.AlterPartitionRequest(
            broker_id=BrokerId(request.broker_id),
            broker_epoch=i64(request.broker_epoch),
            topics=tuple(
                alter_v2.TopicData(topic_id=topic_id, partitions=tuple(parts))  # type: ignore[arg-type]
                for topic_id, parts in topics.items()
            ),
        )
        answer = await self._send(wire, alter_v2_response.AlterPartitionResponse)
        assert isinstance(answer, alter_v2_response.AlterPartitionResponse)
        return AlterPartitionResponse(
            answer.error_code,
            tuple(
                AlterPartitionResult(
                    topic.topic_id,  # type: ignore[arg-type]
                    int(p.partition_index),
                    p.error_code,
                    int(p.leader_id),
                    int(p.leader_epoch),
                    tuple(int(b) for b in p.isr),
                    int(p.partition_epoch),
                )
                for topic in answer.topics
                for p in topic.partitions
            ),
        )

    async def _allocate_producer_ids(
        self, request: AllocateProducerIdsRequest
    ) -> AllocateProducerIdsResponse:
        wire = producer_ids_v0.AllocateProducerIdsRequest(
            broker_id=BrokerId(request.broker_id),
            broker_epoch=i64(request.broker_epoch),
        )
        answer = await self._send(
            wire, producer_ids_v0_response.AllocateProducerIdsResponse
        )
        assert isinstance(answer, producer_ids_v0_response.AllocateProducerIdsResponse)
        return AllocateProducerIdsResponse(
            answer.error_code,
            int(answer.producer_id_start),
            int(answer.producer_id_len),
        )

    # --- a client's admin requests, forwarded (KIP-590) ----------------------------------

    async def _create_topics(
        self, request: CreateTopicsRequest
    ) -> CreateTopicsResponse:
        wire = create_v4.CreateTopicsRequest(
            topics=tuple(
                create_v4.CreatableTopic(
                    name=TopicName(t.name),
                    num_partitions=i32(t.num_partitions),
                    replication_factor=i16(t.replication_factor),
                    assignments=tuple(
                        create_v4.CreatableReplicaAssignment(
                            partition_index=i32(
                                t.partition_ids[i] if t.partition_ids is not None else i
                            ),
                            broker_ids=tuple(BrokerId(b) for b in replicas),
                        )
                        for i, replicas in enumerate(t.assignments)
                    ),
                    configs=tuple(
                        create_v4.CreatableTopicConfig(name=k, value=v)
                        for k, v in t.configs
                    ),
                )
                for t in request.topics
            ),
            timeout=ADMIN_TIMEOUT,
            validate_only=request.validate_only,
        )
        answer = await self._send(wire, create_v4_response.CreateTopicsResponse)
        assert isinstance(answer, create_v4_response.CreateTopicsResponse)
        return CreateTopicsResponse(
            tuple(
                CreatableTopicResult(str(r.name), r.error_code, r.error_message)
                for r in answer.topics
            )
        )

    async def _delete_topics(
        self, request: DeleteTopicsRequest
    ) -> DeleteTopicsResponse:
        if request.topic_ids:
            # v6+ only; never sent here
            raise ControllerError(ErrorCode.unsupported_version)
        wire = delete_v3.DeleteTopicsRequest(
            topic_names=tuple(TopicName(n) for n in request.names),
            timeout=ADMIN_TIMEOUT,
        )
        answer = await self._send(wire, delete_v3_response.DeleteTopicsResponse)
        assert isinstance(answer, delete_v3_response.DeleteTopicsResponse)
        return DeleteTopicsResponse(
            tuple(
                DeletableTopicResult(str(r.name), None, r.error_code)
                for r in answer.responses
            )
        )

    async def _create_partitions(
        self, request: CreatePartitionsRequest
    ) -> CreatePartitionsResponse:
        wire = partitions_v1.CreatePartitionsRequest(
            topics=tuple(
                partitions_v1.CreatePartitionsTopic(
                    name=TopicName(t.name),
                    count=i32(t.count),
                    assignments=tuple(
                        partitions_v1.CreatePartitionsAssignment(
                            broker_ids=tuple(BrokerId(b) for b in replicas)
                        )
                        for replicas in t.assignments
                    )
                    or None,
                )
                for t in request.topics
            ),
            timeout=ADMIN_TIMEOUT,
            validate_only=request.validate_only,
        )
        answer = await self._send(wire, partitions_v1_response.CreatePartitionsResponse)
        assert isinstance(answer, partitions_v1_response.CreatePartitionsResponse)
        return CreatePartitionsResponse(
            tuple(
                CreatePartitionsTopicResult(str(r.name), r.error_code, r.error_message)
                for r in answer.results
            )
        )


async def submit_once(
    channel: ControllerChannel, request: ControllerRequest
) -> ControllerResponse:
    """``request`` in one attempt, for a topic the broker creates on a client's behalf
    (Metadata's auto-creation, FindCoordinator's internal topics). Kafka's
    ``AutoTopicCreationManager`` answers such a client at once (LEADER_NOT_AVAILABLE,
    COORDINATOR_NOT_AVAILABLE) while its CreateTopics goes to the controller behind; the
    client asks again, and its next request sends another. Held through an election,
    the answer would hold every request behind it on the client's connection."""
    if isinstance(channel, RemoteController):
        return await channel.submit(request, retry_for=0.0)
    return await channel.submit(request)
