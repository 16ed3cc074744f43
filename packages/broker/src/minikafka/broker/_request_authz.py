"""The authorization checks that refuse a whole request before its handler runs
(Kafka's ``KafkaApis`` and ``ControllerApis``, each API's first ``authHelper`` call).

Cluster operations (reassignments, elections, log dirs, the quorum, SCRAM credentials,
unregistering a broker, the inter-broker WriteTxnMarkers), a transactional id's WRITE
(a transactional Produce, InitProducerId, EndTxn, AddOffsetsToTxn, AddPartitionsToTxn,
TxnOffsetCommit) and a group's READ or DELETE (OffsetCommit, OffsetDelete,
ConsumerGroupHeartbeat, a single group's OffsetFetch) are asked here; a refused request
is answered with Kafka's error in every place the response has one, and nothing reaches
the coordinator, the controller or the log. The checks item by item (a topic among
others, a group among others) stay in the handlers, which answer the refused items
beside the others.

Called only with an authorizer: without one ``KafkaApis.handle`` tests one attribute.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from minikafka.common import TopicPartition
from minikafka.net import ApiKey, Request, build, has_field, nested
from minikafka.raft.wire import describe_quorum_error_v2, encode_describe_quorum_error
from minikafka.replication import ProducePartitionResult
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer
from ._groups import respond_group_error
from ._produce import _topic_names, encode_produce_response

_NO_THROTTLE = datetime.timedelta(0)
_CLUSTER_DENIED = ErrorCode.cluster_authorization_failed
_TXN_DENIED = ErrorCode.transactional_id_authorization_failed
_GROUP_DENIED = ErrorCode.group_authorization_failed
_TOPIC_DENIED = ErrorCode.topic_authorization_failed
_TRANSACTIONAL = 0x10
"""A record batch's attributes bit for a transactional batch."""


def refused(request: Request, authorizer: BrokerAuthorizer) -> bool:
    """Answer the request with Kafka's error and return True if its principal may not
    make it at all; False (nothing answered) if the handler should go on."""
    gate = _GATES.get(request.api_key)
    return gate is not None and gate(request, authorizer)


def transactional_records(body: Any) -> bool:
    """Kafka's ``RequestUtils.hasTransactionalRecords``: does any partition's first
    batch carry the transactional bit (a batch's attributes are bytes 21-22)."""
    return any(
        len(data.records or b"") > 22 and data.records[22] & _TRANSACTIONAL
        for topic in body.topic_data
        for data in topic.partition_data
    )


def refused_transactional_write(
    request: Request, authorizer: BrokerAuthorizer, body: Any
) -> bool:
    """A transactional Produce needs WRITE on its transactional id (none named: refused
    too), as Kafka's ``handleProduceRequest`` asks before any topic."""
    if not transactional_records(body):
        return False
    txn = body.transactional_id
    return txn is None or not authorizer.txn_allowed(request, AclOperation.WRITE, txn)


def _produce(request: Request, authorizer: BrokerAuthorizer) -> bool:
    """A transactional Produce its principal may not make: every partition answered
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's error response), or with acks=0 the
    connection closed, as the produce handler answers an error it cannot send."""
    body: Any = request.body
    if not refused_transactional_write(request, authorizer, body):
        return False
    if int(body.acks) == 0:
        request.close_connection()
        return True
    ids: dict[str, uuid.UUID] = {}
    names = _topic_names(body, authorizer.cache, ids)
    order = [
        TopicPartition(name, int(data.index))
        for name, topic in zip(names, body.topic_data, strict=True)
        for data in topic.partition_data
    ]
    result = ProducePartitionResult(_TXN_DENIED)
    results = dict.fromkeys(order, result)
    version = request.api_version
    request.respond_parts((encode_produce_response(version, order, results, ids),))
    return True


def epoch_refusals(
    request: Request, authorizer: BrokerAuthorizer, body: Any
) -> dict[str, ErrorCode]:
    """Kafka's ``handleOffsetForLeaderEpochRequest``: a follower's request (a replica id
    other than a consumer's -1; v2 has none and counts as a follower's) needs
    CLUSTER_ACTION, or every topic is CLUSTER_AUTHORIZATION_FAILED; a consumer's needs
    DESCRIBE on each topic. The refused topics and their errors."""
    names = [t.topic for t in body.topics]
    if getattr(body, "replica_id", -2) != -1:
        if authorizer.cluster_allowed(request, AclOperation.CLUSTER_ACTION):
            return {}
        return dict.fromkeys(names, ErrorCode.cluster_authorization_failed)
    denied = authorizer.denied_topics(request, AclOperation.DESCRIBE, names)
    return dict.fromkeys(denied, ErrorCode.topic_authorization_failed)


def _answer(request: Request, **fields: object) -> None:
    request.respond(
        build(request.response_class(), throttle_time=_NO_THROTTLE, **fields)
    )


def _fit(cls: type[Entity], **values: object) -> Entity:
    """``cls`` built from those of ``values`` it has (a topic is ``name`` in most
    responses, ``topic`` in ElectLeaders'; a partition's error has two names too)."""
    return build(cls, **{k: v for k, v in values.items() if has_field(cls, k)})


def _partitions(
    cls: type[Entity], topics: Iterable[Any], error: ErrorCode, *, keys: tuple[str, ...]
) -> tuple[Entity, ...]:
    """Each requested topic's partitions, every one answered ``error``: ``keys`` name
    the response's topics field, partitions field and partition index field, then the
    request's partitions field."""
    topics_field, parts_field, index_field, asked_field = keys
    topic_cls = nested(cls, topics_field)
    part_cls = nested(topic_cls, parts_field)
    answered = []
    for t in topics:
        name = getattr(t, "name", None) or getattr(t, "topic", "")
        parts = tuple(
            _fit(
                part_cls,
                error_code=error,
                partition_error_code=error,
                error_message=None,
                **{index_field: int(getattr(p, "partition_index", p))},
            )
            for p in getattr(t, asked_field)
        )
        answered.append(_fit(topic_cls, name=name, topic=name, **{parts_field: parts}))
    return tuple(answered)


# --- the cluster's operations ----------------------------------------------------------


def _cluster(operation: AclOperation) -> Callable[[Request, BrokerAuthorizer], bool]:
    def gate(request: Request, authorizer: BrokerAuthorizer) -> bool:
        if authorizer.cluster_allowed(request, operation):
            return False
        _CLUSTER_ANSWERS[request.api_key](request)
        return True

    return gate


def _write_txn_markers(request: Request) -> None:
    cls = request.response_class()
    marker_cls = nested(cls, "markers")
    markers = tuple(
        build(
            marker_cls,
            producer_id=m.producer_id,
            topics=_partitions(
                marker_cls,
                m.topics,
                _CLUSTER_DENIED,
                keys=("topics", "partitions", "partition_index", "partition_indexes"),
            ),
        )
        for m in getattr(request.body, "markers", ())
    )
    request.respond(build(cls, markers=markers))


def _alter_reassignments(request: Request) -> None:
    cls = request.response_class()
    responses = _partitions(
        cls,
        getattr(request.body, "topics", ()),
        _CLUSTER_DENIED,
        keys=("responses", "partitions", "partition_index", "partitions"),
    )
    _answer(
        request, error_code=_CLUSTER_DENIED, error_message=None, responses=responses
    )


def _elect_leaders(request: Request) -> None:
    cls = request.response_class()
    results = _partitions(
        cls,
        getattr(request.body, "topic_partitions", None) or (),
        _CLUSTER_DENIED,
        keys=(
            "replica_election_results",
            "partition_result",
            "partition_id",
            "partitions",
        ),
    )
    _answer(request, error_code=_CLUSTER_DENIED, replica_election_results=results)


def _describe_quorum(request: Request) -> None:
    error = encode_describe_quorum_error(_CLUSTER_DENIED)
    request.respond(
        describe_quorum_error_v2(error) if request.api_version >= 2 else error
    )


def _alter_scram(request: Request) -> None:
    body: Any = request.body
    result_cls = nested(request.response_class(), "results")
    users = dict.fromkeys(u.name for u in (*body.deletions, *body.upsertions))
    results = tuple(
        build(result_cls, user=u, error_code=_CLUSTER_DENIED, error_message=None)
        for u in users
    )
    _answer(request, results=results)


_CLUSTER_ANSWERS: dict[int, Callable[[Request], None]] = {
    ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: lambda r: _answer(
        r, error_code=_CLUSTER_DENIED, error_message=None, topics=()
    ),
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.DESCRIBE_LOG_DIRS: lambda r: _answer(
        r, error_code=_CLUSTER_DENIED, results=()
    ),
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
    ApiKey.UNREGISTER_BROKER: lambda r: _answer(
        r, error_code=_CLUSTER_DENIED, error_message=None
    ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: lambda r: _answer(
        r, error_code=_CLUSTER_DENIED, error_message=None, results=()
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
}


# --- transactional ids and groups ------------------------------------------------------


def _init_producer_id(request: Request, authorizer: BrokerAuthorizer) -> bool:
    """Kafka's ``handleInitProducerIdRequest``: a transactional producer needs WRITE on
    its id; an idempotent one IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    (KIP-679)."""
    txn = getattr(request.body, "transactional_id", None)
    if txn is not None:
        if authorizer.txn_allowed(request, AclOperation.WRITE, txn):
            return False
        error = _TXN_DENIED
    elif authorizer.cluster_allowed(
        request, AclOperation.IDEMPOTENT_WRITE
    ) or authorizer.any_topic_allowed(request, AclOperation.WRITE):
        return False
    else:
        error = _CLUSTER_DENIED
    _answer(request, error_code=error, producer_id=-1, producer_epoch=-1)
    return True


def _end_txn(request: Request, authorizer: BrokerAuthorizer) -> bool:
    txn = str(getattr(request.body, "transactional_id", ""))
    if authorizer.txn_allowed(request, AclOperation.WRITE, txn):
        return False
    _answer(request, error_code=_TXN_DENIED)
    return True


def _add_offsets_to_txn(request: Request, authorizer: BrokerAuthorizer) -> bool:
    body: Any = request.body
    if not authorizer.txn_allowed(request, AclOperation.WRITE, body.transactional_id):
        error = _TXN_DENIED
    elif not authorizer.group_allowed(request, AclOperation.READ, body.group_id):
        error = _GROUP_DENIED
    else:
        return False
    _answer(request, error_code=error)
    return True


def _add_partitions_to_txn(request: Request, authorizer: BrokerAuthorizer) -> bool:
    """v0-3 (a producer's): WRITE on the transactional id, then on every topic; if
    any topic is refused, the others are answered OPERATION_NOT_ATTEMPTED and nothing is
    added. v4+ (KIP-890, brokers verifying a transaction): CLUSTER_ACTION."""
    body: Any = request.body
    cls = request.response_class()
    if request.api_version >= 4:
        if authorizer.cluster_allowed(request, AclOperation.CLUSTER_ACTION):
            return False
        _answer(request, error_code=_CLUSTER_DENIED, results_by_transaction=())
        return True
    topics = body.v3_and_below_topics
    if not authorizer.txn_allowed(
        request, AclOperation.WRITE, body.v3_and_below_transactional_id
    ):
        denied = frozenset(t.name for t in topics)
        error = _TXN_DENIED
    else:
        names = (t.name for t in topics)
        denied = authorizer.denied_topics(request, AclOperation.WRITE, names)
        error = _TOPIC_DENIED
        if not denied:
            return False
    keys = ("results_by_topic_v3_and_below", "results_by_partition")
    topic_cls = nested(cls, keys[0])
    part_cls = nested(topic_cls, keys[1])
    results = tuple(
        build(
            topic_cls,
            name=t.name,
            results_by_partition=tuple(
                build(
                    part_cls,
                    partition_index=p,
                    partition_error_code=error
                    if t.name in denied
                    else ErrorCode.operation_not_attempted,
                )
                for p in t.partitions
            ),
        )
        for t in topics
    )
    _answer(request, results_by_topic_v3_and_below=results)
    return True


def _txn_offset_commit(request: Request, authorizer: BrokerAuthorizer) -> bool:
    body: Any = request.body
    if not authorizer.txn_allowed(request, AclOperation.WRITE, body.transactional_id):
        error = _TXN_DENIED
    elif not authorizer.group_allowed(request, AclOperation.READ, body.group_id):
        error = _GROUP_DENIED
    else:
        return False
    cls = request.response_class()
    keys = ("topics", "partitions", "partition_index", "partitions")
    _answer(request, topics=_partitions(cls, body.topics, error, keys=keys))
    return True


def _offset_commit(request: Request, authorizer: BrokerAuthorizer) -> bool:
    group_id = str(getattr(request.body, "group_id", ""))
    if authorizer.group_allowed(request, AclOperation.READ, group_id):
        return False
    respond_group_error(request, _GROUP_DENIED)
    return True


def _offset_delete(request: Request, authorizer: BrokerAuthorizer) -> bool:
    group_id = str(getattr(request.body, "group_id", ""))
    if authorizer.group_allowed(request, AclOperation.DELETE, group_id):
        return False
    _answer(request, error_code=_GROUP_DENIED, topics=())
    return True


def _offset_fetch(request: Request, authorizer: BrokerAuthorizer) -> bool:
    """One group's OffsetFetch (v0-7) needs DESCRIBE on it: v2+ answer the error alone,
    v0-1 (no top-level error) on each partition asked. v8+ ask per group, in the
    handler."""
    body: Any = request.body
    if request.api_version >= 8 or authorizer.group_allowed(
        request, AclOperation.DESCRIBE, body.group_id
    ):
        return False
    if request.api_version >= 2:
        _answer(request, error_code=_GROUP_DENIED, topics=())
        return True
    cls = request.response_class()
    topic_cls = nested(cls, "topics")
    part_cls = nested(topic_cls, "partitions")
    topics = tuple(
        build(
            topic_cls,
            name=t.name,
            partitions=tuple(
                build(
                    part_cls,
                    partition_index=p,
                    committed_offset=-1,
                    metadata="",
                    error_code=_GROUP_DENIED,
                )
                for p in t.partition_indexes
            ),
        )
        for t in body.topics or ()
    )
    _answer(request, topics=topics)
    return True


def _consumer_group_heartbeat(request: Request, authorizer: BrokerAuthorizer) -> bool:
    """KIP-848's heartbeat needs READ on the group, then DESCRIBE on each subscribed
    topic (Kafka's ``handleConsumerGroupHeartbeat``)."""
    body: Any = request.body
    if not authorizer.group_allowed(request, AclOperation.READ, body.group_id):
        respond_group_error(request, _GROUP_DENIED)
        return True
    names = body.subscribed_topic_names or ()
    if not authorizer.denied_topics(request, AclOperation.DESCRIBE, names):
        return False
    respond_group_error(request, _TOPIC_DENIED)
    return True


_GATES: dict[int, Callable[[Request, BrokerAuthorizer], bool]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.WRITE_TXN_MARKERS: _cluster(AclOperation.CLUSTER_ACTION),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _cluster(AclOperation.ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster(AclOperation.DESCRIBE),
    ApiKey.ELECT_LEADERS: _cluster(AclOperation.ALTER),
    ApiKey.UNREGISTER_BROKER: _cluster(AclOperation.ALTER),
    ApiKey.DESCRIBE_LOG_DIRS: _cluster(AclOperation.DESCRIBE),
    ApiKey.DESCRIBE_QUORUM: _cluster(AclOperation.DESCRIBE),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster(AclOperation.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _cluster(AclOperation.ALTER),
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.END_TXN: _end_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets_to_txn,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_DELETE: _offset_delete,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _consumer_group_heartbeat,
}
