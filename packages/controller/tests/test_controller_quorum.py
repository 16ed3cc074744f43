"""The metadata quorum of one voter and QuorumControllerShell: commit on fsync, snapshots,
restart replay.

The server's tests run on real files and the real clock (the Raft shell fsyncs in a worker
thread, which virtual time would skip over), with every wait bounded by a deadline; the
quorum's own guarantees are checked on its Raft node driven as a core.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import uuid
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import trio
import trio.lowlevel
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.controller import (
    METADATA_TOPIC,
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    BrokerEndpoint,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerConfig,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    MetadataDelta,
    MetadataQuorum,
    NoOtherVoters,
    ProducerIdsRecord,
    QuorumControllerShell,
    RaftNodeShell,
    TopicRecord,
    encode_record,
    replay_metadata_dir,
)
from minikafka.controller.__main__ import main
from minikafka.controller._metadata_log import read_committed
from minikafka.controller.testing import flush_leader, metadata_voter
from minikafka.raft import NotLeaderError, RaftConfig

DEADLINE = 20.0


async def register(server: QuorumControllerShell, broker_id: int) -> int:
    """Register ``broker_id`` and heartbeat until it is unfenced; returns its epoch."""
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id)
    registered = await server.submit(
        BrokerRegistrationRequest(broker_id, uuid.uuid4(), (endpoint,))
    )
    assert isinstance(registered, BrokerRegistrationResponse)
    assert registered.error_code == 0
    beat = await server.submit(
        BrokerHeartbeatRequest(broker_id, registered.broker_epoch, server.image.offset)
    )
    assert isinstance(beat, BrokerHeartbeatResponse)
    assert not beat.is_fenced
    return registered.broker_epoch


async def create(
    server: QuorumControllerShell, name: str, partitions: int, factor: int
) -> None:
    response = await server.submit(
        CreateTopicsRequest((CreatableTopic(name, partitions, factor),))
    )
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == 0, response


async def serve(
    metadata_dir: Path,
    work: Callable[[QuorumControllerShell], object],
    config: ControllerConfig | None = None,
) -> QuorumControllerShell:
    """Open a server on ``metadata_dir``, run ``await work(server)``, stop it."""
    server = QuorumControllerShell.open(
        metadata_dir, config or ControllerConfig(), random.Random(7)
    )
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            await work(server)  # type: ignore[misc]
            nursery.cancel_scope.cancel()
    return server


async def test_a_restart_replays_the_log_to_the_same_image(tmp_path: Path) -> None:
    async def first(server: QuorumControllerShell) -> None:
        for broker_id in (1, 2, 3):
            await register(server, broker_id)
        await create(server, "orders", 6, 3)
        await create(server, "audit", 1, 2)
        await server.submit(DeleteTopicsRequest(names=("audit",)))

    before = await serve(tmp_path, first)
    assert before.image.topic("orders") is not None
    assert before.image.topic("audit") is None

    reopened = QuorumControllerShell.open(tmp_path, ControllerConfig())
    assert reopened.image == before.image
    # The controller replayed the same records into its timeline structures.
    orders = reopened.controller.replication.topic_named("orders")
    assert orders is not None
    assert orders.num_partitions == 6
    assert sorted(reopened.controller.cluster.brokers) == [1, 2, 3]
    reopened.quorum.close()

    # Running, it elects itself in the next epoch.
    async def elected(server: QuorumControllerShell) -> None:
        assert server.quorum.epoch == before.quorum.epoch + 1

    await serve(tmp_path, elected)


def test_each_start_is_a_new_epoch_recorded_in_quorum_state(tmp_path: Path) -> None:
    epochs = []
    for _ in range(3):
        node, log = metadata_voter(tmp_path, node_id=3, now=0.0)
        epochs.append(node.epoch)
        log.close()
    assert epochs == [1, 2, 3]
    state = json.loads((tmp_path / f"{METADATA_TOPIC}-0" / "quorum-state").read_text())
    assert state["leaderEpoch"] == 3
    assert state["leaderId"] == 3
    assert state["currentVoters"] == [{"voterId": 3}]


def test_records_commit_on_fsync_and_read_back_in_order(tmp_path: Path) -> None:
    node, log = metadata_voter(tmp_path, node_id=1, now=0.0, deferred_flush=True)
    start = log.end_offset  # after the election's LeaderChange entry
    ids = [uuid.UUID(int=i) for i in range(1, 4)]
    records = [TopicRecord(f"t{i}", ids[i]) for i in range(3)]
    node.append([encode_record(r) for r in records], 1.0)
    assert log.end_offset == start + 3
    assert node.high_watermark == 0  # appended, not yet durable: not committed
    assert list(read_committed(log.log, 0, node.high_watermark)) == []
    flush_leader(node, log, 2.0)
    assert node.high_watermark == start + 3
    read = [
        r
        for batch in read_committed(log.log, 0, node.high_watermark)
        for r in batch.records
    ]
    assert read == [(start + i, records[i]) for i in range(3)]
    node.resign(3.0)  # no longer the leader: an append is refused
    with pytest.raises(NotLeaderError):
        node.append([encode_record(TopicRecord("late", uuid.UUID(int=9)))], 4.0)
    log.close()


async def test_a_snapshot_replaces_the_log_it_covers(tmp_path: Path) -> None:
    # A tiny snapshot interval: every commit is followed by a snapshot.
    config = ControllerConfig(metadata_log_max_record_bytes_between_snapshots=1)

    async def work(server: QuorumControllerShell) -> None:
        await register(server, 1)
        for i in range(5):
            await create(server, f"topic-{i}", 2, 1)
        await snapshot_written(server)

    before = await serve(tmp_path, work, config)
    snapshot = before.quorum.latest_snapshot()
    assert snapshot is not None
    snapshot_id, records = snapshot
    assert snapshot_id.end_offset > 0
    assert any(isinstance(r, TopicRecord) for r in records)
    files = sorted(
        p.name for p in (tmp_path / f"{METADATA_TOPIC}-0").glob("*.checkpoint")
    )
    assert files == [snapshot_id.file_name]  # older snapshots were removed

    reopened = QuorumControllerShell.open(tmp_path, ControllerConfig())
    assert reopened.image == before.image
    assert reopened.quorum.log.log_start_offset == snapshot_id.end_offset
    reopened.quorum.close()
    assert replay_metadata_dir(tmp_path).image == before.image


async def snapshot_written(server: QuorumControllerShell) -> None:
    """Wait until no snapshot is being written."""
    with trio.fail_after(DEADLINE):
        await server.wait_snapshot_written()


@pytest.mark.parametrize("snapshot", [False, True], ids=["log", "snapshot"])
async def test_producer_id_blocks_survive_a_restart(
    tmp_path: Path, snapshot: bool
) -> None:
    # With a snapshot after every commit, the restart reads the blocks from the snapshot.
    config = ControllerConfig()
    if snapshot:
        config = ControllerConfig(metadata_log_max_record_bytes_between_snapshots=1)
    epoch = 0

    async def work(server: QuorumControllerShell) -> None:
        nonlocal epoch
        epoch = await register(server, 1)
        for start in (0, 1000):
            response = await server.submit(AllocateProducerIdsRequest(1, epoch))
            assert response == AllocateProducerIdsResponse(ErrorCode.none, start, 1000)
        if snapshot:
            await snapshot_written(server)
            # One more commit, so a snapshot is certainly taken after the blocks.
            await create(server, "after", 1, 1)
            await snapshot_written(server)

    before = await serve(tmp_path, work, config)
    assert before.image.next_producer_id == 2000
    latest = before.quorum.latest_snapshot()
    assert (latest is not None) == snapshot
    if latest is not None:
        assert ProducerIdsRecord(-1, -1, 2000) in latest[1]

    async def after_restart(server: QuorumControllerShell) -> None:
        assert server.image == before.image
        assert server.controller.producer_ids.next_producer_id() == 2000
        response = await server.submit(AllocateProducerIdsRequest(1, epoch))
        assert response == AllocateProducerIdsResponse(ErrorCode.none, 2000, 1000)

    await serve(tmp_path, after_restart)


async def test_an_expired_session_fences_the_broker_and_moves_leadership(
    tmp_path: Path,
) -> None:
    config = ControllerConfig(broker_session_timeout_ms=300)
    seen: list[MetadataDelta] = []

    async def work(server: QuorumControllerShell) -> None:
        server.subscribe(lambda delta, image: seen.append(delta))
        epochs = {b: await register(server, b) for b in (1, 2)}
        await create(server, "moving", 1, 2)
        topic = server.image.topic("moving")
        assert topic is not None
        leader = topic.partitions[0].leader
        survivor = 3 - leader
        # Only the survivor keeps heartbeating; the leader's session runs out.
        with trio.fail_after(DEADLINE):
            while not server.image.brokers[leader].fenced:
                await server.submit(
                    BrokerHeartbeatRequest(
                        survivor, epochs[survivor], server.image.offset
                    )
                )
                # The survivor's heartbeat interval, not a wait for something: time
                # must pass (300 ms) for the leader's session to run out.
                await trio.sleep(0.05)
        topic = server.image.topic("moving")
        assert topic is not None
        assert topic.partitions[0].leader == survivor
        assert topic.partitions[0].isr == (survivor,)
        changes = [d.local_changes(survivor) for d in seen]
        assert any(TopicPartition("moving", 0) in c.leaders for c in changes)

    await serve(tmp_path, work, config)


async def test_replay_prints_the_image_and_changes_nothing(tmp_path: Path) -> None:
    async def work(server: QuorumControllerShell) -> None:
        await register(server, 1)
        await create(server, "printed", 3, 1)

    server = await serve(tmp_path, work)
    partition_dir = tmp_path / f"{METADATA_TOPIC}-0"

    def digest() -> dict[str, str]:
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in partition_dir.iterdir()
        }

    before = digest()
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["replay", str(tmp_path)]) == 0
    assert digest() == before
    text = out.getvalue()
    assert "topic printed" in text
    assert "printed-2 leader=1" in text
    assert "broker 1 epoch=" in text
    assert replay_metadata_dir(partition_dir).image == server.image


async def test_replay_stops_at_a_torn_batch_and_says_where(tmp_path: Path) -> None:
    async def work(server: QuorumControllerShell) -> None:
        await register(server, 1)
        await create(server, "torn", 1, 1)

    await serve(tmp_path, work)
    segment = next((tmp_path / f"{METADATA_TOPIC}-0").glob("*.log"))
    data = segment.read_bytes()
    segment.write_bytes(data[:-5])  # a crash in the middle of the last batch
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["replay", str(tmp_path)]) == 1
    assert "stopped early" in out.getvalue()
    # A restart recovers: the torn batch (the topic's creation) is cut, the rest replays.
    reopened = QuorumControllerShell.open(tmp_path, ControllerConfig())
    assert reopened.image.topic("torn") is None
    assert 1 in reopened.image.brokers
    reopened.quorum.close()


def test_replay_of_a_directory_without_a_metadata_log_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    assert "__cluster_metadata-0" in capsys.readouterr().err


def test_the_raft_quorum_is_a_metadata_quorum(tmp_path: Path) -> None:
    # A static check as much as a runtime one: mypy verifies the assignment below, so the
    # controller's port has the one implementation it names.
    quorum: MetadataQuorum = RaftNodeShell.open(
        tmp_path, 1, [1], NoOtherVoters(), "", RaftConfig()
    )
    assert quorum.epoch == 0  # not running: no election yet
    assert quorum.high_watermark == quorum.log_end_offset == 0
    assert quorum.latest_snapshot() is None
    assert isinstance(quorum, RaftNodeShell)
    quorum.close()
