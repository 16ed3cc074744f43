"""The async API for trio programs: the same cores and shells, in the caller's nursery.

``Producer`` and ``Consumer`` run their trio shell on a thread of their own so that
ordinary Python code can call them. A trio program needs no thread: ``AsyncProducer``
and ``AsyncConsumer`` start the shell in a nursery of the caller's and await what the
synchronous API blocks on::

    async with AsyncProducer.open({"bootstrap.servers": "127.0.0.1:9092"}) as producer:
        message = await producer.send("greetings", b"hello")   # acknowledged
        print(message.partition(), message.offset())

    async with AsyncConsumer.open({"bootstrap.servers": ..., "group.id": "g"}) as consumer:
        consumer.subscribe(["greetings"])
        with trio.move_on_after(1.0):
            for message in await consumer.getmany():
                ...
        await consumer.commit()

Everything happens on trio's one thread, so the lock the cores are called under is
never contended.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager

import attrs
import trio
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition as TP
from minikafka.net import NetworkClient
from minikafka.trace import Tracer

from ._accumulator import BufferFull
from ._async_txn import AsyncProducerTransactions
from ._config import ConsumerConfig, DeliveryCallback, ProducerConfig
from ._consumer import (
    consumer_cores,
    consumer_network,
    group_metadata,
    messages,
    position_from,
    subscribe_cores,
)
from ._consumer_shell import ConsumerShell
from ._message import (
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from ._metadata import ClientMetadata, TopicInfo
from ._producer import HeadersArg, choose_partition, new_record, producer_cores
from ._sender import Delivery
from ._shell import PRODUCER_CLOCK, ProducerShell
from ._txn_plans import ConsumerGroupMetadata


@attrs.define(eq=False)
class _Waiter:
    """One ``send``'s delivery report, when it comes."""

    done: trio.Event = attrs.field(factory=trio.Event)
    message: Message | None = None


class AsyncProducer(AsyncProducerTransactions):
    """The producer for trio programs: ``async with AsyncProducer.open(config) as p``;
    with a ``transactional.id``, the transactional calls of ``_async_txn``."""

    def __init__(
        self,
        config: Mapping[str, object],
        seed: int | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.config = ProducerConfig.from_dict(config)
        # The tracer as the synchronous Producer's (see its module docstring).
        self._sender, self._partitioner = producer_cores(self.config, seed, tracer)
        self._topic_partitions: dict[tuple[str, int], TP] = {}
        self._changed = trio.Event()  # metadata arrived or bytes were freed
        self._outstanding = 0
        self._idle = trio.Event()
        self._idle.set()
        self._shell: ProducerShell | None = None
        self._init_transactions_state()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        config: Mapping[str, object],
        seed: int | None = None,
        tracer: Tracer | None = None,
    ) -> AsyncIterator[AsyncProducer]:
        producer = cls(config, seed, tracer)
        c = producer.config
        async with (
            NetworkClient.open(
                client_id=c.client_id,
                max_in_flight=c.max_in_flight,
                request_timeout=c.request_timeout_ms / 1000,
                security=c.security,
            ) as client,
            trio.open_nursery() as nursery,
        ):
            producer._shell = ProducerShell(
                producer._sender,
                client,
                producer._deliver,
                on_metadata=producer._signal,
                on_transaction=producer._transaction_done,
                lock=threading.Lock(),
            )
            await nursery.start(producer._shell.run)
            try:
                yield producer
                await producer.flush()
            finally:
                nursery.cancel_scope.cancel()

    def _signal(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _deliver(self, deliveries: list[Delivery]) -> None:
        for d in deliveries:
            tp = d.batch.topic_partition
            for i, record in enumerate(d.batch.records):
                message = Message(tp.topic, tp.partition, d.record(i), d.error)
                handle = record.handle
                if isinstance(handle, _Waiter):
                    handle.message = message
                    handle.done.set()
                elif callable(handle):
                    handle(message.error(), message)
                self._outstanding -= 1
        if self._outstanding == 0:
            self._idle.set()
        self._signal()

    async def send(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int = -1,
        timestamp: int = 0,
        headers: HeadersArg = None,
    ) -> Message:
        """Produce one record and wait for its acknowledgement; the delivered message,
        or KafkaException with the error its delivery report carried."""
        waiter = _Waiter()
        await self.produce(topic, value, key, partition, timestamp, headers, waiter)
        await waiter.done.wait()
        assert waiter.message is not None
        if waiter.message.error() is not None:
            raise KafkaException(waiter.message.error())  # type: ignore[arg-type]
        return waiter.message

    async def produce(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int = -1,
        timestamp: int = 0,
        headers: HeadersArg = None,
        on_delivery: DeliveryCallback | _Waiter | None = None,
    ) -> None:
        """Queue one record (waiting, up to ``max.block.ms``, only for the topic's
        metadata and for buffer room); :meth:`flush` waits for every report.

        ``on_delivery(err, msg)`` is called with the record's delivery report, on trio's
        thread, as confluent-kafka calls it from ``poll``."""
        assert self._shell is not None, "use `async with AsyncProducer.open(...)`"
        record = new_record(
            self.config, topic, value, key, timestamp, headers, on_delivery
        )
        with trio.fail_after(self.config.max_block_ms / 1000) as scope:
            info = await self._topic(topic)
            tp = choose_partition(
                self._partitioner, self._topic_partitions, info, record, partition
            )
            if self._sender.transactions is not None:
                self._sender.transactions.maybe_add_partition(tp)
            while True:
                try:
                    self._sender.accumulator.append(tp, record, PRODUCER_CLOCK())
                    break
                except BufferFull:
                    self._sender.accumulator.wait_for_room(True)
                    self._shell.wake()
                    try:
                        await self._changed.wait()
                    finally:
                        self._sender.accumulator.wait_for_room(False)
        del scope
        self._partitioner.on_append(
            topic, tp.partition, record.size, len(info.leaders), info.available
        )
        self._outstanding += 1
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        self._shell.wake()

    async def _topic(self, topic: str) -> TopicInfo:
        assert self._shell is not None
        return await _topic_info(
            self._sender.metadata, topic, self._shell.wake, lambda: self._changed
        )

    async def flush(self) -> None:
        """Send everything queued now and wait until every record has its report."""
        assert self._shell is not None
        accumulator = self._sender.accumulator
        accumulator.begin_flush()
        try:
            self._shell.wake()
            await self._idle.wait()
        finally:
            accumulator.end_flush()


async def _topic_info(
    metadata: ClientMetadata,
    topic: str,
    wake: Callable[[], None],
    changed: Callable[[], trio.Event],
) -> TopicInfo:
    """The topic's partitions once the metadata has them (asking for it if new);
    KafkaException with the topic's error, UNKNOWN_TOPIC_OR_PARTITION for a missing one."""
    if metadata.want(topic):
        wake()
    while (info := metadata.partitions(topic)) is None:
        known = metadata.topics.get(topic)
        if known is not None and known.error not in (0, ErrorCode.leader_not_available):
            raise KafkaException(KafkaError(known.error, f"topic {topic}"))
        await changed().wait()  # a new Event after each signal: asked each time round
    return info


class AsyncConsumer:
    """The consumer for trio programs: ``async with AsyncConsumer.open(config) as c``.

    Rebalance callbacks are plain functions called from :meth:`getmany`, as the
    synchronous consumer calls them from ``poll``."""

    def __init__(self, config: Mapping[str, object]) -> None:
        self.config = ConsumerConfig.from_dict(config)
        self._fetcher, self._coordinator = consumer_cores(self.config)
        self._metadata, self._subscriptions = (
            self._fetcher.metadata,
            self._fetcher.subscriptions,
        )
        self._changed = trio.Event()
        self._shell: ConsumerShell | None = None
        self._callbacks: dict[str, object] = {}

    @classmethod
    @asynccontextmanager
    async def open(cls, config: Mapping[str, object]) -> AsyncIterator[AsyncConsumer]:
        consumer = cls(config)
        c = consumer.config
        async with (
            consumer_network(c) as (client, group_client),
            trio.open_nursery() as nursery,
        ):
            consumer._shell = ConsumerShell(
                consumer._fetcher,
                consumer._coordinator,
                client,
                consumer._signal,
                lock=threading.Lock(),
                group_client=group_client,
            )
            await nursery.start(consumer._shell.run)
            try:
                yield consumer
                if consumer._coordinator is not None and c.enable_auto_commit:
                    await consumer.commit()
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(5):
                    await consumer._shell.leave_group()
                nursery.cancel_scope.cancel()

    def _signal(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: object = None,
        on_revoke: object = None,
        on_lost: object = None,
    ) -> None:
        """Names, and regular expressions starting with ``^``, as ``Consumer``'s."""
        subscribe_cores(self._fetcher, self._coordinator, topics)
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        self._wake()

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._subscriptions.assign_manually(
            TP(p.topic, p.partition) for p in partitions
        )
        for p in partitions:
            self._metadata.want(p.topic)
            position_from(self._subscriptions, self._coordinator is not None, p)
        self._wake()

    def _wake(self) -> None:
        if self._shell is not None:
            self._shell.wake()

    async def getmany(self, max_records: int | None = None) -> list[Message]:
        """Up to ``max_records`` (``max.poll.records``) records, waiting for the first
        (bound the wait the trio way: ``with trio.move_on_after(1): ...``); raises
        KafkaException for a fetch error."""
        limit = min(
            max_records or self.config.max_poll_records, self.config.max_poll_records
        )
        while True:
            if self._coordinator is not None:
                self._coordinator.app_polled(time.monotonic())
                self._run_callbacks()
            if self._shell is not None and self._shell.errors:
                raise KafkaException(self._shell.errors.pop(0))
            runs = self._fetcher.take(limit)
            if runs:
                self._wake()
                return messages(runs)
            # the coordinator's callbacks, if nothing else
            with trio.move_on_after(0.1):
                await self._changed.wait()

    def _run_callbacks(self) -> None:
        assert self._coordinator is not None
        events, self._coordinator.events = self._coordinator.events, []
        if not events:
            return
        for event in events:
            callback = self._callbacks.get(event.kind) or (
                self._callbacks.get("revoke") if event.kind == "lost" else None
            )
            if callable(callback):
                callback(
                    self,
                    [TopicPartition(tp.topic, tp.partition) for tp in event.partitions],
                )
        self._coordinator.events_done()
        self._wake()

    def assignment(self) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition)
            for tp in self._subscriptions.assignment
        ]

    async def position(
        self, partitions: Sequence[TopicPartition]
    ) -> list[TopicPartition]:
        """Each assigned partition's position, waiting until the consumer knows it, as
        KafkaConsumer.position does (a reset or a committed offset looked up first)."""
        tps = [TP(p.topic, p.partition) for p in partitions]
        while None in (known := [self._subscriptions.position(tp) for tp in tps]):
            self._wake()
            with trio.move_on_after(0.1):  # a position can arrive without a signal
                await self._changed.wait()
        return [
            TopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in zip(tps, known, strict=True)
            if offset is not None
        ]

    async def partitions_for(self, topic: str) -> list[TopicPartition]:
        """The topic's partitions (KafkaConsumer.partitionsFor), from the metadata;
        KafkaException UNKNOWN_TOPIC_OR_PARTITION if it does not exist (and
        ``allow.auto.create.topics`` is false, or the broker does not create it)."""
        info = await _topic_info(
            self._metadata, topic, self._wake, lambda: self._changed
        )
        return [TopicPartition(topic, p) for p in range(len(info.leaders))]

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """What a transactional producer's ``send_offsets_to_transaction`` needs."""
        return group_metadata(self._coordinator, self.config)

    async def commit(self) -> None:
        """Commit every position and wait for the answer."""
        if self._coordinator is None:
            raise KafkaException(
                KafkaError(ErrorCode.invalid_group_id, "commit() needs a group.id")
            )
        request = self._coordinator.commit(
            self._subscriptions.positions(), time.monotonic()
        )
        if request is None:
            return
        self._wake()
        with trio.fail_after(self.config.request_timeout_ms / 1000):
            while request.commit_id not in self._coordinator.commit_results:
                await self._changed.wait()
        code = self._coordinator.commit_results.pop(request.commit_id)
        if code != ErrorCode.none:
            raise KafkaException(KafkaError(code))
