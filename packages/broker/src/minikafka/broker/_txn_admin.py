"""DescribeTransactions and ListTransactions (KIP-664; ListTransactions v1 adds KIP-994's
duration filter, v2 KIP-1152's transactional id pattern): what ``kafka-transactions.sh
describe`` and ``list`` ask, Kafka's ``KafkaApis`` handlers of both.

An operator looking for a hanging transaction asks every broker for the transactions it
coordinates (ListTransactions: each transaction coordinator knows only the ids of the
``__transaction_state`` partitions it leads), then the coordinator of one id for its
state (DescribeTransactions, after FindCoordinator with key type 1). Both are reads of
this broker's transaction coordinator
(:meth:`~minikafka.coordination.TransactionCoordinatorShell.describe_transactions`,
``list_transactions``), answered at once; each id's error is its own.
"""

from __future__ import annotations

import datetime

import attrs
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_transactions.v0.request import (
    ListTransactionsRequest as ListTransactionsRequestV0,
)
from kio.schema.list_transactions.v1.request import (
    ListTransactionsRequest as ListTransactionsRequestV1,
)
from kio.schema.list_transactions.v2.request import (
    ListTransactionsRequest as ListTransactionsRequestV2,
)

from minikafka.coordination import TransactionCoordinatorShell, TransactionDescription
from minikafka.net import Request, build, nested
from minikafka.security import AclOperation

from ._authorization import BrokerAuthorizer

ListTransactionsRequest = (
    ListTransactionsRequestV0 | ListTransactionsRequestV1 | ListTransactionsRequestV2
)
LIST_REQUESTS: tuple[type[ListTransactionsRequest], ...] = (
    ListTransactionsRequestV0,
    ListTransactionsRequestV1,
    ListTransactionsRequestV2,
)
NO_THROTTLE = datetime.timedelta(0)
NO_DURATION_FILTER = -1
"""ListTransactions v0 has no duration filter: every transaction passes."""


DESCRIBE = AclOperation.DESCRIBE
TXN_DENIED = ErrorCode.transactional_id_authorization_failed


def handle_describe_transactions(
    request: Request,
    transactions: TransactionCoordinatorShell,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """DescribeTransactions v0: one answer per id asked, in the order asked. With an
    authorizer (Kafka's ``handleDescribeTransactionsRequest``) an id needs DESCRIBE
    (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and only the partitions of topics the
    principal may DESCRIBE are listed."""
    body = request.body_as((DescribeTransactionsRequest,))
    ids = [str(t) for t in body.transactional_ids]
    refused: set[str] = set()
    if authorizer is not None:
        refused = {t for t in ids if not authorizer.txn_allowed(request, DESCRIBE, t)}
    described = transactions.describe_transactions(t for t in ids if t not in refused)
    if authorizer is not None:
        sees = authorizer.topic_check(request)
        answers = iter(described)
        described = [
            TransactionDescription(t, TXN_DENIED)
            if t in refused
            else attrs.evolve(
                d := next(answers),
                partitions=tuple(tp for tp in d.partitions if sees(tp.topic)),
            )
            for t in ids
        ]
    cls = request.response_class()
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            transaction_states=tuple(_state(cls, d) for d in described),
        )
    )


def _state(cls: type, described: TransactionDescription) -> object:
    state_cls = nested(cls, "transaction_states")
    topic_cls = nested(state_cls, "topics")
    topics: dict[str, list[int]] = {}
    for tp in described.partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return build(
        state_cls,
        error_code=described.error_code,
        transactional_id=described.transactional_id,
        transaction_state=described.state,
        transaction_timeout=datetime.timedelta(milliseconds=described.timeout_ms),
        # None is -1 on the wire: no transaction begun (net's fixed class of kio's).
        transaction_start_time=None
        if described.start_timestamp < 0
        else datetime.datetime.fromtimestamp(
            described.start_timestamp / 1000, datetime.UTC
        ),
        producer_id=described.producer_id,
        producer_epoch=described.producer_epoch,
        topics=tuple(
            build(topic_cls, topic=topic, partitions=tuple(partitions))
            for topic, partitions in topics.items()
        ),
    )


def handle_list_transactions(
    request: Request,
    transactions: TransactionCoordinatorShell,
    authorizer: BrokerAuthorizer | None = None,
) -> None:
    """ListTransactions v0-2: the transactions this broker coordinates that pass the
    state, producer id, (v1) duration and (v2) transactional id pattern filters; with
    an authorizer, only the ids the principal may DESCRIBE."""
    body = request.body_as(LIST_REQUESTS)
    duration = (
        NO_DURATION_FILTER
        if isinstance(body, ListTransactionsRequestV0)
        else int(body.duration_filter)
    )
    pattern = (
        body.transactional_id_pattern
        if isinstance(body, ListTransactionsRequestV2)
        else None
    )
    listed = transactions.list_transactions(
        body.state_filters,
        (int(p) for p in body.producer_id_filters),
        duration,
        pattern,
    )
    cls = request.response_class()
    state_cls = nested(cls, "transaction_states")
    request.respond(
        build(
            cls,
            throttle_time=NO_THROTTLE,
            error_code=listed.error_code,
            unknown_state_filters=listed.unknown_state_filters,
            transaction_states=tuple(
                build(
                    state_cls,
                    transactional_id=t.transactional_id,
                    producer_id=t.producer_id,
                    transaction_state=t.state,
                )
                for t in listed.transactions
                if authorizer is None
                or authorizer.txn_allowed(request, DESCRIBE, t.transactional_id)
            ),
        )
    )
