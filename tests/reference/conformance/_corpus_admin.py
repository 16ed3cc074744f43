"""Scenarios of the admin requests: CreateTopics, DeleteTopics, CreatePartitions,
DescribeConfigs, InitProducerId, ElectLeaders, AlterPartitionReassignments,
ListPartitionReassignments and DescribeQuorum, with their error paths (invalid
replication factors and partition counts, bad configs, names listed twice, internal
topics) at every version minikafka advertises.

Left out on purpose: deleting ``__consumer_offsets`` (Kafka 4.1 in KRaft mode deletes it
when asked, which would break every other test on the shared node) and transactional
InitProducerId (Kafka's answer depends on when its ``__transaction_state`` finished
loading; minikafka has no transactions, which COMPAT.md says).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import NO_SUCH_TOPIC_ID, Case, each_version
from ._fixtures import COMPACT, DATA, MISSING, OFFSETS
from ._scenario import Scenario, Session


def create_body(
    v: int, topics: list[dict[str, Any]], validate_only: bool = False
) -> Any:
    full = [
        {
            "num_partitions": 1,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
            **t,
        }
        for t in topics
    ]
    return make(
        ApiKey.CREATE_TOPICS,
        v,
        topics=full,
        timeout=30_000,
        validate_only=validate_only,
    )


def _create(case: str, validate_only: bool = False, **topic: Any) -> Case:
    def run(s: Session, v: int) -> None:
        s.check(
            create_body(
                v, [{"name": f"conf-create-v{v}-{case}", **topic}], validate_only
            )
        )

    return run


def _create_named(name: str, **topic: Any) -> Case:
    return lambda s, v: s.check(create_body(v, [{"name": name, **topic}]))


def _create_twice(s: Session, v: int) -> None:
    name = f"conf-create-v{v}-twice"
    s.check(create_body(v, [{"name": name}, {"name": name}]))


CREATE_CASES: dict[str, Case] = {
    "ok": _create("ok", num_partitions=2),
    "validate-only": _create("validate", True, num_partitions=3),
    "with-configs": _create(
        "configs",
        configs=[
            {"name": "retention.ms", "value": "60000"},
            {"name": "cleanup.policy", "value": "compact"},
        ],
    ),
    "broker-defaults": _create("defaults", num_partitions=-1, replication_factor=-1),
    "exists": _create_named(DATA),
    "internal": _create_named(OFFSETS),
    "replication-factor-too-large": _create("rf3", replication_factor=3),
    "replication-factor-zero": _create("rf0", replication_factor=0),
    "zero-partitions": _create("p0", num_partitions=0),
    "negative-partitions": _create("pneg", num_partitions=-5),
    "bad-config-value": _create(
        "badvalue", configs=[{"name": "cleanup.policy", "value": "bogus"}]
    ),
    "unknown-config": _create(
        "unknownconfig", configs=[{"name": "conf.no.such.key", "value": "1"}]
    ),
    # Kafka 4.0 removed these keys; Kafka 3.9 added the tiered-storage switches.
    "removed-config-key": _create(
        "removed-key",
        True,
        configs=[{"name": "message.format.version", "value": "3.0-IV1"}],
    ),
    "tiered-switch": _create(
        "tiered-switch",
        True,
        configs=[{"name": "remote.log.copy.disable", "value": "true"}],
    ),
    "far-future-bound": _create(
        "future",
        True,
        configs=[{"name": "message.timestamp.after.max.ms", "value": "60000"}],
    ),
    "invalid-name": _create_named("conf bad name!"),
    "name-too-long": _create_named("conf-" + "x" * 250),
    "listed-twice": _create_twice,
    "assignment": _create(
        "assign",
        num_partitions=-1,
        replication_factor=-1,
        assignments=[
            {"partition_index": 0, "broker_ids": [1]},
            {"partition_index": 1, "broker_ids": [1]},
        ],
    ),
    "assignment-unknown-broker": _create(
        "assign-bad",
        num_partitions=-1,
        replication_factor=-1,
        assignments=[{"partition_index": 0, "broker_ids": [7]}],
    ),
}
CREATE_SINCE = {"broker-defaults": 4, "assignment": 4, "assignment-unknown-broker": 4}


ZERO_ID = uuid.UUID(int=0)


def _delete_topics(
    v: int, names: list[str], states: list[tuple[str | None, uuid.UUID]] | None = None
) -> Any:
    """By name up to v5; from v6 (KIP-516) each topic by name or by id (``states``, by
    default ``names`` with the zero id)."""
    if states is None:
        states = [(n, ZERO_ID) for n in names]
    return make(
        ApiKey.DELETE_TOPICS,
        v,
        topic_names=names,
        topics=[{"name": n, "topic_id": i} for n, i in states],
        timeout=30_000,
    )


def _created_topic(s: Session, name: str) -> None:
    s.call(create_body(4, [{"name": name}]))
    s.wait_topics([name])


def _delete_created(s: Session, v: int) -> None:
    name = f"conf-delete-v{v}"
    _created_topic(s, name)
    s.check(_delete_topics(v, [name]))


def _delete_by_id(s: Session, v: int) -> None:
    name = f"conf-delete-id-v{v}"
    _created_topic(s, name)
    s.check(_delete_topics(v, [], [(None, s.topic_id(name))]))


def _delete_states(states: list[tuple[str | None, uuid.UUID]]) -> Case:
    return lambda s, v: s.check(_delete_topics(v, [], states))


def _delete_by_name_then_by_id(s: Session, v: int) -> None:
    # One topic twice: by its name, and by its id.
    name = f"conf-delete-twice-v{v}"
    _created_topic(s, name)
    s.check(_delete_topics(v, [], [(name, ZERO_ID), (None, s.topic_id(name))]))


def _delete_by_name_and_id(s: Session, v: int) -> None:
    s.check(_delete_topics(v, [], [(DATA, s.topic_id(DATA))]))


DELETE_TOPIC_CASES: dict[str, Case] = {
    "created": _delete_created,
    "unknown": lambda s, v: s.check(_delete_topics(v, [MISSING])),
    "listed-twice": lambda s, v: s.check(_delete_topics(v, [MISSING, MISSING])),
    "by-id": _delete_by_id,
    "unknown-id": _delete_states([(None, NO_SUCH_TOPIC_ID)]),
    "neither-name-nor-id": _delete_states([(None, ZERO_ID)]),
    "name-and-id": _delete_by_name_and_id,
    "by-name-and-by-id": _delete_by_name_then_by_id,
    "id-listed-twice": _delete_states(
        [(None, NO_SUCH_TOPIC_ID), (None, NO_SUCH_TOPIC_ID)]
    ),
}
DELETE_SINCE = {  # topics by id from v6 (KIP-516)
    "by-id": 6,
    "unknown-id": 6,
    "neither-name-nor-id": 6,
    "name-and-id": 6,
    "by-name-and-by-id": 6,
    "id-listed-twice": 6,
}


def _partitions_body(
    v: int,
    topics: list[tuple[str, int]],
    validate_only: bool = False,
    assignments: Any = None,
) -> Any:
    return make(
        ApiKey.CREATE_PARTITIONS,
        v,
        topics=[{"name": n, "count": c, "assignments": assignments} for n, c in topics],
        timeout=30_000,
        validate_only=validate_only,
    )


def _grow(
    case: str, count: int, validate_only: bool = False, assignments: Any = None
) -> Case:
    def run(s: Session, v: int) -> None:
        name = f"conf-partitions-v{v}-{case}"
        s.call(create_body(4, [{"name": name, "num_partitions": 2}]))
        s.wait_topics([name])
        s.check(_partitions_body(v, [(name, count)], validate_only, assignments))

    return run


PARTITION_CASES: dict[str, Case] = {
    "grow": _grow("grow", 4),
    "validate-only": _grow("validate", 3, True),
    "same-count": _grow("same", 2),
    "fewer": _grow("fewer", 1),
    "with-assignment": _grow("assign", 3, assignments=[{"broker_ids": [1]}]),
    "assignment-unknown-broker": _grow(
        "assign-bad", 3, assignments=[{"broker_ids": [7]}]
    ),
    "assignment-wrong-count": _grow(
        "assign-count", 4, assignments=[{"broker_ids": [1]}]
    ),
    "unknown-topic": lambda s, v: s.check(_partitions_body(v, [(MISSING, 3)])),
    # The same count: refused by both, and harmless (the node is shared).
    "internal": lambda s, v: s.check(_partitions_body(v, [(OFFSETS, 50)])),
    "listed-twice": lambda s, v: s.check(
        _partitions_body(v, [(MISSING, 3), (MISSING, 4)])
    ),
}


def _describe_configs(
    resources: list[tuple[int, str, list[str] | None]], synonyms: bool = False
) -> Case:
    def run(s: Session, v: int) -> None:
        body = make(
            ApiKey.DESCRIBE_CONFIGS,
            v,
            resources=[
                {"resource_type": t, "resource_name": n, "configuration_keys": keys}
                for t, n, keys in resources
            ],
            include_synonyms=synonyms,
            include_documentation=False,
        )
        s.check(body)

    return run


TOPIC, BROKER = 2, 4
CONFIG_CASES: dict[str, Case] = {
    "topic-keys": _describe_configs(
        [(TOPIC, COMPACT, ["cleanup.policy", "retention.ms", "max.message.bytes"])]
    ),
    "topic-keys-synonyms": _describe_configs(
        [(TOPIC, COMPACT, ["cleanup.policy", "segment.bytes"])], synonyms=True
    ),
    "topic-all": _describe_configs([(TOPIC, COMPACT, None)]),
    "unknown-topic": _describe_configs([(TOPIC, MISSING, None)]),
    "unknown-key": _describe_configs([(TOPIC, DATA, ["conf.no.such.key"])]),
    "broker-keys": _describe_configs(
        [
            (
                BROKER,
                "1",
                ["num.partitions", "log.retention.ms", "auto.create.topics.enable"],
            )
        ]
    ),
    "other-broker": _describe_configs([(BROKER, "7", ["num.partitions"])]),
    "bad-resource-type": _describe_configs([(99, "x", None)]),
}


def _init_producer_id(
    transactional_id: str | None, timeout_ms: int = 60_000, **producer: int
) -> Case:
    return lambda s, v: s.check(
        make(
            ApiKey.INIT_PRODUCER_ID,
            v,
            transactional_id=transactional_id,
            transaction_timeout=timeout_ms,
            **producer,
        )
    )


INIT_CASES: dict[str, Case] = {
    "idempotent": _init_producer_id(None),
    "transaction-timeout-too-large": _init_producer_id("conf-tx-long", 10**9),
    # v3+ (KIP-360): an idempotent producer naming its current id and epoch gets a new
    # id; naming one without the other is refused.
    "current-producer": _init_producer_id(None, producer_id=1000, producer_epoch=3),
    "id-without-epoch": _init_producer_id(None, producer_id=1000, producer_epoch=-1),
    "epoch-without-id": _init_producer_id(None, producer_id=-1, producer_epoch=3),
}
INIT_SINCE = {"current-producer": 3, "id-without-epoch": 3, "epoch-without-id": 3}


def _elect(topics: list[tuple[str, list[int]]] | None, election_type: int = 0) -> Case:
    def run(s: Session, v: int) -> None:
        body = make(
            ApiKey.ELECT_LEADERS,
            v,
            election_type=election_type,
            topic_partitions=None
            if topics is None
            else [{"topic": t, "partitions": p} for t, p in topics],
            timeout=30_000,
        )
        s.check(body)

    return run


ELECT_CASES: dict[str, Case] = {
    "preferred": _elect([(DATA, [0, 1])]),
    "unclean": _elect([(DATA, [0])], election_type=1),
    "unknown-topic": _elect([(MISSING, [0])]),
    "bad-partition": _elect([(DATA, [9])]),
}
ELECT_SINCE = {"unclean": 1}


def _reassign(
    topic: str, partition: int, replicas: list[int] | None, **v1: object
) -> Case:
    def run(s: Session, v: int) -> None:
        body = make(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            v,
            timeout=30_000,
            **v1,
            topics=[
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": partition, "replicas": replicas}
                    ],
                }
            ],
        )
        s.check(body)

    return run


REASSIGN_CASES: dict[str, Case] = {
    "same-replicas": _reassign(DATA, 0, [1]),
    "unknown-broker": _reassign(DATA, 0, [7]),
    "empty-replicas": _reassign(DATA, 0, []),
    "cancel-none": _reassign(DATA, 1, None),
    "unknown-topic": _reassign(MISSING, 0, [1]),
    "bad-partition": _reassign(DATA, 9, [1]),
    # KIP-860 (v1, the replication factor may not change): a move that keeps the number
    # of replicas passes; an empty target and one adding an unknown broker change the
    # number too, so the answers show which check comes first. The reference node is
    # one broker, so no valid target changes the number: the cluster tests prove that.
    "rf-kept": _reassign(DATA, 0, [1], allow_replication_factor_change=False),
    "rf-changed-empty": _reassign(DATA, 0, [], allow_replication_factor_change=False),
    "rf-changed-unknown-broker": _reassign(
        DATA, 0, [1, 7], allow_replication_factor_change=False
    ),
}
REASSIGN_SINCE = {"rf-kept": 1, "rf-changed-empty": 1, "rf-changed-unknown-broker": 1}


def _list_reassignments(topics: list[tuple[str, list[int]]] | None) -> Case:
    return lambda s, v: s.check(
        make(
            ApiKey.LIST_PARTITION_REASSIGNMENTS,
            v,
            timeout=30_000,
            topics=None
            if topics is None
            else [{"name": t, "partition_indexes": p} for t, p in topics],
        ),
        # All ongoing reassignments: the shared Kafka node may be moving other tests'.
        trim="conf-" if topics is None else None,
    )


LIST_REASSIGN_CASES: dict[str, Case] = {
    "all": _list_reassignments(None),
    "partitions": _list_reassignments([(DATA, [0, 1])]),
    "unknown-topic": _list_reassignments([(MISSING, [0])]),
}

# The metadata logs' lengths and fetch times: each broker writes the records its
# controller needs (Kafka's include feature levels and registrations minikafka does
# not write), so offsets and times in the quorum's description differ by design.
QUORUM_VARIES = frozenset(
    {
        "high_watermark",
        "log_end_offset",
        "last_fetch_timestamp",
        "last_caught_up_timestamp",
        "leader_epoch",
        "replica_directory_id",
    }
)


def _describe_quorum(topic: str, partition: int) -> Case:
    return lambda s, v: s.check(
        make(
            ApiKey.DESCRIBE_QUORUM,
            v,
            topics=[
                {"topic_name": topic, "partitions": [{"partition_index": partition}]}
            ],
        ),
        varies=QUORUM_VARIES,
    )


QUORUM_CASES: dict[str, Case] = {
    "metadata-log": _describe_quorum("__cluster_metadata", 0),
    "other-topic": _describe_quorum(DATA, 0),
}


def scenarios() -> Iterator[Scenario]:
    yield from each_version(
        ApiKey.CREATE_TOPICS, "create-topics", CREATE_CASES, CREATE_SINCE
    )
    yield from each_version(
        ApiKey.DELETE_TOPICS, "delete-topics", DELETE_TOPIC_CASES, DELETE_SINCE
    )
    yield from each_version(
        ApiKey.CREATE_PARTITIONS, "create-partitions", PARTITION_CASES
    )
    yield from each_version(ApiKey.DESCRIBE_CONFIGS, "describe-configs", CONFIG_CASES)
    yield from each_version(
        ApiKey.INIT_PRODUCER_ID, "init-producer-id", INIT_CASES, INIT_SINCE
    )
    yield from each_version(
        ApiKey.ELECT_LEADERS, "elect-leaders", ELECT_CASES, ELECT_SINCE
    )
    yield from each_version(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        "alter-partition-reassignments",
        REASSIGN_CASES,
        REASSIGN_SINCE,
    )
    yield from each_version(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        "list-partition-reassignments",
        LIST_REASSIGN_CASES,
    )
    yield from each_version(ApiKey.DESCRIBE_QUORUM, "describe-quorum", QUORUM_CASES)
