"""Scenarios of the cluster, described: DescribeCluster (KIP-700, KIP-919's endpoint
types, KIP-1073's fenced brokers), DescribeLogDirs (KIP-113, KIP-827) and
DescribeProducers (KIP-664), with their error paths (asked for the controllers of a
broker, an endpoint type nobody has, a topic or partition the broker does not hold) at
every version minikafka advertises; and UnregisterBroker's refusal of an id the
controller does not know (KIP-631: the one node cannot be unregistered and go on)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from minikafka.net import ApiKey

from ._build import make
from ._corpus_data import Case, each_version
from ._diff import render
from ._fixtures import DATA, ISR2, MISSING, PRODUCE
from ._normalise import to_tree
from ._scenario import Scenario, Session


def _describe_cluster(
    operations: bool = False, endpoint_type: int = 1, fenced: bool = False
) -> Case:
    return lambda s, v: s.check(
        make(
            ApiKey.DESCRIBE_CLUSTER,
            v,
            include_cluster_authorized_operations=operations,
            endpoint_type=endpoint_type,
            include_fenced_brokers=fenced,
        )
    )


CLUSTER_CASES: dict[str, Case] = {
    "brokers": _describe_cluster(),
    "operations": _describe_cluster(operations=True),
    "controllers-of-a-broker": _describe_cluster(endpoint_type=2),
    "unknown-endpoint-type": _describe_cluster(endpoint_type=3),
    "fenced-too": _describe_cluster(fenced=True),
}
# endpoint_type from v1 (KIP-919), include_fenced_brokers from v2 (KIP-1073).
CLUSTER_SINCE = {
    "controllers-of-a-broker": 1,
    "unknown-endpoint-type": 1,
    "fenced-too": 2,
}

# The dir's path and its volume's bytes are each broker's own; a partition's size is
# the bytes its log holds, which the shared Kafka node and minikafka were written alike
# (the same batches), so it is compared.
LOG_DIRS_VARIES = frozenset({"log_dir", "total_bytes", "usable_bytes"})
# Partitions whose contents differ by a difference listed for another scenario: Kafka
# 4.1 appends the batches of produce.vN.not-enough-replicas (conf-isr2-0, KIP-966's
# eligible leader replicas) and of produce.vN.transactional-id-plain-batch
# (conf-produce-0), which minikafka refuses. Their sizes would only repeat those rows.
WRITTEN_UNLIKE = {ISR2: {0}, PRODUCE: {0}}


def _describe_log_dirs(topics: list[tuple[str, list[int]]] | None) -> Case:
    def run(s: Session, v: int) -> None:
        body: Any = make(
            ApiKey.DESCRIBE_LOG_DIRS,
            v,
            topics=None
            if topics is None
            else [{"topic": t, "partitions": ps} for t, ps in topics],
        )
        # All topics: the shared Kafka node holds every other test's too.
        s.check(body, trim="conf-" if topics is None else None, varies=LOG_DIRS_VARIES)
        if topics is None:
            _drop_written_unlike(s.checks["DescribeLogDirs"])

    return run


def _drop_written_unlike(tree: Any) -> None:
    for result in tree["results"]:
        for topic, partitions in WRITTEN_UNLIKE.items():
            entry = result["topics"].get(f"[{topic}]")
            if entry is None:
                continue
            for p in partitions:
                entry["partitions"].pop(f"[{p}]", None)


LOG_DIRS_CASES: dict[str, Case] = {
    "all": _describe_log_dirs(None),
    "data-topic": _describe_log_dirs([(DATA, [0, 1])]),
    "unknown-partition": _describe_log_dirs([(DATA, [99])]),
    "unknown-topic": _describe_log_dirs([(MISSING, [0])]),
    "none": _describe_log_dirs([]),
}


def _describe_producers(topics: list[tuple[str, list[int]]]) -> Case:
    def run(s: Session, v: int) -> None:
        body = make(
            ApiKey.DESCRIBE_PRODUCERS,
            v,
            topics=[{"name": t, "partition_indexes": ps} for t, ps in topics],
        )
        tree = s.normaliser(to_tree(s.call(body)))
        for topic in tree["topics"].values():
            for partition in topic["partitions"].values():
                partition["active_producers"] = _unordered(
                    partition["active_producers"]
                )
        s.record("DescribeProducers", tree)

    return run


def _unordered(producers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A partition's producers in an order of their own: each broker lists them in its
    map's order, and numbers each broker-chosen producer id by first appearance. The id
    is left out (no other request of the scenario names it); the rest is sorted."""
    plain = [
        {k: p for k, p in entry.items() if k != "producer_id"} for entry in producers
    ]
    return sorted(plain, key=render)


# conf-produce-1 holds the batches of produce.vN.idempotent's producers (one per
# version), the other partitions only batches without a producer id.
PRODUCERS_CASES: dict[str, Case] = {
    "produce-topic": _describe_producers([(PRODUCE, [0, 1])]),
    "no-producers": _describe_producers([(DATA, [0])]),
    "unknown-partition": _describe_producers([(DATA, [99])]),
    "unknown-topic": _describe_producers([(MISSING, [0])]),
}


UNREGISTER_CASES: dict[str, Case] = {
    "unknown-broker": lambda s, v: s.check(
        make(ApiKey.UNREGISTER_BROKER, v, broker_id=99)
    ),
}


def scenarios() -> Iterator[Scenario]:
    yield from each_version(
        ApiKey.DESCRIBE_CLUSTER, "describe-cluster", CLUSTER_CASES, CLUSTER_SINCE
    )
    yield from each_version(
        ApiKey.DESCRIBE_LOG_DIRS, "describe-log-dirs", LOG_DIRS_CASES
    )
    yield from each_version(
        ApiKey.DESCRIBE_PRODUCERS, "describe-producers", PRODUCERS_CASES
    )
    yield from each_version(
        ApiKey.UNREGISTER_BROKER, "unregister-broker", UNREGISTER_CASES
    )
