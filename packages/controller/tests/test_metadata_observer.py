"""A broker's copy of the metadata log, fetched from the quorum's leader (KIP-595, KIP-630).

Guarantees tested, each on real logs in temporary directories (the leader is the metadata
quorum's one voter, a Raft node driven as a core; leader and observer in one process, so
every step is one call and nothing waits):

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
    TopicRecord,
    encode_record,
    encode_snapshot,
)
from minikafka.controller._metadata_fetch import DivergingEpoch, MetadataFetchAnswer
from minikafka.controller._observer import (
    CommittedDivergenceError,
    FetchPosition,
    MetadataObserver,
)
from minikafka.controller.testing import (
    fetch_metadata,
    fetch_snapshot,
    flush_leader,
    image_from_records,
    image_state,
    metadata_voter,
    replay_replies,
)
from minikafka.raft import RaftConfig, RaftResult, SnapshotId

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


class Leader:
    """The metadata quorum's one voter as a core, its log flushed when the test says
    (as the server's flusher would), and the image its state machine replays from the
    node's replies."""

    def __init__(
        self, metadata_dir: Path, config: RaftConfig | None = None, now: float = 1000.0
    ) -> None:
        self.dir, self.config, self.now = metadata_dir, config, now
        self.node, self.log = metadata_voter(
            metadata_dir, 1, now, deferred_flush=True, config=config
        )
        self.image = image_from_records([])
        self.take(self.flush())  # the election's LeaderChange entry commits the log

    def take(self, result: RaftResult) -> None:
        self.image = replay_replies(self.image, result.replies)

    def flush(self) -> RaftResult:
        return flush_leader(self.node, self.log, self.now)

    def write(self, records: Sequence[MetadataRecord], commit: bool = True) -> None:
        self.take(self.node.append([encode_record(r) for r in records], self.now))
        if commit:
            self.take(self.flush())

    def snapshot(self) -> SnapshotId:
        """A snapshot of the image, as the server's snapshot task takes one."""
        payload = encode_snapshot(list(self.image.records()))
        return self.node.create_snapshot(self.image.offset + 1, payload)

    def crash(self) -> Leader:
        """The process dies before its fsync: the unflushed tail never reached the disk;
        the restart is an election in the next epoch."""
        self.log.crash().close()
        return Leader(self.dir, self.config, self.now + 1)

    def close(self) -> None:
        self.log.close()

    @property
    def high_watermark(self) -> int:
        return self.node.high_watermark

    @property
    def epoch(self) -> int:
        return self.node.epoch


class Broker:
    """The observer plus the replay a broker does with what it hands out."""

    def __init__(self, metadata_dir: Path) -> None:
        self.observer, snapshot = MetadataObserver.open(metadata_dir)
        self.replayed: list[tuple[int, MetadataRecord]] = []
        self.image = image_from_records([])
        if snapshot:
            self.image = image_from_records((-1, r) for r in snapshot)

    def catch_up(self, leader: Leader) -> list[str]:
        """Fetch until the observer has everything the leader has committed; what
        happened along the way, in order."""
        steps: list[str] = []
        for _ in range(MAX_ROUNDS):
            answer = fetch_metadata(leader.node, self.observer.position(), leader.now)
            update = self.observer.on_fetch(answer)
            if update.snapshot_wanted is not None:
                steps.append("snapshot")
                data = fetch_snapshot(leader.node, update.snapshot_wanted, leader.now)
                assert data is not None
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
                self.observer.log.log_end_offset == leader.log.end_offset
                and self.observer.high_watermark == leader.high_watermark
                and update.truncated_to is None
                and update.snapshot_wanted is None
            )
            if caught_up:
                return steps
        raise AssertionError(f"not caught up after {MAX_ROUNDS} fetches: {steps}")


def metadata_offsets(leader: Leader, start: int = 0) -> list[int]:
    """The offsets of the leader's committed metadata records from ``start`` (its log's
    control entries, the LeaderChange of each epoch, are not records to replay)."""
    entries = leader.log.read(start, leader.high_watermark)
    return [
        e.offset for e in entries if not e.control and e.offset < leader.high_watermark
    ]


def offsets(pairs: Iterable[tuple[int, MetadataRecord]]) -> list[int]:
    return [o for o, _ in pairs]


def test_an_observer_catches_up_to_the_leaders_image(tmp_path: Path) -> None:
    # Small fetches: many rounds, an operation at a time.
    leader = Leader(tmp_path / "controller", RaftConfig(fetch_max_entries=1))
    leader.write([FeatureLevelRecord("metadata.version", 1)])
    leader.write(topic("orders", 3))
    leader.write(topic("payments", 2))
    broker = Broker(tmp_path / "broker")
    steps = broker.catch_up(leader)
    assert len(steps) >= 3
    assert image_state(broker.image) == image_state(leader.image)
    assert offsets(broker.replayed) == metadata_offsets(leader)  # each once
    leader.close()
    broker.observer.close()


def test_only_committed_records_are_replayed(tmp_path: Path) -> None:
    leader = Leader(tmp_path / "controller")
    leader.write(topic("committed"))
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)
    leader.write(topic("pending"), commit=False)  # appended, not yet fsynced
    answer = fetch_metadata(leader.node, broker.observer.position(), leader.now)
    assert answer.records  # the leader sends past its high watermark...
    update = broker.observer.on_fetch(answer)
    assert update.committed == ()  # ...and none of it is replayed yet
    assert broker.observer.log.log_end_offset == leader.log.end_offset
    leader.take(leader.flush())
    broker.catch_up(leader)
    assert "pending" in {t.name for t in broker.image.topics.values()}
    assert image_state(broker.image) == image_state(leader.image)
    leader.close()
    broker.observer.close()


def test_records_lost_by_a_crashed_leader_are_truncated_never_replayed(
    tmp_path: Path,
) -> None:
    leader = Leader(tmp_path / "controller")
    leader.write(topic("kept"))
    committed = leader.high_watermark
    leader.write(topic("lost", 4), commit=False)
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)  # has the uncommitted tail in its copy, not in its image
    first_epoch = leader.epoch
    # The leader crashes before its fsync: the tail never reached its disk.
    leader = leader.crash()
    assert leader.epoch == first_epoch + 1
    leader.write(topic("new"))
    steps = broker.catch_up(leader)
    assert steps[0] == f"truncate to {committed}"
    names = {t.name for t in broker.image.topics.values()}
    assert names == {"kept", "new"}
    assert image_state(broker.image) == image_state(leader.image)
    # no gaps, no repeats
    assert offsets(broker.replayed) == metadata_offsets(leader)
    leader.close()
    broker.observer.close()


def test_an_observer_behind_the_log_start_loads_the_snapshot(tmp_path: Path) -> None:
    leader = Leader(tmp_path / "controller")
    leader.write([FeatureLevelRecord("metadata.version", 1)])
    leader.write(topic("before-the-snapshot", 2))
    end = leader.high_watermark
    assert leader.snapshot().end_offset == end
    assert leader.log.start_offset == end
    leader.write(topic("after-the-snapshot"))
    broker = Broker(tmp_path / "broker")
    steps = broker.catch_up(leader)
    assert steps[0] == "snapshot"
    assert image_state(broker.image) == image_state(leader.image)
    assert offsets(broker.replayed) == metadata_offsets(leader, end)
    leader.close()
    broker.observer.close()


def test_a_restarted_observer_resumes_from_its_own_copy(tmp_path: Path) -> None:
    leader = Leader(tmp_path / "controller")
    leader.write(topic("first", 2))
    leader.snapshot()
    leader.write(topic("second"))
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)
    end = broker.observer.log.log_end_offset
    broker.observer.close()
    leader.write(topic("while-down"))
    broker = Broker(tmp_path / "broker")  # the snapshot it loaded, then its own log
    assert broker.observer.position().fetch_offset == end  # nothing fetched twice
    broker.catch_up(leader)
    assert image_state(broker.image) == image_state(leader.image)
    leader.close()
    broker.observer.close()


def test_a_leader_disowning_committed_records_stops_the_observer(
    tmp_path: Path,
) -> None:
    leader = Leader(tmp_path / "controller")
    leader.write(topic("a", 3))
    broker = Broker(tmp_path / "broker")
    broker.catch_up(leader)
    answer = MetadataFetchAnswer(
        1, leader.epoch + 1, 0, 0, diverging_epoch=DivergingEpoch(leader.epoch, 1)
    )
    with pytest.raises(CommittedDivergenceError):
        broker.observer.on_fetch(answer)
    # nothing cut
    assert broker.observer.log.log_end_offset == leader.log.end_offset
    leader.close()
    broker.observer.close()


def test_the_leader_answers_a_fetch_past_its_end_and_an_unknown_snapshot(
    tmp_path: Path,
) -> None:
    leader = Leader(tmp_path / "controller")
    leader.write(topic("a"))
    # A fetch past the log end claiming the latest epoch: the leader's end is the truth.
    end = leader.log.end_offset
    beyond = fetch_metadata(
        leader.node, FetchPosition(end + 5, leader.epoch), leader.now
    )
    assert beyond.diverging_epoch == DivergingEpoch(leader.epoch, end)
    snapshot = leader.snapshot()
    assert fetch_snapshot(leader.node, snapshot, leader.now) is not None
    other = SnapshotId(snapshot.end_offset + 1, snapshot.epoch)
    assert fetch_snapshot(leader.node, other, leader.now) is None  # SNAPSHOT_NOT_FOUND
    leader.close()
