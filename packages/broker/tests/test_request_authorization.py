"""Every API checked at Kafka's authorization point, through a running broker with
KRaft's StandardAuthorizer, over the wire.

The client is ``User:ANONYMOUS`` (a PLAINTEXT listener); no one is a super user. Each
row of ``CASES`` is one request: sent with fewer ACLs than it needs it gets Kafka's
error (the row's ``refused``) and nothing changes (the metadata image's topics, configs
and producer ids, and the end offsets of every log, ``__consumer_offsets`` and
``__transaction_state`` included); sent again with the row's ACLs it gets no
authorization error at all.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from minikafka.broker import BrokerServer, KafkaApis
from minikafka.broker.testing import (
    WireClient,
    element,
    request_body,
    request_class,
    running_broker,
    single_node_config,
)
from minikafka.common import TopicPartition
from minikafka.controller import CreateAclsRequest, DeleteAclsRequest
from minikafka.log import Record, build_batch
from minikafka.net import NetworkClient, Node, build, has_field
from minikafka.net.testing import wait_until
from minikafka.raft.wire import encode_describe_quorum_request
from minikafka.security import (
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

TOPIC, GROUP, TXN = "orders", "shop", "txn-1"
ANONYMOUS = "User:ANONYMOUS"
SECONDS = datetime.timedelta(seconds=30)
OMITTED = -(2**31)
Grant = tuple[ResourceType, str, AclOperation]
CLUSTER = ResourceType.CLUSTER
TOPIC_R, GROUP_R, TXN_R = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.TRANSACTIONAL_ID,
)
Op = AclOperation
AUTHORIZATION_ERRORS = {
    ErrorCode.topic_authorization_failed,
    ErrorCode.group_authorization_failed,
    ErrorCode.cluster_authorization_failed,
    ErrorCode.transactional_id_authorization_failed,
}


def highest(api_key: int) -> int:
    return KafkaApis.SUPPORTED[api_key][1]


def nested_body(api_key: int, version: int, **fields: Any) -> Any:
    """``api_key`` v``version`` from those of ``fields`` it has; a field given as a
    list of dicts is built as the version's nested entities (and so on inside)."""
    cls = request_class(api_key, version)

    def fit(owner: type[Entity], values: dict[str, Any]) -> Any:
        return build(
            owner,
            **{k: make(owner, k, v) for k, v in values.items() if has_field(owner, k)},
        )

    def make(owner: type[Entity], name: str, value: Any) -> Any:
        if isinstance(value, list):
            item = element(owner, name)
            return tuple(fit(item, e) if isinstance(e, dict) else e for e in value)
        return value

    return fit(cls, fields)


def errors_of(entity: object) -> list[ErrorCode]:
    """Every error code in a response, nested ones included."""
    found: list[ErrorCode] = []
    for name in getattr(entity, "__dataclass_fields__", {}):
        value = getattr(entity, name)
        if isinstance(value, ErrorCode):
            found.append(value)
        elif isinstance(value, tuple):
            for item in value:
                found.extend(errors_of(item))
    return found


@attrs.frozen
class Case:
    """One request: refused with ``refused`` holding only ``partial``, answered
    without an authorization error holding ``needed``."""

    name: str
    body: Callable[[], Any]
    refused: ErrorCode | None
    needed: Sequence[Grant]
    partial: Sequence[Grant] = ()
    check_refused: Callable[[Any], bool] | None = None
    check_allowed: Callable[[Any], bool] | None = None


def _fetch_offsets(version: int) -> Any:
    if version >= 8:
        return nested_body(
            9,
            version,
            groups=[
                {
                    "group_id": GROUP,
                    "topics": [{"name": TOPIC, "partition_indexes": (0,)}],
                }
            ],
            require_stable=False,
        )
    return nested_body(
        9,
        version,
        group_id=GROUP,
        topics=[{"name": TOPIC, "partition_indexes": (0,)}],
        require_stable=False,
    )


def _commit(api_key: int = 8) -> Any:
    partition = {
        "partition_index": 0,
        "committed_offset": 1,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    return nested_body(
        api_key,
        highest(api_key),
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        transactional_id=TXN,
        producer_id=5,
        producer_epoch=0,
        topics=[{"name": TOPIC, "partitions": [partition]}],
    )


def _configs(api_key: int, resource_type: int, name: str, value: str | None) -> Any:
    config = {"name": "retention.ms", "value": value, "config_operation": 0}
    return nested_body(
        api_key,
        highest(api_key),
        resources=[
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configuration_keys": None,
                "configs": [config],
            }
        ],
        include_synonyms=False,
        include_documentation=False,
        validate_only=False,
    )


def _metadata_operations(response: Any) -> bool:
    [topic] = response.topics
    return (
        topic.error_code is ErrorCode.none
        and topic.topic_authorized_operations == 1 << Op.DESCRIBE
    )


def _transactional_produce() -> Any:
    records = build_batch(
        [Record(offset=0, timestamp=0, key=None, value=b"v")],
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    partition = {"index": 0, "records": records}
    return nested_body(
        0,
        highest(0) - 1,  # by name (v13 names topics by id)
        transactional_id=TXN,
        acks=-1,
        timeout=SECONDS,
        topic_data=[{"name": TOPIC, "partition_data": [partition]}],
    )


CASES: tuple[Case, ...] = (
    Case(
        "A transactional Produce needs WRITE on its transactional id",
        _transactional_produce,
        ErrorCode.transactional_id_authorization_failed,
        [(TXN_R, TXN, Op.WRITE), (TOPIC_R, TOPIC, Op.WRITE)],
        partial=[(TOPIC_R, TOPIC, Op.WRITE)],
    ),
    Case(
        "ListOffsets needs DESCRIBE on the topic",
        lambda: nested_body(
            2,
            highest(2),
            replica_id=-1,
            isolation_level=0,
            timeout=SECONDS,
            topics=[
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "timestamp": -1,
                            "current_leader_epoch": -1,
                        }
                    ],
                }
            ],
        ),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.DESCRIBE)],
    ),
    Case(
        "Metadata: a topic needs DESCRIBE; its operations are the principal's",
        lambda: nested_body(
            3,
            highest(3),
            topics=[{"name": TOPIC, "topic_id": uuid.UUID(int=0)}],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=True,
        ),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.DESCRIBE)],
        check_allowed=_metadata_operations,
    ),
    Case(
        "FindCoordinator needs DESCRIBE on the group",
        lambda: nested_body(10, highest(10), key_type=0, coordinator_keys=(GROUP,)),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, GROUP, Op.DESCRIBE)],
    ),
    Case(
        "FindCoordinator needs DESCRIBE on the transactional id",
        lambda: nested_body(10, highest(10), key_type=1, coordinator_keys=(TXN,)),
        ErrorCode.transactional_id_authorization_failed,
        [(TXN_R, TXN, Op.DESCRIBE)],
    ),
    Case(
        "OffsetCommit needs READ on the group",
        _commit,
        ErrorCode.group_authorization_failed,
        [(GROUP_R, GROUP, Op.READ), (TOPIC_R, TOPIC, Op.READ)],
    ),
    Case(
        "OffsetCommit needs READ on the topic",
        _commit,
        ErrorCode.topic_authorization_failed,
        [(GROUP_R, GROUP, Op.READ), (TOPIC_R, TOPIC, Op.READ)],
        partial=[(GROUP_R, GROUP, Op.READ)],
    ),
    Case(
        "OffsetFetch (several groups) needs DESCRIBE on the group",
        lambda: _fetch_offsets(highest(9)),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, GROUP, Op.DESCRIBE), (TOPIC_R, TOPIC, Op.DESCRIBE)],
    ),
    Case(
        "OffsetFetch (one group) needs DESCRIBE on the group",
        lambda: _fetch_offsets(7),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, GROUP, Op.DESCRIBE), (TOPIC_R, TOPIC, Op.DESCRIBE)],
    ),
    Case(
        "OffsetFetch needs DESCRIBE on the topic",
        lambda: _fetch_offsets(highest(9)),
        ErrorCode.topic_authorization_failed,
        [(GROUP_R, GROUP, Op.DESCRIBE), (TOPIC_R, TOPIC, Op.DESCRIBE)],
        partial=[(GROUP_R, GROUP, Op.DESCRIBE)],
    ),
    Case(
        "DescribeGroups needs DESCRIBE on the group; its operations are the principal's",
        lambda: nested_body(
            15, highest(15), groups=(GROUP,), include_authorized_operations=True
        ),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, GROUP, Op.DESCRIBE)],
        check_allowed=lambda r: r.groups[0].authorized_operations == 1 << Op.DESCRIBE,
    ),
    Case(
        "ListGroups lists only the groups the principal may DESCRIBE",
        lambda: nested_body(16, highest(16), states_filter=(), types_filter=()),
        None,
        [(GROUP_R, GROUP, Op.DESCRIBE)],
        check_refused=lambda r: GROUP not in {g.group_id for g in r.groups},
        check_allowed=lambda r: GROUP in {g.group_id for g in r.groups},
    ),
    Case(
        "DescribeConfigs of a topic needs DESCRIBE_CONFIGS on it",
        lambda: _configs(32, 2, TOPIC, None),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.DESCRIBE_CONFIGS)],
    ),
    Case(
        "DescribeConfigs of a broker needs DESCRIBE_CONFIGS on the cluster",
        lambda: _configs(32, 4, "1", None),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)],
    ),
    Case(
        "AlterConfigs of a topic needs ALTER_CONFIGS on it",
        lambda: _configs(33, 2, TOPIC, "3600000"),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.ALTER_CONFIGS)],
    ),
    Case(
        "IncrementalAlterConfigs of a topic needs ALTER_CONFIGS on it",
        lambda: _configs(44, 2, TOPIC, "7200000"),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.ALTER_CONFIGS)],
    ),
    Case(
        "CreatePartitions needs ALTER on the topic",
        lambda: nested_body(
            37,
            highest(37),
            topics=[{"name": TOPIC, "count": 3, "assignments": None}],
            timeout=SECONDS,
            validate_only=False,
        ),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.ALTER)],
    ),
    Case(
        "DeleteRecords needs DELETE on the topic",
        lambda: nested_body(
            21,
            highest(21),
            topics=[
                {"name": TOPIC, "partitions": [{"partition_index": 0, "offset": 1}]}
            ],
            timeout=SECONDS,
        ),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.DELETE)],
    ),
    Case(
        "DescribeProducers needs READ on the topic",
        lambda: nested_body(61, 0, topics=[{"name": TOPIC, "partition_indexes": (0,)}]),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.READ)],
    ),
    Case(
        "OffsetForLeaderEpoch from a consumer needs DESCRIBE on the topic",
        lambda: nested_body(
            23,
            highest(23),
            replica_id=-1,
            topics=[
                {
                    "topic": TOPIC,
                    "partitions": [
                        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}
                    ],
                }
            ],
        ),
        ErrorCode.topic_authorization_failed,
        [(TOPIC_R, TOPIC, Op.DESCRIBE)],
    ),
    Case(
        "OffsetForLeaderEpoch from a follower needs CLUSTER_ACTION",
        lambda: nested_body(
            23,
            highest(23),
            replica_id=7,
            topics=[
                {
                    "topic": TOPIC,
                    "partitions": [
                        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}
                    ],
                }
            ],
        ),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
    ),
    Case(
        "DescribeCluster: no operations without DESCRIBE on the cluster",
        lambda: nested_body(
            60,
            highest(60),
            include_cluster_authorized_operations=True,
            endpoint_type=1,
            include_fenced_brokers=False,
        ),
        None,
        [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)],
        check_refused=lambda r: r.cluster_authorized_operations == 0,
        check_allowed=lambda r: r.cluster_authorized_operations == 1 << Op.DESCRIBE,
    ),
    Case(
        "InitProducerId of a transactional producer needs WRITE on its id",
        lambda: nested_body(
            22,
            highest(22),
            transactional_id=TXN,
            transaction_timeout=SECONDS,
            producer_id=-1,
            producer_epoch=-1,
        ),
        ErrorCode.transactional_id_authorization_failed,
        [(TXN_R, TXN, Op.WRITE)],
    ),
    Case(
        "InitProducerId of an idempotent producer needs IDEMPOTENT_WRITE or WRITE on a topic",
        lambda: nested_body(
            22,
            highest(22),
            transactional_id=None,
            transaction_timeout=SECONDS,
            producer_id=-1,
            producer_epoch=-1,
        ),
        ErrorCode.cluster_authorization_failed,
        [(TOPIC_R, TOPIC, Op.WRITE)],
    ),
    Case(
        "AddPartitionsToTxn needs WRITE on the transactional id",
        lambda: nested_body(
            24,
            3,
            v3_and_below_transactional_id=TXN,
            v3_and_below_producer_id=5,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=[{"name": TOPIC, "partitions": (0,)}],
            transactions=(),
        ),
        ErrorCode.transactional_id_authorization_failed,
        [(TXN_R, TXN, Op.WRITE), (TOPIC_R, TOPIC, Op.WRITE)],
    ),
    Case(
        "AddPartitionsToTxn needs WRITE on the topic",
        lambda: nested_body(
            24,
            3,
            v3_and_below_transactional_id=TXN,
            v3_and_below_producer_id=5,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=[{"name": TOPIC, "partitions": (0,)}],
            transactions=(),
        ),
        ErrorCode.topic_authorization_failed,
        [(TXN_R, TXN, Op.WRITE), (TOPIC_R, TOPIC, Op.WRITE)],
        partial=[(TXN_R, TXN, Op.WRITE)],
    ),
    Case(
        "AddPartitionsToTxn from a broker (v4+) needs CLUSTER_ACTION",
        lambda: nested_body(
            24,
            highest(24),
            transactions=(),
            v3_and_below_transactional_id="",
            v3_and_below_producer_id=0,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=(),
        ),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
    ),
    Case(
        "AddOffsetsToTxn needs READ on the group",
        lambda: nested_body(
            25,
            highest(25),
            transactional_id=TXN,
            producer_id=5,
            producer_epoch=0,
            group_id=GROUP,
        ),
        ErrorCode.group_authorization_failed,
        [(TXN_R, TXN, Op.WRITE), (GROUP_R, GROUP, Op.READ)],
        partial=[(TXN_R, TXN, Op.WRITE)],
    ),
    Case(
        "EndTxn needs WRITE on the transactional id",
        lambda: nested_body(
            26,
            highest(26),
            transactional_id=TXN,
            producer_id=5,
            producer_epoch=0,
            committed=False,
        ),
        ErrorCode.transactional_id_authorization_failed,
        [(TXN_R, TXN, Op.WRITE)],
    ),
    Case(
        "TxnOffsetCommit needs WRITE on the transactional id",
        lambda: _commit(28),
        ErrorCode.transactional_id_authorization_failed,
        [(TXN_R, TXN, Op.WRITE), (GROUP_R, GROUP, Op.READ), (TOPIC_R, TOPIC, Op.READ)],
    ),
    Case(
        "TxnOffsetCommit needs READ on the topic",
        lambda: _commit(28),
        ErrorCode.topic_authorization_failed,
        [(TXN_R, TXN, Op.WRITE), (GROUP_R, GROUP, Op.READ), (TOPIC_R, TOPIC, Op.READ)],
        partial=[(TXN_R, TXN, Op.WRITE), (GROUP_R, GROUP, Op.READ)],
    ),
    Case(
        "DescribeTransactions needs DESCRIBE on the transactional id",
        lambda: nested_body(65, 0, transactional_ids=(TXN,)),
        ErrorCode.transactional_id_authorization_failed,
        [(TXN_R, TXN, Op.DESCRIBE)],
    ),
    Case(
        "ListPartitionReassignments needs DESCRIBE on the cluster",
        lambda: nested_body(46, 0, timeout=SECONDS, topics=None),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)],
    ),
    Case(
        "AlterPartitionReassignments needs ALTER on the cluster",
        lambda: nested_body(
            45,
            highest(45),
            timeout=SECONDS,
            topics=(),
            allow_replication_factor_change=True,
        ),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.ALTER)],
    ),
    Case(
        "ElectLeaders needs ALTER on the cluster",
        lambda: nested_body(
            43,
            highest(43),
            election_type=0,
            topic_partitions=[{"topic": TOPIC, "partitions": (0,)}],
            timeout=SECONDS,
        ),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.ALTER)],
    ),
    Case(
        "UnregisterBroker needs ALTER on the cluster",
        # An id never registered: allowed, the controller's own refusal comes back.
        lambda: nested_body(64, 0, broker_id=99),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.ALTER)],
        check_allowed=lambda r: r.error_code is ErrorCode.broker_id_not_registered,
    ),
    Case(
        "DescribeLogDirs needs DESCRIBE on the cluster",
        lambda: nested_body(35, highest(35), topics=None),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)],
    ),
    Case(
        "DescribeUserScramCredentials needs DESCRIBE on the cluster",
        lambda: nested_body(50, 0, users=None),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)],
    ),
    Case(
        "ListTransactions lists only the ids the principal may DESCRIBE",
        lambda: nested_body(
            66,
            highest(66),
            state_filters=(),
            producer_id_filters=(),
            duration_filter=-1,
            transactional_id_pattern=None,
        ),
        None,
        [(TXN_R, TXN, Op.DESCRIBE)],
        check_refused=lambda r: not r.transaction_states,
        check_allowed=lambda r: (
            [t.transactional_id for t in r.transaction_states] == [TXN]
        ),
    ),
    Case(
        "DescribeQuorum needs DESCRIBE on the cluster",
        lambda: nested_body(
            55, highest(55), topics=encode_describe_quorum_request().topics
        ),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)],
    ),
    Case(
        "AlterUserScramCredentials needs ALTER on the cluster",
        lambda: nested_body(
            51,
            0,
            deletions=(),
            upsertions=[
                {
                    "name": "alice",
                    "mechanism": 1,
                    "iterations": 4096,
                    "salt": b"salt",
                    "salted_password": b"\x01" * 32,
                }
            ],
        ),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.ALTER)],
    ),
    Case(
        "ConsumerGroupHeartbeat needs READ on the group",
        lambda: nested_body(
            68,
            highest(68),
            group_id="kip848",
            member_id=uuid.uuid4().hex[:22],
            member_epoch=0,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=SECONDS,
            subscribed_topic_names=(TOPIC,),
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=(),
        ),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, "kip848", Op.READ), (TOPIC_R, TOPIC, Op.DESCRIBE)],
    ),
    Case(
        "ConsumerGroupDescribe needs DESCRIBE on the group",
        lambda: nested_body(
            69, highest(69), group_ids=("kip848",), include_authorized_operations=False
        ),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, "kip848", Op.DESCRIBE)],
    ),
    Case(
        "OffsetDelete needs DELETE on the group",
        lambda: nested_body(
            47,
            0,
            group_id=GROUP,
            topics=[{"name": TOPIC, "partitions": [{"partition_index": 0}]}],
        ),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, GROUP, Op.DELETE), (TOPIC_R, TOPIC, Op.READ)],
    ),
    Case(
        "DeleteGroups needs DELETE on the group",
        lambda: nested_body(42, highest(42), groups_names=(GROUP,)),
        ErrorCode.group_authorization_failed,
        [(GROUP_R, GROUP, Op.DELETE)],
    ),
    Case(
        "WriteTxnMarkers (inter-broker) needs CLUSTER_ACTION",
        lambda: nested_body(
            27,
            1,
            markers=[
                {
                    "producer_id": 99,
                    "producer_epoch": 0,
                    "transaction_result": False,
                    "coordinator_epoch": 0,
                    "topics": [{"name": TOPIC, "partition_indexes": (1,)}],
                }
            ],
        ),
        ErrorCode.cluster_authorization_failed,
        [(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
    ),
)


LOGS = (
    TopicPartition(TOPIC, 0),
    TopicPartition(TOPIC, 1),
    TopicPartition("__consumer_offsets", 0),
    TopicPartition("__transaction_state", 0),
)


def binding(grant: Grant) -> AclBinding:
    resource_type, name, operation = grant
    return AclBinding(
        ResourcePattern(resource_type, name, PatternType.LITERAL),
        AccessControlEntry(ANONYMOUS, "*", operation, AclPermissionType.ALLOW),
    )


EVERY_ACL = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
)


@attrs.define
class Authorized:
    server: BrokerServer
    client: WireClient

    async def grant(self, grants: Sequence[Grant]) -> None:
        """Exactly ``grants``: every other ACL is deleted first."""
        controller = self.server.apis.controller
        with trio.fail_after(30):
            await controller.submit(DeleteAclsRequest((EVERY_ACL,)))
            if grants:
                await controller.submit(
                    CreateAclsRequest(tuple(binding(g) for g in grants))
                )
        cache = self.server.apis.metadata_cache
        await wait_until(lambda: len(cache.image.acls) == len(grants), deadline=30)

    def state(self) -> object:
        """What a refused request must leave as it was."""
        image = self.server.apis.metadata_cache.image
        logs = {}
        for tp in LOGS:
            p = self.server.apis.replica_manager.get_partition(tp)
            assert p is not None
            logs[tp] = (p.log.log_start_offset, p.log.log_end_offset)
        return (image.topics, image.configs, image.next_producer_id, logs)


@asynccontextmanager
async def authorized(tmp_path: Path) -> AsyncIterator[Authorized]:
    """A broker with an authorizer, TOPIC (two partitions, records in both), a
    committed offset of GROUP and ``__transaction_state``; the client has no ACL."""
    config = single_node_config(
        tmp_path,
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.num.partitions": "1",
        },
    )
    async with running_broker(config) as server, AsyncExitStack() as stack:
        host, port = server.bound_address()
        network = await stack.enter_async_context(NetworkClient.open(client_id="authz"))
        broker = Authorized(
            server, WireClient(network, Node(config.node_id, host, port))
        )
        everything = [
            (CLUSTER, CLUSTER_NAME, Op.ALL),
            (TOPIC_R, "*", Op.ALL),
            (GROUP_R, "*", Op.ALL),
            (TXN_R, "*", Op.ALL),
        ]
        await broker.grant(everything)
        call = broker.client.call
        created = await call(
            nested_body(
                19,
                4,
                topics=[
                    {
                        "name": TOPIC,
                        "num_partitions": 2,
                        "replication_factor": 1,
                        "assignments": (),
                        "configs": (),
                    }
                ],
                timeout=SECONDS,
                validate_only=False,
            )
        )
        assert errors_of(created) == [ErrorCode.none]
        for key_type, key in ((0, GROUP), (1, TXN)):  # the internal topics
            await call(request_body(10, 3, key=key, key_type=key_type))
        await wait_until(
            lambda: all(
                server.apis.replica_manager.get_partition(TopicPartition(t, 0))
                is not None
                for t in (TOPIC, "__consumer_offsets", "__transaction_state")
            ),
            deadline=30,
        )
        initialized = await call(
            nested_body(
                22,
                highest(22),
                transactional_id=TXN,
                transaction_timeout=SECONDS,
                producer_id=-1,
                producer_epoch=-1,
            )
        )
        assert initialized.error_code is ErrorCode.none
        committed = await call(_commit())
        assert set(errors_of(committed)) == {ErrorCode.none}
        await broker.grant(())
        yield broker


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_a_request_without_its_acl_is_refused_with_kafkas_error_and_changes_nothing(
    tmp_path: Path, case: Case
) -> None:
    """The principal with fewer ACLs than the request needs gets Kafka's error and the
    broker's state is unchanged; with the ACLs it needs, no authorization error."""
    async with authorized(tmp_path) as broker:
        await broker.grant(case.partial)
        before = broker.state()
        refused = await broker.client.call(case.body())
        if case.refused is not None:
            assert case.refused in errors_of(refused), refused
        if case.check_refused is not None:
            assert case.check_refused(refused), refused
        assert broker.state() == before
        await broker.grant(case.needed)
        allowed = await broker.client.call(case.body())
        assert not AUTHORIZATION_ERRORS & set(errors_of(allowed)), allowed
        if case.check_allowed is not None:
            assert case.check_allowed(allowed), allowed


def test_every_api_has_a_row_or_is_checked_elsewhere() -> None:
    """Each API the broker serves is in the table above, or its checks are tested
    with real clients (Produce's topic WRITE, Fetch, the classic group protocol's member APIs,
    CreateTopics, DeleteTopics, the ACL APIs: tests/compat/test_acl_authorization.py
    and test_acls.py), or it needs no ACL (ApiVersions, SASL, DescribeQuorum's and
    ListTransactions' answers are asserted by their own tests)."""
    tabled = {int(c.body().__api_key__) for c in CASES}
    elsewhere = {1, 11, 12, 13, 14, 17, 18, 19, 20, 29, 30, 31, 36}
    assert tabled | elsewhere == set(KafkaApis.SUPPORTED)
