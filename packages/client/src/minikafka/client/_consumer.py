"""``Consumer``: the synchronous API, shaped like confluent-kafka's.

A background thread runs the trio shell (fetching, the group protocol, heartbeats);
the application's thread calls :meth:`Consumer.poll` or :meth:`Consumer.consume`, which
hand out records the Fetcher has buffered and run the rebalance callbacks
(``on_assign``, ``on_revoke``, ``on_lost``) right there, as confluent-kafka does: a
revocation's callback runs before the member rejoins, so it can still commit what it
processed. Positions move as records are handed out; ``commit`` commits them (or the
offsets given), ``asynchronous=False`` waiting for the answer. Auto-commit
(``enable.auto.commit``, on by default with a ``group.id``) commits the positions every
``auto.commit.interval.ms``, and before an eager revocation.

``subscribe`` takes topic names and, as confluent-kafka does, regular expressions:
names that start with ``^`` (``consumer.subscribe(["^orders-.*"])``; see
:func:`subscribe_cores`).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition as TP
from minikafka.coordination.member import (
    EARLIEST,
    LATEST,
    ConsumerCoordinator,
    ConsumerProtocolMember,
    InvalidPattern,
    RebalanceEvent,
    SubscriptionState,
)
from minikafka.log import Record
from minikafka.net import NetworkClient

from ._config import ConsumerConfig
from ._consumer_shell import ConsumerShell
from ._fetcher import Fetcher
from ._message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMED_OUT,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from ._metadata import ClientMetadata, bootstrap_nodes
from ._txn_plans import ConsumerGroupMetadata

RebalanceCallback = Callable[[Any, list[TopicPartition]], None]


class Consumer:
    """A Kafka consumer: ``Consumer({"bootstrap.servers": ..., "group.id": ...})``."""

    def __init__(self, config: Mapping[str, object]) -> None:
        self.config = ConsumerConfig.from_dict(config)
        self._fetcher, self._coordinator = consumer_cores(self.config)
        self._metadata, self._subscriptions = (
            self._fetcher.metadata,
            self._fetcher.subscriptions,
        )
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._callbacks: dict[str, RebalanceCallback | None] = {}
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.CancelScope | None = None
        self._closed = False
        started = threading.Event()
        self._thread = threading.Thread(
            target=lambda: trio.run(self._main, started),
            name="minikafka-consumer",
            daemon=True,
        )
        self._thread.start()
        started.wait()

    async def _main(self, started: threading.Event) -> None:
        async with consumer_network(self.config) as (client, group_client):
            self._shell = ConsumerShell(
                self._fetcher,
                self._coordinator,
                client,
                self._notify,
                lock=self._lock,
                group_client=group_client,
            )
            with trio.CancelScope() as self._stop:
                self._token = trio.lowlevel.current_trio_token()
                async with trio.open_nursery() as nursery:
                    await nursery.start(self._shell.run)
                    started.set()
            with trio.CancelScope(shield=True):
                await self._shell.leave_group()
            client.close()

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _wake(self) -> None:
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._shell.wake)

    # --- subscribing and assigning ------------------------------------------------

    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
    ) -> None:
        """Subscribe to ``topics``: names, and regular expressions starting with
        ``^`` (KafkaException INVALID_REGULAR_EXPRESSION for one the broker refuses)."""
        with self._lock:
            subscribe_cores(self._fetcher, self._coordinator, topics)
            self._callbacks = {
                "assign": on_assign,
                "revoke": on_revoke,
                "lost": on_lost,
            }
        self._wake()

    def unsubscribe(self) -> None:
        with self._lock:
            self._subscriptions.unsubscribe()
            self._metadata.ask_all_topics(False)
            self._fetcher.clear_buffer()
        self._wake()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read these partitions, from each one's offset (or the committed one, or by
        ``auto.offset.reset``), outside any group rebalance."""
        wanted = list(partitions)
        with self._lock:
            self._subscriptions.assign_manually(
                TP(p.topic, p.partition) for p in wanted
            )
            for p in wanted:
                self._metadata.want(p.topic)
                self._position_from(p)
        self._wake()

    def _position_from(self, p: TopicPartition) -> None:
        position_from(self._subscriptions, self._coordinator is not None, p)

    def assignment(self) -> list[TopicPartition]:
        with self._lock:
            return [
                TopicPartition(tp.topic, tp.partition)
                for tp in self._subscriptions.assignment
            ]

    def incremental_assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Add partitions to the assignment (what an ``on_assign`` of a cooperative
        consumer may call; this consumer has already added them)."""
        with self._lock:
            for p in partitions:
                self._subscriptions.add([TP(p.topic, p.partition)])
                self._position_from(p)
        self._wake()

    def incremental_unassign(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._subscriptions.remove(TP(p.topic, p.partition) for p in partitions)
        self._wake()

    # --- reading ------------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> Message | None:
        """One record (or an error as a Message whose ``error()`` is set), or None after
        ``timeout`` seconds (None or -1: wait without limit)."""
        messages = self.consume(1, -1 if timeout is None else timeout)
        return messages[0] if messages else None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """Up to ``num_messages`` records (at most ``max.poll.records``)."""
        if self._closed:
            raise RuntimeError("the consumer is closed")
        deadline = (
            None if timeout is None or timeout < 0 else time.monotonic() + timeout
        )
        limit = min(num_messages, self.config.max_poll_records)
        while True:
            if self._coordinator is not None:
                with self._lock:
                    self._coordinator.app_polled(time.monotonic())
            self._run_callbacks()
            with self._changed:
                errors, self._shell.errors = self._shell.errors, []
                refused = self._metadata.authentication_error
                if refused is not None and not errors:
                    errors = [KafkaError(*refused)]  # Kafka's AuthenticationException
                records = self._fetcher.take(limit) if not errors else []
            if records or errors:
                self._wake()  # positions moved: the Fetcher may fetch those partitions again
                if errors:
                    return [_error_message(e) for e in errors]
                return messages(records)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return []
            with self._changed:
                if (
                    not self._fetcher.has_buffered()
                    and not self._shell.errors
                    and not (self._coordinator and self._coordinator.events)
                ):
                    self._changed.wait(0.1 if left is None else min(left, 0.1))

    def _run_callbacks(self) -> None:
        if self._coordinator is None:
            return
        with self._lock:
            events: list[RebalanceEvent] = self._coordinator.events
            self._coordinator.events = []
        if not events:
            return
        for event in events:
            callback = self._callbacks.get(event.kind)
            if event.kind == "lost" and callback is None:
                callback = self._callbacks.get("revoke")  # confluent-kafka's fallback
            partitions = [
                TopicPartition(tp.topic, tp.partition) for tp in event.partitions
            ]
            if callback is not None:
                callback(self, partitions)
        with self._lock:
            self._coordinator.events_done()
        self._wake()

    # --- positions and commits ----------------------------------------------------

    def position(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        with self._lock:
            return [
                TopicPartition(
                    p.topic,
                    p.partition,
                    _or_invalid(
                        self._subscriptions.assignment.get(TP(p.topic, p.partition))
                    ),
                )
                for p in partitions
            ]

    def seek(self, partition: TopicPartition) -> None:
        with self._lock:
            self._position_from(partition)
            if partition.offset in (OFFSET_STORED, OFFSET_INVALID):
                self._subscriptions.request_reset(
                    TP(partition.topic, partition.partition)
                )
        self._wake()

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._subscriptions.pause(
                (TP(p.topic, p.partition) for p in partitions), True
            )

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._subscriptions.pause(
                (TP(p.topic, p.partition) for p in partitions), False
            )
        self._wake()

    def commit(
        self,
        message: Message | None = None,
        offsets: Iterable[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[TopicPartition] | None:
        """Commit ``message``'s offset + 1, or ``offsets``, or every position; with
        ``asynchronous=False`` wait for the answer and raise KafkaException on an error."""
        if self._coordinator is None:
            raise KafkaException(
                KafkaError(ErrorCode.invalid_group_id, "commit() needs a group.id")
            )
        with self._lock:
            if message is not None:
                wanted = {
                    TP(message.topic(), message.partition()): message.offset() + 1
                }
            elif offsets is not None:
                wanted = {TP(p.topic, p.partition): p.offset for p in offsets}
            else:
                wanted = self._subscriptions.positions()
            request = self._coordinator.commit(wanted, time.monotonic())
        if request is None:
            if asynchronous:
                return None
            raise KafkaException(KafkaError(ErrorCode.none, "nothing to commit"))
        self._wake()
        if asynchronous:
            return None
        with self._changed:
            self._changed.wait_for(
                lambda: (
                    request.commit_id in self._coordinator.commit_results  # type: ignore[union-attr]
                    or self._closed
                ),
                self.config.request_timeout_ms / 1000,
            )
            code = self._coordinator.commit_results.pop(request.commit_id, TIMED_OUT)
        if code != ErrorCode.none:
            raise KafkaException(KafkaError(code))
        return [
            TopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in wanted.items()
        ]

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """The member's group, generation, member id and group instance id: what a
        transactional producer's ``send_offsets_to_transaction`` needs (KIP-447)."""
        with self._lock:
            return group_metadata(self._coordinator, self.config)

    # --- closing ------------------------------------------------------------------

    def close(self) -> None:
        """Commit the positions (with auto-commit), leave the group and stop."""
        if self._closed:
            return
        if self._coordinator is not None and self.config.enable_auto_commit:
            # Nothing to commit, or no longer a member: nothing to keep.
            with contextlib.suppress(KafkaException):
                self.commit(asynchronous=False)
        self._closed = True
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._stop.cancel)
        self._thread.join(15)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.asynccontextmanager
async def consumer_network(
    config: ConsumerConfig,
) -> AsyncIterator[tuple[NetworkClient, NetworkClient]]:
    """A consumer's two NetworkClients: one for fetches and offsets, whose requests may be
    held ``fetch.max.wait.ms`` by the broker on top of ``request.timeout.ms``, and one for
    the group's requests, with ``request.timeout.ms`` (a JoinGroup alone waits longer,
    :func:`._group_wire.request_timeout_of`), so a coordinator that stops answering is
    noticed after ``request.timeout.ms`` and no Fetch delays a heartbeat."""
    async with (
        NetworkClient.open(
            client_id=config.client_id,
            request_timeout=(config.request_timeout_ms + config.fetch_max_wait_ms)
            / 1000,
            security=config.security,
        ) as client,
        NetworkClient.open(
            client_id=config.client_id,
            request_timeout=config.request_timeout_ms / 1000,
            security=config.security,
        ) as group_client,
    ):
        yield client, group_client


def consumer_cores(
    config: ConsumerConfig,
) -> tuple[Fetcher, ConsumerCoordinator | ConsumerProtocolMember | None]:
    """The Fetcher (with the metadata and subscriptions) and, with a ``group.id``, the
    coordinator a consumer's API drives, the synchronous one or the async one."""
    nodes = bootstrap_nodes(config.bootstrap_servers)
    metadata = ClientMetadata(
        nodes,
        config.metadata_max_age_ms,
        exclude_internal=config.exclude_internal_topics,
    )
    subscriptions = SubscriptionState(config.auto_offset_reset)
    coordinator: ConsumerCoordinator | ConsumerProtocolMember | None = None
    if config.group_id is not None and config.group_protocol == "consumer":
        coordinator = ConsumerProtocolMember(
            config,
            subscriptions,
            config.group_id,
            member_id=str(uuid.uuid4()),  # KIP-1082: the member names itself
            rebalance_timeout_ms=config.max_poll_interval_ms,
            server_assignor=config.group_remote_assignor,
        )
    elif config.group_id is not None:
        coordinator = ConsumerCoordinator(
            config, subscriptions, metadata, config.group_id
        )
    return Fetcher(config, subscriptions, metadata), coordinator


def subscribe_cores(
    fetcher: Fetcher,
    coordinator: ConsumerCoordinator | ConsumerProtocolMember | None,
    topics: Sequence[str],
) -> None:
    """``subscribe`` for both APIs: names, and the ``^`` entries as one regular
    expression (``minikafka.coordination.member``'s ``_pattern.py``), read as the broker
    reads ``SubscribedTopicRegex``. Under the classic protocol the member matches it
    against every topic the metadata lists (all asked for from now on); under the
    consumer protocol the coordinator resolves it. An expression the broker would
    refuse is refused here, KafkaException INVALID_REGULAR_EXPRESSION with the
    broker's words, and the subscription is left as it was."""
    if coordinator is None:
        raise KafkaException(
            KafkaError(ErrorCode.invalid_group_id, "subscribe() needs a group.id")
        )
    try:
        fetcher.subscriptions.subscribe(topics)
    except InvalidPattern as e:
        raise KafkaException(
            KafkaError(ErrorCode.invalid_regular_expression, e.message)
        ) from None
    metadata, subscriptions = fetcher.metadata, fetcher.subscriptions
    classic = isinstance(coordinator, ConsumerCoordinator)
    metadata.ask_all_topics(classic and subscriptions.pattern is not None)
    for topic in subscriptions.named:
        metadata.want(topic)
    coordinator.request_rejoin()


def group_metadata(
    coordinator: ConsumerCoordinator | ConsumerProtocolMember | None,
    config: ConsumerConfig,
) -> ConsumerGroupMetadata:
    """The member's part in its group as a transactional producer sends it (KIP-447)."""
    if coordinator is None:
        raise KafkaException(
            KafkaError(ErrorCode.invalid_group_id, "the consumer has no group.id")
        )
    return ConsumerGroupMetadata(
        coordinator.group_id,
        coordinator.generation_id,
        coordinator.member_id,
        config.group_instance_id,
    )


def position_from(
    subscriptions: SubscriptionState, in_group: bool, p: TopicPartition
) -> None:
    """Where an assigned partition starts: its offset, the log's start or end, or (with
    no offset) the group's committed one, or ``auto.offset.reset`` without a group."""
    tp = TP(p.topic, p.partition)
    if p.offset == OFFSET_BEGINNING:
        subscriptions.seek(tp, EARLIEST)
    elif p.offset == OFFSET_END:
        subscriptions.seek(tp, LATEST)
    elif p.offset >= 0:
        subscriptions.seek(tp, p.offset)
    elif not in_group and p.offset in (OFFSET_STORED, OFFSET_INVALID):
        subscriptions.request_reset(tp)  # no group: nothing stored to start from


def messages(runs: list[tuple[TP, list[Record]]]) -> list[Message]:
    """The Fetcher's runs of records as the API's messages."""
    return [Message(tp.topic, tp.partition, r) for tp, run in runs for r in run]


def _or_invalid(state: Any) -> int:
    return (
        OFFSET_INVALID
        if state is None or state.position is None
        else int(state.position)
    )


def _error_message(error: KafkaError) -> Message:
    return Message("", -1, Record(-1, -1, None, None), error)
