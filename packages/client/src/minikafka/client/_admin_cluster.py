"""The admin clients' partition and cluster calls: ListOffsets, DeleteRecords
(KIP-107), DescribeCluster, DescribeLogDirs, ElectLeaders (KIP-460),
AlterPartitionReassignments and ListPartitionReassignments (KIP-455),
DescribeQuorum (KIP-595, KIP-836) and UnregisterBroker (KIP-631).

Where each goes, as Kafka's Admin sends them: ListOffsets and DeleteRecords to each
partition's leader (the Metadata answer names it); DescribeCluster and UnregisterBroker
to any broker (a KRaft broker forwards UnregisterBroker to the active controller);
DescribeLogDirs to each broker asked about (only it knows its disks); ElectLeaders and
the reassignment calls to the controller the metadata names (a KRaft broker forwards
them to the active controller), asked again as :func:`~._admin_port.to_controller`
says; DescribeQuorum to the bootstrap servers in turn, a broker forwarding it to the
quorum's leader, a controller answering only if it leads. Answers come per partition,
broker or log dir; a call that fails as a whole (the request's top-level error, no
server reachable) raises :class:`KafkaException`.

Versions: the lowest that carries what the client needs. ListOffsets is v5, and v7 to a
leader asked for ``OffsetSpec.max_timestamp()`` (KIP-734) if it serves v7; a leader
that does not answers those partitions UNSUPPORTED_VERSION, as Kafka's Admin does,
without sending them. DeleteRecords is v2, the version Kafka 4's Admin sends.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

from kio.schema.alter_partition_reassignments import v0 as alter_v0
from kio.schema.alter_partition_reassignments import v1 as alter_v1
from kio.schema.delete_records.v2 import request as delete_records
from kio.schema.delete_records.v2.response import DeleteRecordsResponse
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_cluster.v1.response import DescribeClusterResponse
from kio.schema.describe_log_dirs.v4 import request as log_dirs
from kio.schema.describe_log_dirs.v4.response import DescribeLogDirsResponse
from kio.schema.describe_quorum.v1.response import DescribeQuorumResponse
from kio.schema.describe_quorum.v2.response import (
    DescribeQuorumResponse as DescribeQuorumResponseV2,
)
from kio.schema.elect_leaders.v1 import request as elect
from kio.schema.elect_leaders.v1.response import ElectLeadersResponse
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets import v5 as offsets_v5
from kio.schema.list_offsets import v7 as offsets_v7
from kio.schema.list_partition_reassignments.v0 import request as listing
from kio.schema.list_partition_reassignments.v0.response import (
    ListPartitionReassignmentsResponse,
)
from kio.schema.types import BrokerId, TopicName
from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest
from kio.schema.unregister_broker.v0.response import UnregisterBrokerResponse
from kio.static.primitive import i8, i32, i32Timedelta, i64

from minikafka.common import TopicPartition as TopicPartitionKey
from minikafka.net import ApiKey, ClientError, Node, UnsupportedVersionError
from minikafka.raft import QuorumInfo
from minikafka.raft.wire import (
    DescribeQuorumError,
    decode_describe_quorum_response,
    encode_describe_quorum_request,
    encode_describe_quorum_request_v2,
)

from ._admin_port import (
    AdminPort,
    AnyPartition,
    HasTopicPartition,
    by_topic,
    key,
    to_controller,
)
from ._admin_port import where as describe_where
from ._admin_types import (
    MAX_TIMESTAMP,
    ClusterDescription,
    DeletedRecords,
    ElectionType,
    ListOffsetsResultInfo,
    LogDirDescription,
    OffsetSpec,
    PartitionReassignment,
    ReplicaInfo,
    error_or_none,
)
from ._message import BAD_MSG, TRANSPORT, KafkaError, KafkaException

CONSUMER_REPLICA_ID = -1  # ListOffsets from a client, not a follower
BROKER_ENDPOINTS = 1  # DescribeCluster's endpoint_type for brokers (KIP-919)
CONTROLLER_ENDPOINTS = 2
NO_EPOCH = -1
MAX_TIMESTAMP_VERSION = 7  # ListOffsets' first version with OffsetSpec.max_timestamp()
Partitions = dict[TopicPartitionKey, KafkaError | None]


async def _alter_reassignments(
    admin: AdminPort,
    controller: Node,
    wanted: Mapping[TopicPartitionKey, Sequence[int] | None],
    v1: bool,
    allow_replication_factor_change: bool,
) -> Any:
    """One AlterPartitionReassignments to ``controller`` (v1 if it serves it)."""
    alter: ModuleType = alter_v1.request if v1 else alter_v0.request
    flag = {"allow_replication_factor_change": allow_replication_factor_change}
    body = alter.AlterPartitionReassignmentsRequest(
        timeout=admin._timeout(),
        topics=tuple(
            alter.ReassignableTopic(
                name=TopicName(t),
                partitions=tuple(
                    alter.ReassignablePartition(
                        partition_index=i32(p),
                        replicas=_replicas(wanted[TopicPartitionKey(t, p)]),
                    )
                    for p in ps
                ),
            )
            for t, ps in by_topic(list(wanted)).items()
        ),
        **(flag if v1 else {}),
    )
    answer: ModuleType = alter_v1.response if v1 else alter_v0.response
    return await admin.request(
        controller, body, answer.AlterPartitionReassignmentsResponse
    )


def _raise_for(code: ErrorCode, message: str | None) -> None:
    """A whole request's error as KafkaException."""
    if code != ErrorCode.none:
        raise KafkaException(KafkaError(int(code), message))


class ClusterAdmin:
    """Mixed into :class:`AsyncAdminClient`: its partition and cluster calls."""

    async def list_offsets(
        self: AdminPort,
        topic_partition_offsets: Mapping[AnyPartition, OffsetSpec],
        *,
        isolation_level: int = 0,
    ) -> dict[TopicPartitionKey, ListOffsetsResultInfo | KafkaError]:
        """Each partition's offset for its spec (ListOffsets v5 to its leader): the log
        start (earliest), the high watermark (latest; the last stable offset with
        ``isolation_level=1``, read_committed), or the first offset at or after a
        timestamp (-1 when no record is that late). A partition the metadata does not
        know answers UNKNOWN_TOPIC_OR_PARTITION, one without a leader
        LEADER_NOT_AVAILABLE. Kafka's ``Admin.listOffsets``."""
        wanted = {key(tp): spec for tp, spec in topic_partition_offsets.items()}
        by_leader, failed = await _leaders(self, list(wanted))
        out: dict[TopicPartitionKey, ListOffsetsResultInfo | KafkaError] = dict(failed)
        for leader, partitions in by_leader.items():
            schema: ModuleType = offsets_v5  # v7 has the same fields
            if any(wanted[tp].timestamp == MAX_TIMESTAMP for tp in partitions):
                served = await self.client.api_versions(leader)
                if served.get(ApiKey.LIST_OFFSETS, (0, -1))[1] >= MAX_TIMESTAMP_VERSION:
                    schema = offsets_v7
                else:
                    for tp in partitions:
                        if wanted[tp].timestamp == MAX_TIMESTAMP:
                            out[tp] = KafkaError(
                                ErrorCode.unsupported_version,
                                "OffsetSpec.max_timestamp() needs ListOffsets v7 "
                                f"(KIP-734), which broker {leader.node_id} does not "
                                "serve",
                            )
                    partitions = [tp for tp in partitions if tp not in out]
                    if not partitions:
                        continue
            out.update(
                await _list_offsets_at(
                    self, leader, schema, partitions, wanted, isolation_level
                )
            )
        missing = KafkaError(ErrorCode.unknown_server_error, "no answer")
        return {tp: out.get(tp, missing) for tp in wanted}

    async def delete_records(
        self: AdminPort,
        before_offsets: Mapping[AnyPartition, int],
        *,
        operation_timeout: float = 60.0,
    ) -> dict[TopicPartitionKey, DeletedRecords | KafkaError]:
        """Delete each partition's records below its offset (-1: below the high
        watermark), with DeleteRecords v2 to its leader, and give the low watermark each
        reached. Each leader moves its log start at once and answers once its in-sync
        followers have moved theirs, or after ``operation_timeout`` seconds
        (REQUEST_TIMED_OUT; the leader's log start has moved all the same). Kafka's
        ``Admin.deleteRecords``, confluent-kafka's ``delete_records``."""
        wanted = {key(tp): offset for tp, offset in before_offsets.items()}
        by_leader, failed = await _leaders(self, list(wanted))
        out: dict[TopicPartitionKey, DeletedRecords | KafkaError] = dict(failed)
        for leader, partitions in by_leader.items():
            body = delete_records.DeleteRecordsRequest(
                topics=tuple(
                    delete_records.DeleteRecordsTopic(
                        name=TopicName(t),
                        partitions=tuple(
                            delete_records.DeleteRecordsPartition(
                                partition_index=i32(p),
                                offset=i64(wanted[TopicPartitionKey(t, p)]),
                            )
                            for p in ps
                        ),
                    )
                    for t, ps in by_topic(partitions).items()
                ),
                timeout=i32Timedelta.parse(
                    datetime.timedelta(seconds=operation_timeout)
                ),
            )
            response = await self.request(leader, body, DeleteRecordsResponse)
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartitionKey(str(topic.name), int(p.partition_index))
                    out[tp] = error_or_none(int(p.error_code)) or DeletedRecords(
                        int(p.low_watermark)
                    )
        missing = KafkaError(ErrorCode.unknown_server_error, "no answer")
        return {tp: out.get(tp, missing) for tp in wanted}

    async def describe_cluster(
        self: AdminPort, *, via_controller: bool = False
    ) -> ClusterDescription:
        """The cluster id, the controller and the brokers with their racks
        (DescribeCluster v1 to any broker). Kafka's ``Admin.describeCluster``.

        ``via_controller``: the bootstrap servers are controllers (Kafka's
        ``bootstrap.controllers``, KIP-919), asked in turn until one answers, for the
        controllers' endpoints; one that does not serve DescribeCluster v1 is
        UNSUPPORTED_VERSION."""
        if via_controller:
            return await _describe_controllers(self)
        await self.metadata([])
        return await self.at_any_broker(
            lambda node: _describe_cluster_at(self, node, BROKER_ENDPOINTS)
        )

    async def describe_log_dirs(
        self: AdminPort, broker_ids: Iterable[int]
    ) -> dict[int, dict[str, LogDirDescription] | KafkaError]:
        """Each broker's log dirs and the replicas in them (DescribeLogDirs v4 to that
        broker: every topic); a broker the metadata does not list answers
        BROKER_NOT_AVAILABLE. Kafka's ``Admin.describeLogDirs``."""
        await self.metadata([])
        out: dict[int, dict[str, LogDirDescription] | KafkaError] = {}
        for broker in dict.fromkeys(broker_ids):
            node = self.brokers.get(broker)
            if node is None:
                out[broker] = KafkaError(
                    ErrorCode.broker_not_available, f"broker {broker} is not alive"
                )
                continue
            body = log_dirs.DescribeLogDirsRequest(topics=None)
            response = await self.request(node, body, DescribeLogDirsResponse)
            error = error_or_none(int(response.error_code))
            out[broker] = error or {
                d.log_dir: LogDirDescription(
                    error_or_none(int(d.error_code)),
                    {
                        TopicPartitionKey(str(t.name), int(p.partition_index)): (
                            ReplicaInfo(
                                int(p.partition_size),
                                int(p.offset_lag),
                                p.is_future_key,
                            )
                        )
                        for t in d.topics
                        for p in t.partitions
                    },
                    None if int(d.total_bytes) < 0 else int(d.total_bytes),
                    None if int(d.usable_bytes) < 0 else int(d.usable_bytes),
                )
                for d in response.results
            }
        return out

    async def elect_leaders(
        self: AdminPort,
        election_type: ElectionType,
        partitions: Iterable[HasTopicPartition] | None = None,
    ) -> Partitions:
        """Elect the preferred (or, UNCLEAN, any live) replica leader of ``partitions``,
        or of every partition that needs it when None (ElectLeaders v1 to the
        controller, KIP-460): each partition's error or None; ELECTION_NOT_NEEDED where
        the leader already is the one. Kafka's ``Admin.electLeaders``."""
        wanted = None if partitions is None else [key(tp) for tp in partitions]
        body = elect.ElectLeadersRequest(
            election_type=i8(int(election_type)),
            topic_partitions=None
            if wanted is None
            else tuple(
                elect.TopicPartitions(
                    topic=TopicName(t), partitions=tuple(i32(p) for p in ps)
                )
                for t, ps in by_topic(wanted).items()
            ),
            timeout=self._timeout(),
        )
        # Asked again while the controller cannot be reached, not for NOT_CONTROLLER:
        # Kafka's electLeaders hands that to its caller (no handleNotControllerError).
        response = await to_controller(
            self, lambda node: self.request(node, body, ElectLeadersResponse)
        )
        _raise_for(response.error_code, None)
        return {
            TopicPartitionKey(str(t.topic), int(p.partition_id)): error_or_none(
                int(p.error_code), p.error_message
            )
            for t in response.replica_election_results
            for p in t.partition_result
        }

    async def unregister_broker(self: AdminPort, broker_id: int) -> None:
        """Remove ``broker_id``'s registration from the KRaft cluster's metadata
        (UnregisterBroker v0 to any broker, which forwards it to the active
        controller; KIP-631). BROKER_ID_NOT_REGISTERED for an id the controller does
        not know; UNSUPPORTED_VERSION from a broker that does not serve the API (a
        ZooKeeper-mode broker). Kafka's ``Admin.unregisterBroker``."""
        body = UnregisterBrokerRequest(broker_id=BrokerId(broker_id))

        async def ask(node: Node) -> UnregisterBrokerResponse:
            try:
                return await self.request(node, body, UnregisterBrokerResponse)
            except KafkaException as e:
                if isinstance(e.__cause__, UnsupportedVersionError):
                    # Kafka's UnsupportedVersionException: the tool names it.
                    text = str(e.__cause__)
                    error = KafkaError(ErrorCode.unsupported_version, text)
                    raise KafkaException(error) from None
                raise

        response = await self.at_any_broker(ask)
        _raise_for(response.error_code, response.error_message)

    async def alter_partition_reassignments(
        self: AdminPort,
        reassignments: Mapping[AnyPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> Partitions:
        """Move each partition to its target replicas, or (None) cancel its move
        (AlterPartitionReassignments to the controller, KIP-455): each partition's
        error or None. Kafka's ``Admin.alterPartitionReassignments``. With
        ``allow_replication_factor_change`` false the controller refuses a target whose
        length differs from the partition's replication factor (KIP-860); that needs
        v1, which a controller that does not serve it cannot honour, so every partition
        then gets UNSUPPORTED_VERSION, as Kafka's client throws."""
        wanted = {key(tp): target for tp, target in reassignments.items()}

        async def ask(controller: Node) -> Any:
            try:
                served = await self.client.api_versions(controller)
            except (ClientError, OSError) as e:
                text = (
                    f"AlterPartitionReassignments to {describe_where(controller)}: {e}"
                )
                raise KafkaException(KafkaError(TRANSPORT, text)) from e
            v1 = served.get(ApiKey.ALTER_PARTITION_REASSIGNMENTS, (0, 0))[1] >= 1
            if not v1 and not allow_replication_factor_change:
                return controller  # the KIP-860 check needs v1: refused below
            return await _alter_reassignments(
                self, controller, wanted, v1, allow_replication_factor_change
            )

        response = await to_controller(
            self,
            ask,
            lambda r: getattr(r, "error_code", None) == ErrorCode.not_controller,
        )
        if isinstance(response, Node):
            text = (
                "allow_replication_factor_change=False needs AlterPartition"
                f"Reassignments v1 (KIP-860), which node {response.node_id} does "
                "not serve"
            )
            return {
                tp: KafkaError(ErrorCode.unsupported_version, text) for tp in wanted
            }
        _raise_for(response.error_code, response.error_message)
        return {
            TopicPartitionKey(str(t.name), int(p.partition_index)): error_or_none(
                int(p.error_code), p.error_message
            )
            for t in response.responses
            for p in t.partitions
        }

    async def list_partition_reassignments(
        self: AdminPort, partitions: Iterable[HasTopicPartition] | None = None
    ) -> dict[TopicPartitionKey, PartitionReassignment]:
        """The reassignments in progress (of ``partitions``, or all): ListPartition-
        Reassignments v0 to the controller. Kafka's ``Admin.listPartitionReassignments``."""
        wanted = None if partitions is None else [key(tp) for tp in partitions]
        body = listing.ListPartitionReassignmentsRequest(
            timeout=self._timeout(),
            topics=None
            if wanted is None
            else tuple(
                listing.ListPartitionReassignmentsTopics(
                    name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)
                )
                for t, ps in by_topic(wanted).items()
            ),
        )
        response = await to_controller(
            self,
            lambda node: self.request(node, body, ListPartitionReassignmentsResponse),
            lambda r: r.error_code == ErrorCode.not_controller,
        )
        _raise_for(response.error_code, response.error_message)
        return {
            TopicPartitionKey(str(t.name), int(p.partition_index)): (
                PartitionReassignment(
                    tuple(int(b) for b in p.replicas),
                    tuple(int(b) for b in p.adding_replicas),
                    tuple(int(b) for b in p.removing_replicas),
                )
            )
            for t in response.topics
            for p in t.partitions
        }

    async def describe_metadata_quorum(
        self: AdminPort, *, via_controller: bool = False
    ) -> QuorumInfo:
        """The KRaft quorum as its leader describes it, times in seconds since the
        epoch: DescribeQuorum v2 (KIP-853: the voters' endpoints, the replicas'
        directory ids) where the node serves it, else v1. Each bootstrap server is
        asked in turn until one answers: one that cannot be reached is skipped, and so
        (``via_controller``: the servers are controllers) is a controller that is not
        the leader (NOT_LEADER_OR_FOLLOWER). Kafka's ``Admin.describeMetadataQuorum``."""
        failure: KafkaException | None = None
        for node in self.bootstrap:
            where = f"{node.host}:{node.port}"
            response: DescribeQuorumResponse | DescribeQuorumResponseV2
            try:
                served = await self.client.api_versions(node)
            except (ClientError, OSError) as e:  # not reachable: the next one
                text = f"DescribeQuorum to {describe_where(node)}: {e}"
                failure = KafkaException(KafkaError(TRANSPORT, text))
                continue
            try:
                if served.get(ApiKey.DESCRIBE_QUORUM, (0, 0))[1] >= 2:
                    response = await self.request(
                        node,
                        encode_describe_quorum_request_v2(),
                        DescribeQuorumResponseV2,
                    )
                else:
                    response = await self.request(
                        node, encode_describe_quorum_request(), DescribeQuorumResponse
                    )
            except KafkaException as e:  # the connection failed: the next one
                failure = e
                continue
            try:
                return decode_describe_quorum_response(response)
            except DescribeQuorumError as e:
                if via_controller and e.error_code == ErrorCode.not_leader_or_follower:
                    # A follower cannot describe the quorum; another may lead it.
                    text = f"controller {where} is not the leader"
                    failure = KafkaException(KafkaError(e.error_code, text))
                    continue
                text = f"DescribeQuorum to {where}"
                raise KafkaException(KafkaError(e.error_code, text)) from None
            except ValueError as e:
                text = f"DescribeQuorum to {where}: {e}"
                raise KafkaException(KafkaError(BAD_MSG, text)) from None
        assert failure is not None
        raise failure


async def _describe_controllers(admin: AdminPort) -> ClusterDescription:
    failure: KafkaException | None = None
    for node in admin.bootstrap:
        try:
            served = await admin.client.api_versions(node)
        except ClientError as e:  # unreachable: the next controller
            text = f"DescribeCluster to {node.host}:{node.port}: {e}"
            failure = KafkaException(KafkaError(TRANSPORT, text))
            continue
        low, high = served.get(ApiKey.DESCRIBE_CLUSTER, (0, -1))
        if not low <= DescribeClusterRequest.__version__ <= high:
            text = f"controller {node.node_id} does not serve DescribeCluster v1"
            raise KafkaException(KafkaError(ErrorCode.unsupported_version, text))
        return await _describe_cluster_at(admin, node, CONTROLLER_ENDPOINTS)
    assert failure is not None
    raise failure


async def _describe_cluster_at(
    admin: AdminPort, node: Node, endpoint_type: int
) -> ClusterDescription:
    body = DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=i8(endpoint_type)
    )
    response = await admin.request(node, body, DescribeClusterResponse)
    _raise_for(response.error_code, response.error_message)
    nodes = tuple(Node(int(b.broker_id), b.host, int(b.port)) for b in response.brokers)
    by_id = {n.node_id: n for n in nodes}
    return ClusterDescription(
        response.cluster_id,
        by_id.get(int(response.controller_id)),
        nodes,
        {int(b.broker_id): b.rack for b in response.brokers},
    )


async def _list_offsets_at(
    admin: AdminPort,
    leader: Node,
    schema: ModuleType,
    partitions: Sequence[TopicPartitionKey],
    wanted: Mapping[TopicPartitionKey, OffsetSpec],
    isolation_level: int,
) -> dict[TopicPartitionKey, ListOffsetsResultInfo | KafkaError]:
    """ListOffsets to ``leader`` in ``schema``'s version (v5, or v7 for max_timestamp:
    the same fields, v6 made it flexible)."""
    request, response_type = schema.request, schema.response.ListOffsetsResponse
    body = request.ListOffsetsRequest(
        replica_id=BrokerId(CONSUMER_REPLICA_ID),
        isolation_level=i8(isolation_level),
        topics=tuple(
            request.ListOffsetsTopic(
                name=TopicName(t),
                partitions=tuple(
                    request.ListOffsetsPartition(
                        partition_index=i32(p),
                        current_leader_epoch=i32(NO_EPOCH),
                        timestamp=i64(wanted[TopicPartitionKey(t, p)].timestamp),
                    )
                    for p in ps
                ),
            )
            for t, ps in by_topic(partitions).items()
        ),
    )
    response = await admin.request(leader, body, response_type)
    out: dict[TopicPartitionKey, ListOffsetsResultInfo | KafkaError] = {}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartitionKey(str(topic.name), int(p.partition_index))
            epoch = int(p.leader_epoch)
            out[tp] = error_or_none(int(p.error_code)) or ListOffsetsResultInfo(
                int(p.offset),
                int(p.timestamp),
                None if epoch == NO_EPOCH else epoch,
            )
    return out


def _replicas(target: Sequence[int] | None) -> tuple[BrokerId, ...] | None:
    return None if target is None else tuple(BrokerId(b) for b in target)


async def _leaders(
    admin: AdminPort, partitions: Sequence[TopicPartitionKey]
) -> tuple[dict[Node, list[TopicPartitionKey]], dict[TopicPartitionKey, KafkaError]]:
    """Each leader and the partitions it leads, from a Metadata answer; the partitions
    it cannot place, with why."""
    if not partitions:
        return {}, {}
    response = await admin.metadata(sorted({tp.topic for tp in partitions}))
    topics = {str(t.name): t for t in response.topics}
    by_leader: dict[Node, list[TopicPartitionKey]] = {}
    failed: dict[TopicPartitionKey, KafkaError] = {}
    for tp in partitions:
        topic = topics.get(tp.topic)
        if topic is None or topic.error_code != ErrorCode.none:
            code = (
                ErrorCode.unknown_topic_or_partition
                if topic is None
                else topic.error_code
            )
            failed[tp] = KafkaError(int(code), f"topic {tp.topic}")
            continue
        found = [p for p in topic.partitions if int(p.partition_index) == tp.partition]
        if not found:
            failed[tp] = KafkaError(
                ErrorCode.unknown_topic_or_partition, f"partition {tp} does not exist"
            )
            continue
        leader = admin.brokers.get(int(found[0].leader_id))
        if leader is None:
            failed[tp] = KafkaError(
                ErrorCode.leader_not_available, f"partition {tp} has no leader"
            )
            continue
        by_leader.setdefault(leader, []).append(tp)
    return by_leader, failed
