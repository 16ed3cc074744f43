"""MetadataDelta and MetadataImage: what a broker builds from the metadata log (seed 004 §2.2).

The broker replays records into a delta, publishes an immutable image, and asks the delta
what changed *for it* (``local_changes``): the declarative coordination of seed 004, where
the log says what should be true and each broker makes it so.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import attrs
import pytest

from minikafka.common import TopicPartition
from minikafka.controller import (
    NO_LEADER,
    BrokerEndpoint,
    BrokerRegistration,
    ConfigRecord,
    ConfigResourceType,
    FeatureLevelRecord,
    FenceBrokerRecord,
    LocalPartition,
    MetadataDelta,
    MetadataImage,
    MetadataRecord,
    MetadataReplayError,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionRegistration,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)

TOPIC = ConfigResourceType.TOPIC
FOO = uuid.UUID(int=0xF00)
BAR = uuid.UUID(int=0xBA2)


def endpoint(broker_id: int) -> tuple[BrokerEndpoint, ...]:
    return (BrokerEndpoint("PLAINTEXT", f"b{broker_id}", 9092),)


def register(
    broker_id: int, epoch: int, rack: str | None = None
) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id, uuid.UUID(int=broker_id), epoch, endpoint(broker_id), rack
    )


BASE_RECORDS: list[MetadataRecord] = [
    FeatureLevelRecord("metadata.version", 1),
    register(1, 1, "r1"),
    UnfenceBrokerRecord(1, 1),
    register(2, 3),
    UnfenceBrokerRecord(2, 3),
    register(3, 5),
    UnfenceBrokerRecord(3, 5),
    TopicRecord("foo", FOO),
    PartitionRecord(0, FOO, (1, 2), (1, 2), leader=1),
    PartitionRecord(1, FOO, (2, 3), (2, 3), leader=2),
    ConfigRecord(TOPIC, "foo", "retention.ms", "100"),
    TopicRecord("bar", BAR),
    PartitionRecord(0, BAR, (3, 1), (3, 1), leader=3),
    ProducerIdsRecord(2, 3, 1000),
]


def replayed(
    records: Iterable[MetadataRecord], image: MetadataImage | None = None
) -> MetadataDelta:
    delta = MetadataDelta(image or MetadataImage())
    for offset, record in enumerate(records, start=(image.offset + 1) if image else 0):
        delta.replay(record, offset)
    return delta


def base_image() -> MetadataImage:
    return replayed(BASE_RECORDS).apply()


# --- replay and apply ---------------------------------------------------------------------


def test_replay_builds_the_image() -> None:
    image = base_image()
    assert image.offset == len(BASE_RECORDS) - 1
    assert dict(image.features) == {"metadata.version": 1}
    assert image.brokers[1] == BrokerRegistration(
        1, 1, uuid.UUID(int=1), endpoint(1), "r1", fenced=False
    )
    assert sorted(image.brokers) == [1, 2, 3]
    assert dict(image.topic_ids) == {"foo": FOO, "bar": BAR}
    foo = image.topic("foo")
    assert foo is not None
    assert (foo.name, foo.topic_id) == ("foo", FOO)
    assert dict(foo.partitions) == {
        0: PartitionRegistration((1, 2), (1, 2), leader=1),
        1: PartitionRegistration((2, 3), (2, 3), leader=2),
    }
    assert image.topic("nope") is None
    assert {k: dict(v) for k, v in image.configs.items()} == {
        (TOPIC, "foo"): {"retention.ms": "100"}
    }
    assert image.next_producer_id == 1000


def test_partition_change_merges_and_bumps_epochs() -> None:
    image = base_image()
    delta = replayed(
        [
            PartitionChangeRecord(0, FOO, isr=(1,)),  # ISR shrink: partition epoch only
            # new leader: both epochs
            PartitionChangeRecord(0, FOO, leader=2, isr=(2,)),
            PartitionChangeRecord(1, FOO, replicas=(2,), isr=(2,)),  # 3 removed: both
        ],
        image,
    )
    foo = delta.apply().topic("foo")
    assert foo is not None
    assert foo.partitions[0] == PartitionRegistration(
        (1, 2), (2,), leader=2, leader_epoch=1, partition_epoch=2
    )
    assert foo.partitions[1] == PartitionRegistration(
        (2,), (2,), leader=2, leader_epoch=1, partition_epoch=1
    )


def test_fencing_unregistering_features_and_configs() -> None:
    image = base_image()
    delta = replayed(
        [
            FenceBrokerRecord(2, 3),
            UnregisterBrokerRecord(3, 5),
            register(4, 20),
            FeatureLevelRecord("metadata.version", 0),  # level 0: not finalized
            FeatureLevelRecord("kraft.version", 1),
            ConfigRecord(TOPIC, "foo", "retention.ms", None),
            ConfigRecord(TOPIC, "bar", "cleanup.policy", "compact"),
        ],
        image,
    )
    new = delta.apply()
    assert new.brokers[2].fenced
    assert not new.brokers[1].fenced
    assert new.brokers[4].fenced  # a broker registers fenced
    assert sorted(new.brokers) == [1, 2, 4]
    assert dict(new.features) == {"kraft.version": 1}
    # A resource whose last config was deleted disappears from the image.
    assert {k: dict(v) for k, v in new.configs.items()} == {
        (TOPIC, "bar"): {"cleanup.policy": "compact"}
    }


def test_remove_topic_takes_its_configs_and_frees_its_name() -> None:
    image = base_image()
    new_foo = uuid.UUID(int=0xF01)
    delta = replayed(
        [
            RemoveTopicRecord(FOO),
            TopicRecord("foo", new_foo),
            PartitionRecord(0, new_foo, (3,), (3,), leader=3),
        ],
        image,
    )
    new = delta.apply()
    assert dict(new.topic_ids) == {"foo": new_foo, "bar": BAR}
    assert FOO not in new.topics
    assert (TOPIC, "foo") not in new.configs
    foo = new.topic("foo")
    assert foo is not None
    assert dict(foo.partitions) == {0: PartitionRegistration((3,), (3,), leader=3)}


def test_topic_created_and_removed_in_one_delta_leaves_nothing() -> None:
    image = base_image()
    tid = uuid.UUID(int=77)
    delta = replayed(
        [
            TopicRecord("brief", tid),
            PartitionRecord(0, tid, (1,), (1,), leader=1),
            ConfigRecord(TOPIC, "brief", "retention.ms", "5"),
            RemoveTopicRecord(tid),
        ],
        image,
    )
    new = delta.apply()
    assert attrs.evolve(new, offset=image.offset) == image
    assert delta.local_changes(1).empty


# --- immutability -----------------------------------------------------------------------


def test_applying_a_delta_leaves_the_old_image_alone() -> None:
    image = base_image()
    described = image.describe()
    records = list(image.records())
    delta = replayed(
        [
            PartitionChangeRecord(0, FOO, leader=2),
            FenceBrokerRecord(3, 5),
            RemoveTopicRecord(BAR),
            ConfigRecord(TOPIC, "foo", "retention.ms", "200"),
        ],
        image,
    )
    new = delta.apply()
    assert image.describe() == described
    assert list(image.records()) == records
    assert image == base_image()
    assert new != image
    # The images share what did not change, and cannot be changed in place.
    assert new.brokers[1] is image.brokers[1]
    with pytest.raises(TypeError):
        image.topics[uuid.UUID(int=1)] = image.topics[FOO]  # type: ignore[index]
    foo = image.topic("foo")
    assert foo is not None
    with pytest.raises(TypeError):
        foo.partitions[5] = foo.partitions[0]  # type: ignore[index]


def test_an_unchanged_topic_is_shared_between_images() -> None:
    image = base_image()
    new = replayed([PartitionChangeRecord(0, FOO, isr=(1,))], image).apply()
    assert new.topics[BAR] is image.topics[BAR]
    assert new.topics[FOO] is not image.topics[FOO]


def test_records_rebuild_the_image() -> None:
    image = replayed(
        [PartitionChangeRecord(0, FOO, leader=2, isr=(2,)), FenceBrokerRecord(1, 1)],
        base_image(),
    ).apply()
    rebuilt = replayed(image.records()).apply()
    assert attrs.evolve(rebuilt, offset=image.offset) == image
    snapshot_records = list(image.records())
    assert snapshot_records[0] == FeatureLevelRecord("metadata.version", 1)
    assert PartitionRecord(
        0, FOO, (1, 2), (2,), leader=2, leader_epoch=1, partition_epoch=1
    ) in (snapshot_records)


def test_producer_id_blocks_move_the_next_id_and_a_snapshot_keeps_only_the_last() -> (
    None
):
    assert MetadataImage().next_producer_id == 0
    image = replayed(
        [ProducerIdsRecord(1, 1, 2000), ProducerIdsRecord(3, 5, 3000)], base_image()
    ).apply()
    assert image.next_producer_id == 3000
    # One record, from no broker, stands for all the blocks handed out.
    assert [r for r in image.records() if isinstance(r, ProducerIdsRecord)] == [
        ProducerIdsRecord(-1, -1, 3000)
    ]
    assert replayed(image.records()).apply().next_producer_id == 3000
    # A cluster that never gave out a block has nothing to say about it.
    fresh = replayed([FeatureLevelRecord("metadata.version", 1)]).apply()
    assert not any(isinstance(r, ProducerIdsRecord) for r in fresh.records())


# --- local changes ----------------------------------------------------------------------


def test_local_changes_for_a_new_topic() -> None:
    delta = replayed(BASE_RECORDS)
    changes = delta.local_changes(2)
    assert dict(changes.leaders) == {
        TopicPartition("foo", 1): LocalPartition(
            FOO, PartitionRegistration((2, 3), (2, 3), leader=2)
        )
    }
    assert dict(changes.followers) == {
        TopicPartition("foo", 0): LocalPartition(
            FOO, PartitionRegistration((1, 2), (1, 2), leader=1)
        )
    }
    assert changes.stopped == frozenset()
    assert changes.deleted == frozenset()
    assert not changes.empty
    assert set(delta.local_changes(3).leaders) == {TopicPartition("bar", 0)}
    assert delta.local_changes(9).empty


def test_local_changes_leader_moves_reassignment_and_deletion() -> None:
    image = base_image()
    delta = replayed(
        [
            # broker 2 now leads foo-0
            PartitionChangeRecord(0, FOO, leader=2, isr=(2,)),
            PartitionChangeRecord(1, FOO, replicas=(2,), isr=(2,)),  # 3 reassigned away
            RemoveTopicRecord(BAR),  # bar-0 was on 3 and 1
        ],
        image,
    )
    two = delta.local_changes(2)
    assert set(two.leaders) == {TopicPartition("foo", 0), TopicPartition("foo", 1)}
    assert two.leaders[TopicPartition("foo", 0)].partition.leader_epoch == 1
    assert two.followers == {}
    assert two.deleted == frozenset()

    one = delta.local_changes(1)
    assert set(one.followers) == {TopicPartition("foo", 0)}  # demoted: follow broker 2
    assert one.leaders == {}
    assert one.deleted == frozenset({TopicPartition("bar", 0)})
    assert one.stopped == frozenset()

    three = delta.local_changes(3)
    assert three.stopped == frozenset({TopicPartition("foo", 1)})
    assert three.deleted == frozenset({TopicPartition("bar", 0)})
    assert three.leaders == {}
    assert three.followers == {}


def test_unchanged_partitions_are_not_local_changes() -> None:
    image = base_image()
    delta = replayed(
        [ConfigRecord(TOPIC, "foo", "retention.ms", "1"), FenceBrokerRecord(2, 3)],
        image,
    )
    for broker in (1, 2, 3):
        assert delta.local_changes(broker).empty


def test_a_leaderless_partition_is_followed() -> None:
    image = base_image()
    delta = replayed([PartitionChangeRecord(0, BAR, leader=NO_LEADER)], image)
    changes = delta.local_changes(3)
    assert set(changes.followers) == {TopicPartition("bar", 0)}
    assert changes.leaders == {}


# --- inconsistent logs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (PartitionChangeRecord(5, FOO, isr=(1,)), "unknown partition"),
        (PartitionChangeRecord(0, uuid.UUID(int=1), isr=(1,)), "unknown topic id"),
        (
            PartitionRecord(0, uuid.UUID(int=1), (1,), (1,), leader=1),
            "unknown topic id",
        ),
        (TopicRecord("foo", uuid.UUID(int=2)), "foo"),
        (TopicRecord("other", FOO), "exists"),
        (FenceBrokerRecord(1, 99), "no registered broker"),
        (UnfenceBrokerRecord(9, 1), "no registered broker"),
        (RemoveTopicRecord(uuid.UUID(int=3)), "unknown topic id"),
        (ProducerIdsRecord(1, 1, 999), "does not move next_producer_id past 1000"),
        (ProducerIdsRecord(1, 1, 1000), "does not move next_producer_id past 1000"),
    ],
)
def test_inconsistent_records_are_refused(record: MetadataRecord, message: str) -> None:
    delta = MetadataDelta(base_image())
    with pytest.raises(MetadataReplayError, match=message):
        delta.replay(record)


def test_records_for_a_removed_topic_are_refused() -> None:
    delta = replayed([RemoveTopicRecord(FOO)], base_image())
    with pytest.raises(MetadataReplayError):
        delta.replay(PartitionChangeRecord(0, FOO, isr=(1,)))
    with pytest.raises(MetadataReplayError, match="unknown topic id"):
        delta.replay(RemoveTopicRecord(FOO))


def test_fencing_an_unregistered_broker_is_refused() -> None:
    delta = replayed([UnregisterBrokerRecord(2, 3)], base_image())
    with pytest.raises(MetadataReplayError):
        delta.replay(FenceBrokerRecord(2, 3))


def test_duplicate_topic_in_one_delta_is_refused() -> None:
    with pytest.raises(MetadataReplayError, match="exists"):
        replayed(
            [TopicRecord("t", uuid.UUID(int=1)), TopicRecord("t", uuid.UUID(int=2))]
        )


# --- describe ---------------------------------------------------------------------------


def test_describe_mentions_everything() -> None:
    image = replayed(
        [
            PartitionChangeRecord(
                0, BAR, replicas=(2, 3, 1), adding_replicas=(2,), removing_replicas=(1,)
            )
        ],
        base_image(),
    ).apply()
    text = image.describe()
    lines = text.splitlines()
    assert lines[0] == f"metadata image at offset {image.offset}"
    assert "feature metadata.version=1" in lines
    assert "broker 1 epoch=1 unfenced rack=r1 PLAINTEXT://b1:9092" in lines
    assert f"topic foo id={FOO} partitions=2" in lines
    assert (
        "  foo-0 leader=1 leader_epoch=0 partition_epoch=0 replicas=[1, 2] isr=[1, 2]"
        in lines
    )
    assert (
        "  bar-0 leader=3 leader_epoch=0 partition_epoch=1 replicas=[2, 3, 1] isr=[3, 1]"
        " adding=[2] removing=[1]"
    ) in lines
    assert "config 2:foo retention.ms=100" in lines
    assert "producer ids next_producer_id=1000" in lines
    # Topics are listed by name, whatever their ids.
    assert text.index("topic bar") < text.index("topic foo")


def test_delete_and_recreate_in_one_delta_deletes_the_old_log_and_hosts_the_new() -> (
    None
):
    """Both changes name the same TopicPartition (as in Kafka): the broker must delete the
    old log before it creates the new one; the topic id tells them apart."""
    new_bar = uuid.UUID(int=0xBA3)
    delta = replayed(
        [
            RemoveTopicRecord(BAR),
            TopicRecord("bar", new_bar),
            PartitionRecord(0, new_bar, (1,), (1,), leader=1),
        ],
        base_image(),
    )
    changes = delta.local_changes(1)
    assert changes.deleted == frozenset({TopicPartition("bar", 0)})
    assert dict(changes.leaders) == {
        TopicPartition("bar", 0): LocalPartition(
            new_bar, PartitionRegistration((1,), (1,), leader=1)
        )
    }
