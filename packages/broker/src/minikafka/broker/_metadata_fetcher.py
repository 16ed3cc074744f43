"""The trio shell of a broker's metadata observer: Fetch and FetchSnapshot over the network.

:class:`~minikafka.controller.MetadataObserver` decides; this loop carries it out against
the controller's listener (:class:`~minikafka.broker._controller_apis.ControllerApis`): it sends a
Fetch of ``__cluster_metadata-0`` at the observer's position (long-polling, as
KafkaRaftClient does), hands the answer to the observer, fetches a snapshot piece by
piece when the observer wants one, and passes every :class:`ObserverUpdate` to the
broker, which replays it. A failed request is retried after ``backoff`` seconds; the loop
runs until cancelled.

With several controllers it fetches from the quorum's leader: a voter that does not lead
answers NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) naming the leader and its epoch,
and the :class:`~minikafka.broker._controller_locator.ControllerLocator` it shares with
the broker's controller channel moves there; a voter that does not answer is skipped.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

import trio
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v13 import request as fetch_v13
from kio.schema.fetch.v13.response import FetchResponse
from kio.schema.fetch_snapshot.v0 import request as snapshot_v0
from kio.schema.fetch_snapshot.v0.response import FetchSnapshotResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from minikafka.controller import (
    DEFAULT_FETCH_MAX_BYTES,
    METADATA_TOPIC,
    MetadataFetchAnswer,
    MetadataObserver,
    ObserverUpdate,
    SnapshotId,
)
from minikafka.net import ClientError, NetworkClient, Node

from ._controller_apis import METADATA_TOPIC_ID
from ._controller_locator import ControllerLocator

SNAPSHOT_CHUNK_BYTES = 1024 * 1024


class MetadataFetchError(Exception):
    """The controller answered a fetch of the metadata log with an error."""

    def __init__(self, error_code: ErrorCode) -> None:
        super().__init__(error_code.name)
        self.error_code = error_code


async def fetch_metadata_forever(
    client: NetworkClient,
    locator: ControllerLocator,
    observer: MetadataObserver,
    apply: Callable[[ObserverUpdate], None],
    *,
    node_id: int,
    cluster_id: str,
    max_wait_ms: int = 500,
    backoff: float = 0.1,
) -> None:
    """Keep ``observer`` caught up with the quorum's leader (``locator`` finds it)."""
    while True:
        controller, known = locator.node, locator.leader_epoch
        try:
            answer = await fetch_once(
                client, controller, observer, node_id, cluster_id, max_wait_ms, known
            )
            if answer.leader_id >= 0 or answer.leader_epoch > known:
                locator.leader_is(answer.leader_id, answer.leader_epoch)
            if answer.error is not ErrorCode.none and (
                answer.leader_id < 0 or answer.leader_epoch < known
            ):
                # No leader named, or a voter behind the quorum (cut off, it still names
                # an old leader): ask another voter.
                locator.failed(controller)
            update = observer.on_fetch(answer)
            if update.snapshot_wanted is not None:
                data = await fetch_snapshot(
                    client,
                    controller,
                    update.snapshot_wanted,
                    node_id,
                    cluster_id,
                    locator.leader_epoch,
                )
                update = observer.on_snapshot(update.snapshot_wanted, data)
            apply(update)
            if answer.error is not ErrorCode.none and locator.leader_epoch == known:
                # Learned nothing new (a newer epoch is asked again at once).
                await trio.sleep(backoff)
        except (ClientError, MetadataFetchError):
            locator.failed(controller)
            await trio.sleep(backoff)


async def fetch_once(
    client: NetworkClient,
    controller: Node,
    observer: MetadataObserver,
    node_id: int,
    cluster_id: str,
    max_wait_ms: int,
    leader_epoch: int = -1,
) -> MetadataFetchAnswer:
    """One Fetch at the observer's position, its answer as the core's value."""
    position = observer.position()
    request = fetch_v13.FetchRequest(
        cluster_id=cluster_id,
        replica_id=BrokerId(node_id),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
        min_bytes=i32(1),
        max_bytes=i32(DEFAULT_FETCH_MAX_BYTES),
        topics=(
            fetch_v13.FetchTopic(
                topic_id=METADATA_TOPIC_ID,
                partitions=(
                    fetch_v13.FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(leader_epoch),
                        fetch_offset=i64(position.fetch_offset),
                        last_fetched_epoch=i32(position.last_fetched_epoch),
                        partition_max_bytes=i32(DEFAULT_FETCH_MAX_BYTES),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    response = await client.send(controller, request)
    assert isinstance(response, FetchResponse)
    if response.error_code is not ErrorCode.none:
        raise MetadataFetchError(response.error_code)
    partitions = [p for t in response.responses for p in t.partitions]
    if len(partitions) != 1:
        raise MetadataFetchError(ErrorCode.unknown_server_error)
    return MetadataFetchAnswer.decode(partitions[0])


async def fetch_snapshot(
    client: NetworkClient,
    controller: Node,
    snapshot_id: SnapshotId,
    node_id: int,
    cluster_id: str,
    leader_epoch: int = -1,
) -> bytes:
    """The whole snapshot ``snapshot_id``, in pieces of ``SNAPSHOT_CHUNK_BYTES``."""
    data = bytearray()
    while True:
        request = snapshot_v0.FetchSnapshotRequest(
            cluster_id=cluster_id,
            replica_id=BrokerId(node_id),
            max_bytes=i32(SNAPSHOT_CHUNK_BYTES),
            topics=(
                snapshot_v0.TopicSnapshot(
                    name=TopicName(METADATA_TOPIC),
                    partitions=(
                        snapshot_v0.PartitionSnapshot(
                            partition=i32(0),
                            current_leader_epoch=i32(leader_epoch),
                            snapshot_id=snapshot_v0.SnapshotId(
                                end_offset=i64(snapshot_id.end_offset),
                                epoch=i32(snapshot_id.epoch),
                            ),
                            position=i64(len(data)),
                        ),
                    ),
                ),
            ),
        )
        response = await client.send(controller, request)
        assert isinstance(response, FetchSnapshotResponse)
        parts = [p for t in response.topics for p in t.partitions]
        if response.error_code is not ErrorCode.none or len(parts) != 1:
            raise MetadataFetchError(response.error_code)
        part = parts[0]
        if part.error_code is not ErrorCode.none:
            # e.g. SNAPSHOT_NOT_FOUND: a newer one
            raise MetadataFetchError(part.error_code)
        data += part.unaligned_records
        if len(data) >= part.size or not part.unaligned_records:
            return bytes(data)
