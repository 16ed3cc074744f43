"""The QuorumController as a core: requests and time in, records and replies out (seed 004).

Every scenario drives the controller through ``ControllerHarness`` (a fake quorum that
commits only when told to) and asserts on the exact records appended and the exact
responses, so the pipelining of seed 004 §2.1 is visible: records are replayed at once and
the next request already sees them, while replies wait for the commit.
"""

from __future__ import annotations

import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from minikafka.common import CoreResult
from minikafka.controller import (
    NO_LEADER,
    PRODUCER_ID_BLOCK_SIZE,
    UNCLEAN_ELECTION,
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionItem,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    AppendRecords,
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerMetadata,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ConfigRecord,
    ConfigResourceType,
    ControllerConfig,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    FeatureLevelRecord,
    FenceBrokerRecord,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    MetadataDelta,
    MetadataImage,
    MetadataRecord,
    OngoingReassignment,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionRegistration,
    ProducerIdsRecord,
    QuorumController,
    ReassignablePartition,
    ReassignmentResult,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    Reply,
    TopicRecord,
    UnfenceBrokerRecord,
    assign_replicas_to_brokers,
)
from minikafka.controller.testing import (
    ControllerHarness,
    controller_state,
    image_from_records,
    image_state,
)

TOPIC = ConfigResourceType.TOPIC


def cluster(
    n: int = 3, config: ControllerConfig | None = None, seed: int = 0
) -> ControllerHarness:
    harness = ControllerHarness.start(config, seed=seed)
    harness.add_brokers(range(1, n + 1))
    return harness


def created(
    h: ControllerHarness, name: str, *assignments: tuple[int, ...], **configs: str
) -> uuid.UUID:
    """Create ``name`` with a manual assignment (configs with '_' for '.'); its topic id."""
    pairs = tuple((k.replace("_", "."), v) for k, v in configs.items())
    result = h.create_topic(name, assignments=assignments, configs=pairs)
    assert result.topic_id is not None
    return result.topic_id


def partition_record(
    topic_id: uuid.UUID,
    partition_id: int,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
) -> PartitionRecord:
    return PartitionRecord(partition_id, topic_id, replicas, isr, leader=isr[0])


def alter(
    h: ControllerHarness,
    broker: int,
    topic_id: uuid.UUID,
    new_isr: tuple[int, ...],
    *,
    partition: int = 0,
    leader_epoch: int | None = None,
    partition_epoch: int | None = None,
    broker_epoch: int | None = None,
) -> AlterPartitionRequest:
    """An AlterPartition from ``broker`` built on the controller's current view by default."""
    current = h.controller.replication.partitions.get((topic_id, partition))
    current = current or PartitionRegistration((), ())  # an unknown partition: epochs 0
    item = AlterPartitionItem(
        topic_id,
        partition,
        current.leader_epoch if leader_epoch is None else leader_epoch,
        new_isr,
        current.partition_epoch if partition_epoch is None else partition_epoch,
    )
    epoch = h.broker_epochs[broker] if broker_epoch is None else broker_epoch
    return AlterPartitionRequest(broker, epoch, (item,))


def expire(h: ControllerHarness, *alive: int) -> list[AppendRecords]:
    """Heartbeat ``alive`` and let every other broker's session run out."""
    timeout = h.controller.config.broker_session_timeout_ms / 1000
    h.now += timeout / 2
    for broker in alive:
        h.heartbeat(broker)
    fenced = h.advance(timeout / 2 + 0.001)
    h.commit()
    return list(fenced.records)


# --- brokers joining, and topic creation --------------------------------------------------


def test_broker_registers_fenced_and_is_unfenced_once_caught_up() -> None:
    h = ControllerHarness.start()
    assert h.log == [(0, FeatureLevelRecord("metadata.version", 1))]
    incarnation = uuid.UUID(int=11)
    endpoint = BrokerEndpoint("PLAINTEXT", "b1", 9092)
    rid = h.send(BrokerRegistrationRequest(1, incarnation, (endpoint,), "r1"))
    assert h.appended_since(0) == [
        RegisterBrokerRecord(1, incarnation, 1, (endpoint,), "r1")
    ]
    # the epoch is not the broker's until the record commits
    assert h.reply(rid) is None
    assert h.commit() == [Reply(rid, BrokerRegistrationResponse(ErrorCode.none, 1))]
    assert h.controller.cluster.brokers[1].fenced

    # A broker that has not replayed its own registration yet stays fenced.
    behind = h.request(BrokerHeartbeatRequest(1, 1, current_metadata_offset=0))
    assert behind == BrokerHeartbeatResponse(
        ErrorCode.none, is_caught_up=False, is_fenced=True
    )
    assert h.last_offset == 1

    rid = h.send(BrokerHeartbeatRequest(1, 1, current_metadata_offset=1))
    assert h.appended_since(1) == [UnfenceBrokerRecord(1, 1)]
    assert h.reply(rid) is None
    h.commit()
    assert h.response(rid) == BrokerHeartbeatResponse(
        ErrorCode.none, is_caught_up=True, is_fenced=False
    )
    assert not h.controller.cluster.brokers[1].fenced


def test_create_topic_with_placement_is_answered_only_after_commit() -> None:
    h = cluster(3, seed=42)
    before = h.last_offset
    first = h.send(CreateTopicsRequest((CreatableTopic("orders", 3, 2),)))
    records = h.appended_since(before)
    # Placement draws from the controller's seeded rng: the layout AdminUtils gives.
    brokers = [BrokerMetadata(b) for b in (1, 2, 3)]
    expected = assign_replicas_to_brokers(3, 2, brokers, rng=random.Random(42))
    topic_id = h.topic_id("orders")
    assert records == [
        TopicRecord("orders", topic_id),
        *(partition_record(topic_id, p, expected[p], expected[p]) for p in range(3)),
    ]
    assert h.reply(first) is None

    # Pipelining: the next request already sees the uncommitted topic...
    second = h.send(CreateTopicsRequest((CreatableTopic("orders", 1, 1),)))
    assert h.last_offset == before + 4  # ...and writes nothing itself,
    assert h.reply(second) is None  # but its answer rests on records not yet committed.

    replies = h.commit()
    assert [r.request_id for r in replies] == [first, second]
    assert h.response(first) == CreateTopicsResponse(
        (CreatableTopicResult("orders", ErrorCode.none, None, topic_id, 3, 2),)
    )
    assert h.response(second) == CreateTopicsResponse(
        (
            CreatableTopicResult(
                "orders",
                ErrorCode.topic_already_exists,
                "Topic 'orders' already exists.",
            ),
        )
    )


def test_rack_aware_placement_spreads_every_partition_over_both_racks() -> None:
    h = ControllerHarness.start(seed=3)
    h.add_brokers([1, 2, 3, 4], racks=["a", "a", "b", "b"])
    assert h.controller.cluster.brokers[3].rack == "b"
    h.create_topic("spread", 6, 2)
    rack = {1: "a", 2: "a", 3: "b", 4: "b"}
    layouts = [p.replicas for _, p in sorted(h.state().topics["spread"][1].items())]
    assert [{rack[b] for b in replicas} for replicas in layouts] == [{"a", "b"}] * 6
    brokers = [BrokerMetadata(b, rack[b]) for b in (1, 2, 3, 4)]
    expected = assign_replicas_to_brokers(6, 2, brokers, rng=random.Random(3))
    assert layouts == [expected[p] for p in range(6)]


def test_create_topic_with_manual_assignment_and_configs() -> None:
    h = cluster(3)
    before = h.last_offset
    topic = CreatableTopic(
        "manual", assignments=((3, 1), (2, 3)), configs=(("retention.ms", "60000"),)
    )
    response = h.request(CreateTopicsRequest((topic,)))
    topic_id = h.topic_id("manual")
    assert h.appended_since(before) == [
        TopicRecord("manual", topic_id),
        PartitionRecord(0, topic_id, (3, 1), (3, 1), leader=3),
        PartitionRecord(1, topic_id, (2, 3), (2, 3), leader=2),
        ConfigRecord(TOPIC, "manual", "retention.ms", "60000"),
    ]
    assert response == CreateTopicsResponse(
        (CreatableTopicResult("manual", ErrorCode.none, None, topic_id, 2, 2),)
    )


def test_new_partitions_put_fenced_replicas_out_of_the_isr() -> None:
    h = cluster(3)
    h.register(4)  # registered, never heartbeated: fenced
    topic_id = created(h, "t", (4, 1, 2))
    assert h.partition("t", 0) == PartitionRegistration((4, 1, 2), (1, 2), leader=1)
    assert h.committed_records()[-1][1] == PartitionRecord(
        0, topic_id, (4, 1, 2), (1, 2), leader=1
    )


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("", ErrorCode.invalid_topic_exception),
        (".", ErrorCode.invalid_topic_exception),
        ("..", ErrorCode.invalid_topic_exception),
        ("a" * 250, ErrorCode.invalid_topic_exception),
        ("with space", ErrorCode.invalid_topic_exception),
        ("ümlaut", ErrorCode.invalid_topic_exception),
        ("a/b", ErrorCode.invalid_topic_exception),
    ],
)
def test_invalid_topic_names_are_refused(name: str, code: ErrorCode) -> None:
    h = cluster(1)
    before = h.last_offset
    response = h.request(CreateTopicsRequest((CreatableTopic(name, 1, 1),)))
    assert isinstance(response, CreateTopicsResponse)
    assert [(t.name, t.error_code) for t in response.topics] == [(name, code)]
    assert h.last_offset == before


def test_longest_legal_topic_name_is_accepted() -> None:
    h = cluster(1)
    assert h.create_topic("a" * 249, 1, 1).error_code == ErrorCode.none


def _create_errors(
    h: ControllerHarness, *topics: CreatableTopic
) -> list[tuple[str, ErrorCode]]:
    before = h.last_offset
    response = h.request(CreateTopicsRequest(topics))
    assert isinstance(response, CreateTopicsResponse)
    assert h.last_offset == before, "a refused creation must not write records"
    return [(t.name, t.error_code) for t in response.topics]


def test_create_topic_errors() -> None:
    h = cluster(3)
    created(h, "exists", (1,))
    created(h, "a.b", (1,))
    assert _create_errors(
        h,
        CreatableTopic("exists", 1, 1),
        CreatableTopic("a_b", 1, 1),  # collides with "a.b" in metric names
        CreatableTopic("rf4", 1, 4),
        CreatableTopic("rf0", 1, 0),
        CreatableTopic("p0", 0, 1),
        CreatableTopic("badkey", 1, 1, configs=(("no.such.key", "1"),)),
        CreatableTopic("badvalue", 1, 1, configs=(("retention.ms", "soon"),)),
        CreatableTopic(
            "badbool", 1, 1, configs=(("unclean.leader.election.enable", "yes"),)
        ),
        CreatableTopic("unknownbroker", assignments=((1, 9),)),
        CreatableTopic("twice", assignments=((1, 1),)),
        CreatableTopic("ragged", assignments=((1, 2), (3,))),
        CreatableTopic("noreplicas", assignments=((),)),
        CreatableTopic("both", 1, 1, assignments=((1,),)),
    ) == [
        ("exists", ErrorCode.topic_already_exists),
        ("a_b", ErrorCode.invalid_topic_exception),
        ("rf4", ErrorCode.invalid_replication_factor),
        ("rf0", ErrorCode.invalid_replication_factor),
        ("p0", ErrorCode.invalid_partitions),
        ("badkey", ErrorCode.invalid_config),
        ("badvalue", ErrorCode.invalid_config),
        ("badbool", ErrorCode.invalid_config),
        ("unknownbroker", ErrorCode.invalid_replica_assignment),
        ("twice", ErrorCode.invalid_replica_assignment),
        ("ragged", ErrorCode.invalid_replica_assignment),
        ("noreplicas", ErrorCode.invalid_replica_assignment),
        ("both", ErrorCode.invalid_request),
    ]


def test_replication_factor_counts_only_unfenced_brokers() -> None:
    h = cluster(2)
    h.register(3)  # fenced
    assert _create_errors(h, CreatableTopic("t", 1, 3)) == [
        ("t", ErrorCode.invalid_replication_factor)
    ]


def test_manual_assignment_on_fenced_brokers_only_is_refused() -> None:
    h = cluster(1)
    h.register(2)
    h.register(3)
    assert _create_errors(h, CreatableTopic("t", assignments=((2, 3),))) == [
        ("t", ErrorCode.invalid_replica_assignment)  # as Kafka: "...are fenced"
    ]
    before = h.last_offset
    created(h, "one", (1,))
    response = h.request(
        CreatePartitionsRequest((CreatePartitionsTopic("one", 2, ((3,),)),))
    )
    assert response == CreatePartitionsResponse(
        (
            CreatePartitionsTopicResult(
                "one",
                ErrorCode.invalid_replica_assignment,
                "partition 1 has no unfenced replica among [3]",
            ),
        )
    )
    assert h.last_offset == before + 2  # only "one" itself was written


def test_one_request_creates_the_good_topics_and_refuses_the_rest() -> None:
    h = cluster(2)
    before = h.last_offset
    response = h.request(
        CreateTopicsRequest(
            (
                CreatableTopic("good", assignments=((1, 2),)),
                CreatableTopic("bad", 1, 3),
                CreatableTopic("twice", 1, 1),
                CreatableTopic("twice", 1, 1),
            )
        )
    )
    topic_id = h.topic_id("good")
    assert h.appended_since(before) == [
        TopicRecord("good", topic_id),
        PartitionRecord(0, topic_id, (1, 2), (1, 2), leader=1),
    ]
    assert isinstance(response, CreateTopicsResponse)
    # A name listed twice is answered once, and created for neither entry (Kafka's rule).
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("good", ErrorCode.none),
        ("bad", ErrorCode.invalid_replication_factor),
        ("twice", ErrorCode.invalid_request),
    ]


def test_validate_only_writes_nothing() -> None:
    h = cluster(3)
    before = h.last_offset
    response = h.request(
        CreateTopicsRequest((CreatableTopic("t", 2, 3),), validate_only=True)
    )
    assert isinstance(response, CreateTopicsResponse)
    (result,) = response.topics
    assert (result.error_code, result.num_partitions, result.replication_factor) == (
        ErrorCode.none,
        2,
        3,
    )
    assert h.last_offset == before
    assert h.controller.replication.topic_named("t") is None


def test_defaults_come_from_the_controller_config() -> None:
    h = cluster(3, ControllerConfig(num_partitions=4, default_replication_factor=2))
    result = h.create_topic("t")
    assert (result.num_partitions, result.replication_factor) == (4, 2)


# --- fencing and leader election ------------------------------------------------------------


def test_session_timeout_fences_the_broker_and_moves_its_leaderships() -> None:
    h = cluster(3)
    topic_id = created(h, "t", (1, 2, 3), (2, 3, 1), (3, 1, 2))
    broker1 = h.broker_epochs[1]
    assert h.controller.next_deadline() == 9.0  # every broker heartbeated at t=0

    h.now = 4.5
    h.heartbeat(2)
    h.heartbeat(3)
    assert not h.advance(4.49)  # t=8.99: broker 1's session has 0.01 s left
    assert h.controller.next_deadline() == 9.0
    appended = h.advance(0.02)  # t=9.01
    assert appended == CoreResult(
        (
            AppendRecords(
                1,
                h.last_offset - 3,
                (
                    FenceBrokerRecord(1, broker1),
                    PartitionChangeRecord(0, topic_id, isr=(2, 3), leader=2),
                    PartitionChangeRecord(1, topic_id, isr=(2, 3)),
                    PartitionChangeRecord(2, topic_id, isr=(3, 2)),
                ),
            ),
        )
    )
    h.commit()
    assert h.partition("t", 0) == PartitionRegistration(
        (1, 2, 3), (2, 3), leader=2, leader_epoch=1, partition_epoch=1
    )
    # ISR shrink without a leader change leaves the leader epoch alone.
    assert h.partition("t", 1) == PartitionRegistration(
        (2, 3, 1), (2, 3), leader=2, leader_epoch=0, partition_epoch=1
    )
    assert h.controller.next_deadline() == 13.5  # brokers 2 and 3, heartbeated at 4.5
    assert not h.advance(0.0)  # a fenced broker is not fenced again


def test_a_fence_the_log_refused_is_decided_again() -> None:
    """A broker whose fencing write failed is still unfenced, so it is fenced again.

    Session deadlines come from a heap, and a fenced broker's deadline is
    dropped; when the quorum refuses the FenceBrokerRecord, the revert makes the broker
    unfenced again, and its deadline must come back with it, or a dead broker would keep
    its leaderships for ever.
    """
    h = cluster(3)
    created(h, "t", (1, 2, 3))
    h.now = 4.5
    h.heartbeat(2)
    h.heartbeat(3)
    (fence,) = h.advance(4.51).records  # t=9.01: broker 1's session ran out
    assert fence.records[0] == FenceBrokerRecord(1, h.broker_epochs[1])
    assert h.controller.next_deadline() == 13.5  # broker 1 is fenced: not its deadline
    h.refuse(fence, ErrorCode.kafka_storage_error)
    assert h.controller.cluster.is_unfenced(1)
    assert h.controller.next_deadline() == 9.0  # back, and already past
    (again,) = h.advance(0.0).records
    assert again.records[0] == FenceBrokerRecord(1, h.broker_epochs[1])


def test_brokers_expiring_together_are_fenced_one_after_the_other() -> None:
    h = cluster(3)
    topic_id = created(h, "t", (1, 2, 3))
    appended = expire(h, 3)
    # One batch per broker, each decided on the state the previous one left: when broker 1
    # goes, broker 2 is still unfenced and takes over; the next batch hands over to 3.
    assert [a.records for a in appended] == [
        (
            FenceBrokerRecord(1, h.broker_epochs[1]),
            PartitionChangeRecord(0, topic_id, isr=(2, 3), leader=2),
        ),
        (
            FenceBrokerRecord(2, h.broker_epochs[2]),
            PartitionChangeRecord(0, topic_id, isr=(3,), leader=3),
        ),
    ]
    assert h.partition("t", 0) == PartitionRegistration(
        (1, 2, 3), (3,), leader=3, leader_epoch=2, partition_epoch=2
    )
    expire(h)
    assert h.controller.cluster.next_deadline() is None  # nobody left to fence
    # What remains is the leader-imbalance check (auto.leader.rebalance.enable, 300 s).
    assert h.controller.next_deadline() == 300.0


def test_the_last_isr_member_stays_and_leads_again_when_it_returns() -> None:
    h = cluster(2)
    topic_id = created(h, "t", (1, 2))
    assert [a.records for a in expire(h, 2)] == [
        (
            FenceBrokerRecord(1, h.broker_epochs[1]),
            PartitionChangeRecord(0, topic_id, isr=(2,), leader=2),
        )
    ]
    assert [a.records for a in expire(h)] == [
        (
            FenceBrokerRecord(2, h.broker_epochs[2]),
            PartitionChangeRecord(0, topic_id, leader=NO_LEADER),  # ISR stays [2]
        )
    ]
    assert h.partition("t", 0) == PartitionRegistration(
        (1, 2), (2,), leader=NO_LEADER, leader_epoch=2, partition_epoch=2
    )

    # Broker 1 comes back: it is not in the ISR, so it may not lead (unclean is off).
    before = h.last_offset
    assert not h.heartbeat(1).is_fenced
    assert h.appended_since(before) == [UnfenceBrokerRecord(1, h.broker_epochs[1])]
    assert h.partition("t", 0).leader == NO_LEADER

    # Broker 2, the last in-sync replica, comes back and leads again: nothing was lost.
    before = h.last_offset
    assert not h.heartbeat(2).is_fenced
    assert h.appended_since(before) == [
        UnfenceBrokerRecord(2, h.broker_epochs[2]),
        PartitionChangeRecord(0, topic_id, leader=2),
    ]
    assert h.partition("t", 0) == PartitionRegistration(
        (1, 2), (2,), leader=2, leader_epoch=3, partition_epoch=3
    )


def _shrink_isr_to_leader(h: ControllerHarness, topic_id: uuid.UUID) -> None:
    response = h.request(alter(h, 1, topic_id, (1,)))
    assert isinstance(response, AlterPartitionResponse)
    assert response.partitions[0].error_code == ErrorCode.none


@pytest.mark.parametrize(
    ("controller_unclean", "topic_unclean", "expect_unclean"),
    [
        (False, None, False),
        (True, None, True),
        (False, "true", True),
        (True, "false", False),
    ],
)
def test_unclean_election_only_when_enabled(
    controller_unclean: bool, topic_unclean: str | None, expect_unclean: bool
) -> None:
    h = cluster(2, ControllerConfig(unclean_leader_election_enable=controller_unclean))
    configs = (
        {}
        if topic_unclean is None
        else {"unclean_leader_election_enable": topic_unclean}
    )
    topic_id = created(h, "t", (1, 2), **configs)
    _shrink_isr_to_leader(h, topic_id)
    [fenced] = expire(h, 2)
    change = (
        PartitionChangeRecord(0, topic_id, isr=(2,), leader=2)
        if expect_unclean
        else PartitionChangeRecord(0, topic_id, leader=NO_LEADER)
    )
    assert fenced.records == (FenceBrokerRecord(1, h.broker_epochs[1]), change)
    expected_isr = (2,) if expect_unclean else (1,)
    assert h.partition("t", 0).isr == expected_isr


def test_unclean_election_when_an_out_of_sync_replica_returns() -> None:
    h = cluster(2)
    topic_id = created(h, "t", (1, 2))
    _shrink_isr_to_leader(h, topic_id)
    expire(h, 1)  # broker 2 (out of sync) goes first: nothing to move
    expire(h)  # then broker 1: leaderless, ISR [1]
    assert h.partition("t", 0).leader == NO_LEADER
    h.request(
        IncrementalAlterConfigsRequest(
            TOPIC,
            "t",
            (
                AlterableConfig(
                    "unclean.leader.election.enable", AlterConfigOp.SET, "true"
                ),
            ),
        )
    )
    before = h.last_offset
    h.heartbeat(2)
    assert h.appended_since(before) == [
        UnfenceBrokerRecord(2, h.broker_epochs[2]),
        PartitionChangeRecord(0, topic_id, isr=(2,), leader=2),
    ]


def test_elect_leaders_unclean_gives_a_leaderless_partition_a_live_replica() -> None:
    # Guarantee (KIP-460): ElectLeaders UNCLEAN elects an out-of-sync live replica for
    # a partition whose ISR is gone, whatever unclean.leader.election.enable says; a
    # partition with a leader needs no election; with no live replica there is none.
    h = cluster(2)
    topic_id = created(h, "t", (1, 2))
    created(h, "led", (2,))
    _shrink_isr_to_leader(h, topic_id)
    expire(h, 1)
    expire(h)  # broker 1, the last of the ISR, is gone: leaderless
    assert h.partition("t", 0).leader == NO_LEADER
    h.heartbeat(2)  # broker 2 is back, out of sync: unclean election is off
    assert h.partition("t", 0).leader == NO_LEADER
    before = h.last_offset
    asked = (("t", 0), ("led", 0), ("nope", 0))
    response = h.request(ElectLeadersRequest(asked, UNCLEAN_ELECTION))
    assert isinstance(response, ElectLeadersResponse)
    assert [(r.topic, r.error_code) for r in response.partitions] == [
        ("t", ErrorCode.none),
        ("led", ErrorCode.election_not_needed),
        ("nope", ErrorCode.unknown_topic_or_partition),
    ]
    assert h.appended_since(before) == [
        PartitionChangeRecord(0, topic_id, isr=(2,), leader=2)
    ]
    # No replica alive: nothing to elect.
    h2 = cluster(2)
    created(h2, "t", (1,))
    expire(h2, 2)  # broker 1, its only replica, is gone
    assert h2.partition("t", 0).leader == NO_LEADER
    answer = h2.request(ElectLeadersRequest((("t", 0),), UNCLEAN_ELECTION))
    assert isinstance(answer, ElectLeadersResponse)
    [result] = answer.partitions
    assert result.error_code == ErrorCode.eligible_leaders_not_available


@pytest.mark.parametrize("resource", ["", "1"])
def test_unclean_election_by_a_dynamic_broker_default(resource: str) -> None:
    # Guarantee: a topic without its own unclean.leader.election.enable takes the
    # controller's dynamic broker default, its own (resource "1") or the cluster-wide
    # one (""), as Kafka's getTopicConfig reads it at the election.
    h = cluster(2)
    topic_id = created(h, "t", (1, 2))
    _shrink_isr_to_leader(h, topic_id)
    expire(h, 1)
    expire(h)
    assert h.partition("t", 0).leader == NO_LEADER
    unclean = AlterableConfig(
        "unclean.leader.election.enable", AlterConfigOp.SET, "true"
    )
    _alter_configs(h, resource, unclean, resource=ConfigResourceType.BROKER)
    before = h.last_offset
    h.heartbeat(2)
    assert h.appended_since(before)[-1] == PartitionChangeRecord(
        0, topic_id, isr=(2,), leader=2
    )


def test_want_fence_and_want_shutdown_move_leaderships() -> None:
    h = cluster(2)
    topic_id = created(h, "t", (1, 2))
    before = h.last_offset
    rid = h.send(
        BrokerHeartbeatRequest(
            1, h.broker_epochs[1], h.committed_offset, want_shutdown=True
        )
    )
    assert h.appended_since(before) == [
        FenceBrokerRecord(1, h.broker_epochs[1]),
        PartitionChangeRecord(0, topic_id, isr=(2,), leader=2),
    ]
    h.commit()
    assert h.response(rid) == BrokerHeartbeatResponse(
        ErrorCode.none, is_caught_up=True, is_fenced=True, should_shut_down=True
    )


def test_heartbeat_errors() -> None:
    h = cluster(1)
    old_epoch = h.broker_epochs[1]
    unknown = h.request(BrokerHeartbeatRequest(9, 1, 0))
    assert unknown == BrokerHeartbeatResponse(ErrorCode.broker_id_not_registered)
    # The same process registers again (same incarnation, session alive): a new epoch.
    again = h.register(1, incarnation=h.incarnations[1])
    assert again.error_code == ErrorCode.none
    assert again.broker_epoch > old_epoch
    before = h.last_offset
    stale = h.request(BrokerHeartbeatRequest(1, old_epoch, h.committed_offset))
    assert stale == BrokerHeartbeatResponse(ErrorCode.stale_broker_epoch)
    assert h.last_offset == before


def test_duplicate_registration_while_the_session_is_alive() -> None:
    h = cluster(1)
    before = h.last_offset
    other = uuid.UUID(int=999)
    h.now = 8.9
    assert h.register(1, incarnation=other) == BrokerRegistrationResponse(
        ErrorCode.duplicate_broker_registration
    )
    assert h.last_offset == before
    # Once the session has run out, another incarnation may take the id.
    h.now = 9.0
    response = h.register(1, incarnation=other)
    assert response == BrokerRegistrationResponse(ErrorCode.none, before + 1)
    assert h.appended_since(before) == [
        RegisterBrokerRecord(
            1,
            other,
            before + 1,
            (BrokerEndpoint("PLAINTEXT", "localhost", 9001),),
            None,
        )
    ]


def test_a_fenced_broker_has_no_session_to_protect() -> None:
    """A broker that registered and died before it was unfenced may restart at once."""
    h = ControllerHarness.start()
    h.register(1)
    h.now = 2.0
    restarted = h.register(1, incarnation=uuid.UUID(int=2))
    assert restarted == BrokerRegistrationResponse(ErrorCode.none, h.last_offset)
    assert h.controller.cluster.brokers[1].incarnation_id == uuid.UUID(int=2)


def test_after_failover_only_brokers_heard_from_block_a_new_incarnation() -> None:
    """A new controller gives every broker a full session, but that courtesy must not
    lock out a broker that restarted (new incarnation) while the controller was away."""
    h = cluster(2)
    h.resign()
    h.become_leader(2)
    restarted = h.register(1, incarnation=uuid.UUID(int=1001))
    assert restarted.error_code == ErrorCode.none
    # Broker 2 heartbeats in the new term: another process claiming its id is refused.
    h.heartbeat(2)
    duplicate = h.register(2, incarnation=uuid.UUID(int=1002))
    assert duplicate == BrokerRegistrationResponse(
        ErrorCode.duplicate_broker_registration
    )


# --- AlterPartition (KIP-497) ----------------------------------------------------------------


def _alter_result(
    h: ControllerHarness, request: AlterPartitionRequest
) -> AlterPartitionResult:
    response = h.request(request)
    assert isinstance(response, AlterPartitionResponse)
    assert response.error_code == ErrorCode.none
    (result,) = response.partitions
    return result


def test_alter_partition_shrinks_and_expands_the_isr() -> None:
    h = cluster(3)
    topic_id = created(h, "t", (1, 2, 3))
    before = h.last_offset
    rid = h.send(alter(h, 1, topic_id, (1, 2)))
    assert h.appended_since(before) == [PartitionChangeRecord(0, topic_id, isr=(1, 2))]
    assert h.reply(rid) is None
    h.commit()
    assert h.response(rid) == AlterPartitionResponse(
        ErrorCode.none,
        (AlterPartitionResult(topic_id, 0, ErrorCode.none, 1, 0, (1, 2), 1),),
    )
    before = h.last_offset
    assert _alter_result(h, alter(h, 1, topic_id, (1, 2, 3))) == AlterPartitionResult(
        topic_id, 0, ErrorCode.none, 1, 0, (1, 2, 3), 2
    )
    assert h.appended_since(before) == [
        PartitionChangeRecord(0, topic_id, isr=(1, 2, 3))
    ]
    # The same ISR again changes nothing and writes nothing.
    before = h.last_offset
    assert _alter_result(h, alter(h, 1, topic_id, (1, 2, 3))).partition_epoch == 2
    assert h.last_offset == before


def test_alter_partition_refusals() -> None:
    h = cluster(4)
    topic_id = created(h, "t", (1, 2, 3), (1, 2, 3))
    # Broker 3 is fenced: it may not join an ISR. (Leader 1 stays: 3 leads nothing.)
    expire(h, 1, 2, 4)
    # The ISR of partition 1 moved on (epoch 1 after 3 was dropped): epoch 0 is stale.
    assert h.partition("t", 1).partition_epoch == 1
    before = h.last_offset
    cases = [
        (
            alter(h, 1, topic_id, (1, 2), partition_epoch=0),
            ErrorCode.invalid_update_version,
        ),
        (alter(h, 1, topic_id, (1, 2), leader_epoch=1), ErrorCode.unknown_leader_epoch),
        (alter(h, 2, topic_id, (1, 2)), ErrorCode.not_leader_or_follower),
        (alter(h, 1, topic_id, (1, 2, 3)), ErrorCode.ineligible_replica),  # 3 is fenced
        (
            alter(h, 1, topic_id, (1, 2, 4)),
            ErrorCode.ineligible_replica,
        ),  # 4: not a replica
        (alter(h, 1, topic_id, (2,)), ErrorCode.invalid_request),  # without the leader
        (alter(h, 1, topic_id, (1, 1)), ErrorCode.invalid_request),
        (
            alter(h, 1, topic_id, (1,), partition=7),
            ErrorCode.unknown_topic_or_partition,
        ),
    ]
    for request, code in cases:
        result = _alter_result(h, request)
        assert (result.error_code, result.leader, result.isr) == (code, -1, ()), request
    unknown = AlterPartitionItem(uuid.UUID(int=1), 0, 0, (1,), 0)
    response = h.request(AlterPartitionRequest(1, h.broker_epochs[1], (unknown,)))
    assert response == AlterPartitionResponse(
        ErrorCode.none,
        (AlterPartitionResult(uuid.UUID(int=1), 0, ErrorCode.unknown_topic_id),),
    )
    assert h.last_offset == before


def test_alter_partition_with_a_stale_leader_epoch_is_fenced() -> None:
    h = cluster(3)
    topic_id = created(h, "t", (1, 2, 3))
    # Removing replica 3 bumps the leader epoch while broker 1 keeps leading.
    h.request(
        AlterPartitionReassignmentsRequest((ReassignablePartition("t", 0, (1, 2)),))
    )
    assert h.partition("t", 0) == PartitionRegistration(
        (1, 2), (1, 2), leader=1, leader_epoch=1, partition_epoch=1
    )
    before = h.last_offset
    result = _alter_result(h, alter(h, 1, topic_id, (1,), leader_epoch=0))
    assert result == AlterPartitionResult(topic_id, 0, ErrorCode.fenced_leader_epoch)
    assert h.last_offset == before


def test_alter_partition_with_a_stale_broker_epoch() -> None:
    h = cluster(2)
    topic_id = created(h, "t", (1, 2))
    before = h.last_offset
    stale = alter(h, 1, topic_id, (1,), broker_epoch=h.broker_epochs[1] - 1)
    assert h.request(stale) == AlterPartitionResponse(ErrorCode.stale_broker_epoch)
    unknown = AlterPartitionRequest(7, 1, stale.partitions)
    assert h.request(unknown) == AlterPartitionResponse(
        ErrorCode.broker_id_not_registered
    )
    assert h.last_offset == before


# --- reassignment (KIP-236) ------------------------------------------------------------------


def _reassign(
    h: ControllerHarness,
    replicas: tuple[int, ...] | None,
    topic: str = "r",
    partition: int = 0,
    allow_rf_change: bool = True,
) -> ReassignmentResult:
    response = h.request(
        AlterPartitionReassignmentsRequest(
            (ReassignablePartition(topic, partition, replicas),), allow_rf_change
        )
    )
    assert isinstance(response, AlterPartitionReassignmentsResponse)
    (result,) = response.partitions
    return result


def _ongoing(h: ControllerHarness) -> tuple[OngoingReassignment, ...]:
    rid = h.send(ListPartitionReassignmentsRequest())
    response = h.response(rid)  # a read: answered at once, at the committed offset
    assert isinstance(response, ListPartitionReassignmentsResponse)
    return response.reassignments


def test_reassignment_phases_u_a_b() -> None:
    h = cluster(4)
    topic_id = created(h, "r", (1, 2, 3))
    # Phase U: RS = TRS + (ORS - TRS), AR = TRS - ORS, RR = ORS - TRS.
    before = h.last_offset
    rid = h.send(
        AlterPartitionReassignmentsRequest((ReassignablePartition("r", 0, (2, 3, 4)),))
    )
    assert h.appended_since(before) == [
        PartitionChangeRecord(
            0,
            topic_id,
            replicas=(2, 3, 4, 1),
            removing_replicas=(1,),
            adding_replicas=(4,),
        )
    ]
    assert h.reply(rid) is None
    assert _ongoing(h) == ()  # not committed: not visible to readers
    h.commit()
    assert h.response(rid) == AlterPartitionReassignmentsResponse(
        (ReassignmentResult("r", 0, ErrorCode.none),)
    )
    assert _ongoing(h) == (OngoingReassignment("r", 0, (2, 3, 4, 1), (4,), (1,)),)
    assert h.partition("r", 0) == PartitionRegistration(
        (2, 3, 4, 1), (1, 2, 3), (1,), (4,), leader=1, leader_epoch=0, partition_epoch=1
    )

    # Phase A ends when the leader adds the new replica to the ISR; phase B in the same
    # record: RS = TRS, RR leaves the ISR, the removed leader hands over to a TRS replica.
    before = h.last_offset
    result = _alter_result(h, alter(h, 1, topic_id, (1, 2, 3, 4)))
    assert h.appended_since(before) == [
        PartitionChangeRecord(
            0,
            topic_id,
            isr=(2, 3, 4),
            leader=2,
            replicas=(2, 3, 4),
            removing_replicas=(),
            adding_replicas=(),
        )
    ]
    assert result == AlterPartitionResult(
        topic_id, 0, ErrorCode.new_leader_elected, 2, 1, (2, 3, 4), 2
    )
    assert _ongoing(h) == ()
    assert h.partition("r", 0) == PartitionRegistration(
        (2, 3, 4), (2, 3, 4), leader=2, leader_epoch=1, partition_epoch=2
    )


def test_reassignment_that_keeps_the_leader_bumps_its_epoch() -> None:
    h = cluster(4)
    topic_id = created(h, "r", (1, 2, 3))
    _reassign(h, (1, 2, 4))
    result = _alter_result(h, alter(h, 1, topic_id, (1, 2, 3, 4)))
    # Replica 3 was removed: it must stop fetching under the old leader epoch.
    assert result == AlterPartitionResult(
        topic_id, 0, ErrorCode.none, 1, 1, (1, 2, 4), 2
    )


def test_reassignment_waits_for_every_target_replica_in_the_isr() -> None:
    """Kafka's maybeCompleteReassignment: TRS must be in sync, not just AR."""
    h = cluster(4)
    topic_id = created(h, "r", (1, 2, 3))
    _alter_result(h, alter(h, 1, topic_id, (1, 2)))  # 3 falls behind
    _reassign(h, (2, 3, 4))
    before = h.last_offset
    assert _alter_result(h, alter(h, 1, topic_id, (1, 2, 4))).isr == (1, 2, 4)
    assert h.appended_since(before) == [
        PartitionChangeRecord(0, topic_id, isr=(1, 2, 4))
    ]
    assert h.partition("r", 0).is_reassigning  # 1 stays: 3 is not in sync yet
    result = _alter_result(h, alter(h, 1, topic_id, (1, 2, 4, 3)))
    # Partition epochs: 0 created, 1 shrink, 2 phase U, 3 add 4, 4 add 3 and complete.
    assert result == AlterPartitionResult(
        topic_id, 0, ErrorCode.new_leader_elected, 2, 1, (2, 4, 3), 4
    )


def test_shrinking_reassignment_completes_at_once_when_the_target_is_in_sync() -> None:
    h = cluster(3)
    topic_id = created(h, "r", (1, 2, 3))
    before = h.last_offset
    assert _reassign(h, (3, 2)).error_code == ErrorCode.none
    assert h.appended_since(before) == [
        PartitionChangeRecord(0, topic_id, isr=(2, 3), leader=3, replicas=(3, 2))
    ]
    assert _ongoing(h) == ()


def test_cancelling_phase_a_reverts_to_ors() -> None:
    h = cluster(6)
    topic_id = created(h, "r", (1, 2, 3))
    _reassign(h, (4, 5, 6))
    # 4 caught up, 5 and 6 not yet
    _alter_result(h, alter(h, 1, topic_id, (1, 2, 3, 4)))
    assert h.partition("r", 0) == PartitionRegistration(
        (4, 5, 6, 1, 2, 3), (1, 2, 3, 4), (1, 2, 3), (4, 5, 6), 1, 0, 2
    )
    before = h.last_offset
    assert _reassign(h, None).error_code == ErrorCode.none
    assert h.appended_since(before) == [
        PartitionChangeRecord(
            0,
            topic_id,
            isr=(1, 2, 3),
            replicas=(1, 2, 3),
            removing_replicas=(),
            adding_replicas=(),
        )
    ]
    assert h.partition("r", 0) == PartitionRegistration(
        (1, 2, 3), (1, 2, 3), leader=1, leader_epoch=1, partition_epoch=3
    )
    assert _ongoing(h) == ()
    assert _reassign(h, None) == ReassignmentResult(
        "r", 0, ErrorCode.no_reassignment_in_progress, "nothing to cancel"
    )


def test_a_new_target_keeps_the_original_replicas() -> None:
    h = cluster(5)
    topic_id = created(h, "r", (1, 2, 3))
    _reassign(h, (2, 3, 4))  # RS (2,3,4,1): ORS is (2,3,1) in RS order
    before = h.last_offset
    _reassign(h, (3, 5, 1))
    assert h.appended_since(before) == [
        PartitionChangeRecord(
            0,
            topic_id,
            replicas=(3, 5, 1, 2),
            removing_replicas=(2,),
            adding_replicas=(5,),
        )
    ]
    # Replica 4 (added by the first target) left the replica set: the leader epoch moves.
    assert h.partition("r", 0).leader_epoch == 1
    assert _ongoing(h) == (OngoingReassignment("r", 0, (3, 5, 1, 2), (5,), (2,)),)
    # Cancelling now returns to ORS, not to the first target.
    _reassign(h, None)
    assert h.partition("r", 0).replicas == (3, 1, 2)


def test_cancel_refused_when_only_added_replicas_are_in_sync() -> None:
    """Going back to ORS would leave an ISR outside the replica set (Kafka refuses too)."""
    h = cluster(6)
    topic_id = created(h, "r", (1, 2, 3))
    _reassign(h, (4, 5, 6))
    _alter_result(h, alter(h, 1, topic_id, (1, 2, 3, 4)))
    expire(h, 4, 5, 6)  # ORS fenced: 4 leads, ISR [4]
    assert h.partition("r", 0).isr == (4,)
    before = h.last_offset
    assert _reassign(h, None).error_code == ErrorCode.invalid_replica_assignment
    assert h.last_offset == before
    assert set(h.partition("r", 0).isr) <= set(h.partition("r", 0).replicas)


def test_reassignment_errors() -> None:
    h = cluster(3)
    created(h, "r", (1, 2))
    before = h.last_offset
    assert (
        _reassign(h, (1, 2), topic="nope").error_code
        == ErrorCode.unknown_topic_or_partition
    )
    assert (
        _reassign(h, (1, 2), partition=1).error_code
        == ErrorCode.unknown_topic_or_partition
    )
    for bad in [(), (1, 1), (1, 9)]:
        assert _reassign(h, bad).error_code == ErrorCode.invalid_replica_assignment, bad
    # the same replicas: a no-op
    assert _reassign(h, (1, 2)).error_code == ErrorCode.none
    assert h.last_offset == before


def test_a_move_may_be_forbidden_to_change_the_replication_factor() -> None:
    """KIP-860: with ``allow_replication_factor_change`` false, a target must be as long
    as the replicas the partition is headed for, and a refusal writes nothing."""
    h = cluster(4)
    created(h, "r", (1, 2))
    before = h.last_offset
    for target in [(1, 2, 3), (3,)]:
        assert _reassign(h, target, allow_rf_change=False) == ReassignmentResult(
            "r",
            0,
            ErrorCode.invalid_replication_factor,
            f"The replication factor is changed from 2 to {len(target)}",
        )
    assert h.last_offset == before
    # Moving a replica keeps the count: allowed. While it moves, RS is (3, 2, 1) but the
    # partition is headed for TRS (3, 2): a new target is measured against that.
    assert _reassign(h, (3, 2), allow_rf_change=False).error_code == ErrorCode.none
    assert h.partition("r", 0).replicas == (3, 2, 1)
    refused = _reassign(h, (3, 2, 4), allow_rf_change=False)
    assert refused.error_message == "The replication factor is changed from 2 to 3"
    assert _reassign(h, (4, 2), allow_rf_change=False).error_code == ErrorCode.none
    # Cancelling names no target, so there is no number to compare.
    assert _reassign(h, None, allow_rf_change=False).error_code == ErrorCode.none
    # An unknown broker is found before the count (as Kafka's controller checks).
    assert (
        _reassign(h, (1, 9, 2), allow_rf_change=False).error_code
        == ErrorCode.invalid_replica_assignment
    )


# --- losing leadership -------------------------------------------------------------------


def test_resign_reverts_to_the_committed_state() -> None:
    h = cluster(3)
    created(h, "kept", (1, 2))
    committed = h.committed_offset
    state = h.state()
    rid_create = h.send(CreateTopicsRequest((CreatableTopic("lost", 1, 3),)))
    # waits, no records
    rid_dup = h.send(CreateTopicsRequest((CreatableTopic("lost", 1, 1),)))
    rid_config = h.send(
        IncrementalAlterConfigsRequest(
            TOPIC, "kept", (AlterableConfig("retention.ms", AlterConfigOp.SET, "1"),)
        )
    )
    assert h.controller.replication.topic_named("lost") is not None
    assert h.last_offset == committed + 3

    failed = h.resign()
    assert failed == [
        Reply(rid_create, None, ErrorCode.not_controller),
        Reply(rid_dup, None, ErrorCode.not_controller),
        Reply(rid_config, None, ErrorCode.not_controller),
    ]
    assert h.controller.replication.topic_named("lost") is None
    assert h.state() == state
    assert h.resign() == []  # resigning again is harmless
    rid = h.send(ListPartitionReassignmentsRequest())
    assert h.reply(rid) == Reply(rid, None, ErrorCode.not_controller)
    assert h.controller.next_deadline() is None
    assert not h.advance(100.0)  # only the active controller fences brokers

    # A new term on top of the committed log: no bootstrap record, offsets continue.
    assert not h.become_leader(2)
    rid = h.send(CreateTopicsRequest((CreatableTopic("lost", assignments=((1,),)),)))
    topic_id = h.topic_id("lost")
    assert h.log[-2:] == [
        (committed + 1, TopicRecord("lost", topic_id)),
        (committed + 2, PartitionRecord(0, topic_id, (1,), (1,), leader=1)),
    ]
    h.commit()
    response = h.response(rid)
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.none


def test_appends_carry_the_controller_epoch() -> None:
    h = ControllerHarness.start(epoch=7)
    h.add_brokers([1])
    result = h.controller.handle(
        99, CreateTopicsRequest((CreatableTopic("t", 1, 1),)), h.now
    )
    (append,) = result.records
    assert not result.replies
    assert (append.epoch, append.base_offset) == (7, h.last_offset + 1)


def test_replies_are_released_in_commit_order_batch_by_batch() -> None:
    h = cluster(1)
    ids = [
        h.send(CreateTopicsRequest((CreatableTopic(f"t{i}", 1, 1),))) for i in range(3)
    ]
    first_batch_end = h.committed_offset + 2  # TopicRecord + PartitionRecord
    assert [r.request_id for r in h.commit(first_batch_end)] == ids[:1]
    assert [
        r.request_id for r in h.commit(first_batch_end + 1)
    ] == []  # mid-batch: not yet
    assert [r.request_id for r in h.commit()] == ids[1:]


# --- configs -----------------------------------------------------------------------------------


def _alter_configs(
    h: ControllerHarness, name: str, *ops: AlterableConfig, resource: int = TOPIC
) -> IncrementalAlterConfigsResponse:
    response = h.request(IncrementalAlterConfigsRequest(resource, name, ops))
    assert isinstance(response, IncrementalAlterConfigsResponse)
    return response


def _describe(
    h: ControllerHarness, name: str, resource: int = TOPIC
) -> tuple[tuple[str, str], ...]:
    rid = h.send(DescribeConfigsRequest(resource, name))
    response = h.response(rid)
    assert isinstance(response, DescribeConfigsResponse)
    return response.configs


def test_incremental_alter_configs_set_and_delete() -> None:
    h = cluster(1)
    created(h, "t", (1,), cleanup_policy="compact")
    assert _describe(h, "t") == (("cleanup.policy", "compact"),)

    before = h.last_offset
    rid = h.send(
        IncrementalAlterConfigsRequest(
            TOPIC,
            "t",
            (
                AlterableConfig("retention.ms", AlterConfigOp.SET, "1000"),
                AlterableConfig("cleanup.policy", AlterConfigOp.DELETE),
            ),
        )
    )
    assert h.appended_since(before) == [
        ConfigRecord(TOPIC, "t", "retention.ms", "1000"),
        ConfigRecord(TOPIC, "t", "cleanup.policy", None),
    ]
    # Reads happen at the committed offset: the change is invisible until it commits.
    assert _describe(h, "t") == (("cleanup.policy", "compact"),)
    assert h.reply(rid) is None
    h.commit()
    assert h.response(rid) == IncrementalAlterConfigsResponse(ErrorCode.none)
    assert _describe(h, "t") == (("retention.ms", "1000"),)


def test_incremental_alter_configs_errors() -> None:
    h = cluster(1)
    created(h, "t", (1,))
    before = h.last_offset
    set_ = AlterConfigOp.SET
    assert _alter_configs(
        h, "nope", AlterableConfig("retention.ms", set_, "1")
    ).error_code == (ErrorCode.unknown_topic_or_partition)
    for entry in [
        AlterableConfig("no.such.key", set_, "1"),
        AlterableConfig("retention.ms", set_, "soon"),
        AlterableConfig("min.insync.replicas", set_, "0"),
        AlterableConfig("retention.ms", set_, None),
    ]:
        assert _alter_configs(h, "t", entry).error_code == ErrorCode.invalid_config, (
            entry
        )
    # One bad entry refuses the whole resource: the good one is not written either.
    response = _alter_configs(
        h,
        "t",
        AlterableConfig("retention.ms", set_, "5"),
        AlterableConfig("segment.bytes", set_, "x"),
    )
    assert response.error_code == ErrorCode.invalid_config
    validate = h.request(
        IncrementalAlterConfigsRequest(
            TOPIC,
            "t",
            (AlterableConfig("retention.ms", set_, "5"),),
            validate_only=True,
        )
    )
    assert validate == IncrementalAlterConfigsResponse(ErrorCode.none)
    assert h.last_offset == before
    assert _describe(h, "t") == ()


def test_append_and_subtract_edit_a_list_key_from_its_default() -> None:
    h = cluster(1)
    created(h, "t", (1,))
    append = AlterableConfig("cleanup.policy", AlterConfigOp.APPEND, "compact,delete")
    assert _alter_configs(h, "t", append).error_code == ErrorCode.none
    h.commit()
    # From Kafka's default ("delete"): what is there already is not added twice.
    assert _describe(h, "t") == (("cleanup.policy", "delete,compact"),)
    subtract = AlterableConfig("cleanup.policy", AlterConfigOp.SUBTRACT, "delete")
    assert _alter_configs(h, "t", subtract).error_code == ErrorCode.none
    h.commit()
    assert _describe(h, "t") == (("cleanup.policy", "compact"),)
    # Only a LIST key takes them; removing every policy leaves a value Kafka refuses.
    for refused in [
        AlterableConfig("retention.ms", AlterConfigOp.APPEND, "5"),
        AlterableConfig("cleanup.policy", AlterConfigOp.SUBTRACT, "compact"),
    ]:
        response = _alter_configs(h, "t", refused)
        assert response.error_code == ErrorCode.invalid_config, refused
    h.commit()
    assert _describe(h, "t") == (("cleanup.policy", "compact"),)


def test_unchanged_values_write_no_record() -> None:
    h = cluster(1)
    created(h, "t", (1,), retention_ms="7")
    before = h.last_offset
    same = AlterableConfig("retention.ms", AlterConfigOp.SET, "7")
    absent = AlterableConfig("segment.ms", AlterConfigOp.DELETE)
    assert _alter_configs(h, "t", same, absent).error_code == ErrorCode.none
    assert h.appended_since(before) == []


def test_legacy_alter_configs_replaces_the_whole_set() -> None:
    h = cluster(1)
    created(h, "t", (1,), retention_ms="7", segment_ms="9")
    before = h.last_offset
    request = AlterConfigsRequest(
        TOPIC, "t", (("retention.ms", "7"), ("max.message.bytes", "2000"))
    )
    assert h.request(request) == AlterConfigsResponse(ErrorCode.none)
    # Only what changes is written: the new key, and the one left out, deleted.
    assert h.appended_since(before) == [
        ConfigRecord(TOPIC, "t", "max.message.bytes", "2000"),
        ConfigRecord(TOPIC, "t", "segment.ms", None),
    ]
    h.commit()
    assert _describe(h, "t") == (
        ("max.message.bytes", "2000"),
        ("retention.ms", "7"),
    )
    bad = AlterConfigsRequest(TOPIC, "t", (("retention.ms", "soon"),))
    answer = h.request(bad)
    assert isinstance(answer, AlterConfigsResponse)
    assert answer.error_code == ErrorCode.invalid_config
    missing = AlterConfigsRequest(TOPIC, "gone", (("retention.ms", "1"),))
    answer = h.request(missing)
    assert isinstance(answer, AlterConfigsResponse)
    assert answer.error_code == ErrorCode.unknown_topic_or_partition


def test_broker_configs() -> None:
    h = cluster(1)
    entry = AlterableConfig("log.retention.ms", AlterConfigOp.SET, "5")
    assert _alter_configs(
        h, "", entry, resource=ConfigResourceType.BROKER
    ).error_code == (ErrorCode.none)
    assert _alter_configs(
        h, "1", entry, resource=ConfigResourceType.BROKER
    ).error_code == (ErrorCode.none)
    assert _alter_configs(
        h, "9", entry, resource=ConfigResourceType.BROKER
    ).error_code != (ErrorCode.none)
    assert _describe(h, "1", ConfigResourceType.BROKER) == (("log.retention.ms", "5"),)


def test_deleting_a_topic_removes_its_configs() -> None:
    h = cluster(1)
    created(h, "t", (1,), retention_ms="7")
    h.request(DeleteTopicsRequest(("t",)))
    assert _describe(h, "t") == ()
    assert h.state().configs == {}
    created(h, "t", (1,))  # a new topic of that name starts with no configs
    assert _describe(h, "t") == ()


# --- CreatePartitions and DeleteTopics -------------------------------------------------------


def test_create_partitions_continues_the_placement() -> None:
    h = cluster(3)
    topic_id = created(h, "t", (1, 2), (2, 3))
    before = h.last_offset
    response = h.request(CreatePartitionsRequest((CreatePartitionsTopic("t", 4),)))
    assert response == CreatePartitionsResponse(
        (CreatePartitionsTopicResult("t", ErrorCode.none),)
    )
    # AdminUtils for new partitions: start where partition 0's leader is, shift = start,
    # numbering from the current count (partition 3 wraps, so its shift grows by one).
    assert h.appended_since(before) == [
        PartitionRecord(2, topic_id, (3, 1), (3, 1), leader=3),
        PartitionRecord(3, topic_id, (1, 3), (1, 3), leader=1),
    ]
    assert h.controller.replication.topic_named("t") is not None
    assert sorted(h.state().topics["t"][1]) == [0, 1, 2, 3]


def test_create_partitions_with_manual_assignment() -> None:
    h = cluster(3)
    topic_id = created(h, "t", (1, 2))
    before = h.last_offset
    h.request(
        CreatePartitionsRequest((CreatePartitionsTopic("t", 3, ((3, 2), (2, 1))),))
    )
    assert h.appended_since(before) == [
        PartitionRecord(1, topic_id, (3, 2), (3, 2), leader=3),
        PartitionRecord(2, topic_id, (2, 1), (2, 1), leader=2),
    ]


def test_create_partitions_that_add_none_are_refused_in_kafkas_words() -> None:
    # Guarantee: as few partitions as the topic has, or fewer, is INVALID_PARTITIONS
    # with the message Kafka's controller gives (kafka-topics --alter prints it).
    h = cluster(1)
    created(h, "t", (1,), (1,))
    created(h, "u", (1,), (1,))
    response = h.request(
        CreatePartitionsRequest(
            (CreatePartitionsTopic("t", 2), CreatePartitionsTopic("u", 1))
        )
    )
    assert isinstance(response, CreatePartitionsResponse)
    assert [(r.error_code, r.error_message) for r in response.topics] == [
        (ErrorCode.invalid_partitions, "Topic already has 2 partition(s)."),
        (
            ErrorCode.invalid_partitions,
            "The topic u currently has 2 partition(s); 1 would not be an increase.",
        ),
    ]


def test_create_partitions_errors() -> None:
    h = cluster(3)
    created(h, "t", (1, 2), (2, 3))
    before = h.last_offset

    def error(topic: CreatePartitionsTopic) -> ErrorCode:
        response = h.request(CreatePartitionsRequest((topic,)))
        assert isinstance(response, CreatePartitionsResponse)
        return response.topics[0].error_code

    assert (
        error(CreatePartitionsTopic("nope", 3)) == ErrorCode.unknown_topic_or_partition
    )
    assert error(CreatePartitionsTopic("t", 2)) == ErrorCode.invalid_partitions
    assert error(CreatePartitionsTopic("t", 1)) == ErrorCode.invalid_partitions
    assert (
        error(CreatePartitionsTopic("t", 4, ((1, 2),)))
        == ErrorCode.invalid_replica_assignment
    )
    assert (
        error(CreatePartitionsTopic("t", 3, ((1, 9),)))
        == ErrorCode.invalid_replica_assignment
    )
    assert (
        error(CreatePartitionsTopic("t", 3, ((1,),)))
        == ErrorCode.invalid_replica_assignment
    )
    assert (
        error(CreatePartitionsTopic("t", 3, ((1, 1),)))
        == ErrorCode.invalid_replica_assignment
    )
    validate = h.request(
        CreatePartitionsRequest((CreatePartitionsTopic("t", 5),), True)
    )
    assert validate == CreatePartitionsResponse(
        (CreatePartitionsTopicResult("t", ErrorCode.none),)
    )
    assert h.last_offset == before
    expire(h, 1)  # only broker 1 is left unfenced: too few for replication factor 2
    assert error(CreatePartitionsTopic("t", 3)) == ErrorCode.invalid_replication_factor


def test_delete_topics_by_name_and_id() -> None:
    h = cluster(1)
    a = created(h, "a", (1,))
    b = created(h, "b", (1,), (1,))
    before = h.last_offset
    rid = h.send(
        DeleteTopicsRequest(names=("a", "nope"), topic_ids=(b, uuid.UUID(int=3)))
    )
    assert h.appended_since(before) == [RemoveTopicRecord(a), RemoveTopicRecord(b)]
    # Pipelined: the next request already sees "a" gone and may create it again.
    assert h.controller.replication.topic_named("a") is None
    recreate = h.send(CreateTopicsRequest((CreatableTopic("a", assignments=((1,),)),)))
    assert h.topic_id("a") != a
    assert h.reply(rid) is None
    h.commit()
    assert h.response(rid) == DeleteTopicsResponse(
        (
            DeletableTopicResult("a", a, ErrorCode.none),
            DeletableTopicResult(
                "nope", None, ErrorCode.unknown_topic_or_partition, "no such topic"
            ),
            DeletableTopicResult("b", b, ErrorCode.none),
            DeletableTopicResult(
                None, uuid.UUID(int=3), ErrorCode.unknown_topic_id, "no such topic"
            ),
        )
    )
    response = h.response(recreate)
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.none
    assert set(h.state().topics) == {"a"}
    assert (b, 0) not in h.controller.replication.partitions
    assert (b, 1) not in h.controller.replication.partitions


# --- producer id blocks (KIP-730) -------------------------------------------------------------


def test_producer_id_blocks_are_consecutive_and_never_overlap() -> None:
    h = cluster(2)
    epochs = h.broker_epochs
    assert PRODUCER_ID_BLOCK_SIZE == 1000
    assert h.allocate_producer_ids(1) == AllocateProducerIdsResponse(
        ErrorCode.none, 0, 1000
    )
    assert h.log[-1] == (h.last_offset, ProducerIdsRecord(1, epochs[1], 1000))
    assert h.allocate_producer_ids(2) == AllocateProducerIdsResponse(
        ErrorCode.none, 1000, 1000
    )
    assert h.allocate_producer_ids(1) == AllocateProducerIdsResponse(
        ErrorCode.none, 2000, 1000
    )
    assert [r for _, r in h.log if isinstance(r, ProducerIdsRecord)] == [
        ProducerIdsRecord(1, epochs[1], 1000),
        ProducerIdsRecord(2, epochs[2], 2000),
        ProducerIdsRecord(1, epochs[1], 3000),
    ]
    assert h.state().next_producer_id == 3000
    assert h.image().next_producer_id == 3000


def test_pipelined_allocations_get_different_blocks_and_wait_for_the_commit() -> None:
    h = cluster(2)
    first = h.send(AllocateProducerIdsRequest(1, h.broker_epochs[1]))
    second = h.send(AllocateProducerIdsRequest(2, h.broker_epochs[2]))
    # The second request already sees the first block taken, though nothing is committed;
    # neither broker may use its block before the record that reserves it commits.
    assert (h.reply(first), h.reply(second)) == (None, None)
    assert h.controller.producer_ids.next_producer_id() == 2000
    assert h.controller.producer_ids.next_producer_id(h.committed_offset) == 0
    assert [r.request_id for r in h.commit()] == [first, second]
    assert h.response(first) == AllocateProducerIdsResponse(ErrorCode.none, 0, 1000)
    assert h.response(second) == AllocateProducerIdsResponse(ErrorCode.none, 1000, 1000)


def test_allocate_producer_ids_errors() -> None:
    h = cluster(1)
    old_epoch = h.broker_epochs[1]
    h.allocate_producer_ids(1)
    before = h.last_offset
    unknown = h.allocate_producer_ids(9, 1)
    assert unknown == AllocateProducerIdsResponse(ErrorCode.broker_id_not_registered)
    wrong = h.allocate_producer_ids(1, old_epoch + 100)
    assert wrong == AllocateProducerIdsResponse(ErrorCode.stale_broker_epoch)
    assert h.last_offset == before  # refusals write nothing
    # A new incarnation of the broker: the old one's epoch no longer gets ids.
    h.now = 20.0
    assert h.register(1, incarnation=uuid.UUID(int=99)).error_code == ErrorCode.none
    stale = h.allocate_producer_ids(1, old_epoch)
    assert stale == AllocateProducerIdsResponse(ErrorCode.stale_broker_epoch)
    # Only the epoch matters, not fencing (as in Kafka): the new incarnation is fenced.
    assert h.controller.cluster.brokers[1].fenced
    served = h.allocate_producer_ids(1)
    assert served == AllocateProducerIdsResponse(ErrorCode.none, 1000, 1000)


@pytest.mark.parametrize(
    ("next_id", "expected", "next_after"),
    [
        # The last full block ends exactly at the largest int64.
        (
            2**63 - 1 - 1000,
            AllocateProducerIdsResponse(ErrorCode.none, 2**63 - 1 - 1000, 1000),
            2**63 - 1,
        ),
        (
            2**63 - 1 - 999,
            AllocateProducerIdsResponse(ErrorCode.unknown_server_error),
            None,
        ),
    ],
)
def test_producer_ids_run_out_at_the_largest_int64(
    next_id: int, expected: AllocateProducerIdsResponse, next_after: int | None
) -> None:
    endpoint = (BrokerEndpoint("PLAINTEXT", "b1", 9092),)
    controller = QuorumController()
    committed: list[MetadataRecord] = [
        FeatureLevelRecord("metadata.version", 1),
        RegisterBrokerRecord(1, uuid.UUID(int=1), 1, endpoint, None),
        ProducerIdsRecord(-1, -1, next_id),
    ]
    controller.replay_committed(committed, len(committed) - 1, now=0.0)
    controller.become_leader(1, 0.0)
    result = controller.handle(7, AllocateProducerIdsRequest(1, 1), 0.0)
    if expected.error_code == ErrorCode.none:
        result += controller.handle_commit(len(committed))  # its record's offset
    assert result.replies[-1] == Reply(7, expected)
    assert controller.producer_ids.next_producer_id() == (next_after or next_id)


def test_a_controller_that_restarts_from_the_log_or_a_snapshot_continues_the_blocks() -> (
    None
):
    h = cluster(2)
    h.allocate_producer_ids(1)
    h.allocate_producer_ids(2)
    epoch_of_2 = h.broker_epochs[2]
    from_log = QuorumController(h.controller.config)
    from_log.replay_committed(
        (r for _, r in h.committed_records()), h.committed_offset, now=0.0
    )
    from_snapshot = QuorumController(h.controller.config)
    snapshot = list(h.image().records())
    assert ProducerIdsRecord(-1, -1, 2000) in snapshot
    from_snapshot.load_snapshot(snapshot, h.committed_offset, now=0.0)
    for restarted in (from_log, from_snapshot):
        assert restarted.producer_ids.next_producer_id() == 2000
        restarted.become_leader(2, h.now)
        result = restarted.handle(1, AllocateProducerIdsRequest(2, epoch_of_2), h.now)
        assert result == CoreResult(
            (
                AppendRecords(
                    2, h.committed_offset + 1, (ProducerIdsRecord(2, epoch_of_2, 3000),)
                ),
            )
        )
        assert restarted.handle_commit(h.committed_offset + 1) == CoreResult(
            replies=(Reply(1, AllocateProducerIdsResponse(ErrorCode.none, 2000, 1000)),)
        )


def test_a_block_not_committed_is_forgotten_on_resignation() -> None:
    h = cluster(1)
    h.allocate_producer_ids(1)
    state = h.state()
    rid = h.send(AllocateProducerIdsRequest(1, h.broker_epochs[1]))
    assert h.controller.producer_ids.next_producer_id() == 2000
    assert h.resign() == [Reply(rid, None, ErrorCode.not_controller)]
    assert h.controller.producer_ids.next_producer_id() == 1000
    assert h.state() == state
    # No broker ever saw that block, so the next leader may hand the same range out.
    h.become_leader(2)
    assert h.allocate_producer_ids(1) == AllocateProducerIdsResponse(
        ErrorCode.none, 1000, 1000
    )


# --- replay equality ---------------------------------------------------------------------------


def busy_cluster() -> ControllerHarness:
    """A log with one of everything: brokers coming and going, topics, ISR changes,
    reassignments finished and in flight, configs, deletions."""
    h = cluster(4, seed=7)
    t = created(h, "t", (1, 2, 3), (2, 3, 4), retention_ms="100")
    h.create_topic("placed", 4, 2, configs=(("cleanup.policy", "compact"),))
    created(h, "doomed", (4,), segment_bytes="1048576")
    _alter_result(h, alter(h, 1, t, (1, 2)))
    _reassign(h, (2, 3, 4), "t", 0)
    _reassign(h, (4, 1), "t", 1)
    _alter_result(h, alter(h, 1, t, (1, 2, 4, 3)))  # completes t-0's reassignment
    h.request(CreatePartitionsRequest((CreatePartitionsTopic("t", 3),)))
    h.request(DeleteTopicsRequest(("doomed",)))
    expire(h, 1, 2, 3)  # broker 4 fenced
    h.heartbeat(4)  # and back
    _alter_configs(h, "t", AlterableConfig("retention.ms", AlterConfigOp.DELETE))
    _alter_configs(
        h, "t", AlterableConfig("min.insync.replicas", AlterConfigOp.SET, "2")
    )
    h.allocate_producer_ids(1)
    h.allocate_producer_ids(3)
    h.register(5)  # fenced
    return h


def test_busy_cluster_has_what_it_claims() -> None:
    h = busy_cluster()
    state = h.state()
    assert set(state.topics) == {"t", "placed"}
    assert sorted(state.topics["t"][1]) == [0, 1, 2]
    assert state.topics["t"][1][1].is_reassigning
    assert {b: r.fenced for b, r in state.brokers.items()} == {
        1: False,
        2: False,
        3: False,
        4: False,
        5: True,
    }
    assert state.configs == {
        (TOPIC, "t"): {"min.insync.replicas": "2"},
        (TOPIC, "placed"): {"cleanup.policy": "compact"},
    }
    assert state.next_producer_id == 2000
    assert h.committed_offset == h.last_offset


def test_replaying_the_committed_log_into_a_standby_gives_the_same_state() -> None:
    h = busy_cluster()
    standby = QuorumController(h.controller.config)
    standby.replay_committed(
        (r for _, r in h.committed_records()), h.committed_offset, now=0.0
    )
    assert controller_state(standby) == h.state()
    assert standby.last_committed_offset == h.committed_offset
    # The standby takes over and continues the log right after the committed offset.
    assert not standby.become_leader(2, h.now)
    appended = standby.handle(1, DeleteTopicsRequest(("placed",)), h.now).records
    assert appended[0].base_offset == h.committed_offset + 1


def test_replaying_in_two_parts_gives_the_same_state() -> None:
    h = busy_cluster()
    records = h.committed_records()
    half = len(records) // 2
    standby = QuorumController(h.controller.config)
    standby.replay_committed(
        (r for _, r in records[:half]), records[half - 1][0], now=0.0
    )
    standby.replay_committed((r for _, r in records[half:]), records[-1][0], now=0.0)
    assert controller_state(standby) == h.state()


def test_the_image_agrees_with_the_controller_and_rebuilds_from_its_records() -> None:
    h = busy_cluster()
    image = h.image()
    assert image.offset == h.committed_offset
    assert image_state(image) == h.state()
    rebuilt = image_from_records(enumerate(image.records()))
    assert rebuilt.offset == len(list(image.records())) - 1
    assert image_state(rebuilt) == image_state(image)
    again = MetadataDelta(MetadataImage())
    for record in image.records():
        again.replay(record)
    # same offset too
    again.replay(FeatureLevelRecord("metadata.version", 1), image.offset)
    assert again.apply() == image


def test_image_built_batch_by_batch_equals_image_built_at_once() -> None:
    h = busy_cluster()
    image = MetadataImage()
    records = h.committed_records()
    for start in range(0, len(records), 5):
        image = image_from_records(records[start : start + 5], image)
    assert image == h.image()


def test_resign_without_leadership_is_harmless() -> None:
    controller = QuorumController()
    assert not controller.resign()
    assert controller.handle(1, ListPartitionReassignmentsRequest(), 0.0) == CoreResult(
        replies=(Reply(1, None, ErrorCode.not_controller),)
    )


def test_a_new_incarnation_of_an_unfenced_broker_gives_up_its_leaderships() -> None:
    """Re-registering fences the broker; what it led moves as if its session had ended."""
    h = cluster(2)
    h.create_topic("moved", assignments=((1, 2),))
    assert h.partition("moved", 0).leader == 1
    h.now = 20.0  # the old incarnation's session is over; broker 2 heartbeats on
    h.heartbeat(2)
    before = h.last_offset
    response = h.register(1, incarnation=uuid.UUID(int=77))
    assert response.error_code == ErrorCode.none
    appended = h.appended_since(before)
    assert isinstance(appended[0], RegisterBrokerRecord)
    assert appended[1:] == [
        PartitionChangeRecord(0, h.topic_id("moved"), isr=(2,), leader=2),
    ]
    assert h.partition("moved", 0).leader == 2


def test_a_commit_inside_a_batch_is_refused() -> None:
    h = ControllerHarness.start()
    h.add_brokers([1])
    request_id = h.send(CreateTopicsRequest((CreatableTopic("half", 3, 1),)))
    assert h.reply(request_id) is None
    with pytest.raises(ValueError, match="ends no batch"):
        h.controller.handle_commit(h.last_offset - 1)


def test_describe_configs_of_an_unknown_topic_is_an_error() -> None:
    h = cluster(1)
    response = h.request(DescribeConfigsRequest(ConfigResourceType.TOPIC, "nowhere"))
    assert response == DescribeConfigsResponse(ErrorCode.unknown_topic_or_partition)


def test_topics_that_collide_within_one_request_are_refused() -> None:
    h = cluster(1)
    response = h.request(
        CreateTopicsRequest((CreatableTopic("a.b", 1, 1), CreatableTopic("a_b", 1, 1)))
    )
    assert isinstance(response, CreateTopicsResponse)
    assert [t.error_code for t in response.topics] == [
        ErrorCode.none,
        ErrorCode.invalid_request,
    ]


# --- preferred leader election -----------------------------------------------------------------


def test_a_preferred_election_gives_leadership_back_only_to_an_in_sync_first_replica() -> (
    None
):
    # After a failover the returning broker leads nothing: ElectLeaders (preferred) moves
    # each partition back to its first replica, once that replica is in sync again.
    h = cluster(3)
    topic_id = created(h, "t", (1, 2, 3), (2, 3, 1))
    h.now = 4.5
    h.heartbeat(2)
    h.heartbeat(3)
    h.advance(5.0)  # broker 1's session expires: fenced, out of the ISRs, not leader
    assert h.partition("t", 0).leader == 2
    h.heartbeat(1)  # back and unfenced, but not in sync yet
    assert h.partition("t", 0).isr == (2, 3)

    def elect(*partitions: tuple[str, int]) -> dict[tuple[str, int], ErrorCode]:
        response = h.request(ElectLeadersRequest(partitions or None))
        assert isinstance(response, ElectLeadersResponse)
        return {(r.topic, r.partition): r.error_code for r in response.partitions}

    assert elect(("t", 0)) == {("t", 0): ErrorCode.preferred_leader_not_available}
    assert h.partition("t", 0).leader == 2  # never an unclean move
    # The leader takes broker 1 back into the ISR (it caught up), then the election works.
    p0 = h.partition("t", 0)
    grown = h.request(
        AlterPartitionRequest(
            2,
            h.broker_epochs[2],
            (
                AlterPartitionItem(
                    topic_id, 0, p0.leader_epoch, (1, 2, 3), p0.partition_epoch
                ),
            ),
        )
    )
    assert isinstance(grown, AlterPartitionResponse)
    assert grown.partitions[0].error_code == ErrorCode.none
    before = h.partition("t", 0).leader_epoch
    # Asked for every partition, the answer names only what was elected or could not
    # be: t-1, whose preferred broker 2 leads it already, is left out, as Kafka does.
    assert elect() == {("t", 0): ErrorCode.none}
    assert h.partition("t", 0).leader == 1
    assert elect() == {}  # every preferred replica leads: nothing to name
    assert h.partition("t", 0).leader_epoch == before + 1  # a new leader, a new epoch
    assert elect(("t", 0), ("missing", 0), ("t", 7)) == {
        ("t", 0): ErrorCode.election_not_needed,
        ("missing", 0): ErrorCode.unknown_topic_or_partition,
        ("t", 7): ErrorCode.unknown_topic_or_partition,
    }
    assert image_state(h.image()) == h.state()  # the broker's replay agrees


def test_auto_rebalance_moves_leadership_back_at_the_imbalance_check() -> None:
    # auto.leader.rebalance.enable: at leader.imbalance.check.interval.seconds, a broker
    # leading fewer than its share of the partitions it is preferred for gets them back
    # (where it is in sync); with the feature off nothing moves.
    for enabled in (True, False):
        config = ControllerConfig(
            auto_leader_rebalance_enable=enabled,
            leader_imbalance_check_interval_seconds=60,
        )
        h = cluster(3, config)
        topic_id = created(h, "t", (1, 2, 3), (1, 3, 2))
        h.heartbeat(2)
        h.heartbeat(3)
        h.request(
            BrokerHeartbeatRequest(
                1, h.broker_epochs[1], h.committed_offset, want_fence=True
            )
        )
        assert h.partition("t", 0).leader != 1
        h.heartbeat(1)  # back, unfenced; the leaders take it back into their ISRs
        for partition_id in (0, 1):
            p = h.partition("t", partition_id)
            h.request(
                AlterPartitionRequest(
                    p.leader,
                    h.broker_epochs[p.leader],
                    (
                        AlterPartitionItem(
                            topic_id,
                            partition_id,
                            p.leader_epoch,
                            (1, 2, 3),
                            p.partition_epoch,
                        ),
                    ),
                )
            )
        for _ in range(13):  # 65 s of heartbeats, past the 60 s check
            h.advance(5.0)
            h.commit()
            for broker_id in (1, 2, 3):
                h.heartbeat(broker_id)
        leaders = (h.partition("t", 0).leader, h.partition("t", 1).leader)
        if enabled:
            assert leaders == (1, 1)  # both back on their preferred replica
        else:
            assert 1 not in leaders  # nothing moved them
