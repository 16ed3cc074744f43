"""A broker's copy of the metadata log, fetched from the quorum's leader (KIP-595, KIP-630).

Guarantees tested, each on real logs in temporary directories (leader and observer in one
process, so every step is one call and nothing waits):

- the observer's image equals the leader's after it catches up, by records or through a
  snapshot, and after it restarts from its own copy;
- only committed records are replayed: what the leader appended but has not committed is
  fetched, held, and replayed only once the high watermark passes it;
- records a leader wrote and lost before committing them (a crash) are truncated from the
  observer by the diverging epoch and never replayed, and the observer then holds
  exactly the new leader's records;
- a leader that disowns committed records stops the observer instead of mixing histories.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from minikafka.controller import (
    FeatureLevelRecord,
    MetadataRecord,
    PartitionRecord,
    SingleVoterQuorum,
    TopicRecord,
)
from minikafka.controller._metadata_fetch import (
    DivergingEpoch,
    MetadataFetchAnswer,
    answer_fetch,
    read_snapshot,
)
from minikafka.controller._observer import CommittedDivergenceError, MetadataObserver
from minikafka.controller._server import load_metadata
from minikafka.controller.testing import image_from_records, image_state

MAX_ROUNDS = 100


def topic(name: str, partitions: int = 1) -> list[MetadataRecord]:
    # seeded: the same name, the same id
    topic_id = uuid.uuid5(uuid.NAMESPACE_OID, name)
    return [
        TopicRecord(name, topic_id),
        *(
            PartitionRecord(p, topic_id, (1,), (1,), leader=1)
            for p in range(partitions)
        ),
    ]


class Broker:
    """The observer plus the replay a broker does with what it hands out."""

    def __init__(self, metadata_dir: Path) -> None:
        self.observer, snapshot = MetadataObserver.open(metadata_dir)
        self.replayed: list[tuple[int, MetadataRecord]] = []
        self.image = image_from_records([])
        if snapshot:
            self.image = image_from_records((-1, r) for r in snapshot)

    def catch_up(
        self, leader: SingleVoterQuorum, max_bytes: int = 8 << 20
    ) -> list[str]:
        """Fetch until the observer has everything the leader has committed; what
        happened along the way, in order."""
        steps: list[str] = []
        for _ in range(MAX_ROUNDS):
            position = self.observer.position()
            answer = answer_fetch(
                leader, position.fetch_offset, position.last_fetched_epoch, max_bytes
            )
            update = self.observer.on_fetch(answer)
            if update.snapshot_wanted is not None:
                steps.append("snapshot")
                data = self._fetch_snapshot(leader, answer)
                update = self.observer.on_snapshot(update.snapshot_wanted, data)
            if update.truncated_to is not None:
                steps.append(f"truncate to {update.truncated_to}")
            if update.reset_to_snapshot is not None:
                self.image = image_from_records(
                    (-1, r) for r in update.reset_to_snapshot
                )
            if update.committed:
                steps.append(
                    f"replay {update.committed[0][0]}..{update.committed[-1][0]}"
                )
                self.replayed.extend(update.committed)
                self.image = image_from_records(update.committed, self.image)
            caught_up = (
                self.observer.log.log_end_offset == leader.log.log_end_offset
                and self.observer.high_watermark == leader.high_watermark
                and update.truncated_to is None
                and update.snapshot_wanted is None
            )
            if caught_up:
                return steps
        raise AssertionError(f"not caught up after {MAX_ROUNDS} fetches: {steps}")

    @staticmethod
    def _fetch_snapshot(
        leader: SingleVoterQuorum, answer: MetadataFetchAnswer
    ) -> bytes:
        assert answer.snapshot_id is not None
        data, position = bytearray(), 0
        while True:  # in small chunks, as FetchSnapshot's max_bytes allows
            chunk = read_snapshot(leader, answer.snapshot_id, position, 100)
            assert chunk is not None
            part, size = chunk
            data += part
            position += len(part)
            if position >= size:
                return bytes(data)


def write(
    leader: SingleVoterQuorum, records: Sequence[MetadataRecord], commit: bool = True
) -> None:
    leader.append(leader.epoch, records)
    if commit:
        leader.commit()


def leader_state(leader: SingleVoterQuorum) -> object:
    return image_state(load_metadata(leader))


def offsets(pairs: Iterable[tuple[int, MetadataRecord]]) -> list[int]:
    return [o for o, _ in pairs]


def test_an_observer_catches_up_to_the_leaders_image(tmp_path: Path) -> None:
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    write(leader, [FeatureLevelRecord("metadata.version", 1)])
    write(leader, topic("orders", 3))
    write(leader, topic("payments", 2))
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader, max_bytes=64)  # small fetches: many rounds, batch by batch
    assert image_state(broker.image) == leader_state(leader)
    assert offsets(broker.replayed) == list(range(leader.high_watermark))  # each once
    leader.close()
    broker.observer.close()


def test_only_committed_records_are_replayed(tmp_path: Path) -> None:
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    write(leader, topic("committed"))
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)
    write(leader, topic("pending"), commit=False)  # appended, not yet fsynced
    position = broker.observer.position()
    answer = answer_fetch(leader, position.fetch_offset, position.last_fetched_epoch)
    assert answer.records  # the leader sends past its high watermark...
    update = broker.observer.on_fetch(answer)
    assert update.committed == ()  # ...and none of it is replayed yet
    assert broker.observer.log.log_end_offset == leader.log.log_end_offset
    leader.commit()
    broker.catch_up(leader)
    assert "pending" in {t.name for t in broker.image.topics.values()}
    assert image_state(broker.image) == leader_state(leader)
    leader.close()
    broker.observer.close()


def test_records_lost_by_a_crashed_leader_are_truncated_never_replayed(
    tmp_path: Path,
) -> None:
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    write(leader, topic("kept"))
    committed = leader.high_watermark
    write(leader, topic("lost", 4), commit=False)
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)  # has the uncommitted tail in its copy, not in its image
    first_epoch = leader.epoch
    # The leader crashes before its fsync: the tail never reached its disk.
    leader.log.truncate_to(committed)
    leader.close(commit=False)
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    assert leader.epoch == first_epoch + 1
    write(leader, topic("new"))
    steps = broker.catch_up(leader)
    assert steps[0] == f"truncate to {committed}"
    names = {t.name for t in broker.image.topics.values()}
    assert names == {"kept", "new"}
    assert image_state(broker.image) == leader_state(leader)
    # no gaps, no repeats
    assert offsets(broker.replayed) == list(range(leader.high_watermark))
    leader.close()
    broker.observer.close()


def test_an_observer_behind_the_log_start_loads_the_snapshot(tmp_path: Path) -> None:
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    write(leader, [FeatureLevelRecord("metadata.version", 1)])
    write(leader, topic("before-the-snapshot", 2))
    image = load_metadata(leader)
    end = leader.high_watermark
    leader.snapshot_written(leader.write_snapshot(end, list(image.records())))
    assert leader.log.log_start_offset == end
    write(leader, topic("after-the-snapshot"))
    broker = Broker(tmp_path / "broker")
    steps = broker.catch_up(leader)
    assert steps[0] == "snapshot"
    assert image_state(broker.image) == leader_state(leader)
    assert offsets(broker.replayed) == list(range(end, leader.high_watermark))
    leader.close()
    broker.observer.close()


def test_a_restarted_observer_resumes_from_its_own_copy(tmp_path: Path) -> None:
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    write(leader, topic("first", 2))
    image = load_metadata(leader)
    leader.snapshot_written(
        leader.write_snapshot(leader.high_watermark, list(image.records()))
    )
    write(leader, topic("second"))
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)
    end = broker.observer.log.log_end_offset
    broker.observer.close()
    write(leader, topic("while-down"))
    broker = Broker(tmp_path / "broker")  # the snapshot it loaded, then its own log
    assert broker.observer.position().fetch_offset == end  # nothing fetched twice
    broker.catch_up(leader)
    assert image_state(broker.image) == leader_state(leader)
    leader.close()
    broker.observer.close()


def test_a_leader_disowning_committed_records_stops_the_observer(
    tmp_path: Path,
) -> None:
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    write(leader, topic("a", 3))
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)
    answer = MetadataFetchAnswer(
        1, leader.epoch + 1, 0, 0, diverging_epoch=DivergingEpoch(leader.epoch, 1)
    )
    with pytest.raises(CommittedDivergenceError):
        broker.observer.on_fetch(answer)
    # nothing cut
    assert broker.observer.log.log_end_offset == leader.log.log_end_offset
    leader.close()
    broker.observer.close()


def test_the_leader_answers_a_bad_offset_and_an_unknown_snapshot(
    tmp_path: Path,
) -> None:
    leader = SingleVoterQuorum.open(tmp_path / "controller", node_id=1)
    write(leader, topic("a"))
    assert answer_fetch(leader, -1, -1).error.name == "invalid_request"
    # A fetch past the log end claiming the latest epoch: the leader's end is the truth.
    beyond = answer_fetch(leader, leader.log.log_end_offset + 5, leader.epoch)
    assert beyond.diverging_epoch == DivergingEpoch(
        leader.epoch, leader.log.log_end_offset
    )
    image = load_metadata(leader)
    snapshot = leader.write_snapshot(leader.high_watermark, list(image.records()))
    assert read_snapshot(leader, snapshot, 0, 10) is not None
    other = type(snapshot)(snapshot.end_offset + 1, snapshot.epoch)
    assert read_snapshot(leader, other, 0, 10) is None  # SNAPSHOT_NOT_FOUND
    leader.close()
