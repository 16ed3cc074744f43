"""Kafka's Java client (kafka-clients 4.1.1) against the real broker: the fifth client.

Each test runs one scenario of ``java/JavaClient.java`` in one JVM (a JVM costs about half
a second to start) and checks what the client printed: the partition and offset of every
acknowledged record, the records read back, the rebalance callbacks of each group member,
and the answers of the Admin client. The client logs each request it sends and what it made
of the broker's ApiVersions (``reference.java.requests_sent``, ``negotiated``, ``refused``):
the tests pin the versions it speaks with minikafka, and what it asked for that minikafka
lacks (COMPAT.md lists those gaps under the matrix), so a change on either side shows.

The reassignment and election calls need a cluster: the last test runs them against three
brokers of real processes (KRaft mode; tests/cluster/test_java_client.py runs the Java
client on clusters in both controller modes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from minikafka.broker.testing import BrokerProcess, ProcessCluster
from minikafka.client import partition_for_key
from reference.java import negotiated, refused, requests_sent
from tests.cluster._cluster import create_on, shared_cluster, state, wait_for
from tests.compat import _java
from tests.compat._clients import (
    CODECS,
    assert_one_idempotent_producer,
    stored_batches,
)
from tests.compat._groups import unique_name

pytestmark = [pytest.mark.external, pytest.mark.compat("ApiVersions", "java")]

COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"


def topic_step(name: str, partitions: int = 1, **configs: str) -> dict[str, Any]:
    return {
        "op": "admin",
        "action": "create_topics",
        "topics": [
            {
                "name": name,
                "partitions": partitions,
                "replication": 1,
                "configs": configs,
            }
        ],
    }


def read_step(topic: str, partitions: int, count: int) -> dict[str, Any]:
    """Every record of ``topic`` from the start, by assign (no group)."""
    return {
        "op": "consume",
        "assign": [[topic, p] for p in range(partitions)],
        "seek": [
            {"topic": topic, "partition": p, "to": "beginning"}
            for p in range(partitions)
        ],
        "count": count,
    }


def values(read: dict[str, Any]) -> list[str]:
    return [r["value"] for r in read["records"]]


@pytest.mark.compat("Produce", "java")
@pytest.mark.compat("Fetch", "java")
@pytest.mark.compat("ListOffsets", "java")
@pytest.mark.compat("Metadata", "java")
@pytest.mark.compat("InitProducerId", "java")
@pytest.mark.compat("CreateTopics", "java")
def test_produce_acks_idempotence_and_every_codec(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    """Every record acknowledged under acks 0, 1 and all, idempotent or not, and in every
    codec, is read back exactly once and in order; each codec is the one on disk; the
    idempotent producer's batches carry one producer id and sequences from 0."""
    count = 50
    cases: list[tuple[str, dict[str, str]]] = [
        ("java-acks0", {"acks": "0", "enable.idempotence": "false"}),
        ("java-acks1", {"acks": "1", "enable.idempotence": "false"}),
        ("java-acksall", {"acks": "all", "enable.idempotence": "false"}),
        ("java-idempotent", {"enable.idempotence": "true"}),
    ]
    cases += [
        (f"java-codec-{codec}", {"compression.type": codec, "linger.ms": "50"})
        for codec in CODECS
    ]
    steps: list[dict[str, Any]] = []
    for topic, config in cases:
        steps.append(topic_step(topic))
        steps.append(
            {
                "op": "produce",
                "topic": topic,
                "config": config,
                "records": _java.records(topic, count),
            }
        )
        steps.append(read_step(topic, 1, count))
    log = tmp_path / "requests.log"
    run = _java.scenario(broker.bootstrap, steps, request_log=log)
    for index, (topic, config) in enumerate(cases):
        acks = run.result(3 * index + 1)["acks"]
        read = run.result(3 * index + 2)
        sent = [r["value"] for r in _java.records(topic, count)]
        assert values(read) == sent, topic  # once each, in order
        expected_offsets = (
            [-1] * count if config.get("acks") == "0" else list(range(count))
        )
        assert acks == [[0, o] for o in expected_offsets], topic
        assert [r["offset"] for r in read["records"]] == list(range(count))
        batches = stored_batches(broker.data_dir, topic)
        assert sum(b.count for b in batches) == count, topic  # none written twice
        if topic.startswith("java-codec-"):
            codec = topic.removeprefix("java-codec-")
            assert {b.codec for b in batches} == {CODECS[codec]}, topic
        if config.get("enable.idempotence") != "false":  # the Java client's default
            assert_one_idempotent_producer(batches)
        else:
            assert {b.producer_id for b in batches} == {-1}, topic
    # What it spoke: the newest version minikafka offers of each (the client knows newer).
    sent_versions = requests_sent(log)
    assert {
        ("PRODUCE", 13),  # topics named by id (KIP-516)
        ("FETCH", 18),  # in a fetch session (KIP-227), topics by id
        ("LIST_OFFSETS", 10),
        ("METADATA", 13),
        ("INIT_PRODUCER_ID", 5),
        ("CREATE_TOPICS", 7),
        ("API_VERSIONS", 4),
    } <= sent_versions
    versions = negotiated(log)
    assert versions["Produce"].usable == 13  # the newest of both
    assert versions["Metadata"].usable == 13  # and Metadata v13, the newest of both
    assert versions["Fetch"].usable == 18
    # KIP-714's client telemetry: asked for, not offered, given up quietly.
    assert "GET_TELEMETRY_SUBSCRIPTIONS" in refused(log)


@pytest.mark.compat("Produce", "java")
def test_keyed_placement_matches_minikafka_and_librdkafka(
    broker: BrokerProcess,
) -> None:
    """A keyed record goes to the partition minikafka's client and librdkafka's
    ``murmur2_random`` partitioner choose for its key (``toPositive(murmur2(key)) % n``),
    and the records of a key keep their order in that partition."""
    partitions = 7
    sent = _java.records("placed", 140)
    for i, record in enumerate(sent):  # two records for each of 70 keys
        record["key"] = f"user-{i % 70}"
    run = _java.scenario(
        broker.bootstrap,
        [
            topic_step("java-placed", partitions),
            {"op": "produce", "topic": "java-placed", "records": sent},
            topic_step("librdkafka-placed", partitions),
        ],
    )
    java = [partition for partition, _offset in run.result(1)["acks"]]
    own = [partition_for_key(r["key"].encode(), partitions) for r in sent]
    delivered: list[int | None] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "partitioner": "murmur2_random",
            "log_level": 0,
        }
    )
    for record in sent:
        producer.produce(
            "librdkafka-placed",
            record["value"].encode(),
            record["key"].encode(),
            on_delivery=lambda error, message: delivered.append(message.partition()),
        )
        producer.poll(0)
    assert producer.flush(20) == 0
    assert java == own
    assert sorted(p for p in delivered if p is not None) == sorted(own)
    assert len(set(java)) == partitions  # 70 keys reach every partition
    # Each key's two records: the second at a later offset of the same partition.
    offsets = run.result(1)["acks"]
    for i in range(70):
        assert offsets[i][0] == offsets[i + 70][0]
        assert offsets[i][1] < offsets[i + 70][1]


def member(
    name: str, group: str, topic: str, assignor: str, **extra: str
) -> dict[str, Any]:
    """A join step: a group member that commits what it read after each poll."""
    return {
        "op": "join",
        "name": name,
        "subscribe": [topic],
        "commit": True,
        "config": {
            "group.id": group,
            "client.id": name,
            "partition.assignment.strategy": assignor,
            "session.timeout.ms": "10000",
            "heartbeat.interval.ms": "500",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "false",
            **extra,
        },
    }


def events(state: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """A member's rebalance callbacks, leaving out the empty ones."""
    return [(kind, parts) for kind, parts, _generation in state["events"] if parts]


@pytest.mark.compat("FindCoordinator", "java")
@pytest.mark.compat("JoinGroup", "java")
@pytest.mark.compat("SyncGroup", "java")
@pytest.mark.compat("Heartbeat", "java")
@pytest.mark.compat("LeaveGroup", "java")
@pytest.mark.compat("OffsetCommit", "java")
@pytest.mark.compat("OffsetFetch", "java")
@pytest.mark.compat("Fetch", "java")
@pytest.mark.compat("ListOffsets", "java")
def test_range_group_commits_and_seeks(
    group_broker: BrokerProcess, request: pytest.FixtureRequest
) -> None:
    """Two range members share four partitions and read each record once; what they
    committed is where a new member of the group starts; a consumer seeks to an offset,
    the beginning, the end and a timestamp, and commits offsets with metadata that it
    then reads back."""
    topic = unique_name(request, "java-")
    group = topic + "-group"
    sent = _java.records(topic, 80)
    late = _java.records(topic + "-late", 5)
    # Where the keys go (murmur2, as the previous test checks): what the seeks will read.
    placed = [partition_for_key(r["key"].encode(), 4) for r in sent + late]
    seen = [placed.count(p) for p in range(4)]
    assert seen[0] > 3
    run = _java.scenario(
        group_broker.bootstrap,
        [
            topic_step(topic, 4),
            {"op": "produce", "topic": topic, "records": sent},  # 1
            member("a", group, topic, RANGE),
            member("b", group, topic, RANGE),
            {"op": "await_group", "names": ["a", "b"], "partitions": 4},  # 4
            {"op": "await_records", "names": ["a", "b"], "count": 80},  # 5
            {"op": "leave", "names": ["a", "b"]},  # 6
            {  # 7: a new member of the group, after 5 more records
                "op": "produce",
                "topic": topic,
                "records": late,
            },
            {
                "op": "consume",
                "subscribe": [topic],
                "count": 5,
                "config": {"group.id": group, "auto.offset.reset": "earliest"},
            },
            {  # 9: seeks, and commits of our own, in a group no member is in
                "op": "consume",
                "assign": [[topic, p] for p in range(4)],
                "seek": [
                    {"topic": topic, "partition": 0, "offset": 3},
                    {"topic": topic, "partition": 1, "to": "beginning"},
                    {"topic": topic, "partition": 2, "to": "end"},
                    {"topic": topic, "partition": 3, "timestamp": 0},
                ],
                # From offset 3, the beginning, the end and timestamp 0.
                "count": seen[0] - 3 + seen[1] + seen[3],
                "commit": [
                    {"topic": topic, "partition": 0, "offset": 2, "metadata": "two"},
                    {"topic": topic, "partition": 1, "offset": 1, "metadata": "one"},
                ],
                "config": {
                    "group.id": group + "-manual",
                    "enable.auto.commit": "false",
                },
            },
        ],
    )
    settled = run.result(4)
    owned = [set(m["owned"]) for m in settled]
    assert owned[0].isdisjoint(owned[1])
    assert owned[0] | owned[1] == {0, 1, 2, 3}
    assert all(len(o) == 2 for o in owned)  # range: two each
    read = run.result(5)
    got = read["a"] + read["b"]
    assert sorted(r["value"] for r in got) == sorted(r["value"] for r in sent)
    ends = {p: sum(1 for r in got if r["partition"] == p) for p in range(4)}
    # The new member starts after the committed offsets: the five late records only.
    resumed = run.result(8)["records"]
    assert sorted(r["value"] for r in resumed) == [
        f"{topic}-late-v{i}" for i in range(5)
    ]
    assert all(r["offset"] >= ends[r["partition"]] for r in resumed)
    seeked = run.result(9)
    by_partition = {
        p: [r["offset"] for r in seeked["records"] if r["partition"] == p]
        for p in range(4)
    }
    assert by_partition[0] == list(range(3, seen[0]))
    assert by_partition[1] == list(range(seen[1]))
    assert by_partition[2] == []
    assert by_partition[3] == list(range(seen[3]))  # timestamp 0: all
    assert seeked["committed"] == {
        f"{topic}-0": [2, "two"],
        f"{topic}-1": [1, "one"],
    }


@pytest.mark.compat("JoinGroup", "java")
@pytest.mark.compat("SyncGroup", "java")
@pytest.mark.compat("Heartbeat", "java")
@pytest.mark.compat("DescribeGroups", "java")
def test_cooperative_sticky_and_static_membership(
    group_broker: BrokerProcess, request: pytest.FixtureRequest
) -> None:
    """Cooperative-sticky (KIP-429): a second member takes half the partitions while the
    first keeps the other half throughout, revoking only what moves. Static membership
    (KIP-345): a member with a ``group.instance.id`` that closes and comes back within its
    session gets its partitions again, with no rebalance (the other member's callbacks
    and the generation stay as they were)."""
    topic = unique_name(request, "java-")
    group, static = topic + "-coop", topic + "-static"
    run = _java.scenario(
        group_broker.bootstrap,
        [
            topic_step(topic, 6),
            member("a", group, topic, COOPERATIVE),
            {"op": "await_group", "names": ["a"], "partitions": 6},  # 2
            member("b", group, topic, COOPERATIVE),
            {"op": "await_group", "names": ["a", "b"], "partitions": 6},  # 4
            {"op": "leave", "names": ["a", "b"]},
            member("s1", static, topic, RANGE, **{"group.instance.id": "one"}),
            member("s2", static, topic, RANGE, **{"group.instance.id": "two"}),
            {"op": "await_group", "names": ["s1", "s2"], "partitions": 6},  # 8
            {"op": "leave", "names": ["s2"]},  # closes, stays in the group
            member("s2-again", static, topic, RANGE, **{"group.instance.id": "two"}),
            {"op": "await_group", "names": ["s1", "s2-again"], "partitions": 6},  # 11
            {"op": "admin", "action": "describe_groups", "names": [static]},  # 12
        ],
    )
    assert events(run.result(2)[0]) == [("assigned", [0, 1, 2, 3, 4, 5])]
    first, second = run.result(4)
    moved = second["owned"]
    assert len(moved) == 3
    assert set(first["owned"]) == {0, 1, 2, 3, 4, 5} - set(moved)
    # The first member never gave up what it kept: one revocation, of what moved.
    assert events(first) == [("assigned", [0, 1, 2, 3, 4, 5]), ("revoked", moved)]
    assert events(second) == [("assigned", moved)]

    s1, s2 = run.result(8)
    s1_again, s2_again = run.result(11)
    assert s2_again["owned"] == s2["owned"]
    assert s1_again["events"] == s1["events"]  # no rebalance reached the other member
    assert s2_again["generation"] == s2["generation"]
    described = run.result(12)[static]
    assert described["state"] == "Stable"
    assert sorted(m["instance_id"] for m in described["members"]) == ["one", "two"]
    # The returning member has a new member id, its instance id's.
    ids = {m["instance_id"]: m["member_id"] for m in described["members"]}
    assert ids["two"] == s2_again["member_id"] != s2["member_id"]


@pytest.mark.compat("CreateTopics", "java")
@pytest.mark.compat("DeleteTopics", "java")
@pytest.mark.compat("Metadata", "java")
@pytest.mark.compat("CreatePartitions", "java")
@pytest.mark.compat("DescribeConfigs", "java")
@pytest.mark.compat("ListGroups", "java")
@pytest.mark.compat("DescribeGroups", "java")
@pytest.mark.compat("DeleteGroups", "java")
@pytest.mark.compat("OffsetFetch", "java")
@pytest.mark.compat("OffsetCommit", "java")
@pytest.mark.compat("DescribeQuorum", "java")
@pytest.mark.compat("ListOffsets", "java")
@pytest.mark.compat("IncrementalAlterConfigs", "java")
@pytest.mark.compat("DescribeCluster", "java")
@pytest.mark.compat("DescribeLogDirs", "java")
@pytest.mark.compat("OffsetDelete", "java")
@pytest.mark.compat("DeleteRecords", "java")
@pytest.mark.compat("ListTransactions", "java")
@pytest.mark.compat("DescribeTransactions", "java")
@pytest.mark.compat("DescribeUserScramCredentials", "java")
@pytest.mark.compat("ConsumerGroupHeartbeat", "java")
def test_admin(
    group_broker: BrokerProcess, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The Admin client: topics (create, list, describe, delete), partitions, configs,
    consumer groups and their offsets, the cluster (DescribeCluster), the broker's log
    dirs (DescribeLogDirs), deleting records (DeleteRecords), the transactions
    (ListTransactions, DescribeTransactions) and its metadata quorum. Where it needs
    an API minikafka does not offer, it fails with UnsupportedVersionException naming the
    API (the gaps COMPAT.md lists); where it has a fallback, it falls back and works."""
    topic = unique_name(request, "java-")
    group = topic + "-group"
    log = tmp_path / "requests.log"
    run = _java.scenario(
        group_broker.bootstrap,
        [
            topic_step(topic, 2, **{"retention.ms": "3600000"}),  # 0
            {"op": "admin", "action": "list_topics"},
            {"op": "admin", "action": "describe_topics", "names": [topic]},  # 2
            {"op": "admin", "action": "create_partitions", "counts": {topic: 3}},
            {"op": "admin", "action": "describe_topics", "names": [topic]},  # 4
            {
                "op": "admin",
                "action": "describe_configs",
                "type": "topic",
                "name": topic,
            },
            {
                "op": "admin",
                "action": "describe_configs",
                "type": "broker",
                "name": "1",
            },
            {"op": "produce", "topic": topic, "records": _java.records(topic, 30)},  # 7
            {
                "op": "consume",
                "subscribe": [topic],
                "count": 30,
                "commit": True,
                "config": {"group.id": group, "auto.offset.reset": "earliest"},
            },
            {"op": "admin", "action": "list_groups"},  # 9
            {"op": "admin", "action": "describe_groups", "names": [group]},
            {"op": "admin", "action": "list_group_offsets", "group": group},  # 11
            {
                "op": "admin",
                "action": "alter_group_offsets",
                "group": group,
                "offsets": [[topic, 0, 1]],
            },
            {"op": "admin", "action": "list_group_offsets", "group": group},  # 13
            {"op": "admin", "action": "describe_cluster"},
            {"op": "admin", "action": "describe_quorum"},  # 15
            {
                "op": "admin",
                "action": "list_offsets",
                "partitions": [[topic, 0, "earliest"], [topic, 1, "latest"]],
            },
            # 17..: what minikafka does not offer (but 17 to 23)
            {
                "op": "admin",
                "action": "delete_group_offsets",
                "group": group,
                "partitions": [[topic, 0]],
            },
            {"op": "admin", "action": "describe_log_dirs", "brokers": [1]},
            {
                "op": "admin",
                "action": "incremental_alter_configs",
                "name": topic,
                "set": {"retention.ms": "1000"},
            },
            # 20: partition 1's records, all of them (-1: the high watermark)
            {"op": "admin", "action": "delete_records", "offsets": [[topic, 1, -1]]},
            {
                "op": "admin",
                "action": "list_offsets",
                "partitions": [[topic, 0, "max_timestamp"]],
            },
            {"op": "admin", "action": "describe_producers", "partitions": [[topic, 0]]},
            {"op": "admin", "action": "list_transactions"},  # 23: served (KIP-664)
            {"op": "admin", "action": "describe_acls"},
            {"op": "admin", "action": "describe_client_quotas"},
            {"op": "admin", "action": "describe_user_scram_credentials"},
            {  # 27: KIP-848's consumer group protocol (ConsumerGroupHeartbeat)
                "op": "consume",
                "subscribe": [topic],
                "count": 5,
                "config": {
                    "group.id": group + "-848",
                    "group.protocol": "consumer",
                    "auto.offset.reset": "earliest",
                },
            },
            # 28..: and back to what it does
            {"op": "admin", "action": "delete_groups", "names": [group]},
            {"op": "admin", "action": "list_groups"},
            {"op": "admin", "action": "delete_topics", "names": [topic]},
            {"op": "admin", "action": "list_topics"},  # 31
            {"op": "admin", "action": "describe_transactions", "id": topic},  # 32
        ],
        request_log=log,
    )
    assert topic in run.result(1)["names"]
    described = run.result(2)[topic]
    assert [p["partition"] for p in described["partitions"]] == [0, 1]
    assert all(p["leader"] == 1 and p["isr"] == [1] for p in described["partitions"])
    assert len(run.result(4)[topic]["partitions"]) == 3
    configs = run.result(5)
    assert configs["retention.ms"][:2] == ["3600000", "DYNAMIC_TOPIC_CONFIG"]
    assert configs["cleanup.policy"][:2] == ["delete", "DEFAULT_CONFIG"]
    # The broker's own settings (minikafka lists those set, not every default).
    assert run.result(6)["log.dirs"][1:3] == ["STATIC_BROKER_CONFIG", True]
    assert len(run.result(8)["records"]) == 30
    assert [g[:2] for g in run.result(9) if g[0] == group] == [[group, "consumer"]]
    assert run.result(10)[group]["state"] == "Empty"
    counts = dict.fromkeys(range(3), 0)
    for partition, _offset in run.result(7)["acks"]:
        counts[partition] += 1
    assert run.result(11) == {f"{topic}-{p}": [n, ""] for p, n in counts.items() if n}
    assert run.result(13)[f"{topic}-0"] == [1, ""]
    cluster = run.result(14)
    assert [n["id"] for n in cluster["nodes"]] == [1]
    assert cluster["controller"] == 1
    assert cluster["cluster_id"]
    quorum = run.result(15)
    assert quorum["leader_id"] == 1
    assert [voter for voter, _end in quorum["voters"]] == [1]
    assert run.result(16) == {f"{topic}-0": 0, f"{topic}-1": counts[1]}
    assert run.result(19) == {"altered": topic}
    # DescribeLogDirs (KIP-113): the broker's one log dir, each of the topic's
    # partitions in it with its size (bytes only where records went), no lag, and the
    # volume's bytes (KIP-827).
    [(log_dir, dir_info)] = run.result(18)["1"].items()
    assert Path(log_dir) == group_broker.data_dir
    assert dir_info["error"] is None
    assert dir_info["total_bytes"] >= dir_info["usable_bytes"] > 0
    replicas = {
        tp: info
        for tp, info in dir_info["replicas"].items()
        if tp.startswith(f"{topic}-")
    }
    assert sorted(replicas) == [f"{topic}-{p}" for p in range(3)]
    for p, (size, lag, future) in ((int(tp[-1]), i) for tp, i in replicas.items()):
        assert (size > 0) == (counts[p] > 0), (p, size, counts)
        assert (lag, future) == (0, False)
    assert run.result(17) == {"deleted": 1}  # OffsetDelete (KIP-496)
    # ListOffsets v7+'s max timestamp (KIP-734): a record of partition 0, the first
    # with the largest timestamp (several may share a millisecond), or -1 if it has none.
    assert run.result(22) == 1  # DescribeProducers (KIP-664): partition 0 described
    assert run.result(20) == {"deleted": 1}  # DeleteRecords (KIP-107), answered
    [newest] = run.result(21).values()
    assert 0 <= newest < counts[0] if counts[0] else newest == -1
    # ListTransactions from every broker (KIP-664); DescribeTransactions of an id no
    # coordinator knows: Kafka's TransactionalIdNotFoundException, from its coordinator.
    assert isinstance(run.result(23), int)
    unknown = run.error(32)
    assert unknown["type"] == "TransactionalIdNotFoundException", unknown
    # DescribeUserScramCredentials (KIP-554): every user with a SCRAM credential (none).
    assert run.result(26) == 0
    # DescribeAcls (KIP-801) is served; with no authorizer configured it answers
    # SECURITY_DISABLED, as Kafka's broker does.
    acls = run.error(24)
    assert acls["type"] == "SecurityDisabledException", acls
    error = run.error(25)
    assert error["type"] == "UnsupportedVersionException", error
    assert "The node does not support DESCRIBE_CLIENT_QUOTAS" in error["message"]
    # The consumer of KIP-848 joins with ConsumerGroupHeartbeat, the broker assigns it
    # the topic's partitions, and it reads from the earliest offsets.
    assert len(run.result(27)["records"]) >= 5  # whole batches, at least the 5 asked
    assert "CONSUMER_GROUP_HEARTBEAT" not in refused(log)
    assert group not in [g[0] for g in run.result(29)]
    assert topic not in run.result(31)["names"]
    # Asked for, refused by ApiVersions, answered by the older API instead:
    # DescribeTopicPartitions by Metadata (v13, whose answer carries the topic id,
    # KIP-516). ConsumerGroupDescribe is served (KIP-848).
    assert "DESCRIBE_TOPIC_PARTITIONS" in refused(log)
    assert "CONSUMER_GROUP_DESCRIBE" not in refused(log)
    # DescribeCluster is answered itself, at its newest version (KIP-1073's v2).
    assert "DESCRIBE_CLUSTER" not in refused(log)
    assert described["topic_id"] not in ("", "AAAAAAAAAAAAAAAAAAAAAA")  # not Uuid.ZERO
    sent = requests_sent(log)
    assert {
        ("DESCRIBE_CONFIGS", 4),
        ("CREATE_PARTITIONS", 3),
        ("LIST_GROUPS", 5),
        ("DESCRIBE_GROUPS", 6),
        ("OFFSET_FETCH", 9),
        ("OFFSET_COMMIT", 9),
        ("DELETE_GROUPS", 1),
        ("DELETE_TOPICS", 6),
        ("DESCRIBE_QUORUM", 2),
        ("JOIN_GROUP", 9),
        ("INCREMENTAL_ALTER_CONFIGS", 1),
        ("DESCRIBE_CLUSTER", 2),
        ("DESCRIBE_LOG_DIRS", 4),
    } <= sent


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with shared_cluster(tmp_path_factory.mktemp("cluster")) as made:
        yield made


@pytest.mark.compat("AlterPartitionReassignments", "java")
@pytest.mark.compat("ListPartitionReassignments", "java")
@pytest.mark.compat("ElectLeaders", "java")
def test_reassignment_and_election_on_a_cluster(cluster: ProcessCluster) -> None:
    """On three brokers: the Admin client moves a partition from brokers {1, 2} to
    {3, 2}, lists what is moving, and elects the preferred leader (3) once the move is
    done; asked again, the controller says the election is not needed."""
    create_on(cluster, "java-move", [1, 2])
    run = _java.scenario(
        cluster.bootstrap,
        [
            {
                "op": "admin",
                "action": "alter_reassignments",
                "moves": [["java-move", 0, [3, 2]]],
            },
            {"op": "admin", "action": "list_reassignments"},
        ],
    )
    assert run.result(0) == {"moving": 1}
    # Copying an empty log is quick: the move may be over already.
    listed = run.result(1)
    assert set(listed) <= {"java-move-0"}
    if listed:
        assert (
            listed["java-move-0"]["replicas"][:1] == [3]
            or 3 in (listed["java-move-0"]["adding"])
        )
    wait_for(lambda: state(cluster, "java-move").replicas == (3, 2), "replicas 3, 2")
    wait_for(lambda: len(state(cluster, "java-move").isr) == 2, "both in sync")
    elect = {
        "op": "admin",
        "action": "elect_leaders",
        "type": "preferred",
        "partitions": [["java-move", 0]],
    }
    run = _java.scenario(
        cluster.bootstrap, [elect, {"op": "admin", "action": "list_reassignments"}]
    )
    # Broker 1 left, so 2 or 3 took over: 3 is elected now, or was already.
    assert run.result(0)["java-move-0"] in (None, "ElectionNotNeededException")
    assert run.result(1) == {}
    wait_for(lambda: state(cluster, "java-move").leader == 3, "broker 3 leading")
    again = _java.scenario(cluster.bootstrap, [elect])
    assert again.result(0) == {"java-move-0": "ElectionNotNeededException"}
