"""Valid but nasty requests: well-formed bytes whose values attack the broker's semantics.

A byte-level fuzzer rarely produces these, because every length and CRC must still
add up: a CreateTopics for 2**31-1 partitions, a topic named ``__consumer_offsets`` or
``../x``, a Produce whose record batch has a correct CRC-32C but claims INT32_MAX
records, compression bits 7, or a gzip stream of garbage. Each case builds a request of
one API and one advertised version from the corpus's table (``_corpus.build_request``)
with some fields replaced by hostile values drawn from ``random.Random(f"nasty:{seed}:
{index}")``; record batches are rewritten after building and their CRC recomputed so
that only the semantic check stands between them and the log.
"""

from __future__ import annotations

import datetime
import random
import struct
import uuid
from collections.abc import Callable

from crc32c import crc32c

from minikafka.log import CompressionType, compress
from minikafka.net import ApiKey, request_schema
from tests.fuzz._corpus import (
    DOOMED_TOPIC,
    SUPPORTED,
    TOPIC,
    Overrides,
    Seed,
    build_request,
    record_batch,
)
from tests.fuzz._mutate import INT32_MAX, INT32_MIN, Case, correlation_id, frame

INTERNAL_TOPICS = ("__consumer_offsets", "__cluster_metadata", "__transaction_state")
NAMES = (
    "",
    ".",
    "..",
    "a/b",
    "../../etc",
    "x" * 249,
    "x" * 250,
    "x" * 2000,
    "é",
    "\x00",
    "a b",
    "fuzz\n",
    "-",
    *INTERNAL_TOPICS,
)
INT16 = (-1, 0, 1, 2, 3, 2**15 - 1, -(2**15), -2)
INT32 = (-1, 0, 1, 2, INT32_MAX, INT32_MIN, 100_000, 1 << 24, -2)
INT64 = (-1, 0, -2, -3, 2**63 - 1, -(2**63), 2**40)
TIMEOUTS = (-1, 0, 1, INT32_MIN, 100)
"""Timeouts stay short or negative: a long one only parks the case (and the run)."""

# Offsets inside a v2 record batch header (Kafka's DefaultRecordBatch).
BASE_OFFSET, LENGTH, MAGIC, CRC, ATTRIBUTES, LAST_DELTA = 0, 8, 16, 17, 21, 23
FIRST_TS, MAX_TS, PRODUCER_ID, EPOCH, SEQUENCE, COUNT, RECORDS = (
    27,
    35,
    43,
    51,
    53,
    57,
    61,
)


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def _seal(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, CRC, crc32c(bytes(batch[ATTRIBUTES:])))
    return bytes(batch)


def nasty_batch(rng: random.Random) -> tuple[str, bytes | None]:
    """A batch with a correct CRC and a hostile header or payload."""
    codec = rng.choice(list(CompressionType))
    count = rng.choice((1, 3, 10))
    batch = bytearray(record_batch(codec, count))
    what = rng.randrange(15)
    if what == 0:
        bits = rng.choice((5, 6, 7))
        struct.pack_into(">h", batch, ATTRIBUTES, (batch[ATTRIBUTES + 1] & ~7) | bits)
        return f"compression bits {bits}", _seal(batch)
    if what == 1:
        raw = bytearray(record_batch(CompressionType.NONE, count))
        claimed = rng.choice(
            [c for c in CompressionType if c is not CompressionType.NONE]
        )
        struct.pack_into(">h", raw, ATTRIBUTES, int(claimed))
        return f"{claimed.name} claimed, records uncompressed", _seal(raw)
    if what == 2:
        claimed = rng.choice(
            [c for c in CompressionType if c is not CompressionType.NONE]
        )
        garbage = bytes(rng.randrange(256) for _ in range(rng.choice((1, 50, 5000))))
        if rng.random() < 0.5:
            garbage = b"\x00" * 1_000_000  # compresses to little, expands to a lot
        stream = compress(claimed, garbage)
        raw = bytearray(record_batch(claimed, count)[:RECORDS]) + stream
        struct.pack_into(">i", raw, LENGTH, len(raw) - 12)
        return f"{claimed.name} stream of {len(garbage)} non-record bytes", _seal(raw)
    if what == 3:
        value = rng.choice((0, -1, INT32_MAX, INT32_MIN, count + 1, count - 1))
        struct.pack_into(">i", batch, COUNT, value)
        return f"records count {count} -> {value}", _seal(batch)
    if what == 4:
        value = rng.choice((-1, INT32_MAX, count, count + 5, INT32_MIN))
        struct.pack_into(">i", batch, LAST_DELTA, value)
        return f"lastOffsetDelta {count - 1} -> {value}", _seal(batch)
    if what == 5:
        value = rng.choice((-1, 2**62, 100, -(2**63)))
        struct.pack_into(">q", batch, BASE_OFFSET, value)
        return f"baseOffset {value}", bytes(batch)  # not covered by the CRC
    if what == 6:
        (length,) = struct.unpack_from(">i", batch, LENGTH)
        value = rng.choice((length + 1, length - 1, 0, -1, INT32_MAX, 10))
        struct.pack_into(">i", batch, LENGTH, value)
        return f"batchLength {length} -> {value}", bytes(batch)
    if what == 7:
        magic = rng.choice((0, 1, 3, 0xFF))
        batch[MAGIC] = magic
        return f"magic {magic}", _seal(batch)
    if what == 8 and codec is CompressionType.NONE and len(batch) > RECORDS:
        at = rng.randrange(RECORDS, len(batch))
        batch[at] = rng.choice((0x00, 0x7F, 0x80, 0xFF, 0x01))
        return f"record byte {at} set, CRC recomputed", _seal(batch)
    if what == 9:
        struct.pack_into(
            ">qhi",
            batch,
            PRODUCER_ID,
            rng.choice((12345, 0, 2**62)),
            rng.choice((0, 1, -5)),
            rng.choice((0, -5, INT32_MAX)),
        )
        return "idempotent fields without InitProducerId", _seal(batch)
    if what == 10:
        bit = rng.choice((0x10, 0x20, 0x30, 0x08, 0x40))
        struct.pack_into(">h", batch, ATTRIBUTES, int(codec) | bit)
        return f"attribute bits {bit:#x}", _seal(batch)
    if what == 11:
        first = rng.choice((-1, 2**63 - 1, -(2**63), 0))
        struct.pack_into(
            ">qq", batch, FIRST_TS, first, rng.choice((first, -1, 0, 2**63 - 1))
        )
        return f"timestamps from {first}", _seal(batch)
    if what == 12:
        second = record_batch(codec, count)
        return "two batches with the same offsets", bytes(batch) + second
    if what == 13:
        return "a batch and a torn one", bytes(batch) + bytes(
            batch[: rng.randrange(1, 61)]
        )
    return rng.choice((("no records (null)", None), ("empty records", b"")))


def _name(rng: random.Random) -> str:
    return rng.choice(NAMES)


def produce(rng: random.Random) -> Overrides:
    detail, records = nasty_batch(rng)
    o: dict[str, object] = {"records": records, "_detail": detail}
    if rng.random() < 0.3:
        o["TopicProduceData.name"] = _name(rng)
    if rng.random() < 0.2:
        o["index"] = rng.choice(INT32)
    if rng.random() < 0.2:
        o["acks"] = rng.choice((2, -2, 2**15 - 1, -(2**15), 0, -1))
    if rng.random() < 0.1:
        o["ProduceRequest.timeout"] = ms(rng.choice(TIMEOUTS))
    if rng.random() < 0.1:
        o["transactional_id"] = rng.choice(("tx", ""))
    if rng.random() < 0.1:
        o["TopicProduceData.partition_data"] = tuple(
            {"index": i} for i in (0, 0, 1, 2, 99)
        )
    return o


def fetch(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"FetchTopic.topic": _name(rng)},
            {"partition": rng.choice(INT32)},
            {"fetch_offset": rng.choice(INT64)},
            {"partition_max_bytes": rng.choice(INT32)},
            {"max_bytes": rng.choice(INT32)},
            {"max_wait": ms(rng.choice(TIMEOUTS)), "min_bytes": rng.choice(INT32)},
            {"replica_id": rng.choice((1, 0, -2, 1000, INT32_MAX))},
            {"isolation_level": rng.choice((2, -1, 127))},
            {"session_id": rng.choice(INT32), "session_epoch": rng.choice(INT32)},
            {"FetchTopic.partitions": tuple({"partition": p} for p in (0, 0, 1, 1, 2))},
            {"FetchRequest.topics": tuple({"topic": n} for n in NAMES)},
        )
    )


def list_offsets(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"ListOffsetsPartition.timestamp": rng.choice(INT64)},
            {"partition_index": rng.choice(INT32)},
            {"ListOffsetsTopic.name": _name(rng)},
            {"replica_id": rng.choice((1, 0, -2))},
            {"isolation_level": rng.choice((2, -1))},
            {"current_leader_epoch": rng.choice(INT32)},
        )
    )


def metadata(rng: random.Random) -> Overrides:
    many = rng.choice((1, 10, 1000))
    return rng.choice(
        (
            {
                "MetadataRequestTopic.name": _name(rng),
                "allow_auto_topic_creation": True,
            },
            {
                "MetadataRequest.topics": tuple(
                    {"name": f"auto-{i}"} for i in range(many)
                ),
                "allow_auto_topic_creation": rng.random() < 0.2,
            },
            {
                "MetadataRequest.topics": tuple({"name": n} for n in NAMES),
                "allow_auto_topic_creation": True,
            },
        )
    )


def offset_commit(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"OffsetCommitRequestTopic.name": _name(rng)},
            {"partition_index": rng.choice(INT32)},
            {"committed_offset": rng.choice(INT64)},
            {"committed_metadata": rng.choice(("x" * 4097, "x" * 32767, "\x00"))},
            {"generation_id_or_member_epoch": rng.choice(INT32), "member_id": "nobody"},
            {"group_id": rng.choice(("", *INTERNAL_TOPICS, "x" * 32767))},
            {"retention_time": ms(rng.choice(INT64[:4]))},
        )
    )


def find_coordinator(rng: random.Random) -> Overrides:
    """A key type no coordinator has, and v4's lists of keys (KIP-699): none, odd ones,
    hundreds, repeated."""
    return rng.choice(
        (
            {"key_type": rng.choice((1, 2, 7, -1, 127))},
            {
                "coordinator_keys": tuple(
                    rng.choice(("", "g", "x" * 32767, *INTERNAL_TOPICS))
                    for _ in range(rng.choice((0, 3, 500)))
                ),
                "key_type": rng.choice((0, 1, 2, 7)),
            },
            group_ids(rng),
        )
    )


def group_ids(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"group_id": rng.choice(("", "x" * 32767, *INTERNAL_TOPICS))},
            {
                "member_id": rng.choice(("nobody", "x" * 32767)),
                "generation_id": rng.choice(INT32),
            },
            {"group_instance_id": rng.choice(("static", ""))},
            {
                "groups": tuple(
                    rng.choice(("", "g", "x" * 1000))
                    for _ in range(rng.choice((0, 3, 500)))
                )
            },
            {"groups_names": ("", "fuzz-group", *INTERNAL_TOPICS)},
            {  # OffsetFetch v8+ (KIP-709): none, a few or hundreds of groups at once
                "OffsetFetchRequest.groups": tuple(
                    {
                        "group_id": rng.choice(("", "g", "x" * 1000, *INTERNAL_TOPICS)),
                        "topics": rng.choice((None, ())),
                    }
                    for _ in range(rng.choice((0, 3, 500)))
                )
            },
            {
                "key": rng.choice(("", "x" * 32767)),
                "key_type": rng.choice((1, 2, -1, 127)),
            },
            {
                "LeaveGroupRequest.members": tuple(
                    {"member_id": f"m{i}"} for i in range(200)
                )
            },
        )
    )


def join_group(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"session_timeout": ms(rng.choice((0, -1, 99, INT32_MAX, INT32_MIN)))},
            {"rebalance_timeout": ms(rng.choice((0, -1, INT32_MIN, 1)))},
            {"JoinGroupRequest.protocols": ()},
            {
                "JoinGroupRequestProtocol.name": "",
                "JoinGroupRequestProtocol.metadata": b"\xff" * 9,
            },
            {"protocol_type": rng.choice(("", "connect", "x" * 32767))},
            {
                "JoinGroupRequest.protocols": tuple(
                    {"name": f"p{i % 3}"} for i in range(300)
                )
            },
            {"member_id": "made-up-member", "group_instance_id": "static"},
        )
    )


def sync_group(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {
                "SyncGroupRequest.assignments": tuple(
                    {"member_id": m} for m in ("", "a", "a")
                )
            },
            {
                "SyncGroupRequestAssignment.assignment": b"\xff" * 100,
                "SyncGroupRequest.assignments": ({"member_id": "x"},),
            },
            {"generation_id": rng.choice(INT32), "member_id": "nobody"},
        )
    )


def create_topics(rng: random.Random) -> Overrides:
    o: dict[str, object] = {"validate_only": rng.random() < 0.3}
    choice = rng.randrange(6)
    if choice == 0:
        o["num_partitions"] = rng.choice(INT32)
    elif choice == 1:
        o["replication_factor"] = rng.choice(INT16)
    elif choice == 2:
        o["CreatableTopic.name"] = _name(rng)
    elif choice == 3:
        brokers = rng.choice(((1, 1), (-1,), (99,), (), (1, 2, 3)))
        o["num_partitions"], o["replication_factor"] = -1, -1
        o["assignments"] = tuple(
            {"partition_index": p, "broker_ids": brokers}
            for p in rng.choice(((0, 0), (5,), (-1,), (0, 1)))
        )
    elif choice == 4:
        key, value = rng.choice(
            (
                ("segment.bytes", "0"),
                ("segment.bytes", "-1"),
                ("retention.ms", "x"),
                ("cleanup.policy", "nonsense"),
                ("foo.bar", "1"),
                ("min.insync.replicas", "0"),
                ("max.message.bytes", "-5"),
                ("segment.bytes", None),
                ("compression.type", "rar"),
                ("segment.index.bytes", "1"),
                ("segment.ms", "0"),
            )
        )
        o["CreatableTopicConfig.name"], o["CreatableTopicConfig.value"] = key, value
    else:
        many = rng.choice((2, 100, 1000))
        o["CreateTopicsRequest.topics"] = tuple(
            {"name": rng.choice((DOOMED_TOPIC, f"many-{i}"))} for i in range(many)
        )
    if rng.random() < 0.2:
        o["timeout"] = ms(rng.choice(TIMEOUTS))
    return o


def delete_topics(rng: random.Random) -> Overrides:
    names = tuple(
        n for n in (*NAMES, DOOMED_TOPIC, DOOMED_TOPIC, "missing") if rng.random() < 0.3
    )
    # v6 (KIP-516): each topic by name, by id, by both or by neither; ids no topic has,
    # the zero id, an id twice.
    ids = (uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128)), uuid.UUID(int=7))
    states = tuple(
        {
            "name": rng.choice((None, *names, _name(rng))),
            "topic_id": rng.choice((*ids, ids[2])),
        }
        for _ in range(rng.choice((1, 3, 300)))
    )
    return {
        "DeleteTopicsRequest.topic_names": names or (_name(rng),),
        "DeleteTopicsRequest.topics": states,
        "timeout": ms(rng.choice((*TIMEOUTS, 5000))),
    }


def create_partitions(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {
                "CreatePartitionsTopic.count": rng.choice(INT32),
                "validate_only": rng.random() < 0.5,
            },
            {
                "CreatePartitionsTopic.name": _name(rng),
                "CreatePartitionsTopic.count": 8,
            },
            {
                "CreatePartitionsTopic.count": 5,
                "CreatePartitionsTopic.assignments": tuple(
                    {"broker_ids": b} for b in ((1, 1), (99,))
                ),
            },
            {"CreatePartitionsRequest.topics": ({"name": TOPIC}, {"name": TOPIC})},
        )
    )


def describe_configs(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"resource_type": rng.choice((0, 1, 3, 99, -1, 127))},
            {"resource_type": 4, "resource_name": rng.choice(("", "999", "-1", "x"))},
            {"resource_name": _name(rng)},
            {
                "configuration_keys": tuple(
                    rng.choice(("", "x" * 1000, "segment.bytes")) for _ in range(50)
                )
            },
        )
    )


def misc(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"client_software_name": rng.choice(("", "!!", "x" * 32767, "é"))},
            {"transactional_id": rng.choice(("tx", "", "x" * 32767))},
            {"transaction_timeout": ms(rng.choice((*TIMEOUTS, INT32_MAX)))},
        )
    )


def sasl(rng: random.Random) -> Overrides:
    """SaslHandshake and SaslAuthenticate on a PLAINTEXT listener: whatever they carry,
    ILLEGAL_SASL_STATE (a SASL listener's exchange is fuzzed in the net package)."""
    return rng.choice(
        (
            {"mechanism": rng.choice(("", "PLAIN", "GSSAPI", "x" * 32767, "é"))},
            {
                "auth_bytes": rng.choice(
                    (b"", b"\x00\x00", b"\x00alice\x00secret", b"\xff" * 70000)
                )
            },
        )
    )


def scram_alterations(rng: random.Random) -> Overrides:
    """AlterUserScramCredentials (KIP-554): unknown mechanisms, iterations out of
    bounds, empty or odd names, empty or huge salts; each user gets Kafka's error."""
    return rng.choice(
        (
            {"ScramCredentialUpsertion.mechanism": rng.choice((0, 3, -1, 127, -128))},
            {"ScramCredentialDeletion.mechanism": rng.choice((0, 1, 2, 3, -1))},
            {"iterations": rng.choice(INT32)},
            {"ScramCredentialUpsertion.name": rng.choice(("", "é", "x" * 32767))},
            {"ScramCredentialDeletion.name": rng.choice(("", "nobody", "=,"))},
            {"salt": rng.choice((b"", b"\x00" * 70000))},
            {"salted_password": rng.choice((b"", b"\xff" * 70000))},
        )
    )


def scram_descriptions(rng: random.Random) -> Overrides:
    """DescribeUserScramCredentials: every user, none, or odd names."""
    return {"UserName.name": rng.choice(("", "nobody", "é", "x" * 32767))}


def acls(rng: random.Random) -> Overrides:
    """CreateAcls, DescribeAcls, DeleteAcls (KIP-801): unknown or not-allowed codes for
    every enum (UNKNOWN, ANY, MATCH, out of range), empty or odd names and principals;
    each creation or filter gets INVALID_REQUEST or SECURITY_DISABLED, nothing else."""
    code = rng.choice((0, 1, 2, 3, 4, 5, 99, -1, 127, -128))
    return rng.choice(
        (
            {"resource_type": code},
            {"resource_type_filter": code},
            {"resource_pattern_type": code},
            {"pattern_type_filter": code},
            {"operation": code},
            {"permission_type": code},
            {"principal": rng.choice(("", "alice", ":", "User:", "é" * 100))},
            {"principal_filter": rng.choice(("", "alice", None, "x" * 32767))},
            {"resource_name": rng.choice(("", "*", "x" * 32767))},
            {"resource_name_filter": rng.choice(("", None, "é"))},
        )
    )


def offset_for_leader_epoch(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"leader_epoch": rng.choice(INT32)},
            {"current_leader_epoch": rng.choice(INT32)},
            {"replica_id": rng.choice((1, 0, -2, 1000, INT32_MAX))},
            {"OffsetForLeaderTopic.topic": _name(rng)},
            {"partition": rng.choice(INT32)},
        )
    )


def elect_leaders(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"election_type": rng.choice((0, 1, 2, -1, 127))},
            {"topic_partitions": None},
            {"TopicPartitions.topic": _name(rng)},
            {"TopicPartitions.partitions": tuple(rng.choice(INT32) for _ in range(3))},
            {"timeout": ms(rng.choice(TIMEOUTS))},
        )
    )


def reassignments(rng: random.Random) -> Overrides:
    """AlterPartitionReassignments: moves to brokers that do not exist, to none, twice the
    same broker, cancels of nothing; on internal and impossible topics."""
    return rng.choice(
        (
            {
                "ReassignablePartition.replicas": rng.choice(
                    ((), (1, 1), (99,), (1,), None)
                )
            },
            {"ReassignablePartition.replicas": (INT32_MAX, -1)},
            {
                "ReassignableTopic.name": _name(rng),
                "ReassignablePartition.replicas": (1,),
            },
            {
                "partition_index": rng.choice(INT32),
                "ReassignablePartition.replicas": (1,),
            },
            {"timeout": ms(rng.choice(TIMEOUTS))},
        )
    )


def list_reassignments(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"ListPartitionReassignmentsTopics.name": _name(rng)},
            {"partition_indexes": tuple(rng.choice(INT32) for _ in range(3))},
            {"ListPartitionReassignmentsRequest.topics": None},
        )
    )


def describe_quorum(rng: random.Random) -> Overrides:
    """DescribeQuorum about other partitions than __cluster_metadata-0, or about none."""
    return rng.choice(
        (
            {"TopicData.topic_name": rng.choice((*INTERNAL_TOPICS, *NAMES))},
            {
                "TopicData.topic_name": "__cluster_metadata",
                "partition_index": rng.choice(INT32),
            },
            {"DescribeQuorumRequest.topics": ()},
        )
    )


def unregister_broker(rng: random.Random) -> Overrides:
    """UnregisterBroker of ids no broker has: negative, huge, the controller's own."""
    return {"broker_id": rng.choice((-1, -2, 0, 2, 99, INT32_MAX, INT32_MIN))}


def alter_configs(rng: random.Random) -> Overrides:
    """IncrementalAlterConfigs and AlterConfigs: resource types and names that do not
    exist or are not this broker, keys no resource has, values of the wrong type or
    range, nulls, operations that do not exist, a key or a resource twice, a static
    broker key. Every one is refused; a valid change goes only with validate_only, so
    the topics the run reads back keep their settings."""
    key = rng.choice(
        ("", "x" * 1000, "no.such.key", "retention.ms", "cleanup.policy", "log.dirs")
    )
    bad = rng.choice(("", "-5", "soon", "x" * 1000, None, str(2**63)))
    good = rng.choice(("1", "compact", str(INT32_MAX), "delete,compact"))
    twice = ({"name": "retention.ms", "value": "5"}, {"name": "retention.ms"})
    return rng.choice(
        (
            {"resource_type": rng.choice((0, 1, 3, 8, 99, -1, 127))},
            {"resource_type": 4, "resource_name": rng.choice(("999", "-1", "x", "é"))},
            {"resource_type": 4, "AlterableConfig.name": "log.dirs"},
            {"resource_name": _name(rng)},
            {"AlterableConfig.name": key, "AlterableConfig.value": bad},
            {
                "AlterableConfig.name": key,
                "AlterableConfig.value": good,
                "validate_only": True,
            },
            {
                "config_operation": rng.choice((2, 3, 4, -1, 127)),
                "AlterableConfig.name": "retention.ms",
                "AlterableConfig.value": "5",
            },
            {"AlterConfigsResource.configs": twice},
            {"resources": ({"resource_name": TOPIC}, {"resource_name": TOPIC})},
        )
    )


def offset_delete(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"group_id": rng.choice(("", "x" * 32767, *INTERNAL_TOPICS))},
            {"OffsetDeleteRequestTopic.name": _name(rng)},
            {"partition_index": rng.choice(INT32)},
            {"OffsetDeleteRequest.topics": ()},
        )
    )


def consumer_group_heartbeat(rng: random.Random) -> Overrides:
    """KIP-848's heartbeat: epochs out of range, empty or huge ids, odd subscriptions,
    owned partitions of unknown topics or impossible numbers."""
    return rng.choice(
        (
            {"group_id": rng.choice(("", "x" * 32767, *INTERNAL_TOPICS))},
            {
                "member_id": rng.choice(("", "nobody", "x" * 32767)),
                "member_epoch": rng.choice(INT32),
            },
            {"member_epoch": rng.choice((0, -1, -2, -3, INT32_MAX))},
            {"rebalance_timeout": ms(rng.choice((*TIMEOUTS, INT32_MAX)))},
            {
                "subscribed_topic_names": tuple(
                    rng.choice(NAMES) for _ in range(rng.choice((0, 3, 500)))
                )
            },
            {
                "subscribed_topic_regex": rng.choice(
                    ("", "(", ".*", "x" * 32767, "(a+)+$", "\\", "(?<=x)", "[[:^x:]]")
                )
            },
            {"server_assignor": rng.choice(("", "uniform", "sticky", "x" * 1000))},
            {"instance_id": rng.choice(("", "static")), "member_epoch": -2},
            {
                "ConsumerGroupHeartbeatRequest.topic_partitions": (
                    {"topic_id": uuid.uuid4(), "partitions": (INT32_MAX, -1, 0, 0)},
                ),
                "member_epoch": rng.choice((0, 1, 5)),
            },
        )
    )


def consumer_group_describe(rng: random.Random) -> Overrides:
    return {
        "group_ids": tuple(
            rng.choice(("", "g", "x" * 1000, *INTERNAL_TOPICS))
            for _ in range(rng.choice((0, 3, 500)))
        )
    }


def list_groups(rng: random.Random) -> Overrides:
    """ListGroups' filters (v4+, v5+): states and types that do not exist, in any case."""
    return rng.choice(
        (
            {
                "states_filter": tuple(
                    rng.choice(("", "STABLE", "x" * 1000, "Dead")) for _ in range(3)
                )
            },
            {
                "types_filter": tuple(
                    rng.choice(("", "CLASSIC", "share", "x" * 1000)) for _ in range(3)
                )
            },
        )
    )


def describe_cluster(rng: random.Random) -> Overrides:
    return {
        "endpoint_type": rng.choice((0, 1, 2, 3, -1, 127)),
        "include_cluster_authorized_operations": rng.choice((True, False)),
    }


def describe_producers(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"TopicRequest.name": _name(rng)},
            {"partition_indexes": tuple(rng.choice(INT32) for _ in range(3))},
            {"DescribeProducersRequest.topics": ()},
        )
    )


def describe_log_dirs(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"DescribeLogDirsRequest.topics": None},
            {"DescribableLogDirTopic.topic": _name(rng)},
            {
                "DescribableLogDirTopic.partitions": tuple(
                    rng.choice(INT32) for _ in range(3)
                )
            },
        )
    )


def delete_records(rng: random.Random) -> Overrides:
    return rng.choice(
        (
            {"DeleteRecordsPartition.offset": rng.choice(INT64)},
            {"partition_index": rng.choice(INT32)},
            {"DeleteRecordsTopic.name": _name(rng)},
            {"DeleteRecordsRequest.timeout": ms(rng.choice(TIMEOUTS))},
            {"DeleteRecordsRequest.topics": ()},
            {  # one partition named twice, with two offsets
                "DeleteRecordsTopic.partitions": (
                    {"partition_index": 0, "offset": rng.choice(INT64)},
                    {"partition_index": 0, "offset": rng.choice(INT64)},
                )
            },
        )
    )


def transactions(rng: random.Random) -> Overrides:
    """AddPartitionsToTxn, EndTxn, AddOffsetsToTxn and TxnOffsetCommit: ids that are
    empty or huge, producers that do not exist or are negative, internal topics."""
    txn_id = rng.choice(("", "x" * 32767, "fuzz-txn", *INTERNAL_TOPICS))
    return rng.choice(
        (
            {
                "AddPartitionsToTxnRequest.v3_and_below_transactional_id": txn_id,
                "AddPartitionsToTxnTransaction.transactional_id": txn_id,
                "EndTxnRequest.transactional_id": txn_id,
                "AddOffsetsToTxnRequest.transactional_id": txn_id,
                "TxnOffsetCommitRequest.transactional_id": txn_id,
            },
            {
                "producer_id": rng.choice(INT64),
                "producer_epoch": rng.choice(INT16),
                "v3_and_below_producer_id": rng.choice(INT64),
                "v3_and_below_producer_epoch": rng.choice(INT16),
            },
            {"AddPartitionsToTxnTopic.name": _name(rng)},
            {"AddPartitionsToTxnTopic.partitions": (rng.choice(INT32),) * 3},
            {"TxnOffsetCommitRequestTopic.name": _name(rng)},
            {"committed_offset": rng.choice(INT64), "group_id": ""},
            {"committed": rng.choice((True, False))},
            {"verify_only": rng.choice((True, False))},
        )
    )


def write_txn_markers(rng: random.Random) -> Overrides:
    """Markers a coordinator never sends: any producer, epoch or coordinator epoch, to
    unknown or internal partitions, commit or abort."""
    return rng.choice(
        (
            {
                "WritableTxnMarker.producer_id": rng.choice(INT64),
                "WritableTxnMarker.producer_epoch": rng.choice(INT16),
            },
            {"WritableTxnMarker.coordinator_epoch": rng.choice(INT32)},
            {"transaction_result": rng.choice((True, False))},
            {"WritableTxnMarkerTopic.name": _name(rng)},
            {"WritableTxnMarkerTopic.partition_indexes": (rng.choice(INT32),) * 2},
            {"WriteTxnMarkersRequest.markers": ()},
        )
    )


def transaction_reads(rng: random.Random) -> Overrides:
    """DescribeTransactions and ListTransactions: ids empty, huge, repeated or
    internal; state names of any case or none Kafka knows; any producer id and
    duration, negative ones included; id patterns that do not compile or are huge."""
    return rng.choice(
        (
            {
                "DescribeTransactionsRequest.transactional_ids": (
                    rng.choice(("", "x" * 32767, "fuzz-txn", *INTERNAL_TOPICS)),
                )
                * rng.choice((1, 3))
            },
            {"DescribeTransactionsRequest.transactional_ids": ()},
            {
                "ListTransactionsRequest.state_filters": tuple(
                    rng.choice(("", "ongoing", "Dead", "PrepareEpochFence", _name(rng)))
                    for _ in range(3)
                )
            },
            {
                "ListTransactionsRequest.producer_id_filters": tuple(
                    rng.choice(INT64) for _ in range(3)
                )
            },
            {"ListTransactionsRequest.duration_filter": rng.choice(INT64)},
            {  # patterns that do not compile, or take long to match
                "ListTransactionsRequest.transactional_id_pattern": rng.choice(
                    ("(", "[", "*", "\\", "(a+)+$", ".*" * 50, "x" * 32767, "")
                )
            },
        )
    )


NASTY: dict[ApiKey, Callable[[random.Random], Overrides]] = {
    ApiKey.PRODUCE: produce,
    ApiKey.FETCH: fetch,
    ApiKey.LIST_OFFSETS: list_offsets,
    ApiKey.METADATA: metadata,
    ApiKey.OFFSET_COMMIT: offset_commit,
    ApiKey.OFFSET_FETCH: group_ids,
    ApiKey.FIND_COORDINATOR: find_coordinator,
    ApiKey.JOIN_GROUP: join_group,
    ApiKey.HEARTBEAT: group_ids,
    ApiKey.LEAVE_GROUP: group_ids,
    ApiKey.SYNC_GROUP: sync_group,
    ApiKey.DESCRIBE_GROUPS: group_ids,
    ApiKey.LIST_GROUPS: list_groups,
    ApiKey.API_VERSIONS: misc,
    ApiKey.SASL_HANDSHAKE: sasl,
    ApiKey.SASL_AUTHENTICATE: sasl,
    ApiKey.CREATE_TOPICS: create_topics,
    ApiKey.DELETE_TOPICS: delete_topics,
    ApiKey.DELETE_RECORDS: delete_records,
    ApiKey.INIT_PRODUCER_ID: misc,
    ApiKey.DESCRIBE_CONFIGS: describe_configs,
    ApiKey.CREATE_PARTITIONS: create_partitions,
    ApiKey.DELETE_GROUPS: group_ids,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch,
    ApiKey.ELECT_LEADERS: elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: list_reassignments,
    ApiKey.DESCRIBE_QUORUM: describe_quorum,
    ApiKey.UNREGISTER_BROKER: unregister_broker,
    ApiKey.ALTER_CONFIGS: alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: alter_configs,
    ApiKey.OFFSET_DELETE: offset_delete,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs,
    ApiKey.DESCRIBE_PRODUCERS: describe_producers,
    ApiKey.ADD_PARTITIONS_TO_TXN: transactions,
    ApiKey.END_TXN: transactions,
    ApiKey.ADD_OFFSETS_TO_TXN: transactions,
    ApiKey.TXN_OFFSET_COMMIT: transactions,
    ApiKey.WRITE_TXN_MARKERS: write_txn_markers,
    ApiKey.DESCRIBE_TRANSACTIONS: transaction_reads,
    ApiKey.LIST_TRANSACTIONS: transaction_reads,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: scram_descriptions,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: scram_alterations,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_describe,
    ApiKey.DESCRIBE_ACLS: acls,
    ApiKey.CREATE_ACLS: acls,
    ApiKey.DELETE_ACLS: acls,
}
assert NASTY.keys() == SUPPORTED.keys()


def nasty_case(seed_value: int, index: int) -> Case:
    """Case ``index`` of the valid-but-nasty run of ``seed_value``."""
    rng = random.Random(f"nasty:{seed_value}:{index}")
    if index < 2 * len(NAMES):
        # First, deterministically: create a topic of each odd name, then delete each.
        # Random draws rarely pair a creation with the deletion of the same name, and
        # what a deletion does with a name (a rename to a "-delete" directory) is where
        # a name the creation accepted can break the broker.
        api_key, version = (
            (ApiKey.CREATE_TOPICS, 4)
            if index < len(NAMES)
            else (ApiKey.DELETE_TOPICS, 3)
        )
        name = NAMES[index % len(NAMES)]
        overrides: dict[str, object] = (
            {"CreatableTopic.name": name}
            if api_key == ApiKey.CREATE_TOPICS
            else {"DeleteTopicsRequest.topic_names": (name,)}
        )
    else:
        api_key = rng.choice(sorted(NASTY))
        version = rng.randint(*SUPPORTED[api_key])
        overrides = dict(NASTY[api_key](rng))
    cls = request_schema(api_key, version)
    assert cls is not None
    detail = str(overrides.pop("_detail", ""))
    shown = {
        k: (v if len(repr(v)) < 80 else repr(v)[:77] + "...")
        for k, v in overrides.items()
    }
    try:
        body = build_request(cls, overrides)
    except (ValueError, TypeError) as e:
        # A value this version's types cannot hold (kio checks ranges): send the plain
        # request instead, saying so, so the case index keeps its meaning.
        body = build_request(cls, {})
        shown = {"unencodable": f"{type(e).__name__}: {e}"}
    seed = Seed(api_key, version, 0, body)
    payload = seed.payload(correlation_id(rng))
    return Case(
        "nasty",
        seed_value,
        index,
        "nasty",
        seed.name,
        f"{shown} {detail}".strip(),
        frame(payload),
    )
