"""The conformance test's own machinery, without brokers: how answers become trees,
how two trees differ, and how COMPAT.md's known-differences table is read and judged."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from tests.reference.conformance._diff import (
    END,
    START,
    Difference,
    differences,
    judge,
    read_known,
)
from tests.reference.conformance._normalise import Normaliser, to_tree


def metadata(port: int, cluster: str, error: ErrorCode, twice: bool = False) -> object:
    partition = MetadataResponsePartition(
        error_code=error,
        partition_index=i32(1),
        leader_id=BrokerId(1),
        leader_epoch=i32(0),
        replica_nodes=(BrokerId(1),),
        isr_nodes=(BrokerId(1),),
        offline_replicas=(),
    )
    topic = MetadataResponseTopic(
        error_code=ErrorCode.none,
        name=TopicName("conf-t"),
        is_internal=False,
        partitions=(partition,),
    )
    return MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=(
            MetadataResponseBroker(node_id=BrokerId(1), host="h", port=i32(port)),
        ),
        cluster_id=cluster,
        controller_id=BrokerId(1),
        topics=(topic, topic) if twice else (topic,),
    )


def test_ports_and_cluster_ids_are_normalised_and_an_error_code_is_not() -> None:
    # Guarantee: what legitimately differs is made equal, a changed field is reported
    # with its path, and a name listed twice stays visible.
    a = Normaliser()(to_tree(metadata(9092, "abc", ErrorCode.none)))
    b = Normaliser()(to_tree(metadata(4000, "xyz", ErrorCode.none)))
    assert list(differences("s", a, b)) == []
    c = Normaliser()(to_tree(metadata(4000, "xyz", ErrorCode.leader_not_available)))
    assert list(differences("s", a, c)) == [
        Difference(
            "s",
            "topics[conf-t].partitions[1].error_code",
            "NONE",
            "LEADER_NOT_AVAILABLE",
        )
    ]
    d = Normaliser()(to_tree(metadata(4000, "xyz", ErrorCode.none, twice=True)))
    [twice] = differences("s", a, d)
    assert (twice.path, twice.kafka) == ("topics[conf-t#1]", "absent")


def table(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "COMPAT.md"
    header = "| scenario | field | Kafka | minikafka | reason |\n| --- | --- | --- | --- | --- |"
    path.write_text("\n".join(["# x", START, header, *rows, END, ""]))
    return path


def test_a_listed_difference_passes_and_an_unused_row_is_stale(tmp_path: Path) -> None:
    # Guarantee: only * is a wildcard (brackets are literal), a difference no row
    # matches is unlisted, and a row matching nothing is stale.
    known = read_known(
        table(
            tmp_path,
            "| `produce.v*.x` | `topics[*].error_code` | `NONE` | `*` | why |",
            "| `fetch.v*` | `a` | `1` | `2` | gone |",
        )
    )
    found = [
        Difference("produce.v3.x", "topics[t].error_code", "NONE", "CORRUPT"),
        Difference("produce.v3.x", "topics.error_code", "NONE", "CORRUPT"),
    ]
    verdict = judge(found, known)
    assert [d for d, _ in verdict.listed] == found[:1]
    assert verdict.unlisted == found[1:]
    assert [row.reason for row in verdict.stale] == ["gone"]


def test_a_malformed_row_is_named_by_its_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="line 5: a known difference needs 5 cells"):
        read_known(table(tmp_path, "| `a` | `b` | `c` |"))
    (tmp_path / "none.md").write_text("no markers")
    with pytest.raises(ValueError, match="known-differences:start"):
        read_known(tmp_path / "none.md")
