"""KafkaApis: one handler per API, and exactly those APIs advertised (seed 000, KafkaApis).

The network layer's handler tasks call :meth:`KafkaApis.handle` with each request; the
Processor has already refused what :meth:`KafkaApis.api_versions` does not list, so
every request that arrives here has a handler. The table below is the broker's whole
protocol surface; ApiVersions reports it verbatim, and each range is covered by the
compatibility tests with real clients.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.controller import (
    ControllerError,
    ControllerServer,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from minikafka.coordination import GroupCoordinatorService
from minikafka.net import Request, handle_api_versions
from minikafka.replication import ReplicaManager

from ._admin import (
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
    handle_describe_configs,
)
from ._config import KafkaConfig
from ._fetch import handle_fetch
from ._groups import (
    handle_delete_groups,
    handle_describe_groups,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_list_groups,
    handle_offset_commit,
    handle_offset_fetch,
    handle_sync_group,
)
from ._metadata import handle_list_offsets, metadata_response, requested_topics
from ._metadata_cache import INTERNAL_TOPICS, MetadataCache
from ._offsets_topic import handle_find_coordinator
from ._produce import handle_produce
from ._producer_ids import ProducerIdManager, handle_init_producer_id

Handler = Callable[[Request], Awaitable[None]]

# Requests that wait for other clients: a JoinGroup is held until the whole group has
# rejoined, a SyncGroup until the leader's assignment is stored, an OffsetCommit until
# it is replicated. Kafka parks them in purgatories; here each runs in a task of its own,
# so the num.io.threads handlers are never all held by one rebalance.
_PARKING_APIS = frozenset({8, 11, 14})
_logger = logging.getLogger("minikafka.broker")


@attrs.define(eq=False)
class KafkaApis:
    config: KafkaConfig
    cluster_id: str
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    controller: ControllerServer
    producer_ids: ProducerIdManager
    groups: GroupCoordinatorService
    ready: trio.Event = attrs.field(init=False, factory=trio.Event)
    """Set once the broker is unfenced; requests that arrive earlier wait for it."""
    _handlers: dict[int, Handler] = attrs.field(init=False)
    _parked: trio.Nursery | None = attrs.field(init=False, default=None)

    SUPPORTED: ClassVar[Mapping[int, tuple[int, int]]] = {
        0: (3, 8),  # Produce
        1: (4, 11),  # Fetch
        2: (1, 5),  # ListOffsets
        3: (1, 8),  # Metadata
        8: (2, 7),  # OffsetCommit
        9: (1, 5),  # OffsetFetch
        10: (0, 2),  # FindCoordinator
        11: (0, 5),  # JoinGroup
        12: (0, 3),  # Heartbeat
        13: (0, 3),  # LeaveGroup
        14: (0, 3),  # SyncGroup
        15: (0, 4),  # DescribeGroups
        16: (0, 2),  # ListGroups
        18: (0, 4),  # ApiVersions
        19: (2, 4),  # CreateTopics
        20: (1, 3),  # DeleteTopics
        22: (0, 1),  # InitProducerId
        32: (1, 3),  # DescribeConfigs
        37: (0, 1),  # CreatePartitions
        42: (0, 1),  # DeleteGroups
    }

    def __attrs_post_init__(self) -> None:
        self._handlers = {
            0: self._produce,
            1: self._fetch,
            2: self._list_offsets,
            3: self._metadata,
            8: lambda r: handle_offset_commit(r, self.groups, self.metadata_cache),
            9: lambda r: handle_offset_fetch(r, self.groups),
            10: lambda r: handle_find_coordinator(
                r, self.controller, self.metadata_cache, self.config
            ),
            11: lambda r: handle_join_group(r, self.groups),
            12: lambda r: handle_heartbeat(r, self.groups),
            13: lambda r: handle_leave_group(r, self.groups),
            14: lambda r: handle_sync_group(r, self.groups),
            15: lambda r: handle_describe_groups(r, self.groups),
            16: lambda r: handle_list_groups(r, self.groups),
            18: self._api_versions,
            19: lambda r: handle_create_topics(r, self.controller),
            20: lambda r: handle_delete_topics(r, self.controller),
            22: lambda r: handle_init_producer_id(r, self.producer_ids),
            32: self._describe_configs,
            37: lambda r: handle_create_partitions(r, self.controller),
            42: lambda r: handle_delete_groups(r, self.groups),
        }
        assert self._handlers.keys() == self.SUPPORTED.keys()

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        return self.SUPPORTED

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the tasks of the requests that wait for other clients (_PARKING_APIS)."""
        async with trio.open_nursery() as nursery:
            self._parked = nursery
            task_status.started()
            await trio.sleep_forever()

    async def handle(self, request: Request) -> None:
        if not self.ready.is_set():
            await self.ready.wait()
        if request.api_key in _PARKING_APIS and self._parked is not None:
            self._parked.start_soon(self._handle_parked, request)
            return
        await self._handlers[request.api_key](request)

    async def _handle_parked(self, request: Request) -> None:
        try:
            await self._handlers[request.api_key](request)
        except Exception:
            # What the handler pool does for a failed handler: this connection only.
            _logger.exception(
                "%s request from %s failed; closing the connection",
                request.api_name,
                request.connection_id,
            )
            if not request.responded:
                request.close_connection()

    async def _api_versions(self, request: Request) -> None:
        handle_api_versions(request, self.SUPPORTED)

    async def _produce(self, request: Request) -> None:
        handle_produce(request, self.replica_manager, self.metadata_cache)

    async def _fetch(self, request: Request) -> None:
        handle_fetch(request, self.replica_manager)

    async def _list_offsets(self, request: Request) -> None:
        handle_list_offsets(request, self.replica_manager)

    async def _describe_configs(self, request: Request) -> None:
        handle_describe_configs(request, self.metadata_cache, self.config)

    async def _metadata(self, request: Request) -> None:
        names = requested_topics(request)
        errors: dict[str, ErrorCode] = {}
        # Internal topics are created with their own settings by their owners (the
        # group coordinator creates __consumer_offsets), never as ordinary topics here.
        missing = [
            n
            for n in names or ()
            if self.metadata_cache.topic(n) is None and n not in INTERNAL_TOPICS
        ]
        # Before v4 there is no allow_auto_topic_creation field and clients expect it on.
        allowed = getattr(request.body, "allow_auto_topic_creation", True)
        if missing and allowed and self.config.broker.auto_create_topics_enable:
            errors = await self._auto_create(missing)
        request.respond(
            metadata_response(request, self.metadata_cache, self.cluster_id, names, errors)
        )

    async def _auto_create(self, names: list[str]) -> dict[str, ErrorCode]:
        """Create ``names`` with the default partitions and replication factor.

        Kafka's broker answers LEADER_NOT_AVAILABLE and lets the client ask again; this
        broker is its own controller and the creation commits in about one fsync, so it
        waits and answers with the new topics' metadata straight away.
        """
        request = CreateTopicsRequest(tuple(CreatableTopic(name) for name in dict.fromkeys(names)))
        try:
            response = await self.controller.submit(request)
        except ControllerError as exc:
            return dict.fromkeys(names, exc.error_code)
        assert isinstance(response, CreateTopicsResponse)
        return {
            r.name: ErrorCode.leader_not_available
            if r.error_code is ErrorCode.topic_already_exists
            else r.error_code
            for r in response.topics
            if r.error_code is not ErrorCode.none
        }
