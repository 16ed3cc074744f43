"""The consumer's trio shell: carries out what the Fetcher and the coordinator decide.

Tasks: the metadata loop (shared with the producer), the **fetch loop** (each leader's
Fetch in a task of its own, at most one per leader; ListOffsets for positions to reset)
and the **group loop** (FindCoordinator, JoinGroup, SyncGroup, heartbeats, OffsetFetch,
OffsetCommit). Group requests go on a connection of their own to the coordinator, as in
Kafka (whose client addresses the coordinator as node ``MAX_INT - id``): a JoinGroup
that the broker holds until the group has rejoined, or a Fetch it holds for
``fetch.max.wait.ms``, then delays nothing else.

The cores are shared with the application's thread, which takes records and runs the
rebalance callbacks in ``poll``; every call into them holds :attr:`ConsumerShell.lock`.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable

import attrs
import trio
from kio.schema.consumer_group_heartbeat.v1.response import (
    ConsumerGroupHeartbeatResponse,
)
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.fetch.v11.response import FetchResponse
from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse
from kio.schema.list_offsets.v5.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.list_offsets.v5.response import ListOffsetsResponse
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.offset_for_leader_epoch.v3.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.offset_for_leader_epoch.v3.response import OffsetForLeaderEpochResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from minikafka.common import TopicPartition
from minikafka.common.shell import Wakeup
from minikafka.coordination.member import (
    ConsumerCoordinator,
    ConsumerGroupHeartbeat,
    ConsumerProtocolMember,
    FindCoordinator,
    GroupRequest,
    LeaveGroup,
    OffsetCommit,
)
from minikafka.log import CorruptRecordError
from minikafka.net import ClientError, NetworkClient, Node

from ._config import ConsumerConfig
from ._fetcher import (
    FetchedPartition,
    Fetcher,
    FetcherResult,
    FetchPlan,
    ListOffsetsPlan,
    OffsetsForLeaderEpochPlan,
)
from ._group_answers import deliver_answer
from ._group_wire import (
    group_request_body,
    heartbeat_assignment,
    heartbeat_body,
    names_unknown_topic,
    request_timeout_of,
    topic_ids_from,
    topic_ids_request,
)
from ._least_loaded import LeastLoaded
from ._message import KafkaError
from ._metadata import ClientMetadata
from ._metadata_loop import MetadataRefresher

_logger = logging.getLogger(__name__)
CONSUMER_REPLICA_ID = -1
_MAX_NODE_ID = 2**31 - 1


def fetch_request(plan: FetchPlan, config: ConsumerConfig) -> FetchRequest:
    """Fetch v11 for ``plan``: a consumer's (replica id -1), no fetch session."""
    topics: dict[str, list[FetchPartition]] = {}
    epochs = plan.leader_epochs or (-1,) * len(plan.partitions)
    for (tp, offset, max_bytes), epoch in zip(plan.partitions, epochs, strict=True):
        topics.setdefault(tp.topic, []).append(
            FetchPartition(
                partition=i32(tp.partition),
                current_leader_epoch=i32(epoch),
                fetch_offset=i64(offset),
                log_start_offset=i64(-1),
                partition_max_bytes=i32(max_bytes),
            )
        )
    return FetchRequest(
        replica_id=BrokerId(CONSUMER_REPLICA_ID),
        max_wait=i32Timedelta.parse(
            datetime.timedelta(milliseconds=config.fetch_max_wait_ms)
        ),
        min_bytes=i32(config.fetch_min_bytes),
        max_bytes=i32(config.fetch_max_bytes),
        isolation_level=i8(1 if config.isolation_level == "read_committed" else 0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=tuple(
            FetchTopic(topic=TopicName(t), partitions=tuple(parts))
            for t, parts in topics.items()
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


@attrs.define(eq=False)
class ConsumerShell:
    fetcher: Fetcher
    coordinator: ConsumerCoordinator | ConsumerProtocolMember | None
    client: NetworkClient
    on_change: Callable[[], None]  # records, events or answers for the application
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    clock: Callable[[], float] = time.monotonic
    _wake_fetch: Wakeup = attrs.field(factory=Wakeup)
    _wake_group: Wakeup = attrs.field(factory=Wakeup)
    _refresher: MetadataRefresher | None = None
    _coordinator_node: Node | None = None
    _nursery: trio.Nursery | None = None
    # The group's requests on a client of their own, with request.timeout.ms: a Fetch
    # the broker holds for fetch.max.wait.ms delays none of them. A JoinGroup, answered
    # only when the whole group has rejoined, gets its own longer timeout
    # (:func:`request_timeout_of`). None: ``client``.
    group_client: NetworkClient | None = None
    # The Fetcher's errors (its results' replies), for the application's next poll.
    errors: list[KafkaError] = attrs.field(factory=list)
    # The consumer protocol names topics by id (learnt by Metadata v12).
    _topic_names: dict[uuid.UUID, str] = attrs.field(factory=dict)
    _fatal_reported: bool = False
    # Where FindCoordinator and the topic ids' Metadata go: any broker, the least
    # loaded (Kafka's AbstractCoordinator.lookupCoordinator asks leastLoadedNode).
    _any_broker: LeastLoaded = attrs.field(factory=LeastLoaded)

    @property
    def metadata(self) -> ClientMetadata:
        return self.fetcher.metadata

    @property
    def _require_stable(self) -> bool:
        """KIP-447: a read_committed consumer waits for offsets a transaction commits."""
        return self.fetcher.config.isolation_level == "read_committed"

    def wake(self) -> None:
        """Look again (trio thread): the application polled, sought, committed...

        Only the tasks that run and may have work: the group task when there is a
        group, the metadata task when a refresh is due (as the producer's shell does)."""
        self._wake_fetch.set()
        self._wake_others()

    def _wake_others(self) -> None:
        """:meth:`wake` but for the fetch loop: a fetch task that prepares its own next
        requests does the fetch loop's work itself."""
        if self.coordinator is not None:
            self._wake_group.set()
        if self._refresher is not None and self.metadata.update_due(self.clock()):
            self._refresher.wake()

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            config = self.fetcher.config
            self._refresher = MetadataRefresher(
                self.client,
                self.metadata,
                self.lock,
                self.clock,
                config.retry_backoff_ms,
                self._on_metadata,
                config.allow_auto_create_topics,
            )
            nursery.start_soon(self._refresher.run)
            nursery.start_soon(self._fetch_loop)
            if self.coordinator is not None:
                nursery.start_soon(self._group_loop)
            task_status.started()

    def _on_metadata(self) -> None:
        self._wake_fetch.set()
        self._wake_group.set()
        self.on_change()

    # --- fetching -----------------------------------------------------------------

    async def _fetch_loop(self) -> None:
        while True:
            self._send_ready()
            await self._wake_fetch.sleep_until(self.clock() + 1.0, self.clock)

    def _send_ready(
        self, keep: int | None = None
    ) -> tuple[FetchPlan, Node | None] | None:
        """Start a task for each request the Fetcher has ready, but for a Fetch to the
        leader ``keep``: that one is returned, for the caller's task to send itself."""
        assert self._nursery is not None
        with self.lock:
            result = (
                self.fetcher.prepare_validations()
                + self.fetcher.prepare()
                + self.fetcher.prepare_resets()
            )
            nodes = {m.node: self.metadata.node(m.node) for m in result.messages}
            self._hand_out(result)
        kept = None
        for request in result.messages:
            node = nodes[request.node]
            if isinstance(request, OffsetsForLeaderEpochPlan):
                self._nursery.start_soon(self._validate, request, node)
            elif isinstance(request, FetchPlan):
                if request.node == keep:
                    kept = request, node
                else:
                    self._nursery.start_soon(self._fetch, request, node)
            else:
                self._nursery.start_soon(self._list_offsets, request, node)
        return kept

    def _hand_out(self, result: FetcherResult) -> None:
        """Keep the result's errors for the application's poll (holding the lock)."""
        self.errors.extend(result.replies)

    async def _fetch(self, plan: FetchPlan, node: Node | None) -> None:
        """A leader's Fetch, and the next one as soon as its answer is handled, from
        this same task. Going through the fetch loop would cost two rounds of trio's
        scheduler (the loop's turn, then a new task's) before the next Fetch is written,
        and the broker can hand a new record only to a Fetch it holds: a record arriving
        meanwhile waits for it (bench/README.md, "Where the client's latency goes")."""
        fetch: tuple[FetchPlan, Node | None] | None = plan, node
        while fetch is not None:
            await self._fetch_once(*fetch)
            fetch = self._send_ready(keep=plan.node)
        self.wake()

    async def _fetch_once(self, plan: FetchPlan, node: Node | None) -> None:
        response = None
        if node is not None:
            try:
                response = await self.client.send(
                    node, fetch_request(plan, self.fetcher.config)
                )
            except ClientError as exc:
                _logger.info("Fetch from node %s failed: %s", plan.node, exc)
        results: dict[TopicPartition, FetchedPartition] = {}
        if isinstance(response, FetchResponse):
            offsets = {tp: offset for tp, offset, _ in plan.partitions}
            for t in response.responses:
                for p in t.partitions:
                    tp = TopicPartition(str(t.topic), int(p.partition_index))
                    fetched = FetchedPartition(
                        int(p.error_code),
                        int(p.high_watermark),
                        int(p.last_stable_offset),
                        None if p.records is None else bytes(p.records),
                        tuple(
                            (int(a.producer_id), int(a.first_offset))
                            for a in p.aborted_transactions or ()
                        ),
                    )
                    if fetched.error == ErrorCode.none and tp in offsets:
                        # Read the records here, not holding the lock poll() needs.
                        # the core reports it
                        with contextlib.suppress(CorruptRecordError):
                            decoded = self.fetcher.decode(fetched, offsets[tp])
                            fetched = attrs.evolve(fetched, decoded=decoded)
                    results[tp] = fetched
        with self.lock:
            if isinstance(response, FetchResponse):
                self._hand_out(self.fetcher.on_response(plan, results))
            else:
                self.fetcher.on_failure(plan)
        if response is None:
            await trio.sleep(self.fetcher.config.retry_backoff_ms / 1000)
        self.on_change()
        self._wake_others()

    async def _validate(
        self, plan: OffsetsForLeaderEpochPlan, node: Node | None
    ) -> None:
        """KIP-320: ask the new leader where each position's epoch ends in its log."""
        node_id = plan.node
        epochs = {tp: (current, epoch) for tp, current, epoch in plan.partitions}
        request = OffsetForLeaderEpochRequest(
            replica_id=BrokerId(CONSUMER_REPLICA_ID),
            topics=tuple(
                OffsetForLeaderTopic(
                    topic=TopicName(topic),
                    partitions=tuple(
                        OffsetForLeaderPartition(
                            partition=i32(tp.partition),
                            current_leader_epoch=i32(current),
                            leader_epoch=i32(epoch),
                        )
                        for tp, (current, epoch) in epochs.items()
                        if tp.topic == topic
                    ),
                )
                for topic in sorted({tp.topic for tp in epochs})
            ),
        )
        response = None
        answers: dict[TopicPartition, tuple[int, int, int]] = {}
        if node is not None:
            try:
                response = await self.client.send(node, request)
            except ClientError as exc:
                _logger.info(
                    "OffsetsForLeaderEpoch to node %s failed: %s", node_id, exc
                )
        with self.lock:
            if isinstance(response, OffsetForLeaderEpochResponse):
                answers = {
                    TopicPartition(str(t.topic), int(p.partition)): (
                        int(p.error_code),
                        int(p.leader_epoch),
                        int(p.end_offset),
                    )
                    for t in response.topics
                    for p in t.partitions
                }
                self._hand_out(self.fetcher.on_validation(node_id, answers))
            else:
                self.fetcher.on_validation_failed(node_id)
        retry = response is None or any(error for error, _, _ in answers.values())
        if retry:  # asked again once the metadata is fresh, not in a spin
            await trio.sleep(self.fetcher.config.retry_backoff_ms / 1000)
        self.on_change()
        self.wake()

    async def _list_offsets(self, plan: ListOffsetsPlan, node: Node | None) -> None:
        node_id = plan.node
        offsets = dict(plan.partitions)
        request = ListOffsetsRequest(
            replica_id=BrokerId(CONSUMER_REPLICA_ID),
            isolation_level=i8(
                1 if self.fetcher.config.isolation_level == "read_committed" else 0
            ),
            topics=tuple(
                ListOffsetsTopic(
                    name=TopicName(topic),
                    partitions=tuple(
                        ListOffsetsPartition(
                            partition_index=i32(tp.partition),
                            current_leader_epoch=i32(-1),
                            timestamp=i64(timestamp),
                        )
                        for tp, timestamp in offsets.items()
                        if tp.topic == topic
                    ),
                )
                for topic in sorted({tp.topic for tp in offsets})
            ),
        )
        response = None
        if node is not None:
            try:
                response = await self.client.send(node, request)
            except ClientError as exc:
                _logger.info("ListOffsets from node %s failed: %s", node_id, exc)
        with self.lock:
            if isinstance(response, ListOffsetsResponse):
                answers = {
                    TopicPartition(str(t.name), int(p.partition_index)): (
                        int(p.error_code),
                        int(p.offset),
                    )
                    for t in response.topics
                    for p in t.partitions
                }
                self._hand_out(self.fetcher.on_reset(node_id, answers))
            else:
                self.fetcher.on_reset_failed(node_id)
        if response is None:
            await trio.sleep(self.fetcher.config.retry_backoff_ms / 1000)
        self.wake()

    # --- the group ----------------------------------------------------------------

    async def _group_loop(self) -> None:
        assert self._nursery is not None
        assert self.coordinator is not None
        while True:
            with self.lock:
                now = self.clock()
                requests = self.coordinator.on_timer(now).messages
                deadline = self.coordinator.next_deadline()
                node = self._coordinator_node
                finding = any(isinstance(r, FindCoordinator) for r in requests)
                any_broker = (
                    self._any_broker.choose(
                        self.metadata.known_nodes(), self.client.load, now
                    )
                    if finding
                    else None
                )
            if requests or self.coordinator.events:
                self.on_change()
            for request in requests:
                target = any_broker if isinstance(request, FindCoordinator) else node
                self._nursery.start_soon(self._group_request, request, target)
            # At least every second: a member also acts on what it is not told of by a
            # call (max.poll.interval.ms running out while the application is away).
            wake_by = now + 1.0 if deadline is None else min(deadline, now + 1.0)
            await self._wake_group.sleep_until(max(wake_by, now + 0.01), self.clock)

    async def _group_request(self, request: GroupRequest, node: Node | None) -> None:
        assert self.coordinator is not None
        coordinator = self.coordinator
        try:
            if node is None:
                raise ClientError("no coordinator")
            if not isinstance(request, ConsumerGroupHeartbeat):
                body = group_request_body(request, self._require_stable)
            else:
                ids = {name: i for i, name in self._topic_names.items()}
                if request.owned and any(tp.topic not in ids for tp in request.owned):
                    await self._learn_topic_ids({tp.topic for tp in request.owned})
                    ids = {name: i for i, name in self._topic_names.items()}
                body = heartbeat_body(request, ids)
            # FindCoordinator goes to any broker, the rest on the coordinator's own
            # connection, in order; a JoinGroup alone may wait a whole rebalance.
            client = (
                self.client
                if isinstance(request, FindCoordinator)
                else self.group_client or self.client
            )
            timeout = request_timeout_of(
                request, self.fetcher.config.request_timeout_ms
            )
            response = await client.send(node, body, request_timeout=timeout)
            if isinstance(
                response, ConsumerGroupHeartbeatResponse
            ) and names_unknown_topic(response, self._topic_names):
                await self._learn_topic_ids()
        except ClientError as exc:
            _logger.info("%s failed: %s", type(request).__name__, exc)
            with self.lock:
                now = self.clock()
                if isinstance(request, FindCoordinator):
                    coordinator.on_find_coordinator(-1, -1, now)
                elif isinstance(request, OffsetCommit):
                    coordinator.on_commit(
                        request.commit_id, [ErrorCode.request_timed_out], now
                    )
                    coordinator.coordinator_unknown(now)
                elif not isinstance(request, LeaveGroup):
                    coordinator.coordinator_unknown(now)
            self.on_change()
            self.wake()
            return
        with self.lock:
            follow_up = self._decode(request, response, self.clock())
        if follow_up is not None:
            await self._group_request(follow_up, node)
            return
        self.on_change()
        self.wake()

    def _decode(
        self, request: GroupRequest, response: object, now: float
    ) -> GroupRequest | None:
        """Hand an answer to the coordinator (the classic protocol's through
        :func:`deliver_answer`); a request that must follow on the same connection at
        once (the SyncGroup after a JoinGroup)."""
        coordinator = self.coordinator
        assert coordinator is not None
        if isinstance(response, FindCoordinatorResponse):
            error = int(response.error_code)
            if error == ErrorCode.none:
                node_id = int(response.node_id)
                self._coordinator_node = Node(
                    _MAX_NODE_ID - node_id, response.host, int(response.port)
                )
                self.metadata.nodes.setdefault(
                    node_id, Node(node_id, response.host, int(response.port))
                )
            coordinator.on_find_coordinator(error, int(response.node_id), now)
        elif isinstance(response, ConsumerGroupHeartbeatResponse):
            assert isinstance(coordinator, ConsumerProtocolMember)
            assignment = heartbeat_assignment(response, self._topic_names)
            unresolved = names_unknown_topic(response, self._topic_names)
            coordinator.on_heartbeat_response(
                int(response.error_code),
                response.member_id,
                int(response.member_epoch),
                int(response.heartbeat_interval.total_seconds() * 1000),
                assignment,
                now,
                response.error_message,
            )
            if unresolved:
                coordinator.assignment_unresolved()
            for tp in assignment or ():  # a pattern's topics: the Fetcher needs leaders
                self.metadata.want(tp.topic)
            if coordinator.fatal is not None and not self._fatal_reported:
                # Kafka's consumer raises this from poll: the member will not go on.
                self._fatal_reported = True
                self.errors.append(KafkaError(*coordinator.fatal, fatal=True))
        else:
            return deliver_answer(coordinator, request, response, now)
        return None

    async def _learn_topic_ids(self, topics: Iterable[str] | None = None) -> None:
        """Topic ids for ``topics``, or the subscription's (every topic's with a
        pattern, which any may match); Metadata v12 to any broker."""
        subscribed = self.fetcher.subscriptions
        if topics is None and subscribed.pattern is None:
            topics = subscribed.subscription
        request = topic_ids_request(topics)
        with self.lock:
            node = self._any_broker.choose(
                self.metadata.known_nodes(), self.client.load, self.clock()
            )
        response = await self.client.send(node, request)
        if isinstance(response, MetadataResponse):
            self._topic_names.update(topic_ids_from(response))

    async def leave_group(self) -> None:
        """LeaveGroup now (on close), if the coordinator says there is one to send."""
        if self.coordinator is None:
            return
        with self.lock:
            requests = self.coordinator.leave().messages
            node = self._coordinator_node
        for request in requests:
            if node is None:
                break
            try:
                with trio.move_on_after(5):
                    await (self.group_client or self.client).send(
                        node, group_request_body(request, self._require_stable)
                    )
            except ClientError as exc:
                _logger.info("LeaveGroup failed: %s", exc)
