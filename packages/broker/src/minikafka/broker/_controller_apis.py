"""ControllerApis: what a controller serves on its own listener (Kafka's ``ControllerApis``).

A KRaft controller listens on ``controller.listener.names``, apart from the brokers'
listeners, and only other nodes talk to it. This handler serves the APIs a broker on
another node needs from its controller:

- ``Fetch`` of ``__cluster_metadata-0`` (KIP-595; topic id ``AAAAAAAAAAAAAAAAAAAAAQ``):
  the metadata log reaching the brokers, answered by :func:`answer_fetch`, long-polling up
  to ``max_wait_ms`` when there is nothing new;
- ``FetchSnapshot`` (KIP-630): the latest snapshot, in pieces of ``max_bytes``;
- ``BrokerRegistration`` and ``BrokerHeartbeat`` (KIP-631), ``AlterPartition`` (KIP-497)
  and ``AllocateProducerIds`` (KIP-730): the wire forms of the requests the
  QuorumController already decides, handed to its event queue;
- ``CreateTopics``, ``DeleteTopics``, ``CreatePartitions``, ``ElectLeaders``,
  ``AlterPartitionReassignments`` and ``ListPartitionReassignments``: a client's admin
  requests, forwarded by a broker (KIP-590), answered by the same handlers a combined
  node runs, except that a broker may create the internal ``__consumer_offsets``.

The versions served are those whose every field this controller honours; the Processor
answers any other with UNSUPPORTED_VERSION before it reaches this module.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping

import attrs
import trio
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
from kio.schema.fetch.v13 import response as fetch_v13
from kio.schema.fetch.v13.request import FetchRequest
from kio.schema.fetch_snapshot.v0 import response as snapshot_v0
from kio.schema.fetch_snapshot.v0.request import FetchSnapshotRequest
from kio.schema.types import BrokerId, ProducerId, TopicName
from kio.static.primitive import Records, i32, i32Timedelta, i64

from minikafka.controller import (
    DEFAULT_FETCH_MAX_BYTES,
    METADATA_TOPIC,
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
    ControllerServer,
    MetadataFetchAnswer,
    SnapshotId,
    answer_fetch,
    read_snapshot,
)
from minikafka.net import ApiKey, Request, build, handle_api_versions, response_schema

from ._admin import handle_create_partitions, handle_create_topics, handle_delete_topics
from ._controller_channel import ControllerChannel
from ._controller_raft_apis import (
    DESCRIBE_QUORUM_VERSIONS,
    RAFT_APIS,
    describe_quorum,
    handle_raft_request,
)
from ._reassignments import (
    handle_alter_partition_reassignments,
    handle_elect_leaders,
    handle_list_partition_reassignments,
)

METADATA_TOPIC_ID = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID``: the topic id of ``__cluster_metadata``."""

MAX_FETCH_WAIT_S = 0.5
"""The longest a metadata Fetch waits for news here (KafkaRaftClient's own fetches ask
for 500 ms)."""
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
    ApiKey.CREATE_TOPICS: (2, 4),
    ApiKey.DELETE_TOPICS: (1, 3),
    ApiKey.CREATE_PARTITIONS: (0, 1),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.DESCRIBE_QUORUM: DESCRIBE_QUORUM_VERSIONS,
}


@attrs.define(eq=False)
class ControllerApis:
    """The controller listener's RequestHandler, over one ControllerServer."""

    server: ControllerServer
    cluster_id: str

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        # The election APIs only where there is an election: a quorum of several voters.
        return {**SUPPORTED, **RAFT_APIS} if self.server.raft is not None else SUPPORTED

    async def handle(self, request: Request) -> None:
        raft = self.server.raft
        match request.api_key:
            case ApiKey.API_VERSIONS:
                handle_api_versions(request, self.api_versions())
            case ApiKey.FETCH | ApiKey.FETCH_SNAPSHOT | ApiKey.VOTE if raft is not None:
                await handle_raft_request(request, raft, self.cluster_id)
            case ApiKey.BEGIN_QUORUM_EPOCH | ApiKey.END_QUORUM_EPOCH if (
                raft is not None
            ):
                await handle_raft_request(request, raft, self.cluster_id)
            case ApiKey.DESCRIBE_QUORUM:
                describe_quorum(request, self.server)
            case ApiKey.FETCH:
                await self._fetch(request)
            case ApiKey.FETCH_SNAPSHOT:
                self._fetch_snapshot(request)
            case ApiKey.BROKER_REGISTRATION:
                await self._broker_registration(request)
            case ApiKey.BROKER_HEARTBEAT:
                await self._broker_heartbeat(request)
            case ApiKey.ALTER_PARTITION:
                await handle_alter_partition(request, self.server)
            case ApiKey.ALLOCATE_PRODUCER_IDS:
                await handle_allocate_producer_ids(request, self.server)
            case ApiKey.CREATE_TOPICS:
                await handle_create_topics(request, self.server, guard_internal=False)
            case ApiKey.DELETE_TOPICS:
                await handle_delete_topics(request, self.server, guard_internal=False)
            case ApiKey.CREATE_PARTITIONS:
                await handle_create_partitions(
                    request, self.server, guard_internal=False
                )
            case ApiKey.ELECT_LEADERS:
                await handle_elect_leaders(request, self.server)
            case ApiKey.ALTER_PARTITION_REASSIGNMENTS:
                await handle_alter_partition_reassignments(request, self.server)
            case ApiKey.LIST_PARTITION_REASSIGNMENTS:
                await handle_list_partition_reassignments(request, self.server)

    # --- the metadata log -----------------------------------------------------------------

    async def _fetch(self, request: Request) -> None:
        body = request.body_as((FetchRequest,))
        if body.cluster_id is not None and body.cluster_id != self.cluster_id:
            request.respond(_fetch_response(ErrorCode.inconsistent_cluster_id, ()))
            return
        asked = [(t.topic_id, p) for t in body.topics for p in t.partitions]
        ours = [
            p
            for topic_id, p in asked
            if topic_id == METADATA_TOPIC_ID and p.partition == 0
        ]
        if len(asked) != 1 or not ours:
            # Only the metadata log is fetched here, one partition per request (Raft).
            request.respond(_fetch_response(ErrorCode.invalid_request, ()))
            return
        partition = ours[0]
        max_bytes = min(int(partition.partition_max_bytes), int(body.max_bytes))
        max_bytes = max(1, min(max_bytes, DEFAULT_FETCH_MAX_BYTES))
        quorum = self.server.quorum
        epoch = int(partition.current_leader_epoch)
        if epoch >= 0 and epoch != quorum.epoch:
            # KIP-595's epoch check: a fetcher ahead of us knows of a newer leader; one
            # behind learns the current leader and epoch from the answer.
            error = (
                ErrorCode.unknown_leader_epoch
                if epoch > quorum.epoch
                else ErrorCode.fenced_leader_epoch
            )
            stale = MetadataFetchAnswer(
                quorum.node_id,
                quorum.epoch,
                quorum.high_watermark,
                quorum.log.log_start_offset,
                error=error,
            )
            request.respond(_fetch_response(ErrorCode.none, (_partition_data(stale),)))
            return
        answer = answer_fetch(
            quorum,
            int(partition.fetch_offset),
            int(partition.last_fetched_epoch),
            max_bytes,
        )
        if _nothing_new(answer, int(partition.fetch_offset)):
            # Long polling: answer when the log or its high watermark moves, or at max_wait.
            # The wait holds one of this listener's handler tasks, so it is capped:
            # registrations and heartbeats must not queue behind many brokers' polls
            # (Kafka parks such fetches in a purgatory instead).
            moved = self.server.log_moved
            with trio.move_on_after(
                min(body.max_wait.total_seconds(), MAX_FETCH_WAIT_S)
            ):
                await moved.wait()
            answer = answer_fetch(
                quorum,
                int(partition.fetch_offset),
                int(partition.last_fetched_epoch),
                max_bytes,
            )
        request.respond(_fetch_response(ErrorCode.none, (_partition_data(answer),)))

    def _fetch_snapshot(self, request: Request) -> None:
        body = request.body_as((FetchSnapshotRequest,))
        cls = response_schema(ApiKey.FETCH_SNAPSHOT, 0)
        assert cls is not None
        if body.cluster_id is not None and body.cluster_id != self.cluster_id:
            request.respond(
                build(
                    cls,
                    throttle_time=_NO_THROTTLE,
                    error_code=ErrorCode.inconsistent_cluster_id,
                    topics=(),
                )
            )
            return
        asked = [(t.name, p) for t in body.topics for p in t.partitions]
        if (
            len(asked) != 1
            or asked[0][0] != METADATA_TOPIC
            or asked[0][1].partition != 0
        ):
            request.respond(
                build(
                    cls,
                    throttle_time=_NO_THROTTLE,
                    error_code=ErrorCode.invalid_request,
                    topics=(),
                )
            )
            return
        wanted = asked[0][1]
        quorum = self.server.quorum
        snapshot_id = SnapshotId(
            int(wanted.snapshot_id.end_offset), int(wanted.snapshot_id.epoch)
        )
        chunk = read_snapshot(
            quorum, snapshot_id, int(wanted.position), int(body.max_bytes)
        )
        data, size = chunk if chunk is not None else (b"", -1)
        partition = snapshot_v0.PartitionSnapshot(
            index=i32(0),
            error_code=ErrorCode.none
            if chunk is not None
            else ErrorCode.snapshot_not_found,
            snapshot_id=snapshot_v0.SnapshotId(
                end_offset=i64(snapshot_id.end_offset), epoch=i32(snapshot_id.epoch)
            ),
            current_leader=snapshot_v0.LeaderIdAndEpoch(
                leader_id=BrokerId(quorum.node_id), leader_epoch=i32(quorum.epoch)
            ),
            size=i64(size),
            position=i64(int(wanted.position)),
            unaligned_records=Records(data),
        )
        request.respond(
            snapshot_v0.FetchSnapshotResponse(
                throttle_time=_NO_THROTTLE,
                error_code=ErrorCode.none,
                topics=(
                    snapshot_v0.TopicSnapshot(
                        name=TopicName(METADATA_TOPIC), partitions=(partition,)
                    ),
                ),
            )
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


def _nothing_new(answer: MetadataFetchAnswer, fetch_offset: int) -> bool:
    """No records, no truncation, no snapshot, and the fetcher knows the HW already
    (it has fetched up to it)."""
    return (
        answer.error is ErrorCode.none
        and not answer.records
        and answer.diverging_epoch is None
        and answer.snapshot_id is None
        and answer.high_watermark <= fetch_offset
    )


def _partition_data(answer: MetadataFetchAnswer) -> fetch_v13.PartitionData:
    diverging = answer.diverging_epoch
    snapshot = answer.snapshot_id
    return fetch_v13.PartitionData(
        partition_index=i32(0),
        error_code=answer.error,
        high_watermark=i64(answer.high_watermark),
        log_start_offset=i64(answer.log_start_offset),
        diverging_epoch=fetch_v13.EpochEndOffset(
            epoch=i32(diverging.epoch), end_offset=i64(diverging.end_offset)
        )
        if diverging is not None
        else fetch_v13.EpochEndOffset(),
        current_leader=fetch_v13.LeaderIdAndEpoch(
            leader_id=BrokerId(answer.leader_id), leader_epoch=i32(answer.leader_epoch)
        ),
        snapshot_id=fetch_v13.SnapshotId(
            end_offset=i64(snapshot.end_offset), epoch=i32(snapshot.epoch)
        )
        if snapshot is not None
        else fetch_v13.SnapshotId(),
        aborted_transactions=None,
        records=Records(answer.records),
    )


def _fetch_response(
    error: ErrorCode, partitions: tuple[fetch_v13.PartitionData, ...]
) -> fetch_v13.FetchResponse:
    topics = (
        (
            fetch_v13.FetchableTopicResponse(
                topic_id=METADATA_TOPIC_ID, partitions=partitions
            ),
        )
        if partitions
        else ()
    )
    return fetch_v13.FetchResponse(
        throttle_time=_NO_THROTTLE, error_code=error, responses=topics
    )
